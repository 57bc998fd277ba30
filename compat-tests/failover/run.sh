#!/usr/bin/env bash
# make failover-test: the replication acceptance harness. Builds the Go
# harness (compat-tests/go/cmd/failover, which says what it does) and the
# Java writer (FailoverWriter.java, compiled with javac against the
# kafka-clients 4.4.0 jars that compat-tests/console/fetch.sh caches), then
# runs FAILOVER_CYCLES (default 50) kill -9 cycles against three bin/gregor
# brokers in a temporary directory.
#
# The directory is removed after a passing run and kept after a failing
# one (FAILOVER_KEEP=1 keeps it always). The harness kills every process it
# starts; should it be killed itself, the trap here kills the process
# groups it listed as alive.
#
# Settings (environment): FAILOVER_CYCLES, FAILOVER_RATE (records/s per
# writer, default 300), FAILOVER_SESSION_TIMEOUT (broker.session.timeout.ms
# as a duration, default 4s), FAILOVER_SEED, FAILOVER_DIR (parent of the
# temporary directory, default $TMPDIR or /tmp), GREGOR_BIN (default bin/gregor).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${GREGOR_BIN:-$root/bin/gregor}
[[ -x $bin ]] || { echo "failover: $bin not found; run make build" >&2; exit 2; }
for tool in go java javac; do
	command -v "$tool" >/dev/null || { echo "failover: $tool not found" >&2; exit 2; }
done

work=$(mktemp -d "${FAILOVER_DIR:-${TMPDIR:-/tmp}}/gregor-failover.XXXXXX")
cleanup() {
	rc=$?
	if [[ -f $work/pgids ]]; then
		while read -r pg; do
			[[ -n $pg ]] && kill -KILL -- "-$pg" 2>/dev/null || true
		done <"$work/pgids"
	fi
	if [[ $rc == 0 && ${FAILOVER_KEEP:-0} != 1 ]]; then
		rm -rf "$work"
	else
		echo "failover: logs and data kept in $work (broker-N.log, java-writer.log, acks.log)" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

libs=$(bash "$root/compat-tests/console/fetch.sh")
mkdir -p "$work/classes"
javac -nowarn -cp "$libs/*" -d "$work/classes" "$here/FailoverWriter.java"
(cd "$root/compat-tests/go" && go build -o "$work/failover" ./cmd/failover)

"$work/failover" -gregor "$bin" -dir "$work" -java-classpath "$work/classes:$libs/*" \
	-cycles "${FAILOVER_CYCLES:-50}" -rate "${FAILOVER_RATE:-300}" \
	-session-timeout "${FAILOVER_SESSION_TIMEOUT:-4s}" -seed "${FAILOVER_SEED:-0}"
