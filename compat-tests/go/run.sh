#!/usr/bin/env bash
# Runs the Go clients' scenarios against the broker at BOOTSTRAP (host:port):
# gocompat (built by setup.sh) once per client, franz-go, sarama and
# kafka-go, each appending one result line per scenario to $COMPAT_RESULTS.
# A client whose process dies or outruns CLIENT_TIMEOUT still gets a line
# for each scenario it did not report, so that none vanishes from the
# matrix. Client logs go to $COMPAT_WORK/<client>.log; GOCOMPAT_DEBUG=1
# adds the clients' debug logging there.
#
# Exits 0 when it ran, whatever the results; non-zero only when the suite
# itself is broken (not built, bad arguments).
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: run.sh BOOTSTRAP" >&2; exit 2; }
bootstrap=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${COMPAT_CACHE:-$(cd "$here/.." && pwd)/.cache}
work=${COMPAT_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/gocompat.XXXXXX")}
results=${COMPAT_RESULTS:-$work/results.tsv}
prefix=${COMPAT_PREFIX:-go$(date +%s)}
bin=$cache/go/gocompat
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-600} # seconds for one client's scenarios
[[ -x $bin ]] || { echo "run.sh: $bin missing; run setup.sh first" >&2; exit 1; }
mkdir -p "$work"
debug=()
[[ ${GOCOMPAT_DEBUG:-0} == 1 ]] && debug=(-debug)

for client in franz-go sarama kafka-go; do
	out=$work/$client.tsv
	: >"$out"
	start=$SECONDS
	rc=0
	timeout -k 10 "$CLIENT_TIMEOUT" "$bin" -client "$client" -bootstrap "$bootstrap" \
		-prefix "$prefix" -results "$out" "${debug[@]}" 2>"$work/$client.log" || rc=$?
	# Scenarios the process did not get to report fail with its exit.
	list=$("$bin" -client "$client" -list)
	version=$(head -n 1 <<<"$list")
	while read -r scenario; do
		if ! cut -f3 "$out" | grep -qx -- "$scenario"; then
			why="gocompat exited with status $rc before reporting this scenario"
			((rc == 124 || rc == 137)) && why="gocompat killed after ${CLIENT_TIMEOUT}s before reporting this scenario"
			printf '%s\t%s\t%s\tfail\t0\t%s; see %s\n' "$client" "$version" "$scenario" "$why" "$work/$client.log" >>"$out"
		fi
	done < <(tail -n +2 <<<"$list")
	cat "$out" >>"$results"
	awk -F'\t' -v c="$client" -v s=$((SECONDS - start)) '{n++; if ($4 == "pass") p++} END {printf "go: %s: %d of %d passed in %ds\n", c, p, n, s}' "$out"
	awk -F'\t' '$4 != "pass" {print "  FAIL " $3 ": " $6}' "$out"
done
