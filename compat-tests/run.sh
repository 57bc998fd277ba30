#!/usr/bin/env bash
# The compatibility lab (`make compat`): starts a fresh broker, runs every
# suite (see README.md here for the contract) against it, writes the results
# to results/<target>.tsv and regenerates RESULTS.md and the matrix in the
# top-level README.md.
#
#   compat-tests/run.sh [--target gregor|kafka] [SUITE...]
#
# --target gregor (the default) builds bin/gregor and runs it on free ports in
# a temp dir; --target kafka starts Apache Kafka 4.x with kafka/kafka.sh.
# Both run with the settings of Kafka's sample single-node server.properties
# where they differ from the defaults (group.initial.rebalance.delay.ms=0).
# SUITE names a directory here (java-clients, console, ...); the default is
# every directory with a setup.sh and a run.sh. With a subset, only those
# suites' rows of the results file are replaced.
#
# Exit status: non-zero when a scenario fails that known-gaps.tsv does not
# list for the target, when a scenario that passes against Kafka is missing
# from the Gregor run, or when the lab itself breaks.
#
# Environment: KEEP_WORK=1 keeps the work dir (it is kept anyway on failure);
# SUITE_TIMEOUT (seconds per suite run, default 900); GREGOR_SERVE_ARGS
# (extra flags for gregor serve).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
target=${TARGET:-gregor}
suites=()
while (($#)); do
	case $1 in
	--target) target=$2; shift 2 ;;
	--target=*) target=${1#--target=}; shift ;;
	-h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) suites+=("$1"); shift ;;
	esac
done
case $target in gregor | kafka) ;; *) echo "run.sh: unknown target $target (gregor or kafka)" >&2; exit 2 ;; esac
merge_args=()
if ((${#suites[@]} > 0)); then
	merge_args=(--suites "${suites[@]}")
else
	for d in "$here"/*/; do
		d=${d%/}
		[[ -x $d/setup.sh && -x $d/run.sh ]] && suites+=("$(basename "$d")")
	done
fi
SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}
START_TIMEOUT=90

export COMPAT_CACHE=$here/.cache
mkdir -p "$COMPAT_CACHE" "$here/results"
work=$(mktemp -d "${TMPDIR:-/tmp}/gregor-compat.XXXXXX")
results=$work/results.tsv
: >"$results"
broker_pid=""
t0=$SECONDS

say() { printf '%s\n' "$*"; }

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# lab_fail SUITE REASON: records a failure of the lab itself for SUITE, so
# that it shows in the matrix instead of vanishing.
lab_fail() {
	printf '%s\t-\tsuite\tfail\t0\t%s\n' "$1" "${2//$'\t'/ }" >>"$results"
}

stop_target() {
	if [[ $target == kafka ]]; then
		"$here/kafka/kafka.sh" stop "$work/kafka" || true
	elif [[ -n $broker_pid ]] && kill -0 "$broker_pid" 2>/dev/null; then
		kill -TERM "$broker_pid"
		local deadline=$((SECONDS + 30))
		while kill -0 "$broker_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
		kill -KILL "$broker_pid" 2>/dev/null || true
	fi
	broker_pid=""
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
		--log.dirs "$work/gregor-data" \
		--listeners "PLAINTEXT://127.0.0.1:$port" \
		--admin.listener "127.0.0.1:$admin" \
		--etcd.client.addr 127.0.0.1:0 \
		--etcd.peer.addr 127.0.0.1:0 \
		--group.initial.rebalance.delay.ms 0 \
		${GREGOR_SERVE_ARGS:-} \
		</dev/null >"$work/gregor.log" 2>&1 &
	broker_pid=$!
	deadline=$((SECONDS + START_TIMEOUT))
	until python3 - "$port" "$admin" <<'EOF' 2>/dev/null; do
import socket, sys, urllib.request
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[2]}/healthz", timeout=1).read()
EOF
		kill -0 "$broker_pid" 2>/dev/null || { say "compat: gregor exited: $(tail -n 5 "$work/gregor.log")"; return 1; }
		((SECONDS < deadline)) || { say "compat: gregor not ready within ${START_TIMEOUT}s"; return 1; }
		sleep 0.2
	done
	say "compat: gregor (pid $broker_pid) ready on 127.0.0.1:$port"
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

port=$(free_port)
if [[ $target == kafka ]]; then
	"$here/kafka/kafka.sh" start "$work/kafka" "$port"
else
	start_gregor "$port"
fi
bootstrap=127.0.0.1:$port

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
	if [[ $target == gregor ]] && ! kill -0 "$broker_pid" 2>/dev/null; then
		say "compat: gregor died during $s: $(tail -n 5 "$work/gregor.log")"
		lab_fail "$s" "the broker died during this suite"
		break
	fi
done
run_seconds=$((SECONDS - run_started))
stop_target

say "compat: setup ${setup_seconds}s, suites ${run_seconds}s, total $((SECONDS - t0))s"
python3 "$here/results.py" merge "$target" "$results" --seconds "$((SECONDS - t0))" "${merge_args[@]}"
python3 "$here/results.py" render
python3 "$here/results.py" check "$target"
