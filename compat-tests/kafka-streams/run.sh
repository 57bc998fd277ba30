#!/usr/bin/env bash
# Runs the kafka-streams scenarios against the broker at BOOTSTRAP and
# appends one result line per scenario to $COMPAT_RESULTS (the contract is
# in ../README.md; the scenarios are described in README.md beside this
# file). Needs setup.sh to have built the driver.
#
# The driver (one JVM, scenarios one after the other, each bounded to
# 120 s) writes its lines to the work dir as each scenario ends; they are
# copied to $COMPAT_RESULTS at the end. A scenario the driver never
# reported (the JVM died or hung) gets a fail line here.
#
# Usage: run.sh BOOTSTRAP [SCENARIO...]     (all scenarios when none named)
# Logs: $COMPAT_WORK/kafka-streams.log (clients, warn and up; set
# STREAMS_LOG_LEVEL=info or debug for more) and $COMPAT_WORK/driver.out.
#
# By hand, the lab's variables have defaults: COMPAT_CACHE ../.cache,
# COMPAT_WORK a new temp dir, COMPAT_PREFIX ks<epoch seconds>,
# COMPAT_RESULTS $COMPAT_WORK/results.tsv.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bootstrap=${1:?usage: run.sh BOOTSTRAP [SCENARIO...]}
shift
export COMPAT_CACHE=${COMPAT_CACHE:-$(cd "$here/.." && pwd)/.cache}
export COMPAT_WORK=${COMPAT_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/compat-kafka-streams.XXXXXX")}
export COMPAT_PREFIX=${COMPAT_PREFIX:-ks$(date +%s)}
export COMPAT_RESULTS=${COMPAT_RESULTS:-$COMPAT_WORK/results.tsv}

build=$COMPAT_CACHE/kafka-streams/build
[[ -f $build/.complete ]] || { echo "kafka-streams: no build in $build; run setup.sh first" >&2; exit 1; }
version=$(sed -nE 's|.*<kafka.version>([^<]+)</kafka.version>.*|\1|p' "$here/pom.xml")

mkdir -p "$COMPAT_WORK/tmp"
java_cmd=(java -Xmx768m -XX:+UseSerialGC
	# RocksDB unpacks its native library into the temp dir on each start.
	-Djava.io.tmpdir="$COMPAT_WORK/tmp"
	-Dorg.slf4j.simpleLogger.defaultLogLevel="${STREAMS_LOG_LEVEL:-warn}"
	-Dorg.slf4j.simpleLogger.logFile="$COMPAT_WORK/kafka-streams.log"
	-Dorg.slf4j.simpleLogger.showDateTime=true
	-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS
	-cp "$build/kafka-streams-compat.jar:$build/lib/*"
	io.gregor.compat.streams.Main)

if (($# > 0)); then
	scenarios=("$@")
else
	mapfile -t scenarios < <("${java_cmd[@]}" --list)
	((${#scenarios[@]} > 0)) || { echo "kafka-streams: the driver listed no scenarios" >&2; exit 1; }
fi

lines=$COMPAT_WORK/kafka-streams-results.tsv
: >"$lines"
# Each scenario is bounded to 120 s inside the driver; this bounds the JVM
# as a whole should the driver itself hang.
limit=$((${#scenarios[@]} * 150 + 60))
status=0
timeout --kill-after=10 "$limit" "${java_cmd[@]}" "$bootstrap" "$lines" "${scenarios[@]}" \
	>"$COMPAT_WORK/driver.out" 2>&1 || status=$?

tab=$'\t'
for s in "${scenarios[@]}"; do
	if ! cut -f3 "$lines" | grep -qxF -- "$s"; then
		printf 'kafka-streams\t%s\t%s\tfail\t0\tthe driver exited with status %s before reporting it (see %s)\n' \
			"$version" "$s" "$status" "$COMPAT_WORK/driver.out" >>"$lines"
	fi
done
cat "$lines" >>"$COMPAT_RESULTS"
echo "kafka-streams: logs in $COMPAT_WORK, results appended to $COMPAT_RESULTS" >&2
cut -f3,4,5,6 "$lines" | sed "s/$tab/  /g" >&2
