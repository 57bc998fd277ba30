#!/usr/bin/env bash
# Runs the kafkajs scenarios against BOOTSTRAP (host:port) and appends one
# result line per scenario to $COMPAT_RESULTS. Exits non-zero only when the
# harness itself broke (missing arguments, packages not installed).
#
# For development: KAFKAJS_SCENARIOS=name,name runs only those scenarios;
# KAFKAJS_DEBUG=1 logs kafkajs at DEBUG (every request and response) to
# $COMPAT_WORK/kafkajs.log.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
bootstrap="${1:?usage: run.sh BOOTSTRAP}"
: "${COMPAT_CACHE:?COMPAT_CACHE must be set}"
: "${COMPAT_RESULTS:?COMPAT_RESULTS must be set}"
: "${COMPAT_PREFIX:?COMPAT_PREFIX must be set}"

modules="$COMPAT_CACHE/js/node_modules"
if [[ ! -d "$modules/kafkajs" ]]; then
  echo "kafkajs is not installed in $modules: run setup.sh first" >&2
  exit 2
fi

export NODE_PATH="$modules"
export KAFKAJS_NO_PARTITIONER_WARNING=1
exec node "$here/suite.js" "$bootstrap"
