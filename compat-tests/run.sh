#!/usr/bin/env bash
# The compatibility lab (`make compat`): starts a fresh broker, runs every
# suite (see README.md here for the contract) against it, writes the results
# to results/<target>.tsv and regenerates RESULTS.md and the matrix in the
# top-level README.md.
#
#   compat-tests/run.sh [--target gregor|kafka] [--cluster N] [--security sasl_ssl|mtls] [SUITE...]
#
# --target gregor (the default) builds bin/gregor and runs it on free ports in
# a temp dir; --target kafka starts Apache Kafka 4.x with kafka/kafka.sh.
# Both run with the settings of Kafka's sample single-node server.properties
# where they differ from the defaults (group.initial.rebalance.delay.ms=0).
# --cluster N (N >= 2; `make compat CLUSTER=3`) starts a cluster of N brokers
# instead, node ids 1..N, with the internal topics replicated to three
# (README.md lists the settings), hands the suites all N addresses as one
# comma-separated bootstrap list, and writes results/<target>-clusterN.tsv.
# SUITE names a directory here (java-clients, console, ...); the default is
# every directory with a setup.sh and a run.sh. With a subset, only those
# suites' rows of the results file are replaced.
#
# --security sasl_ssl|mtls (`make compat-secure`) adds a secure listener to
# the one broker: SASL_SSL with SCRAM-SHA-512, or SSL requiring a client
# certificate (mTLS), beside the PLAINTEXT one used to create the SCRAM user.
# The CA, broker and client certificates are made with openssl in the work
# dir. The suites get the secure listener's address and COMPAT_SECURITY,
# COMPAT_CA, COMPAT_CLIENT_CERT, COMPAT_CLIENT_KEY, COMPAT_SASL_MECHANISM,
# COMPAT_SASL_USER, COMPAT_SASL_PASSWORD (see README.md); they run their
# produce/consume/group scenarios and mark the others skip. The results go
# to results/<target>-<security>.tsv, outside the matrix.
#
# Exit status: non-zero when a scenario fails that known-gaps.tsv does not
# list for the target, when a scenario that passes against Kafka is missing
# from the Gregor run, or when the lab itself breaks.
#
# Environment: KEEP_WORK=1 keeps the work dir (it is kept anyway on failure);
# SUITE_TIMEOUT (seconds per suite run, default 900); GREGOR_SERVE_ARGS
# (extra flags for gregor serve, for every broker); TARGET and CLUSTER, the
# defaults of --target and --cluster; SECURITY, the default of --security;
# COMPAT_CACHE, where the suites keep what they install (default .cache here).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
target=${TARGET:-gregor}
cluster=${CLUSTER:-1}
security=${SECURITY:-}
suites=()
while (($#)); do
	case $1 in
	--target) target=$2; shift 2 ;;
	--target=*) target=${1#--target=}; shift ;;
	--cluster) cluster=$2; shift 2 ;;
	--cluster=*) cluster=${1#--cluster=}; shift ;;
	--security) security=$2; shift 2 ;;
	--security=*) security=${1#--security=}; shift ;;
	-h | --help) sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) suites+=("$1"); shift ;;
	esac
done
case $target in gregor | kafka) ;; *) echo "run.sh: unknown target $target (gregor or kafka)" >&2; exit 2 ;; esac
[[ $cluster =~ ^[1-9]$ ]] || { echo "run.sh: --cluster wants a number of brokers from 1 to 9, got '$cluster'" >&2; exit 2; }
case $security in "" | sasl_ssl | mtls) ;; *) echo "run.sh: unknown security $security (sasl_ssl or mtls)" >&2; exit 2 ;; esac
[[ -z $security ]] || ((cluster == 1)) || { echo "run.sh: --security runs against one broker only" >&2; exit 2; }
# run: the name of this kind of run in results/ and known-gaps.tsv.
run=$target
((cluster == 1)) || run=$target-cluster$cluster
[[ -z $security ]] || run=$target-$security
merge_args=()
if ((${#suites[@]} > 0)); then
	merge_args=(--suites "${suites[@]}")
else
	for d in "$here"/*/; do
		d=${d%/}
		[[ -x $d/setup.sh && -x $d/run.sh ]] && suites+=("$(basename "$d")")
	done
	# The secure runs are for the client libraries and tools; Kafka
	# Streams and Gregor's own CLI are not among them.
	[[ -z $security ]] || suites=(java-clients console python js go)
fi
SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}
START_TIMEOUT=90

export COMPAT_CACHE=${COMPAT_CACHE:-$here/.cache}
mkdir -p "$COMPAT_CACHE" "$here/results"
work=$(mktemp -d "${TMPDIR:-/tmp}/gregor-compat.XXXXXX")
results=$work/results.tsv
: >"$results"
broker_pids=()
gregor_extra=() # security flags of a --security run
gregor_listeners="" # and its listeners
t0=$SECONDS

say() { printf '%s\n' "$*"; }

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# free_ports N: N distinct free ports, space-separated (all bound at once, so
# that none is handed out twice).
free_ports() {
	python3 - "$1" <<'EOF'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
EOF
}

# lab_fail SUITE REASON: records a failure of the lab itself for SUITE, so
# that it shows in the matrix instead of vanishing.
lab_fail() {
	printf '%s\t-\tsuite\tfail\t0\t%s\n' "$1" "${2//$'\t'/ }" >>"$results"
}

# stop_target: SIGTERM to every broker at once, SIGKILL to those still
# running after 30 s.
stop_target() {
	if [[ $target == kafka ]]; then
		"$here/kafka/kafka.sh" stop "$work/kafka" || true
	elif ((${#broker_pids[@]} > 0)); then
		local pid deadline=$((SECONDS + 30))
		kill -TERM "${broker_pids[@]}" 2>/dev/null || true
		for pid in "${broker_pids[@]}"; do
			while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
			kill -KILL "$pid" 2>/dev/null || true
		done
	fi
	broker_pids=()
}

# dead_brokers: the node ids (1-based) of the Gregor brokers that exited.
dead_brokers() {
	local i
	for i in "${!broker_pids[@]}"; do
		kill -0 "${broker_pids[i]}" 2>/dev/null || printf '%s ' "$((i + 1))"
	done
}

# gregor_log N: broker N's log (the single broker's is gregor.log).
gregor_log() {
	if ((cluster == 1)); then echo "$work/gregor.log"; else echo "$work/gregor-$1.log"; fi
}

finish() {
	local rc=$?
	stop_target
	if ((rc == 0)) && [[ ${KEEP_WORK:-0} != 1 ]]; then
		rm -rf "$work"
	else
		say "compat: logs kept in $work"
	fi
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

start_gregor() {
	local port=$1 admin deadline
	admin=$(free_port)
	say "compat: building bin/gregor"
	(cd "$root" && go build -o bin/gregor ./cmd/gregor)
	# shellcheck disable=SC2086 # GREGOR_SERVE_ARGS is a list of flags.
	"$root/bin/gregor" serve \
		--log.dirs "$work/gregor-data,$work/gregor-data-b" \
		--listeners "${gregor_listeners:-PLAINTEXT://127.0.0.1:$port}" \
		--admin.listener "127.0.0.1:$admin" \
		--etcd.client.addr 127.0.0.1:0 \
		--etcd.peer.addr 127.0.0.1:0 \
		--group.initial.rebalance.delay.ms 0 \
		"${gregor_extra[@]}" \
		${GREGOR_SERVE_ARGS:-} \
		</dev/null >"$work/gregor.log" 2>&1 &
	broker_pids=($!)
	deadline=$((SECONDS + START_TIMEOUT))
	until python3 - "$port" "$admin" <<'EOF' 2>/dev/null; do
import socket, sys, urllib.request
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[2]}/healthz", timeout=1).read()
EOF
		kill -0 "${broker_pids[0]}" 2>/dev/null || { say "compat: gregor exited: $(tail -n 5 "$work/gregor.log")"; return 1; }
		((SECONDS < deadline)) || { say "compat: gregor not ready within ${START_TIMEOUT}s"; return 1; }
		sleep 0.2
	done
	say "compat: gregor (pid ${broker_pids[0]}) ready on 127.0.0.1:$port"
}

# start_gregor_cluster PORT...: one broker per port, node ids 1..N, each
# embedding one member of an N-member etcd cluster, with the lab's settings
# and the internal topics replicated as Kafka's cluster has them; ready when
# every broker's /readyz answers 200 and each one's metadata lists N brokers.
start_gregor_cluster() {
	local ports=("$@") n=$# i admins clients peers initial="" deadline dead
	read -r -a admins <<<"$(free_ports "$n")"
	read -r -a clients <<<"$(free_ports "$n")"
	read -r -a peers <<<"$(free_ports "$n")"
	for ((i = 1; i <= n; i++)); do
		initial+="${initial:+,}gregor-$i=http://127.0.0.1:${peers[i - 1]}"
	done
	say "compat: building bin/gregor"
	(cd "$root" && go build -o bin/gregor ./cmd/gregor)
	for ((i = 1; i <= n; i++)); do
		# shellcheck disable=SC2086 # GREGOR_SERVE_ARGS is a list of flags.
		"$root/bin/gregor" serve \
			--node.id "$i" \
			--log.dirs "$work/gregor-data-$i,$work/gregor-data-$i-b" \
			--listeners "PLAINTEXT://127.0.0.1:${ports[i - 1]}" \
			--admin.listener "127.0.0.1:${admins[i - 1]}" \
			--etcd.client.addr "127.0.0.1:${clients[i - 1]}" \
			--etcd.peer.addr "127.0.0.1:${peers[i - 1]}" \
			--etcd.initial.cluster "$initial" \
			--group.initial.rebalance.delay.ms 0 \
			--offsets.topic.replication.factor 3 \
			--default.replication.factor 1 \
			${GREGOR_SERVE_ARGS:-} \
			</dev/null >"$(gregor_log "$i")" 2>&1 &
		broker_pids+=($!)
	done
	deadline=$((SECONDS + START_TIMEOUT))
	until python3 - "$n" "${ports[*]}" "${admins[*]}" <<'EOF' 2>/dev/null; do
import socket, struct, sys, urllib.request
n = int(sys.argv[1])
for port, admin in zip(sys.argv[2].split(), sys.argv[3].split()):
    urllib.request.urlopen(f"http://127.0.0.1:{admin}/readyz", timeout=1).read()
    # Metadata v0, all topics: the answer starts with the brokers' count.
    req = struct.pack(">hhih", 3, 0, 1, 10) + b"compat-lab" + struct.pack(">i", 0)
    with socket.create_connection(("127.0.0.1", int(port)), timeout=2) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        head = s.recv(12, socket.MSG_WAITALL)
    assert struct.unpack(">iii", head)[2] == n
EOF
		dead=$(dead_brokers)
		[[ -z $dead ]] || { say "compat: gregor broker(s) $dead exited: $(tail -n 5 "$(gregor_log "${dead%% *}")")"; return 1; }
		((SECONDS < deadline)) || { say "compat: the gregor cluster was not ready within ${START_TIMEOUT}s"; return 1; }
		sleep 0.5
	done
	say "compat: gregor cluster (pids ${broker_pids[*]}) ready on 127.0.0.1 ports ${ports[*]}"
}

# make_certs DIR: a CA (ca.pem), the broker's key and chain in one PEM file
# (broker-store.pem, SAN 127.0.0.1 and localhost) and a client's key and
# certificate (client.key, client.pem, CN=client), all signed by the CA
# (lib/certs.sh, which the benchmark's SSL runs use too).
make_certs() {
	"$here/lib/certs.sh" "$1"
}

# configure_security PORT CONTROLLER_PORT: the secure listener on PORT
# beside the PLAINTEXT one (and Kafka's controller on CONTROLLER_PORT, all
# three picked at once so that they differ), in Kafka's keys for both targets (flags for Gregor, server.properties
# lines for Kafka), and the COMPAT_* variables the suites read.
configure_security() {
	local sport=$1 cport=$2 name=SASL_SSL certs=$work/certs
	[[ $security == sasl_ssl ]] || name=SSL
	make_certs "$certs"
	local keys=(
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,$name:$name"
		ssl.keystore.type=PEM "ssl.keystore.location=$certs/broker-store.pem"
		ssl.truststore.type=PEM "ssl.truststore.location=$certs/ca.pem"
	)
	export COMPAT_SECURITY=$security COMPAT_CA=$certs/ca.pem
	if [[ $security == sasl_ssl ]]; then
		keys+=(sasl.enabled.mechanisms=SCRAM-SHA-512
			"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;")
		export COMPAT_SASL_MECHANISM=SCRAM-SHA-512 COMPAT_SASL_USER=alice COMPAT_SASL_PASSWORD=alice-secret
	else
		keys+=(listener.name.ssl.ssl.client.auth=required)
		export COMPAT_CLIENT_CERT=$certs/client.pem COMPAT_CLIENT_KEY=$certs/client.key
	fi
	if [[ $target == kafka ]]; then
		export KAFKA_CONTROLLER_PORT=$cport
		keys[0]="listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,$name:$name"
		keys+=("listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,$name://127.0.0.1:$sport"
			"advertised.listeners=PLAINTEXT://127.0.0.1:$port,$name://127.0.0.1:$sport")
		KAFKA_EXTRA_PROPERTIES=$(printf '%s\n' "${keys[@]}")
		export KAFKA_EXTRA_PROPERTIES
	else
		local k
		gregor_listeners="PLAINTEXT://127.0.0.1:$port,$name://127.0.0.1:$sport"
		for k in "${keys[@]}"; do
			[[ $k == *jaas.config* ]] || gregor_extra+=("--${k%%=*}" "${k#*=}")
		done
	fi
}

# create_scram_user: the SASL user of a sasl_ssl run, made over PLAINTEXT
# with kafka-configs (the console suite's tools), for either target.
create_scram_user() {
	local libs
	libs=$(bash "$here/console/fetch.sh")
	java -cp "$libs/*" org.apache.kafka.tools.ConfigCommand --bootstrap-server "127.0.0.1:$port" --alter \
		--entity-type users --entity-name "$COMPAT_SASL_USER" \
		--add-config "SCRAM-SHA-512=[iterations=4096,password=$COMPAT_SASL_PASSWORD]" \
		>"$work/scram-user.log" 2>&1 || { say "compat: creating the SCRAM user failed: $(tail -n 5 "$work/scram-user.log")"; return 1; }
	say "compat: SCRAM-SHA-512 user $COMPAT_SASL_USER created"
}

# probe_secure_listener: one result line (client lab) saying whether the
# secure listener refuses a client that does not authenticate: over mtls a
# TLS client without a certificate, over sasl_ssl a TLS client that sends a
# Metadata request before any SASL exchange. Refused means the connection
# fails or closes without an answer.
probe_secure_listener() {
	local st=$SECONDS line
	line=$(python3 - "$secure_port" "$COMPAT_CA" "$security" <<'PY'
import socket, ssl, struct, sys
port, ca, security = int(sys.argv[1]), sys.argv[2], sys.argv[3]
# mtls: ApiVersions v0; sasl_ssl: Metadata v0 for all topics.
api = 18 if security == "mtls" else 3
req = struct.pack(">hhih", api, 0, 7, 9) + b"lab-probe" + (b"" if api == 18 else struct.pack(">i", -1))
ctx = ssl.create_default_context(cafile=ca)
try:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(struct.pack(">i", len(req)) + req)
            head = s.recv(4)
    if len(head) == 4:
        print("fail\tthe broker answered (%d bytes) a client that did not authenticate" % struct.unpack(">i", head)[0])
    else:
        print("pass\tthe connection closed without an answer")
except (OSError, ssl.SSLError) as e:
    print("pass\trefused: %s: %s" % (type(e).__name__, e))
PY
	)
	printf 'lab\t-\t%s-refuses-unauthenticated\t%s\n' "$security" "${line/$'\t'/$'\t'$((SECONDS - st))$'\t'}" >>"$results"
	say "compat: secure listener probe: ${line//$'\t'/: }"
}

# Set up every suite before the broker starts: installs take the network and
# time, and a broker should not idle through them.
ready=()
for s in "${suites[@]}"; do
	[[ -x $here/$s/setup.sh && -x $here/$s/run.sh ]] || { say "compat: $s is not a suite (no setup.sh/run.sh)"; lab_fail "$s" "not a suite"; continue; }
	say "compat: setting up $s"
	mkdir -p "$work/$s"
	st=$SECONDS
	if COMPAT_WORK=$work/$s "$here/$s/setup.sh" >"$work/$s/setup.log" 2>&1; then
		ready+=("$s")
		say "compat: $s set up in $((SECONDS - st))s"
	else
		say "compat: setting up $s failed: $(tail -n 5 "$work/$s/setup.log")"
		lab_fail "$s" "setup.sh failed: $(tail -n 3 "$work/$s/setup.log" | tr '\n' ' ')"
	fi
done
setup_seconds=$((SECONDS - t0))

if ((cluster == 1)); then
	read -r port secure_port controller_port <<<"$(free_ports 3)"
	ports=("$port")
	[[ -z $security ]] || configure_security "$secure_port" "$controller_port"
	if [[ $target == kafka ]]; then
		KAFKA_TWO_LOG_DIRS=1 "$here/kafka/kafka.sh" start "$work/kafka" "$port"
	else
		start_gregor "$port"
	fi
else
	read -r -a ports <<<"$(free_ports "$cluster")"
	if [[ $target == kafka ]]; then
		list=${ports[*]}
		KAFKA_TWO_LOG_DIRS=1 "$here/kafka/kafka.sh" start-cluster "$work/kafka" "${list// /,}"
	else
		start_gregor_cluster "${ports[@]}"
	fi
fi
bootstrap=$(printf '127.0.0.1:%s,' "${ports[@]}")
bootstrap=${bootstrap%,}
if [[ -n $security ]]; then
	[[ $security != sasl_ssl ]] || create_scram_user
	bootstrap=127.0.0.1:$secure_port
	probe_secure_listener
fi

run_started=$SECONDS
for s in "${ready[@]}"; do
	say "compat: running $s against $target at $bootstrap"
	before=$(wc -l <"$results")
	st=$SECONDS
	rc=0
	COMPAT_WORK=$work/$s COMPAT_RESULTS=$results COMPAT_TARGET=$target \
		COMPAT_PREFIX="c$(date +%s)-$s" \
		timeout -k 10 "$SUITE_TIMEOUT" "$here/$s/run.sh" "$bootstrap" >"$work/$s/run.log" 2>&1 || rc=$?
	n=$(($(wc -l <"$results") - before))
	say "compat: $s: $n result(s) in $((SECONDS - st))s, exit $rc"
	if ((rc != 0)); then
		lab_fail "$s" "run.sh exited with status $rc after $((SECONDS - st))s$( ((rc == 124)) && echo " (timed out)"): $(tail -n 3 "$work/$s/run.log" | tr '\n\t' '  ')"
	elif ((n == 0)); then
		lab_fail "$s" "run.sh reported no results: $(tail -n 3 "$work/$s/run.log" | tr '\n\t' '  ')"
	fi
	dead=""
	[[ $target != gregor ]] || dead=$(dead_brokers)
	if [[ -n $dead ]]; then
		say "compat: gregor broker(s) $dead died during $s: $(tail -n 5 "$(gregor_log "${dead%% *}")")"
		lab_fail "$s" "the broker died during this suite"
		break
	fi
done
run_seconds=$((SECONDS - run_started))
stop_target

say "compat: setup ${setup_seconds}s, suites ${run_seconds}s, total $((SECONDS - t0))s"
python3 "$here/results.py" merge "$run" "$results" --seconds "$((SECONDS - t0))" "${merge_args[@]}"
# A secure run has a file of its own, outside the matrix.
[[ -n $security ]] || python3 "$here/results.py" render
python3 "$here/results.py" check "$run"
