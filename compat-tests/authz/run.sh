#!/usr/bin/env bash
# make authz-matrix: the authorization matrix (compat-tests/go/cmd/authzmatrix,
# whose package doc says what it sends) against Gregor and then against
# Apache Kafka 4.4 with its StandardAuthorizer, one broker at a time, both
# configured alike:
#
#   PLAINTEXT listener    the harness's admin, as User:ANONYMOUS (a super user)
#   SASL_PLAINTEXT        PLAIN, users admin, alice and bob from the listener's
#                         JAAS config; the matrix runs as bob
#   authorizer            org.apache.kafka.metadata.authorizer.StandardAuthorizer,
#                         super.users=User:admin;User:ANONYMOUS
#
# Kafka's controller listener is PLAINTEXT too (its principal, ANONYMOUS, is a
# super user, so the broker and controller of the one node may talk).
#
# The two outputs land in compat-tests/authz/results/{gregor,kafka}.tsv, and
# the run fails on any (API, case) whose result differs and is not listed in
# known-differences.tsv with a reason (or is listed but no longer differs).
#
# Settings (environment): AUTHZ_TARGETS (default "gregor kafka"; one of them
# reruns that side only and compares with the other's last output),
# AUTHZ_ONLY (run only the APIs whose name contains it), AUTHZ_KEEP=1 (keep
# the work dir), COMPAT_CACHE (where kafka.sh finds or downloads the Kafka
# jars; default compat-tests/.cache).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
results=$here/results
export COMPAT_CACHE=${COMPAT_CACHE:-$root/compat-tests/.cache}
START_TIMEOUT=${AUTHZ_START_TIMEOUT:-120}
targets=${AUTHZ_TARGETS:-gregor kafka}

say() { echo "$*" >&2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gregor-authz.XXXXXX")
gregor_pid=""
kafka_dir=""
finish() {
	local rc=$?
	stop_gregor
	stop_kafka
	if ((rc == 0)) && [[ ${AUTHZ_KEEP:-0} != 1 ]]; then
		rm -rf "$work"
	else
		say "authz: logs kept in $work"
	fi
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

users='user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret"'
jaas="org.apache.kafka.common.security.plain.PlainLoginModule required $users;"
authorizer=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super_users='User:admin;User:ANONYMOUS'

start_gregor() {
	local plain=$1 sasl=$2 admin deadline
	admin=$(free_port)
	(cd "$root" && go build -o bin/gregor ./cmd/gregor)
	"$root/bin/gregor" serve \
		--node.id 1 \
		--log.dirs "$work/gregor-data" \
		--listeners "PLAINTEXT://127.0.0.1:$plain,SASL_PLAINTEXT://127.0.0.1:$sasl" \
		--admin.listener "127.0.0.1:$admin" \
		--etcd.client.addr 127.0.0.1:0 \
		--etcd.peer.addr 127.0.0.1:0 \
		--group.initial.rebalance.delay.ms 0 \
		--transaction.state.log.min.isr 1 \
		--share.coordinator.state.topic.min.isr 1 \
		--sasl.enabled.mechanisms PLAIN \
		--listener.name.sasl_plaintext.plain.sasl.jaas.config "$jaas" \
		--authorizer.class.name "$authorizer" \
		--super.users "$super_users" \
		</dev/null >"$work/gregor.log" 2>&1 &
	gregor_pid=$!
	deadline=$((SECONDS + START_TIMEOUT))
	until python3 - "$plain" "$sasl" "$admin" <<'PY' 2>/dev/null; do
import socket, sys, urllib.request
for p in sys.argv[1:3]:
    socket.create_connection(("127.0.0.1", int(p)), timeout=1).close()
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[3]}/readyz", timeout=1).read()
PY
		kill -0 "$gregor_pid" 2>/dev/null || { say "authz: gregor exited: $(tail -n 5 "$work/gregor.log")"; return 1; }
		((SECONDS < deadline)) || { say "authz: gregor not ready within ${START_TIMEOUT}s"; return 1; }
		sleep 0.2
	done
	say "authz: gregor (pid $gregor_pid) ready on 127.0.0.1:$plain (PLAINTEXT), 127.0.0.1:$sasl (SASL_PLAINTEXT)"
}

stop_gregor() {
	[[ -n $gregor_pid ]] || return 0
	kill -TERM "$gregor_pid" 2>/dev/null || true
	local deadline=$((SECONDS + 30))
	while kill -0 "$gregor_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
	kill -KILL "$gregor_pid" 2>/dev/null || true
	wait "$gregor_pid" 2>/dev/null || true
	gregor_pid=""
}

start_kafka() {
	local plain=$1 sasl=$2 controller
	controller=$(free_port)
	kafka_dir=$work/kafka
	# kafka.sh writes its single-node configuration first; these lines
	# come after it, and a later key wins in a properties file.
	KAFKA_EXTRA_PROPERTIES="listeners=PLAINTEXT://127.0.0.1:$plain,SASL_PLAINTEXT://127.0.0.1:$sasl,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$plain,SASL_PLAINTEXT://127.0.0.1:$sasl
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=$jaas
authorizer.class.name=$authorizer
super.users=$super_users" \
		bash "$root/compat-tests/kafka/kafka.sh" start "$kafka_dir" "$plain" "$controller"
}

stop_kafka() {
	[[ -n $kafka_dir ]] || return 0
	bash "$root/compat-tests/kafka/kafka.sh" stop "$kafka_dir" || true
	kafka_dir=""
}

say "authz: building authzmatrix"
(cd "$root/compat-tests/go" && go build -o "$work/authzmatrix" ./cmd/authzmatrix)
mkdir -p "$results"

for target in $targets; do
	plain=$(free_port)
	sasl=$(free_port)
	"start_$target" "$plain" "$sasl"
	say "authz: running the matrix against $target"
	"$work/authzmatrix" -admin "127.0.0.1:$plain" -sasl "127.0.0.1:$sasl" \
		-only "${AUTHZ_ONLY:-}" -out "$work/$target.tsv"
	mv "$work/$target.tsv" "$results/$target.tsv"
	"stop_$target"
done

for target in gregor kafka; do
	[[ -f $results/$target.tsv ]] || { say "authz: no $results/$target.tsv to compare; run with AUTHZ_TARGETS=$target"; exit 1; }
done
"$work/authzmatrix" -compare -known "$here/known-differences.tsv" "$results/gregor.tsv" "$results/kafka.tsv"
