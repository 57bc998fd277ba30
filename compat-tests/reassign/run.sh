#!/usr/bin/env bash
# make reassign-test: the cluster-growth harness (compat-tests/go/cmd/reassign,
# whose package doc says what it does): three brokers grown to four with
# `gregor cluster rebalance`, then broker 1 retired with `gregor cluster
# decommission 1`, under a checked acks=all load; no acknowledged record
# lost, no replica left half-moved, the producer's latency per phase shown.
#
# Settings (environment): REASSIGN_PARTITIONS (default 48), REASSIGN_BYTES
# (default 1073741824, the data moved), REASSIGN_RATE (load records/s,
# default 500), REASSIGN_THROTTLE (bytes/s, default 52428800),
# REASSIGN_BASELINE (default 20s), REASSIGN_KILL (controller or receiver: a
# kill -9 while the grow's moves are under way), REASSIGN_KEEP=1 (keep the
# run directory), GREGOR_BIN (default bin/gregor).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${GREGOR_BIN:-$root/bin/gregor}
[[ -x $bin ]] || { echo "reassign: $bin not found; run make build" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gregor-reassign.XXXXXX")
cleanup() {
	rc=$?
	if [[ -f $work/pgids ]]; then
		while read -r pg; do
			[[ -n $pg ]] && kill -KILL -- "-$pg" 2>/dev/null || true
		done <"$work/pgids"
	fi
	if [[ $rc == 0 && ${REASSIGN_KEEP:-0} != 1 ]]; then
		rm -rf "$work"
	else
		echo "reassign: logs and data kept in $work (broker-N.log, grow.out, decommission.out, acks.log)" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$root/compat-tests/go" && go build -o "$work/reassign" ./cmd/reassign)
(cd "$root" && go build -o "$work/etcd" go.etcd.io/etcd/server/v3)
"$work/reassign" -gregor "$bin" -etcd "$work/etcd" -dir "$work" -partitions "${REASSIGN_PARTITIONS:-48}" \
	-bytes "${REASSIGN_BYTES:-1073741824}" -rate "${REASSIGN_RATE:-500}" -throttle "${REASSIGN_THROTTLE:-52428800}" \
	-baseline "${REASSIGN_BASELINE:-20s}" -kill "${REASSIGN_KILL:-}"
