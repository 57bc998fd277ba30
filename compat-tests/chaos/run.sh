#!/usr/bin/env bash
# make chaos: the fault harness (compat-tests/go/cmd/chaos, which says what
# it does). Builds it and the Java writer (compat-tests/failover/
# FailoverWriter.java, against the kafka-clients 4.4.0 jars that
# compat-tests/console/fetch.sh caches), then runs it against three
# bin/gregor brokers in a temporary directory: each broker in a network
# namespace of its own when run as root, else on 127.0.0.1 with the
# process nemeses only (the harness says so).
#
# The run writes results.json into its directory and a copy into
# compat-tests/chaos/results/ (kept out of git); `make chaos-summary`
# turns those into the table in compat-tests/chaos/README.md. The
# directory (broker logs, acks.log, consumer.log, results.json) is removed
# after a passing run and kept after a failing one (CHAOS_KEEP=1 keeps it
# always), each broker's data unmounted first when disk-full put it on a
# tmpfs or drop-unsynced on a lazyfs (compat-tests/go/cmd/lazyfs, built
# here; used as root with /dev/fuse only). Should the harness be killed,
# the trap here kills the process groups it listed as alive (the lazyfs
# processes among them) and unmounts what is left; its network namespaces
# are removed by the next run.
#
# Settings (environment): CHAOS_DURATION (default 10m), CHAOS_CYCLES
# (exactly this many cycles instead), CHAOS_NEMESES (comma-separated, or
# all), CHAOS_TARGET (gregor, or kafka: three Apache Kafka 4.4 nodes from
# compat-tests/kafka/kafka.sh fetch, in the same namespaces), CHAOS_RATE (records/s per writer, default 200), CHAOS_FAULT_TIME
# (default 8s), CHAOS_SEED, CHAOS_NETWORK (auto, netns, loopback),
# CHAOS_JAVA (0 leaves the Java writer out), CHAOS_DIR (parent of the
# temporary directory), GREGOR_BIN (default bin/gregor), CHAOS_BROKEN (1:
# make chaos-broken, below), CHAOS_ETCD (embedded, the default: each broker
# embeds its etcd member; external: three etcd members run as processes
# of their own, built here from the etcd server module Gregor embeds, and
# the kill-etcd nemesis can lose one without a broker).
#
# CHAOS_BROKEN=1 runs a broker built with the tag chaos_unsafe_hw, whose
# leaders acknowledge acks=all writes before any follower has them, and
# passes only if the checker finds acknowledged records lost: the check
# that the checker is not blind. Its results go to results-broken/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${GREGOR_BIN:-$root/bin/gregor}
broken=()
results=$here/results
if [[ ${CHAOS_BROKEN:-0} == 1 ]]; then
	bin=""
	broken=(-build chaos_unsafe_hw -expect-loss)
	results=$here/results-broken
else
	[[ -x $bin ]] || { echo "chaos: $bin not found; run make build" >&2; exit 2; }
fi
for tool in go java javac; do
	command -v "$tool" >/dev/null || { echo "chaos: $tool not found" >&2; exit 2; }
done

work=$(mktemp -d "${CHAOS_DIR:-${TMPDIR:-/tmp}}/gregor-chaos.XXXXXX")
cleanup() {
	rc=$?
	if [[ -f $work/pgids ]]; then
		while read -r pg; do
			[[ -n $pg ]] && kill -KILL -- "-$pg" 2>/dev/null || true
		done <"$work/pgids"
	fi
	# The tmpfs mounts of disk-full and the lazyfs (FUSE) mounts of
	# drop-unsynced, should the harness not have unmounted them (they are
	# all under this run's directory; umount as root removes a FUSE mount
	# whose process is gone, no fusermount needed).
	local mounts m
	mounts=$(findmnt -rn -o TARGET 2>/dev/null | grep -F "$work/" | sort -r || true)
	for m in $mounts; do
		umount "$m" 2>/dev/null || umount -l "$m" || true
	done
	if [[ $rc == 0 && ${CHAOS_KEEP:-0} != 1 ]]; then
		rm -rf "$work"
	else
		echo "chaos: logs, data and histories kept in $work (broker-N.log, acks.log, consumer.log, results.json)" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

java=()
if [[ ${CHAOS_JAVA:-1} != 0 ]]; then
	libs=$(bash "$root/compat-tests/console/fetch.sh")
	mkdir -p "$work/classes"
	javac -nowarn -cp "$libs/*" -d "$work/classes" "$root/compat-tests/failover/FailoverWriter.java"
	java=(-java-classpath "$work/classes:$libs/*")
fi
target=()
if [[ ${CHAOS_TARGET:-gregor} == kafka ]]; then
	target=(-target kafka -kafka-libs "$(bash "$root/compat-tests/kafka/kafka.sh" fetch)")
fi
# The binary must be called chaos: a run tells a dead run's network
# namespaces from a live one's by the process name.
(cd "$root/compat-tests/go" && go build -o "$work/chaos" ./cmd/chaos && go build -o "$work/lazyfs" ./cmd/lazyfs)
etcd=()
if [[ ${CHAOS_ETCD:-embedded} == external ]]; then
	(cd "$root" && go build -o "$work/etcd" go.etcd.io/etcd/server/v3)
	etcd=(-etcd "$work/etcd")
fi
if [[ -z $bin ]]; then
	bin=$work/gregor-broken
	(cd "$root" && go build -tags chaos_unsafe_hw -o "$bin" ./cmd/gregor)
fi

"$work/chaos" -gregor "$bin" -dir "$work" -results "$results" -lazyfs "$work/lazyfs" "${java[@]}" "${target[@]}" "${broken[@]}" "${etcd[@]}" \
	-duration "${CHAOS_DURATION:-10m}" -cycles "${CHAOS_CYCLES:-0}" -nemeses "${CHAOS_NEMESES:-all}" \
	-rate "${CHAOS_RATE:-200}" -fault-time "${CHAOS_FAULT_TIME:-8s}" -seed "${CHAOS_SEED:-0}" \
	-network "${CHAOS_NETWORK:-auto}"
