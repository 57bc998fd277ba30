#!/usr/bin/env bash
# Side-by-side benchmark of Gregor and Apache Kafka 4.x (`make bench`): the
# same workloads, with the same two load generators, against one broker at a
# time on this machine (W6: one three-broker cluster at a time); then
# report.py renders RESULTS.md (medians and Gregor/Kafka ratios) from the raw
# per-run records in results/.
#
#   compat-tests/bench/run.sh
#
# Every measured run gets a fresh broker with a fresh data dir (so the
# broker's VmHWM, its peak RSS, belongs to that run), on free loopback ports,
# in a temp work dir; both brokers are stopped on exit, failure included.
# W6 runs on three brokers of each: three `gregor serve` processes with
# embedded etcd (as compat-tests/run.sh --cluster 3 starts them), or a
# three-node Kafka KRaft cluster (kafka.sh start-cluster); its CPU seconds
# and memory are the sums over the three broker processes.
# Load generators: `gregor bench` (franz-go) and Kafka's own perf tools
# (ProducerPerformance, ConsumerPerformance, EndToEndLatency from
# kafka-tools, fetched as compat-tests/console does). Workloads and modes:
# see WORKLOADS below and the header of RESULTS.md.
#
# Environment:
#   BENCH_RUNS        runs per workload, mode and tool (default 3; medians are reported)
#   BENCH_DURATION    seconds per measured phase (default 20)
#   BENCH_WARMUP      seconds of unmeasured load on a fresh broker before the measured
#                     phase (default 5; W5: between its low-rate and max-throughput phases)
#   BENCH_WORKLOADS   default "W1 W2 W3 W4 W5" (W1 also runs the TCP->file probe; "probe" alone runs only it;
#                     W6, the three-broker cluster, runs when named: BENCH_WORKLOADS=W6; so does
#                     W7, transactional produce: BENCH_WORKLOADS=W7; W8, a share group of 8
#                     consumers on 1 partition: BENCH_WORKLOADS=W8)
#   BENCH_TARGETS     default "gregor kafka"
#   BENCH_TOOLS       default "gregor-bench kafka-perf"
#   BENCH_MODES       restrict modes, e.g. "durable default" (default: every mode of each workload)
#   BENCH_W3_RATE     records/s of W3 for every tool (default: half of Kafka's W2
#                     default-mode median with the same tool, from results/)
#   BENCH_E2E_RECORDS EndToEndLatency's records in W3 (default 10000)
#   BENCH_W3_LOAD_S   seconds of ProducerPerformance load beside it (default 80)
#   KAFKA_HEAP        Kafka's -Xms/-Xmx (default 4g, for a 24 GiB machine)
#   KAFKA_CLUSTER_HEAP  -Xms/-Xmx of each of W6's three Kafka JVMs (default 1g)
#   BENCH_SECURITY    plaintext (default) or ssl: both brokers serve the load generators on an
#                     SSL listener (TLS 1.3, server authentication only, one certificate from
#                     compat-tests/lib/certs.sh for both, PEM key store), and gregor bench and
#                     Kafka's perf tools connect with TLS (--command-config); topic creation and
#                     the readiness checks use a PLAINTEXT listener beside it. W1 and W2 only
#                     (no probe); records go to results/<workload>-ssl-<target>.jsonl
#   BENCH_TLS_BASELINE=1  with BENCH_SECURITY=plaintext: W1/W2 as the TLS section's plaintext
#                     baseline, run in the SSL session's conditions (same machine load, kernel),
#                     into results/<workload>-tlsbase-<target>.jsonl (no probe); the plaintext
#                     records of the workload tables are left as they are
#   KEEP_WORK=1       keep the work dir (logs, data) afterwards; KEEP_WORK=logs keeps it
#                     without the brokers' data (a W6 run writes gigabytes per broker)
#
# The records of each (workload, target, mode, tool) run replace that
# combination's in results/<workload>-<target>.jsonl; the others keep their
# old records (so BENCH_TOOLS=gregor-bench keeps the Kafka tools' records).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
RUNS=${BENCH_RUNS:-3}
DUR=${BENCH_DURATION:-20}
WARMUP=${BENCH_WARMUP:-5}
WORKLOADS=${BENCH_WORKLOADS:-W1 W2 W3 W4 W5}
TARGETS=${BENCH_TARGETS:-gregor kafka}
TOOLS=${BENCH_TOOLS:-gregor-bench kafka-perf}
MODES=${BENCH_MODES:-}
SECURITY=${BENCH_SECURITY:-plaintext}
TLS_BASELINE=${BENCH_TLS_BASELINE:-}
export KAFKA_HEAP=${KAFKA_HEAP:-4g}
KAFKA_CLUSTER_HEAP=${KAFKA_CLUSTER_HEAP:-1g}
# Kafka restarting with 10,000 partitions can take minutes (kafka.sh's
# default wait is 120 s).
export KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-900}
export COMPAT_CACHE=$root/compat-tests/.cache

# Producer settings shared by both load generators (gregor bench's
# --batch-max-bytes/--linger, the Java producer's batch.size/linger.ms).
BATCH=1048576
LINGER_MS=5
W5_PARTITIONS=10000
W5_LOW_RATE=2000 # records/s of W5's low-rate phase
W8_RECORDS=${BENCH_W8_RECORDS:-200000} # records W8's share group reads
# EndToEndLatency sends one record at a time and reports the sorted
# sample at 99.9% of its count: of 1,000 records that is the slowest one
# (the first, which also times the JVMs' cold paths), of 10,000 the tenth
# slowest. Its records must all be timed under W3's ProducerPerformance
# load, so that load runs longer than W3's other phases: 10,000 records took
# 12-55 s here under it (Gregor page cache - Kafka flush1). A run where
# EndToEndLatency outlasts the load is recorded as failed.
E2E_RECORDS=${BENCH_E2E_RECORDS:-10000}
W3_LOAD_S=${BENCH_W3_LOAD_S:-80}

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

case $SECURITY in
plaintext) ;;
ssl)
	for w in $WORKLOADS; do
		[[ $w == W1 || $w == W2 ]] || die "BENCH_SECURITY=ssl runs W1 and W2 only, not $w"
	done
	;;
*) die "unknown BENCH_SECURITY $SECURITY (plaintext or ssl)" ;;
esac
if [[ -n $TLS_BASELINE ]]; then
	[[ $SECURITY == plaintext ]] || die "BENCH_TLS_BASELINE is a plaintext run"
	for w in $WORKLOADS; do
		[[ $w == W1 || $w == W2 ]] || die "BENCH_TLS_BASELINE runs W1 and W2 only, not $w"
	done
fi

mkdir -p "$here/results"
work=$(mktemp -d "${TMPDIR:-/tmp}/gregor-bench.XXXXXX")
session=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# The broker (or cluster) running: B_PID is its first process, B_PIDS all
# of them, B_PORT the first one's port, B_BOOT every broker's host:port,
# comma-separated, as the load generators take it; B_PLAIN the same over
# PLAINTEXT, for topic creation and the readiness checks (B_BOOT itself
# unless BENCH_SECURITY=ssl).
B_TARGET="" B_DIR="" B_PID="" B_PIDS=() B_PORT="" B_BOOT="" B_PLAIN="" B_ADMIN=""
# Brokers of the current workload (3 for W6) and its topic's replication
# factor and min.insync.replicas; set by run_workload.
BROKERS=1 RF=1 MIN_ISR=""

stop_broker() {
	[[ -n $B_TARGET ]] || return 0
	if [[ $B_TARGET == kafka ]]; then
		"$root/compat-tests/kafka/kafka.sh" stop "$B_DIR" || true
	elif ((${#B_PIDS[@]} > 0)); then
		# All at once: a cluster's last broker would wait for peers gone.
		kill -TERM "${B_PIDS[@]}" 2>/dev/null || true
		local deadline=$((SECONDS + 60)) pid
		for pid in "${B_PIDS[@]}"; do
			while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
			kill -KILL "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		done
	fi
	B_TARGET="" B_PID="" B_PIDS=()
}

finish() {
	local rc=$?
	stop_broker
	if ((rc == 0)) && [[ ${KEEP_WORK:-0} != 1 && ${KEEP_WORK:-0} != logs ]]; then
		rm -rf "$work"
	else
		say "logs and data kept in $work"
	fi
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# free_ports N: N distinct free loopback ports, space-separated (all held
# open until every one is picked, so none repeats).
free_ports() {
	python3 - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
}

# Kafka with 10,000 partitions keeps a file open per partition.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

say "building bin/gregor and the TCP->file probe"
(cd "$root" && go build -o bin/gregor ./cmd/gregor)
GREGOR=$root/bin/gregor
(cd "$here/tcpfile" && go build -o "$work/tcpfile" .)
needs_kafka_tools=0
[[ " $TOOLS " == *" kafka-perf "* ]] && needs_kafka_tools=1
TOOLS_LIBS=""
if ((needs_kafka_tools)); then
	TOOLS_LIBS=$(bash "$root/compat-tests/console/fetch.sh")
fi
[[ " $TARGETS " != *" kafka "* ]] || "$root/compat-tests/kafka/kafka.sh" fetch >/dev/null

# The commit measured; -dirty when source differs from it (the results this
# run writes do not count).
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$root" status --porcelain --untracked-files=no -- . \
	':!compat-tests/bench/results' ':!compat-tests/bench/RESULTS.md' 2>/dev/null) ]]; then
	commit+=-dirty
fi
# The session's machine and settings: env-HOST.json for the default
# workloads, env-HOST-W6.json (say) for a session of others, so that a run
# of one workload does not overwrite what the others were measured on.
env_name=env-$(hostname -s 2>/dev/null || echo host)
[[ $WORKLOADS == "W1 W2 W3 W4 W5" ]] || env_name+=-$(echo $WORKLOADS | tr ' ' -)
[[ $SECURITY == plaintext ]] || env_name+=-$SECURITY
[[ -z $TLS_BASELINE ]] || env_name+=-tlsbase
cat >"$here/results/$env_name.json" <<EOF
{"session": "$session", "nproc": $(nproc), "mem_kib": $(awk '/MemTotal/{print $2}' /proc/meminfo),
 "cpu": "$(sed -nE 's/^model name\s*:\s*//p' /proc/cpuinfo | head -n1)", "kernel": "$(uname -r)",
 "fs": "$(df -T "$work" | awk 'NR==2{print $2}')", "loadavg_start": "$(cut -d' ' -f1-3 /proc/loadavg)",
 "go": "$(go env GOVERSION)", "java": "$(java -version 2>&1 | head -n1 | tr -d '"')",
 "gregor_commit": "$commit",
 "kafka_heap": "$KAFKA_HEAP", "kafka_cluster_heap": "$KAFKA_CLUSTER_HEAP", "workloads": "$WORKLOADS",
 "security": "$SECURITY", "tls_baseline": "$TLS_BASELINE", "runs": $RUNS, "duration_s": $DUR}
EOF

# BENCH_SECURITY=ssl: one CA and broker certificate for both brokers, and
# the client properties both load generators read (--command-config).
GB_SEC=() KP_SEC=() SSL_PROPS=()
if [[ $SECURITY == ssl ]]; then
	"$root/compat-tests/lib/certs.sh" "$work/certs"
	cat >"$work/client-ssl.properties" <<EOF
security.protocol=SSL
ssl.truststore.type=PEM
ssl.truststore.location=$work/certs/ca.pem
ssl.enabled.protocols=TLSv1.3
ssl.protocol=TLSv1.3
EOF
	GB_SEC=(--command-config "$work/client-ssl.properties")
	KP_SEC=(--command-config "$work/client-ssl.properties")
	# The broker's SSL settings in Kafka's keys: server.properties lines
	# for Kafka, flags for Gregor. No client certificates.
	SSL_PROPS=(
		ssl.keystore.type=PEM "ssl.keystore.location=$work/certs/broker-store.pem"
		ssl.truststore.type=PEM "ssl.truststore.location=$work/certs/ca.pem"
		ssl.client.auth=none ssl.enabled.protocols=TLSv1.3
	)
fi

# start_broker TARGET MODE DIR: starts a broker on free ports with its data
# in DIR (kept when it exists: a restart). Sets B_*; B_SETTINGS holds the
# page-cache settings Gregor resolved at start and whether the kernel
# reports free pages to a hypervisor, which they follow from (its log), as
# record fields.
start_broker() {
	local target=$1 mode=$2 dir=$3 deadline plain ctrl listeners k
	B_TARGET=$target B_DIR=$dir B_PORT=$(free_port) B_SETTINGS=()
	B_BOOT=127.0.0.1:$B_PORT B_PLAIN=127.0.0.1:$B_PORT
	mkdir -p "$dir"
	if ((BROKERS > 1)); then
		start_cluster "$target" "$mode" "$dir"
		return
	fi
	plain=$B_PORT listeners=PLAINTEXT://127.0.0.1:$B_PORT
	local extra=() kafka_props=""
	if [[ $SECURITY == ssl ]]; then
		# The load generators' listener (B_PORT) is SSL; PLAINTEXT beside it.
		read -r plain B_PORT ctrl <<<"$(free_ports 3)"
		B_BOOT=127.0.0.1:$B_PORT B_PLAIN=127.0.0.1:$plain
		listeners=PLAINTEXT://127.0.0.1:$plain,SSL://127.0.0.1:$B_PORT
		if [[ $target == kafka ]]; then
			kafka_props=$(printf '%s\n' "listeners=$listeners,CONTROLLER://127.0.0.1:$ctrl" \
				"advertised.listeners=$listeners" \
				listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL "${SSL_PROPS[@]}")
		else
			extra=(--listener.security.protocol.map PLAINTEXT:PLAINTEXT,SSL:SSL)
			for k in "${SSL_PROPS[@]}"; do extra+=("--${k%%=*}" "${k#*=}"); done
		fi
	fi
	if [[ $target == kafka ]]; then
		KAFKA_CONTROLLER_PORT=${ctrl:-} KAFKA_EXTRA_PROPERTIES=$kafka_props \
			"$root/compat-tests/kafka/kafka.sh" start "$dir" "$plain" 2>>"$dir/bench.log" || return 1
		B_PID=$(cat "$dir/kafka.pid")
		B_PIDS=("$B_PID")
	else
		B_ADMIN=$(free_port)
		[[ $mode == pagecache ]] && extra+=(--log.flush.interval.messages 9223372036854775807)
		"$GREGOR" serve --log.dirs "$dir/data" \
			--listeners "$listeners" --admin.listener "127.0.0.1:$B_ADMIN" \
			--etcd.client.addr 127.0.0.1:0 --etcd.peer.addr 127.0.0.1:0 \
			--offsets.topic.replication.factor 1 --group.initial.rebalance.delay.ms 0 \
			"${extra[@]}" </dev/null >>"$dir/gregor.log" 2>&1 &
		B_PID=$!
		B_PIDS=("$B_PID")
		deadline=$((SECONDS + 300))
		until curl -sf "http://127.0.0.1:$B_ADMIN/readyz" >/dev/null 2>&1; do
			kill -0 "$B_PID" 2>/dev/null || { say "gregor exited: $(tail -n 5 "$dir/gregor.log")"; return 1; }
			((SECONDS < deadline)) || { say "gregor not ready within 300s"; return 1; }
			sleep 0.05
		done
		gregor_settings "$dir/gregor.log"
	fi
}

# gregor_settings LOG: adds to B_SETTINGS the page-cache settings a Gregor
# broker logged at start.
gregor_settings() {
	local line
	line=$(grep -m1 'msg="page cache"' "$1" || true)
	[[ $line =~ log\.pagecache\.keep\.bytes=([0-9-]+) ]] && B_SETTINGS+=(pagecache_keep_bytes="${BASH_REMATCH[1]}")
	[[ $line =~ log\.prefault\.bytes=([0-9-]+) ]] && B_SETTINGS+=(prefault_bytes="${BASH_REMATCH[1]}")
	[[ $line =~ free_page_reporting=(true|false) ]] && B_SETTINGS+=(free_page_reporting="${BASH_REMATCH[1]}")
	return 0
}

# start_cluster TARGET MODE DIR: BROKERS brokers of TARGET on free ports,
# data in DIR. Kafka: kafka.sh start-cluster (combined broker+controller
# nodes, one KRaft quorum, KAFKA_CLUSTER_HEAP each). Gregor: node ids
# 1..BROKERS, each embedding one member of a BROKERS-member etcd cluster,
# the internal topics replicated to three as Kafka's cluster has them (the
# flags of compat-tests/run.sh --cluster). Ready when every broker has
# started and the first one's Metadata lists them all.
start_cluster() {
	local target=$1 mode=$2 dir=$3 ports admins clients peers initial="" i deadline pid extra=()
	read -r -a ports <<<"$(free_ports "$BROKERS")"
	B_PORT=${ports[0]}
	B_BOOT=$(printf '127.0.0.1:%s,' "${ports[@]}")
	B_BOOT=${B_BOOT%,} B_PLAIN=${B_BOOT%,}
	B_PIDS=()
	if [[ $target == kafka ]]; then
		local list=${ports[*]}
		KAFKA_HEAP=$KAFKA_CLUSTER_HEAP "$root/compat-tests/kafka/kafka.sh" start-cluster "$dir" "${list// /,}" \
			2>>"$dir/bench.log" || return 1
		for ((i = 1; i <= BROKERS; i++)); do B_PIDS+=("$(cat "$dir/node-$i/kafka.pid")"); done
	else
		read -r -a admins <<<"$(free_ports "$BROKERS")"
		read -r -a clients <<<"$(free_ports "$BROKERS")"
		read -r -a peers <<<"$(free_ports "$BROKERS")"
		for ((i = 1; i <= BROKERS; i++)); do
			initial+="${initial:+,}gregor-$i=http://127.0.0.1:${peers[i - 1]}"
		done
		[[ $mode == pagecache ]] && extra=(--log.flush.interval.messages 9223372036854775807)
		for ((i = 1; i <= BROKERS; i++)); do
			"$GREGOR" serve --node.id "$i" --log.dirs "$dir/data-$i" \
				--listeners "PLAINTEXT://127.0.0.1:${ports[i - 1]}" --admin.listener "127.0.0.1:${admins[i - 1]}" \
				--etcd.client.addr "127.0.0.1:${clients[i - 1]}" --etcd.peer.addr "127.0.0.1:${peers[i - 1]}" \
				--etcd.initial.cluster "$initial" \
				--offsets.topic.replication.factor 3 --default.replication.factor 1 \
				--group.initial.rebalance.delay.ms 0 \
				"${extra[@]}" </dev/null >>"$dir/gregor-$i.log" 2>&1 &
			B_PIDS+=($!)
		done
		deadline=$((SECONDS + 300))
		for ((i = 1; i <= BROKERS; i++)); do
			until curl -sf "http://127.0.0.1:${admins[i - 1]}/readyz" >/dev/null 2>&1; do
				for pid in "${B_PIDS[@]}"; do
					kill -0 "$pid" 2>/dev/null || { say "a gregor broker exited: $(tail -n 5 "$dir"/gregor-*.log)"; return 1; }
				done
				((SECONDS < deadline)) || { say "gregor broker $i not ready within 300s"; return 1; }
				sleep 0.05
			done
		done
		gregor_settings "$dir/gregor-1.log"
	fi
	B_PID=${B_PIDS[0]}
	python3 "$here/ready.py" "$B_BOOT" --brokers "$BROKERS" --timeout 300 >/dev/null
}

# cpu_ticks PID...: utime+stime of the processes, summed.
cpu_ticks() {
	local pid t=0
	for pid in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
	echo "$t"
}
vm_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
# vm_kib_sum FIELD: FIELD of /proc/PID/status summed over B_PIDS (fails
# when one is gone).
vm_kib_sum() {
	local pid v t=0
	for pid in "${B_PIDS[@]}"; do
		v=$(vm_kib "$pid" "$1" 2>/dev/null) && [[ -n $v ]] || return 1
		t=$((t + v))
	done
	echo "$t"
}
TICK=$(getconf CLK_TCK)

# create_topic NAME PARTITIONS: creates it with RF replicas (flush.messages=1
# in Kafka's flush1 mode; min.insync.replicas=MIN_ISR when set) and waits
# until every partition has a leader, RF replicas in its ISR, and answers
# ListOffsets (ready.py --offsets); prints the seconds that took.
# Kafka's controller refuses one request that makes more than 10,000 metadata
# records (POLICY_VIOLATION), so more than 5,000 partitions are created 5,000
# at a time (CreateTopics, then CreatePartitions), on both brokers alike.
create_topic() {
	local t0 cfg=() first=$2 step=5000 have
	t0=$(date +%s.%N)
	[[ $B_TARGET == kafka && $MODE == flush1 ]] && cfg=(-c flush.messages=1)
	[[ -z $MIN_ISR ]] || cfg+=(-c min.insync.replicas="$MIN_ISR")
	((first <= step)) || first=$step
	# A large create can outlast the client's request timeout; its retry
	# then finds the topic there, so the wait for leaders below decides.
	"$GREGOR" topic create "$1" -p "$first" -r "$RF" "${cfg[@]}" -b "$B_PLAIN" --timeout 600s >/dev/null ||
		say "topic create $1 -p $first failed (above); going on"
	for ((have = first; have < $2; have += step)); do
		python3 "$here/ready.py" "$B_PLAIN" --topic "$1" --partitions "$have" --timeout 600 >/dev/null || true
		"$GREGOR" topic add-partitions "$1" --count $(($2 - have < step ? $2 - have : step)) \
			-b "$B_PLAIN" --timeout 600s >/dev/null || say "topic add-partitions $1 failed (above); going on"
	done
	python3 "$here/ready.py" "$B_PLAIN" --topic "$1" --partitions "$2" --isr "$RF" --offsets --since "$t0" --timeout 600
}

# phase NAME TOOL-KIND TIMEOUT CMD...: runs CMD against the current broker,
# measuring the broker's CPU seconds and sampled peak RSS over it (of a
# cluster: summed over its broker processes, RSS sampled at once for all),
# and appends one record (parsed from CMD's output by report.py) to $OUT.
# Extra record fields come from the array REC (key=value).
phase() {
	local name=$1 kind=$2 tmo=$3 c0 c1 rc=0 out sampler
	shift 3
	out=$CUR/$name.$kind.out
	c0=$(cpu_ticks "${B_PIDS[@]}")
	echo 0 >"$CUR/rss.peak"
	(
		peak=0
		while r=$(vm_kib_sum VmRSS); do
			((r > peak)) && peak=$r && echo "$peak" >"$CUR/rss.tmp" && mv "$CUR/rss.tmp" "$CUR/rss.peak"
			sleep 0.25
		done
	) &
	sampler=$!
	say "  $name: $*"
	timeout -k 10 "$tmo" "$@" >"$out" 2>"$out.err" || rc=$?
	c1=$(cpu_ticks "${B_PIDS[@]}" 2>/dev/null || echo "$c0")
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	python3 "$here/report.py" record --file "$OUT" --kind "$kind" --output "$out" --rc "$rc" \
		--set "${BASE[@]}" "${REC[@]}" phase="$name" \
		cpu_s="$(awk -v a="$c0" -v b="$c1" -v t="$TICK" 'BEGIN{printf "%.2f", (b-a)/t}')" \
		rss_peak_kib="$(cat "$CUR/rss.peak")" vmhwm_kib="$(vm_kib_sum VmHWM || echo 0)" \
		loadavg="$(cut -d' ' -f1 /proc/loadavg)" || true
	if ((rc != 0)); then say "  $name failed (exit $rc): $(tail -n 3 "$out.err" "$out" | tr '\n' ' ' | cut -c1-400)"; fi
	return 0
}

KJAVA=(java -Xmx512M -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$TOOLS_LIBS/*")

# Producer settings of one workload; set by run_workload.
PARTS=1 SIZE=1024 ACKS=1

# gb_produce [FLAG...]: sets CMD to gregor bench produce with the workload's
# settings (timeout runs commands, not functions, so these build arrays).
gb_produce() {
	CMD=("$GREGOR" bench produce -b "$B_BOOT" --topic "$TOPIC" --partitions "$PARTS"
		--record-size "$SIZE" --acks "$ACKS" --batch-max-bytes "$BATCH" --linger "${LINGER_MS}ms"
		--duration "${DUR}s" --progress 0 --json "${GB_SEC[@]}" "$@")
}
# kp_produce NUM THROUGHPUT [TOPIC]: sets CMD to ProducerPerformance likewise.
kp_produce() {
	CMD=("${KJAVA[@]}" org.apache.kafka.tools.ProducerPerformance --bootstrap-server "$B_BOOT"
		--topic "${3:-$TOPIC}" --num-records "$1" --record-size "$SIZE" --throughput "$2"
		"${KP_SEC[@]}" --command-property acks="$ACKS" batch.size="$BATCH" linger.ms="$LINGER_MS" buffer.memory=134217728)
}

# W3 records/s per tool; set by run_workload.
declare -A W3_RATE=()

# est_records KEY: records for a kafka-perf max-throughput run of about
# DUR seconds, from the last rate seen for KEY (either tool), else a guess.
declare -A LAST_RPS=()
est_records() {
	local rps=${LAST_RPS[$1]:-}
	[[ -n $rps ]] || rps=$((SIZE >= 1024 ? 50000 : 200000))
	awk -v r="$rps" -v d="$DUR" 'BEGIN{printf "%d", r * d}'
}
last_rps() { python3 "$here/report.py" last --file "$OUT" --field records_s; }

# modes_of TARGET WORKLOAD: the durability modes the workload runs in.
modes_of() {
	local m
	if [[ $1 == gregor ]]; then m="durable pagecache"; else m="default flush1"; fi
	[[ $2 == W5 ]] && { [[ $1 == gregor ]] && m=durable || m=default; }
	for x in $m; do
		if [[ -z $MODES || " $MODES " == *" $x "* ]]; then echo "$x"; fi
	done
}

# warm_up TOPIC: WARMUP seconds of unmeasured load at full speed on TOPIC
# (made with PARTS partitions if missing) right before the measured phase:
# every run starts a fresh broker, and a JVM broker compiles its hot paths
# in its first seconds of load. W1-W4 load a topic of their own; W5 loads
# its 10,000-partition topic after the low-rate phase, as a second topic
# that size would change its memory and start-up figures.
warm_up() {
	((WARMUP > 0)) || return 0
	"$GREGOR" bench produce -b "$B_BOOT" --topic "$1" --partitions "$PARTS" \
		--record-size "$SIZE" --acks "$ACKS" --batch-max-bytes "$BATCH" --linger "${LINGER_MS}ms" \
		--duration "${WARMUP}s" --progress 0 "${GB_SEC[@]}" >/dev/null 2>&1 || say "warm-up load failed; going on"
	REC+=(warmup_s="$WARMUP")
}

# run_one WORKLOAD TOOL: one run of WORKLOAD with TOOL against a fresh broker.
run_one() {
	local w=$1 tool=$2 key="$1/$MODE/$SIZE" n e2e_topic pid_e2e s t0 rate=${W3_RATE[$2]:-0} rc outlast
	CUR=$work/$w-$TARGET-$MODE-$tool-r$RUN
	TOPIC=bench-$w
	REC=(tool="$tool")
	if ! start_broker "$TARGET" "$MODE" "$CUR"; then
		python3 "$here/report.py" record --file "$OUT" --kind none --rc 1 --set "${BASE[@]}" "${REC[@]}" \
			phase=start error="broker did not start: $(tail -n 3 "$CUR"/*.log 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
		stop_broker
		return 0
	fi
	REC+=("${B_SETTINGS[@]}")
	s=$(create_topic "$TOPIC" "$PARTS") || s=""
	REC+=(create_s="$s")
	[[ $w == W5 ]] || warm_up bench-warmup
	case $w/$tool in
	W1/gregor-bench)
		gb_produce
		phase produce gregor-bench $((DUR * 3 + 60)) "${CMD[@]}"
		LAST_RPS[$key]=$(last_rps)
		phase consume gregor-bench $((DUR * 3 + 60)) "$GREGOR" bench consume -b "127.0.0.1:$B_PORT" \
			--topic "$TOPIC" --offset start --drain --duration "${DUR}s" --progress 0 --json "${GB_SEC[@]}"
		;;
	W1/kafka-perf)
		kp_produce "$(est_records "$key")" -1
		phase produce kafka-producer-perf $((DUR * 5 + 60)) "${CMD[@]}"
		LAST_RPS[$key]=$(last_rps)
		n=$(python3 "$here/report.py" last --file "$OUT" --field records)
		phase consume kafka-consumer-perf $((DUR * 5 + 60)) "${KJAVA[@]}" org.apache.kafka.tools.ConsumerPerformance \
			--bootstrap-server "127.0.0.1:$B_PORT" --topic "$TOPIC" --num-records "${n:-1}" \
			--group "bench-$RANDOM" --timeout 30000 "${KP_SEC[@]}"
		;;
	W2/gregor-bench | W4/gregor-bench | W6/gregor-bench)
		gb_produce
		phase produce gregor-bench $((DUR * 3 + 60)) "${CMD[@]}"
		LAST_RPS[$key]=$(last_rps)
		;;
	W7/gregor-bench)
		for n in 100 10000; do
			gb_produce --transaction-records "$n"
			phase "produce-txn$n" gregor-bench $((DUR * 3 + 60)) "${CMD[@]}"
		done
		;;
	W8/gregor-bench | W8/kafka-perf)
		# 200,000 records loaded first (not measured), then read by a
		# share group of 8, each record acknowledged.
		kp_produce "$W8_RECORDS" -1
		phase load kafka-producer-perf $((DUR * 5 + 60)) "${CMD[@]}"
		local sg=bench-share-$RANDOM
		if [[ $tool == gregor-bench ]]; then
			phase share gregor-bench $((DUR * 10 + 120)) "$GREGOR" bench share -b "$B_BOOT" --topic "$TOPIC" \
				--share-group "$sg" --consumers 8 --records "$W8_RECORDS" --duration "$((DUR * 10))s" --progress 0 --json
		else
			"${KJAVA[@]}" org.apache.kafka.tools.ConfigCommand --bootstrap-server "$B_BOOT" --entity-type groups \
				--entity-name "$sg" --alter --add-config share.auto.offset.reset=earliest >>"$CUR/bench.log" 2>&1 ||
				say "W8: setting share.auto.offset.reset of $sg failed"
			phase share kafka-share-perf $((DUR * 10 + 120)) "${KJAVA[@]}" org.apache.kafka.tools.ShareConsumerPerformance \
				--bootstrap-server "$B_BOOT" --topic "$TOPIC" --group "$sg" --num-records "$W8_RECORDS" --threads 8 \
				--timeout $((DUR * 10000))
		fi
		;;
	W2/kafka-perf | W4/kafka-perf | W6/kafka-perf)
		kp_produce "$(est_records "$key")" -1
		phase produce kafka-producer-perf $((DUR * 5 + 60)) "${CMD[@]}"
		LAST_RPS[$key]=$(last_rps)
		;;
	W3/gregor-bench)
		REC+=(rate="$rate")
		phase e2e gregor-bench $((DUR * 3 + 60)) "$GREGOR" bench e2e -b "127.0.0.1:$B_PORT" --topic "$TOPIC" \
			--partitions "$PARTS" --record-size "$SIZE" --acks "$ACKS" --batch-max-bytes "$BATCH" \
			--linger "${LINGER_MS}ms" --duration "${DUR}s" --rate "$rate" --progress 0 --json
		;;
	W3/kafka-perf)
		# ProducerPerformance loads TOPIC at rate and measures ack latency;
		# EndToEndLatency meanwhile sends one record at a time to a second
		# topic with the same partitions and times it to its consumer.
		REC+=(rate="$rate")
		e2e_topic=$TOPIC-e2e
		create_topic "$e2e_topic" "$PARTS" >/dev/null || true
		rm -f "$CUR/e2e.rc"
		(
			sleep 2
			timeout -k 10 $((W3_LOAD_S + 60)) "${KJAVA[@]}" org.apache.kafka.tools.EndToEndLatency --bootstrap-server "127.0.0.1:$B_PORT" \
				--topic "$e2e_topic" --num-records "$E2E_RECORDS" --producer-acks "$ACKS" --record-size "$SIZE" \
				>"$CUR/e2e.kafka-e2e.out" 2>"$CUR/e2e.kafka-e2e.out.err"
			echo $? >"$CUR/e2e.rc"
		) &
		pid_e2e=$!
		REC+=(load_s="$W3_LOAD_S")
		kp_produce "$(awk -v r="$rate" -v d="$W3_LOAD_S" 'BEGIN{printf "%d", r * d}')" "$rate"
		phase produce kafka-producer-perf $((W3_LOAD_S * 2 + 60)) "${CMD[@]}"
		# e2e.rc exists once EndToEndLatency has ended: it must have ended
		# while the load still ran.
		rc=0 outlast=()
		[[ -e $CUR/e2e.rc ]] || { rc=3 outlast=(error="EndToEndLatency outlasted the ${W3_LOAD_S} s load"); say "W3: ${outlast[0]#error=}"; }
		wait "$pid_e2e" || true
		((rc)) || rc=$(cat "$CUR/e2e.rc" 2>/dev/null || echo 1)
		python3 "$here/report.py" record --file "$OUT" --kind kafka-e2e --output "$CUR/e2e.kafka-e2e.out" \
			--rc "$rc" --set "${BASE[@]}" "${REC[@]}" phase=e2e e2e_records="$E2E_RECORDS" "${outlast[@]}" \
			note="EndToEndLatency: $E2E_RECORDS records one at a time (acks=$ACKS, linger 0), during the ProducerPerformance load" || true
		;;
	W5/gregor-bench | W5/kafka-perf)
		# Low rate over 10,000 partitions, then as fast as possible, then a
		# clean restart timed from exec to ready.
		REC+=(rate="$W5_LOW_RATE")
		if [[ $tool == gregor-bench ]]; then
			phase low-rate gregor-bench $((DUR * 3 + 60)) "$GREGOR" bench e2e -b "127.0.0.1:$B_PORT" --topic "$TOPIC" \
				--partitions "$PARTS" --record-size "$SIZE" --acks "$ACKS" --batch-max-bytes "$BATCH" \
				--linger "${LINGER_MS}ms" --duration "${DUR}s" --rate "$W5_LOW_RATE" --progress 0 --json
			REC=(tool="$tool" create_s="$s" "${B_SETTINGS[@]}")
			warm_up "$TOPIC"
			gb_produce
			phase produce gregor-bench $((DUR * 3 + 60)) "${CMD[@]}"
		else
			kp_produce $((W5_LOW_RATE * DUR)) "$W5_LOW_RATE"
			phase low-rate kafka-producer-perf $((DUR * 5 + 60)) "${CMD[@]}"
			REC=(tool="$tool" create_s="$s" "${B_SETTINGS[@]}")
			warm_up "$TOPIC"
			kp_produce "$(est_records "$key")" -1
			phase produce kafka-producer-perf $((DUR * 5 + 60)) "${CMD[@]}"
		fi
		LAST_RPS[$key]=$(last_rps)
		restart_timed
		;;
	esac
	stop_broker
}

# restart_timed: stops the broker cleanly, starts it again on the same data
# and port, and records the seconds from exec to ready: /readyz (Gregor
# only), a Metadata answer with every partition of TOPIC led (both), and
# ListOffsets answered for every partition (both).
restart_timed() {
	local port=$B_PORT vmhwm t0 s_meta s_offsets s_readyz="" rc=0
	vmhwm=$(vm_kib "$B_PID" VmHWM)
	stop_broker
	t0=$(date +%s.%N)
	if [[ $TARGET == kafka ]]; then
		"$root/compat-tests/kafka/kafka.sh" start "$CUR" "$port" 2>>"$CUR/bench.log" &
	else
		B_TARGET=gregor
		"$GREGOR" serve --log.dirs "$CUR/data" \
			--listeners "PLAINTEXT://127.0.0.1:$port" --admin.listener "127.0.0.1:$B_ADMIN" \
			--etcd.client.addr 127.0.0.1:0 --etcd.peer.addr 127.0.0.1:0 \
			--offsets.topic.replication.factor 1 --group.initial.rebalance.delay.ms 0 \
			</dev/null >>"$CUR/gregor.log" 2>&1 &
		B_PID=$!
		B_PIDS=("$B_PID")
		s_readyz=$(python3 - "$B_ADMIN" "$t0" <<'PY'
import sys, time, urllib.request
deadline = time.time() + 600
while time.time() < deadline:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/readyz", timeout=1).read()
        print(f"{time.time() - float(sys.argv[2]):.3f}")
        break
    except Exception:
        time.sleep(0.02)
PY
		)
	fi
	s_meta=$(python3 "$here/ready.py" "127.0.0.1:$port" --topic "$TOPIC" --partitions "$PARTS" --since "$t0" --timeout 600) || rc=1
	s_offsets=$(python3 "$here/ready.py" "127.0.0.1:$port" --topic "$TOPIC" --partitions "$PARTS" --offsets --since "$t0" --timeout 600) || rc=1
	if [[ $TARGET == kafka ]]; then
		wait $! || rc=1
		B_TARGET=kafka B_DIR=$CUR B_PID=$(cat "$CUR/kafka.pid" 2>/dev/null || echo "")
		B_PIDS=("$B_PID")
	fi
	python3 "$here/report.py" record --file "$OUT" --kind none --rc "$rc" --set "${BASE[@]}" tool="$TOOL" \
		phase=startup startup_s="$s_meta" offsets_s="$s_offsets" readyz_s="$s_readyz" vmhwm_kib="$vmhwm" \
		note="vmhwm_kib: the first broker process's lifetime peak (topic creation and both phases)" || true
}

run_workload() {
	local w=$1 pairs tools=$TOOLS
	BROKERS=1 RF=1 MIN_ISR=""
	case $w in
	W1) PARTS=1 SIZE=1024 ACKS=1 ;;
	W2) PARTS=16 SIZE=1024 ACKS=all ;;
	W3) PARTS=100 SIZE=1024 ACKS=all ;;
	W4) PARTS=16 SIZE=100 ACKS=all ;;
	W5) PARTS=$W5_PARTITIONS SIZE=1024 ACKS=all ;;
	W6) PARTS=16 SIZE=1024 ACKS=all BROKERS=3 RF=3 MIN_ISR=2 ;;
	W7)
		PARTS=16 SIZE=1024 ACKS=all
		# Kafka's ProducerPerformance ends transactions by time, not by
		# record count: W7 runs gregor bench against both brokers.
		tools=gregor-bench
		;;
	W8) PARTS=1 SIZE=1024 ACKS=all ;;
	*) die "unknown workload $w (W1 W2 W3 W4 W5 W6 W7 W8 probe)" ;;
	esac
	W3_RATE=()
	if [[ $w == W3 ]]; then
		# Each tool loads both brokers at half of what Kafka reached in W2
		# with that tool: the Java producer's ceiling is far below franz-go's,
		# and a rate neither broker reaches would load each as hard as it
		# can take, not equally.
		local t r
		for t in $TOOLS; do
			r=${BENCH_W3_RATE:-}
			[[ -n $r ]] || r=$(python3 "$here/report.py" w3rate --tool "$t" 2>/dev/null || true)
			[[ -n $r ]] || { r=10000; say "W3: no Kafka W2 default-mode results with $t yet; using $r records/s"; }
			W3_RATE[$t]=$r
		done
	fi
	local stem=$w
	[[ $SECURITY == plaintext ]] || stem+=-$SECURITY
	[[ -z $TLS_BASELINE ]] || stem+=-tlsbase
	for TARGET in $TARGETS; do
		OUT=$work/$stem-$TARGET.jsonl
		: >"$OUT"
		for MODE in $(modes_of "$TARGET" "$w"); do
			for ((RUN = 1; RUN <= RUNS; RUN++)); do
				for TOOL in $tools; do
					say "$w $TARGET $MODE $TOOL run $RUN/$RUNS"
					BASE=(session="$session" workload="$w" security="$SECURITY" ${TLS_BASELINE:+baseline=tls} target="$TARGET" mode="$MODE" run="$RUN"
						duration_s="$DUR" partitions="$PARTS" record_size="$SIZE" acks="$ACKS"
						batch_bytes="$BATCH" linger_ms="$LINGER_MS")
					if ((BROKERS > 1)); then
						BASE+=(brokers="$BROKERS" replication_factor="$RF" min_insync_replicas="$MIN_ISR"
							kafka_heap="$KAFKA_CLUSTER_HEAP")
					else
						BASE+=(kafka_heap="$KAFKA_HEAP")
					fi
					run_one "$w" "$TOOL"
					case ${KEEP_WORK:-0} in
					1) ;;
					logs) rm -rf "$CUR"/data "$CUR"/data-* "$CUR"/node-*/data ;;
					*) rm -rf "$CUR" ;;
					esac
				done
			done
		done
		python3 "$here/report.py" merge --into "$here/results/$stem-$TARGET.jsonl" --new "$OUT" \
			--modes "$(modes_of "$TARGET" "$w")" --tools "$tools"
	done
}

# probe: the TCP->file ceiling, page cache and fsync per MiB, for the byte
# volume of W1 (Gregor's median, else 4 GiB).
run_probe() {
	local bytes fs
	bytes=$(python3 "$here/report.py" w1bytes 2>/dev/null || true)
	[[ -n $bytes ]] || bytes=$((4 << 30))
	OUT=$work/probe.jsonl
	: >"$OUT"
	for fs in false true; do
		for ((RUN = 1; RUN <= RUNS; RUN++)); do
			say "probe fsync=$fs run $RUN/$RUNS: $bytes bytes"
			python3 "$here/report.py" record --file "$OUT" --kind tcpfile --output <("$work/tcpfile" -bytes "$bytes" -dir "$work" -fsync="$fs" 2>&1) \
				--set session="$session" workload=probe target=probe mode="$([[ $fs == true ]] && echo fsync || echo pagecache)" \
				tool=tcpfile phase=probe run="$RUN" record_size=1024 || true
		done
	done
	cp "$OUT" "$here/results/probe.jsonl"
}

t_start=$SECONDS
for w in $WORKLOADS; do
	if [[ $w == probe ]]; then
		run_probe
		continue
	fi
	run_workload "$w"
	[[ $w == W1 && $SECURITY == plaintext && -z $TLS_BASELINE ]] && run_probe
done
say "done in $((SECONDS - t_start))s; rendering RESULTS.md"
python3 "$here/report.py" render
