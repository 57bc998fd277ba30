#!/usr/bin/env bash
# Runs the python suite against BOOTSTRAP (host:port): the confluent-kafka
# program, then the kafka-python one, each appending one result line per
# scenario to $COMPAT_RESULTS. Exits non-zero only when the harness itself
# broke (missing arguments, venv not installed, a program that crashed).
#
# By hand: COMPAT_CACHE defaults to ../.cache, COMPAT_WORK to a temp dir,
# COMPAT_PREFIX to py<epoch seconds>, COMPAT_RESULTS to $COMPAT_WORK/results.tsv.
# COMPAT_DEBUG=protocol,broker turns on librdkafka's debug log and
# kafka-python's DEBUG logging in the scenario logs.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
bootstrap="${1:?usage: run.sh BOOTSTRAP}"
export COMPAT_CACHE="${COMPAT_CACHE:-$(cd "$here/.." && pwd)/.cache}"
export COMPAT_WORK="${COMPAT_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/compat-python.XXXXXX")}"
export COMPAT_PREFIX="${COMPAT_PREFIX:-py$(date +%s)}"
export COMPAT_RESULTS="${COMPAT_RESULTS:-$COMPAT_WORK/results.tsv}"

python="$COMPAT_CACHE/python/venv/bin/python"
if [[ ! -x "$python" ]]; then
  echo "the python suite's venv is missing ($python): run setup.sh first" >&2
  exit 2
fi

echo "python suite: logs in $COMPAT_WORK, results to $COMPAT_RESULTS"
# -u: the programs' progress lines reach run.log as they happen.
"$python" -u "$here/confluent_suite.py" "$bootstrap"
"$python" -u "$here/kafka_python_suite.py" "$bootstrap"
