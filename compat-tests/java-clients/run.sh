#!/usr/bin/env bash
# Runs the java-clients scenarios (kafka-clients' producer, consumer and
# Admin; see src/main/java/io/gregor/compat/javaclients/Main.java) against
# the broker at BOOTSTRAP, appending one result line per scenario to
# $COMPAT_RESULTS (printed on stdout too).
#
#   run.sh BOOTSTRAP [SCENARIO...]     (default: every scenario)
#
# The clients log at warn to $COMPAT_WORK/java-clients.log; set
# JAVA_CLIENTS_LOG_LEVEL=debug to see every request and response there.
# Exits 0 when the scenarios ran, whatever their results.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${COMPAT_CACHE:-$(cd "$here/.." && pwd)/.cache}/java-clients
build=$cache/build

[[ $# -ge 1 ]] || { echo "usage: run.sh BOOTSTRAP [SCENARIO...]" >&2; exit 2; }
[[ -f $build/.complete ]] || { echo "java-clients: not built; run $here/setup.sh first" >&2; exit 1; }

work=${COMPAT_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/java-clients.XXXXXX")}
mkdir -p "$work"
log=$work/java-clients.log

rc=0
java -Xmx512m -XX:+UseSerialGC \
	-Dorg.slf4j.simpleLogger.defaultLogLevel="${JAVA_CLIENTS_LOG_LEVEL:-warn}" \
	-Dorg.slf4j.simpleLogger.logFile=System.err \
	-Dorg.slf4j.simpleLogger.showDateTime=true \
	-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS \
	-cp "$build/java-clients.jar:$build/libs/*" \
	io.gregor.compat.javaclients.Main "$@" 2>"$log" || rc=$?
echo "java-clients: client log in $log"
if ((rc != 0)); then
	echo "java-clients: the scenario runner exited with status $rc:" >&2
	tail -n 20 "$log" >&2
	exit "$rc"
fi
