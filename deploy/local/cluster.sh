#!/usr/bin/env bash
# Runs a three-broker Gregor cluster on this machine, for trying a cluster
# out: brokers 1, 2 and 3 on localhost:9092, 9093 and 9094, data in
# $DATA_DIR/1..3 (default ./data), each embedding one member of a
# three-member etcd cluster (client ports 2379, 2381, 2383; peer ports
# 2380, 2382, 2384), admin HTTP servers (/metrics, /readyz) on 9644, 9645
# and 9646. No other process is needed. Ctrl-C (SIGINT) or SIGTERM stops
# all three cleanly; a broker that exits (or is killed) leaves the others
# running.
#
# Usage: deploy/local/cluster.sh [BIN]   (BIN default: bin/gregor)
set -euo pipefail

bin=${1:-bin/gregor}
data=${DATA_DIR:-./data}
[[ -x $bin ]] || { echo "cluster.sh: $bin not found; run make build" >&2; exit 1; }

initial=""
for n in 1 2 3; do
	initial+="${initial:+,}gregor-$n=http://127.0.0.1:$((2380 + 2 * (n - 1)))"
done

pids=()
stop() {
	trap - INT TERM
	echo "cluster.sh: stopping brokers ${pids[*]}" >&2
	kill -TERM "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
}
trap 'stop; exit 0' INT TERM

for n in 1 2 3; do
	mkdir -p "$data/$n"
	# Each broker in a session of its own: Ctrl-C reaches this script
	# alone, which passes one SIGTERM on (a second signal would make a
	# broker exit at once, without its clean shutdown).
	setsid "$bin" serve \
		--node.id "$n" \
		--log.dirs "$data/$n" \
		--listeners "PLAINTEXT://localhost:$((9091 + n))" \
		--admin.listener "localhost:$((9643 + n))" \
		--etcd.client.addr "127.0.0.1:$((2379 + 2 * (n - 1)))" \
		--etcd.peer.addr "127.0.0.1:$((2380 + 2 * (n - 1)))" \
		--etcd.initial.cluster "$initial" \
		> >(sed -u "s/^/[broker $n] /") 2>&1 &
	pids+=($!)
done
echo "cluster.sh: brokers 1-3 on localhost:9092,localhost:9093,localhost:9094 (data in $data/1..3); Ctrl-C stops them" >&2

# A broker that exits (killed, say, to try a failure) leaves the others
# running; the script ends when all have exited.
rc=0
for pid in "${pids[@]}"; do
	wait "$pid" || rc=$?
done
exit "$rc"
