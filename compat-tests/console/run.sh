#!/usr/bin/env bash
# Round trips through a single gregor broker with the real Apache Kafka 4.x
# console tools (kafka-tools + kafka-clients from Maven Central, run with
# java -cp) and with kcat (librdkafka), as a person would run them:
#
#   - kafka-topics creates and describes topics;
#   - the console producer writes keyed lines with acks=all, one share of
#     them per compression codec (none, gzip, snappy, lz4, zstd);
#   - kafka-get-offsets (GetOffsetShell) reads each partition's end offset;
#   - the console consumer reads each partition with --partition P
#     --offset earliest --max-messages <the broker's count>;
#   - kcat lists metadata, produces with -z for each codec, consumes the
#     whole topic and the Java producer's partition 0;
#   - consumer groups with kafka-consumer-groups (ConsumerGroupCommand) on a
#     3-partition topic the console producer fills:
#       group-console-consume   the console consumer --group g1
#                               --from-beginning --max-messages N reads all;
#       group-list              --list (also --state Empty/Stable, --type
#                               classic) shows g1;
#       group-describe          --describe: CURRENT-OFFSET = LOG-END-OFFSET,
#                               LAG 0 on each partition;
#       group-reset-earliest    --reset-offsets --to-earliest --execute, then
#                               offsets 0 and a second consumer reads all N;
#       group-reset-partitions  --to-offset 5 on partition 0, --shift-by -3
#                               on partition 1; a consumer reads just those;
#       group-delete-offsets    --delete-offsets on partition 1 (OffsetDelete);
#       group-delete-active     with a console consumer in g1 running,
#                               --delete, --delete-offsets and
#                               --reset-offsets fail with Kafka's messages;
#                               after SIGTERM g1 becomes Empty;
#       group-delete            --delete succeeds, --list no longer shows g1;
#   - kcat-group: two kcat -G members (librdkafka) consume a 4-partition
#     topic until they have seen all N records, stop on SIGINT (committing),
#     and --describe shows the commits at the log end;
#   - sarama-group: compat-tests/sarama (go build) runs two Sarama group
#     members to the end of a 4-partition topic, checks its commits, and
#     --describe shows them at the log end;
#   - SIGTERM stops the broker cleanly; a restart on the same data dir
#     still serves everything, and the groups (restart-groups) keep their
#     committed offsets, g1 staying deleted.
#   - acls: kafka-acls on the broker without an authorizer fails with
#     SecurityDisabledException; restarted with the StandardAuthorizer,
#     --add, --list and --remove work as on Kafka.
#   - scram: kafka-configs --entity-type users adds SCRAM-SHA-256 and
#     SCRAM-SHA-512 credentials for alice, --describe lists both with their
#     iterations, --delete-config removes one; both mechanisms in one
#     --add-config fail with DuplicateResourceException, as on Kafka 4.
#   - sasl: restarted with a SASL_PLAINTEXT listener next to PLAINTEXT
#     (PLAIN users from its JAAS config, SCRAM users from the registry),
#     kafka-configs over PLAINTEXT gives carol SCRAM credentials; over SASL
#     the console producer as carol (SCRAM-SHA-512) writes, the console
#     consumer as alice (PLAIN) reads it all in order, kafka-topics as
#     carol (SCRAM-SHA-256) creates and lists; wrong passwords fail with
#     SaslAuthenticationException, an unoffered mechanism with
#     UnsupportedSaslMechanismException, a client without SASL on the SASL
#     port gets nowhere; kcat produces and consumes over SASL.
#     sasl-reauth: with connections.max.reauth.ms the console consumer
#     re-authenticates on its open connections (KIP-368) and reads on.
#     sasl-acls: with the StandardAuthorizer, ACLs for User:carol and
#     User:alice let each do what they allow and refuse the rest.
#     sasl-oauthbearer: OAUTHBEARER with Kafka's unsecured validator: a
#     token without the required scope is refused, the console producer
#     and consumer round trip with one that has it.
#     sasl-restore restarts the broker without SASL (and the authorizer).
#
# What was read is compared exactly with what was written: per partition in
# order (both producers use Kafka's murmur2 key partitioning, so check.py
# knows which line lands where) and as a whole; group consumers, which may
# see a record twice, are compared as sets.
#
# Each scenario prints PASS or FAIL with the reason; the last line is
# "N passed, M failed" and the exit status is non-zero if any failed.
# Tool output and the broker log stay in the work dir, printed at the end
# (kept only when something failed).
#
# Environment: CONSOLE_N (lines per producer, default 1000), KEEP_WORK=1 to
# keep the work dir, GREGOR_SERVE_ARGS (extra flags for gregor serve),
# CONSOLE_ONLY (a bash regex on the scenario name: only the scenarios it
# matches run, after build, fetch-tools and broker-start; CONSOLE_ONLY=sasl
# runs the sasl scenario alone). A scenario that uses what an earlier one
# left (restart-*, the group-* chain) fails or checks less without it.
# Needs go (it also builds compat-tests/sarama, a module of its own, into
# compat-tests/.cache/sarama-group), java 17+, mvn, python3; installs kcat
# with apt-get when run as root and it is missing.
#
# Lab mode: run.sh BOOTSTRAP (host:port, or a comma list of a cluster's
# brokers) is this suite's entry point in the compatibility lab
# (compat-tests/README.md; setup.sh installs the tools first). It starts no
# broker and runs only what any Kafka broker must pass, so nothing that
# restarts or signals the broker, reads its log dir, or needs Gregor
# (sarama-group). Every topic and group starts with $COMPAT_PREFIX. One
# result line per scenario is appended to $COMPAT_RESULTS, for two clients:
#
#   console-tools (version: kafka-tools' --version)
#     admin-topics            kafka-topics --create (with a config), --list,
#                             --describe, --alter --partitions, --delete
#     admin-configs           kafka-configs on a topic: --describe,
#                             --alter --add-config / --delete-config, read
#                             back, --describe --all; on the broker:
#                             --describe (--all) --entity-type brokers
#     produce-consume-<codec> console producer with --compression-codec,
#                             headers (empty and null values), null and
#                             empty values; the console consumer per
#                             partition prints timestamp, partition, offset,
#                             headers, key and value, compared exactly
#     list-offsets            kafka-get-offsets --time -2, -1, a time between
#                             two produce runs, a time after all
#     consume-from-offset     console consumer --partition P --offset O
#     group-commit-resume     a group member reads part and commits; a new
#                             member resumes exactly after it
#     admin-groups            the group-* scenarios above, in one
#     admin-transactions      kafka-transactions list, describe,
#                             describe-producers, find-hanging and abort
#                             against a transaction TxnTool.java leaves open
#     admin-leader-election   kafka-leader-election PREFERRED / UNCLEAN on a
#                             partition and --all-topic-partitions (on a
#                             cluster after making its leader non-preferred
#                             by reordering its replicas)
#     admin-reassign          kafka-reassign-partitions --generate,
#                             --execute --throttle, --verify (throttles
#                             cleared), --list, and on a cluster --cancel of
#                             a throttled move in flight
#     admin-log-dirs          kafka-log-dirs --describe, and a replica moved
#                             to its broker's other log dir with
#                             kafka-reassign-partitions (log_dirs), --verify
#     consumer-protocol-group the console consumer with --command-property
#                             group.protocol=consumer (KIP-848) reads and
#                             commits; kafka-consumer-groups --list --type,
#                             --describe --state --verbose and --members
#                             --verbose show the group as Consumer, its
#                             assignor, epochs and member; a second one
#                             resumes at the commits; Empty once it leaves
#     share-group             share groups (KIP-932): kafka-configs
#                             --entity-type groups sets
#                             share.auto.offset.reset=earliest; two
#                             kafka-console-share-consumer processes read
#                             every line once between them; kafka-share-groups
#                             --list, --describe --members --verbose while
#                             they run, then --describe (lag 0) and --state
#                             --verbose (Empty) once they exit
#   kcat (version: kcat -V, with its librdkafka)
#     produce-consume-<codec> -P -z <codec> -H ... -Z, read back with -C -e
#                             and a -f format with %h (headers) and %S
#     metadata                kcat-metadata above
#     consume-from-offset     -C -p P -o O and -o -3
#     list-offsets            -Q by timestamp, -2 and -1
#     group-rebalance         kcat-group above
#
# It exits 0 when it ran, whatever the results. Also: CONSOLE_N (default
# 500 in lab mode) and CONSOLE_ONLY (a bash regex on "client scenario" that
# picks the scenarios to run, for working on one). Tool output goes to a
# directory under $COMPAT_WORK.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
N=${CONSOLE_N:-1000}
START_TIMEOUT=60 # seconds for the broker to accept connections
STOP_TIMEOUT=30  # seconds for the broker to exit after SIGTERM
TOOL_TIMEOUT=120 # seconds for any one tool run
tab=$'\t'

# Main classes of the Kafka 4.x tools (all in kafka-tools-<version>.jar).
# Options use their 4.x names: --command-property (was --producer-property),
# --reader-property and --formatter-property (were --property); the old
# names still work in 4.x but are deprecated.
TOPICS=org.apache.kafka.tools.TopicCommand
PRODUCER=org.apache.kafka.tools.ConsoleProducer
CONSUMER=org.apache.kafka.tools.consumer.ConsoleConsumer
OFFSETS=org.apache.kafka.tools.GetOffsetShell
CONFIGS=org.apache.kafka.tools.ConfigCommand # kafka-configs
ACLS=org.apache.kafka.tools.AclCommand       # kafka-acls
SHARE_CONSUMER=org.apache.kafka.tools.consumer.ConsoleShareConsumer # kafka-console-share-consumer
SHARE_GROUPS=org.apache.kafka.tools.consumer.group.ShareGroupCommand # kafka-share-groups
CONSUMER_GROUPS=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand # kafka-consumer-groups
# Quick JVM start-up; slf4j-simple logs warnings and errors to stderr only.
JAVA_OPTS=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto
	-Dorg.slf4j.simpleLogger.defaultLogLevel=warn
	-Dorg.slf4j.simpleLogger.logFile=System.err)

t0=$SECONDS
libs=""
bs="" # bootstrap servers, host:port[,host:port...]
passed=0
failed=0
summary=()

# Lab mode (see the header): run.sh BOOTSTRAP runs the lab scenarios
# against a broker someone else started and appends result lines to
# $COMPAT_RESULTS; with no argument, run.sh is make console-test.
lab=0
if (($# > 0)); then
	lab=1
	bs=$1
	[[ $bs == *:* ]] || { echo "run.sh: BOOTSTRAP must be host:port, got '$bs'" >&2; exit 2; }
	[[ -n ${COMPAT_RESULTS:-} ]] || { echo "run.sh: COMPAT_RESULTS is not set (lab mode appends its result lines there)" >&2; exit 2; }
	[[ ${COMPAT_PREFIX:-} =~ ^[a-z0-9-]+$ ]] || { echo "run.sh: COMPAT_PREFIX must be set, [a-z0-9-]+ (got '${COMPAT_PREFIX:-}')" >&2; exit 2; }
	N=${CONSOLE_N:-500}
fi

if ((lab)) && [[ -n ${COMPAT_WORK:-} ]]; then
	mkdir -p "$COMPAT_WORK"
	work=$(mktemp -d "$COMPAT_WORK/console.XXXXXX")
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/gregor-console.XXXXXX")
fi
data=$work/data # the Gregor broker's log dir (console-test only)
mkdir -p "$data"

# Topics and groups of the scenarios lab mode shares with console-test. In
# lab mode they start with $COMPAT_PREFIX, as the broker may hold earlier
# runs' data; the console-test-only scenarios use their names as written.
P=""
((lab == 0)) || P=$COMPAT_PREFIX-
topic_console=${P}console
topic_groups=${P}groups
group_g1=${P}g1
topic_kcatg=${P}kcatg
group_kcat=${P}kcat-g

# In lab mode say also notes each line in said, whose last line becomes a
# passing scenario's detail.
# now_us, now_ms: wall-clock time in microseconds and milliseconds since the
# epoch (EPOCHREALTIME's radix is the locale's, hence both . and ,).
now_us() { echo "${EPOCHREALTIME//[.,]/}"; }
now_ms() { echo $(($(now_us) / 1000)); }

say() {
	printf '%s\n' "$*"
	((lab == 0)) || printf '%s\n' "$*" >>"$work/said"
}

# --- broker -----------------------------------------------------------------

# The broker runs under a small wrapper that records its exit status in
# broker.rc, so any scenario (each runs in a subshell) can check it.
broker_pid() { cat "$work/broker.pid" 2>/dev/null || true; }

broker_alive() {
	local pid
	pid=$(broker_pid)
	[[ -n $pid && ! -e $work/broker.rc ]] && kill -0 "$pid" 2>/dev/null
}

# serve_extra: flags a scenario adds after GREGOR_SERVE_ARGS, as an array,
# for values with spaces (a JAAS config) that GREGOR_SERVE_ARGS, split on
# whitespace, cannot carry.
serve_extra=()

# start_broker: starts bin/gregor serve on $data with the ports picked below
# and waits (bounded) until the Kafka port accepts connections and, when the
# admin listener is on, /healthz answers (it starts after registration).
start_broker() {
	rm -f "$work/broker.pid" "$work/broker.rc"
	local extra=""
	((${#serve_extra[@]} == 0)) || extra=$(printf ' %q' "${serve_extra[@]}")
	say "  starting: bin/gregor serve --log.dirs $data --listeners PLAINTEXT://$bs --admin.listener 127.0.0.1:$admin_port --etcd.client.addr 127.0.0.1:$etcd_client_port --etcd.peer.addr 127.0.0.1:$etcd_peer_port ${GREGOR_SERVE_ARGS:-}$extra"
	(
		# shellcheck disable=SC2086 # GREGOR_SERVE_ARGS is a list of flags.
		"$root/bin/gregor" serve \
			--log.dirs "$data" \
			--listeners "PLAINTEXT://$bs" \
			--admin.listener "127.0.0.1:$admin_port" \
			--etcd.client.addr "127.0.0.1:$etcd_client_port" \
			--etcd.peer.addr "127.0.0.1:$etcd_peer_port" \
			${GREGOR_SERVE_ARGS:-} \
			"${serve_extra[@]}" \
			</dev/null >>"$work/gregor.log" 2>&1 &
		echo $! >"$work/broker.pid"
		rc=0
		wait $! || rc=$?
		echo "$rc" >"$work/broker.rc"
	) &
	local deadline=$((SECONDS + START_TIMEOUT))
	while [[ ! -s $work/broker.pid ]] && ((SECONDS < deadline)); do sleep 0.1; done
	while ((SECONDS < deadline)); do
		if ! broker_alive; then
			echo "gregor serve exited with status $(cat "$work/broker.rc" 2>/dev/null || echo '?') before accepting connections; log tail: $(tail -n 5 "$work/gregor.log" | tr '\n' ' ')" >"$work/reason"
			return 1
		fi
		if python3 - "$kafka_port" "$admin_port" <<'EOF' 2>/dev/null; then
import socket, sys, urllib.request
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[2]}/healthz", timeout=1).read()
EOF
			say "  broker pid $(broker_pid) ready after $((SECONDS - deadline + START_TIMEOUT))s"
			return 0
		fi
		sleep 0.2
	done
	echo "broker did not accept connections on $bs (and answer /healthz on 127.0.0.1:$admin_port) within ${START_TIMEOUT}s; log tail: $(tail -n 5 "$work/gregor.log" | tr '\n' ' ')" >"$work/reason"
	return 1
}

# stop_broker SIGNAL: sends SIGNAL and waits up to STOP_TIMEOUT for the exit.
stop_broker() {
	local pid deadline
	pid=$(broker_pid)
	[[ -n $pid ]] || return 0
	kill "-$1" "$pid" 2>/dev/null || true
	deadline=$((SECONDS + STOP_TIMEOUT))
	while [[ ! -e $work/broker.rc ]] && ((SECONDS < deadline)); do sleep 0.1; done
	[[ -e $work/broker.rc ]]
}

cleanup() {
	local rc=$?
	stop_bg
	if broker_alive; then
		stop_broker TERM || { kill -KILL "$(broker_pid)" 2>/dev/null || true; }
	fi
	wait 2>/dev/null || true
	# Kept when something failed (main says so before its last line), and
	# always in lab mode, whose work dir is the lab's log.
	if ((rc == 0 && lab == 0)) && [[ ${KEEP_WORK:-0} != 1 ]]; then
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Tools a scenario runs in the background (group members) are started with
# start_bg, which notes their pids in bg.pids; stop_bg ends any still running
# once the scenario is over, whether it passed or not.
#
# start_bg OUT CMD...: runs CMD in the background with stdout to OUT and
# stderr to OUT.err; sets bg_pid.
start_bg() {
	local out=$1
	shift
	# Created here, so that they exist as soon as start_bg returns.
	: >"$out"
	: >"$out.err"
	"$@" </dev/null >>"$out" 2>>"$out.err" &
	bg_pid=$!
	echo "$bg_pid" >>"$work/bg.pids"
}

stop_bg() {
	local pid deadline
	[[ -s $work/bg.pids ]] || return 0
	while read -r pid; do
		kill -TERM "$pid" 2>/dev/null || continue
		deadline=$((SECONDS + 10))
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	done <"$work/bg.pids"
	rm -f "$work/bg.pids"
}

# --- scenarios ----------------------------------------------------------------

# fail MSG [FILE]: ends the scenario with MSG; the last lines of FILE (a
# tool's stderr) are shown with it.
fail() {
	local msg=$1
	if [[ -n ${2:-} && -s $2 ]]; then
		msg+=$'\n'"      last lines of $2:"$'\n'"$(grep -v '^\s*$' "$2" | tail -n 8 | sed 's/^/        /')"
	fi
	printf '%s\n' "$msg" >"$work/reason"
	exit 1
}

# scenario NAME FUNC [inline]: runs FUNC (in a subshell with errexit, unless
# inline) and records PASS or FAIL. With CONSOLE_ONLY set, a scenario whose
# name it does not match is left out, except the three every other needs.
scenario() {
	local name=$1 fn=$2 mode=${3:-}
	case $name in
	build | fetch-tools | broker-start) ;;
	*) [[ -z ${CONSOLE_ONLY:-} || $name =~ $CONSOLE_ONLY ]] || return 0 ;;
	esac
	run_scenario "$name" "$mode" "$fn"
}

# run_scenario NAME MODE FUNC ARGS...: runs FUNC ARGS (inline when MODE is
# inline, else in a subshell with errexit), records PASS or FAIL, and leaves
# the outcome in scenario_rc, scenario_reason (the whole of it) and
# scenario_secs (wall clock, to a tenth of a second).
run_scenario() {
	local name=$1 mode=$2 start=$SECONDS start_us rc=0 reason
	start_us=$(now_us)
	shift 2
	say "--- $name"
	rm -f "$work/reason"
	if [[ $mode == inline ]]; then
		"$@" || rc=$?
	else
		set +e
		(
			set -eE
			trap 'echo "command failed (status $?): $BASH_COMMAND" >"$work/reason"' ERR
			"$@"
		)
		rc=$?
		set -e
	fi
	stop_bg
	scenario_rc=$rc
	scenario_reason=""
	scenario_secs=$(awk -v us=$(($(now_us) - start_us)) 'BEGIN { printf "%.1f", us / 1e6 }')
	if ((rc == 0)); then
		passed=$((passed + 1))
		summary+=("PASS $name ($((SECONDS - start))s)")
		say "PASS $name ($((SECONDS - start))s)"
	else
		failed=$((failed + 1))
		reason=$(cat "$work/reason" 2>/dev/null || echo "exit status $rc")
		scenario_reason=$reason
		summary+=("FAIL $name: ${reason%%$'\n'*}")
		say "FAIL $name ($((SECONDS - start))s): $reason"
	fi
}

# In lab mode the broker is someone else's: a scenario finds out whether it
# answers from the tools themselves.
need_broker() {
	((lab == 0)) || return 0
	broker_alive || fail "broker is not running (log: $work/gregor.log)"
}
need_java() {
	[[ -n $libs ]] || fail "the Kafka console tools are not available (${libs_why:-see fetch-tools})"
	command -v java >/dev/null || fail "java not found (install Java 17+)"
}
need_kcat() { command -v kcat >/dev/null || fail "kcat is not installed and could not be installed (run as root, or: apt-get install -y kcat)"; }

# kafka_java CLASS ARGS...: runs a Kafka tool, bounded.
kafka_java() {
	local class=$1
	shift
	timeout -k 5 "$TOOL_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$libs/*" "$class" "$@" \
		${security_config:+--command-config "$security_config"}
}

# kcat_b ARGS...: kcat against the broker, bounded.
kcat_b() { timeout -k 5 "$TOOL_TIMEOUT" kcat -b "$bs" "${kcat_security[@]}" "$@"; }

# The client security of a secure lab run (compat-tests/run.sh --security):
# a properties file every Java tool gets with --command-config, and kcat's
# -X settings. Both empty without COMPAT_SECURITY.
security_config=""
kcat_security=()
# The scenarios a secure run covers: produce, consume and groups.
SECURE_SCENARIOS='^(produce-consume-.*|idempotent-producer|consume-from-offset|group-commit-resume|group-rebalance)$'

# configure_security FILE: writes FILE and sets security_config and
# kcat_security from the COMPAT_* environment.
configure_security() {
	local f=$1
	case ${COMPAT_SECURITY:-} in
	"") return 0 ;;
	sasl_ssl)
		printf '%s\n' security.protocol=SASL_SSL ssl.truststore.type=PEM "ssl.truststore.location=$COMPAT_CA" \
			"sasl.mechanism=$COMPAT_SASL_MECHANISM" \
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"$COMPAT_SASL_USER\" password=\"$COMPAT_SASL_PASSWORD\";" >"$f"
		kcat_security=(-X security.protocol=SASL_SSL -X "ssl.ca.location=$COMPAT_CA"
			-X "sasl.mechanisms=$COMPAT_SASL_MECHANISM" -X "sasl.username=$COMPAT_SASL_USER" -X "sasl.password=$COMPAT_SASL_PASSWORD")
		;;
	mtls)
		# A PEM key store is one file with the key and the certificate.
		cat "$COMPAT_CLIENT_KEY" "$COMPAT_CLIENT_CERT" >"${f%.properties}-keystore.pem"
		printf '%s\n' security.protocol=SSL ssl.truststore.type=PEM "ssl.truststore.location=$COMPAT_CA" \
			ssl.keystore.type=PEM "ssl.keystore.location=${f%.properties}-keystore.pem" >"$f"
		kcat_security=(-X security.protocol=SSL -X "ssl.ca.location=$COMPAT_CA"
			-X "ssl.certificate.location=$COMPAT_CLIENT_CERT" -X "ssl.key.location=$COMPAT_CLIENT_KEY")
		;;
	*) echo "console: COMPAT_SECURITY '$COMPAT_SECURITY' is not sasl_ssl or mtls" >&2; exit 2 ;;
	esac
	security_config=$f
}

# kcat_consume OUT FORMAT ARGS...: kcat -C -o beginning -e (exit at the end
# of every partition), bounded by KCAT_CONSUME_TIMEOUT; stderr goes to
# OUT.err (not -q, so librdkafka's protocol errors are kept for the report).
# Sets kcat_rc and kcat_why (empty on success).
KCAT_CONSUME_TIMEOUT=30
kcat_consume() {
	local out=$1 format=$2 errs
	shift 2
	kcat_rc=0
	timeout -k 5 "$KCAT_CONSUME_TIMEOUT" kcat -b "$bs" "${kcat_security[@]}" -C -o beginning -e -f "$format" "$@" \
		</dev/null >"$out" 2>"$out.err" || kcat_rc=$?
	kcat_why=""
	((kcat_rc == 0)) && return 0
	if ((kcat_rc == 124)); then
		kcat_why="kcat -C -e $* did not reach the end of every partition within ${KCAT_CONSUME_TIMEOUT}s (read $(wc -l <"$out") records)"
	else
		kcat_why="kcat -C -e $* exited with status $kcat_rc (read $(wc -l <"$out") records)"
	fi
	# librdkafka's complaints, without timestamps and thread names, once each.
	errs=$(grep -E '^%[0-4]\||^% ERROR' "$out.err" | sed -E 's/^%[0-9]\|[0-9.]+\|//; s/\|[^|]*\| \[thrd:[^]]*\]: [^ ]+: / /' |
		sort | uniq -c | sort -rn | head -n 3 | sed -E 's/^ *[0-9]+ //' | paste -sd ';' - || true)
	[[ -z $errs ]] || kcat_why+="; librdkafka logged: $errs"
	if grep -q 'invalid MessageSetSize -1' "$out.err"; then
		kcat_why+=" [broker bug: a Fetch response partition with no records carries a null Records field (length -1);"
		kcat_why+=" Kafka always sends an empty, non-null one. librdkafka stops parsing the response there (partitions"
		kcat_why+=" after it in that response are dropped and fetched again after a backoff), so it never sees the end of a partition]"
	fi
	return 1
}

check() { python3 "$here/check.py" "$@"; }

# no_errors NAME FILE: fails if a tool's stderr reports an error.
no_errors() {
	local hit
	hit=$(grep -m1 -E 'ERROR|Exception|% Error|Delivery failed' "$2" || true)
	[[ -z $hit ]] || fail "$1 reported an error: $hit" "$2"
}

do_build() {
	cd "$root"
	go build -o bin/gregor ./cmd/gregor 2>"$work/build.err" || fail "go build -o bin/gregor ./cmd/gregor failed" "$work/build.err"
}

do_fetch() {
	local out
	out=$(bash "$here/fetch.sh" 2>"$work/fetch.err") || fail "fetch.sh failed" "$work/fetch.err"
	[[ -f $out/kafka-tools-$(basename "$(dirname "$out")" | sed 's/^kafka-//').jar ]] || fail "fetch.sh printed $out, which has no kafka-tools jar"
	echo "$out" >"$work/libs"
	say "  tools: $out ($(find "$out" -name "*.jar" | wc -l) jars)"
}

# Inline scenarios (they start the broker as a child of this shell) return
# instead of calling fail; start_broker leaves the reason.
do_start() { start_broker; }

create_topic() { # NAME PARTITIONS [MORE kafka-topics ARGS...]
	kafka_java "$TOPICS" --bootstrap-server "$bs" --create --topic "$1" --partitions "$2" --replication-factor 1 "${@:3}" \
		</dev/null >"$work/create-$1.out" 2>"$work/create-$1.err" ||
		fail "kafka-topics --create --topic $1 --partitions $2 exited with status $?" "$work/create-$1.err"
	grep -q "Created topic $1" "$work/create-$1.out" ||
		fail "kafka-topics --create printed no 'Created topic $1': $(head -c 300 "$work/create-$1.out")" "$work/create-$1.err"
}

java_topics() {
	need_broker
	need_java
	create_topic "$topic_console" 3
	describe_topic "$topic_console" 3 "$work/describe.out"
}

# describe_topic TOPIC PARTITIONS OUT: kafka-topics --describe shows TOPIC
# with PARTITIONS partitions, replication factor 1, and a leader, replicas
# and ISR for each partition; its output goes to OUT.
describe_topic() {
	local topic=$1 n=$2 out=$3 p
	kafka_java "$TOPICS" --bootstrap-server "$bs" --describe --topic "$topic" \
		</dev/null >"$out" 2>"$out.err" ||
		fail "kafka-topics --describe --topic $topic exited with status $?" "$out.err"
	sed 's/^/    /' "$out"
	grep -Eq "Topic: ${topic}[[:space:]].*PartitionCount: ${n}[[:space:]].*ReplicationFactor: 1" "$out" ||
		fail "kafka-topics --describe did not show 'PartitionCount: $n ... ReplicationFactor: 1' for $topic; it printed: $(head -n 1 "$out" | tr '\t' ' ')" "$out.err"
	for ((p = 0; p < n; p++)); do
		grep -Eq "Topic: ${topic}[[:space:]]+Partition: ${p}[[:space:]]+Leader: [0-9]+[[:space:]]+Replicas: [0-9]+[[:space:]]+Isr: [0-9]+" "$out" ||
			fail "kafka-topics --describe --topic $topic shows no leader, replicas and ISR for partition $p" "$out"
	done
}

# The Java producer writes N lines "java-key-i<TAB>java-value-i" to topic
# console in five runs, one per codec, each with acks=all. The codec is set
# with --compression-codec: ConsoleProducer puts compression.type from that
# option (default none) over any --command-property compression.type.
java_produce() {
	need_broker
	need_java
	check lines java 0 "$N" >"$work/java.in"
	check partition 3 "$work/java.p" <"$work/java.in" >"$work/java.counts"
	local codecs=(none gzip snappy lz4 zstd) i first last
	for i in "${!codecs[@]}"; do
		first=$((i * N / 5 + 1))
		last=$(((i + 1) * N / 5))
		sed -n "${first},${last}p" "$work/java.in" |
			kafka_java "$PRODUCER" --bootstrap-server "$bs" --topic console \
				--command-property acks=all \
				--compression-codec "${codecs[i]}" \
				--reader-property parse.key=true \
				--reader-property "key.separator=$tab" \
				>"$work/produce-${codecs[i]}.out" 2>"$work/produce-${codecs[i]}.err" ||
			fail "console producer (--compression-codec ${codecs[i]}, lines $first-$last) exited with status $?" "$work/produce-${codecs[i]}.err"
		no_errors "console producer (--compression-codec ${codecs[i]})" "$work/produce-${codecs[i]}.err"
		say "  produced lines $first-$last with --compression-codec ${codecs[i]}"
	done
}

# The codecs really reached the log: the stored batches (Kafka's segment
# format) carry each codec the producer was asked for.
java_codecs_on_disk() {
	local p got
	[[ -s $work/java.in ]] || fail "nothing was produced to console (java-produce did not run)"
	for p in 0 1 2; do
		[[ -d $data/console-$p ]] || fail "no partition directory $data/console-$p (expected Kafka's <log.dir>/<topic>-<partition> layout)"
	done
	got=$(check codecs "$data"/console-{0,1,2})
	say "  stored batches by codec: $(echo "$got" | tr '\n' ' ')"
	for codec in none gzip snappy lz4 zstd; do
		grep -q "^$codec " <<<"$got" || fail "no batch compressed with $codec in console's segments (found: $(echo "$got" | tr '\n' ' '))"
	done
}

# The broker's end offsets (ListOffsets through GetOffsetShell) match the
# number of lines Kafka's partitioner sends to each partition.
java_offsets() {
	need_broker
	need_java
	kafka_java "$OFFSETS" --bootstrap-server "$bs" --topic console --time -1 \
		</dev/null >"$work/offsets.out" 2>"$work/offsets.err" ||
		fail "GetOffsetShell --time -1 exited with status $?" "$work/offsets.err"
	kafka_java "$OFFSETS" --bootstrap-server "$bs" --topic console --time -2 \
		</dev/null >"$work/offsets-earliest.out" 2>"$work/offsets-earliest.err" ||
		fail "GetOffsetShell --time -2 exited with status $?" "$work/offsets-earliest.err"
	say "  latest: $(tr '\n' ' ' <"$work/offsets.out")  earliest: $(tr '\n' ' ' <"$work/offsets-earliest.out")"
	local p want got
	for p in 0 1 2; do
		want=$(awk -v p="$p" '$1 == p { print $2 }' "$work/java.counts")
		got=$(awk -F: -v p="$p" '$1 == "console" && $2 == p { print $3 }' "$work/offsets.out")
		[[ $got == "$want" ]] || fail "partition $p: GetOffsetShell says end offset '${got}', expected $want (lines the murmur2 partitioner sends there)"
		got=$(awk -F: -v p="$p" '$1 == "console" && $2 == p { print $3 }' "$work/offsets-earliest.out")
		[[ $got == 0 ]] || fail "partition $p: GetOffsetShell --time -2 says earliest offset '${got}', expected 0"
	done
}

# consume_java TOPIC PARTITION COUNT OUT: the console consumer on one
# partition from the earliest offset, stopping after COUNT records.
consume_java() {
	kafka_java "$CONSUMER" --bootstrap-server "$bs" --topic "$1" --partition "$2" --offset earliest \
		--max-messages "$3" --timeout-ms 30000 --formatter-property print.key=true \
		</dev/null >"$4" 2>"$4.err" || true
}

# The console consumer reads each partition of console (--partition P
# --offset earliest --max-messages <the broker's count>) and gets exactly the
# lines written there, in order; all partitions together are all N lines.
java_consume() {
	need_broker
	need_java
	local p count
	: >"$work/java.got"
	for p in 0 1 2; do
		count=$(awk -F: -v p="$p" '$1 == "console" && $2 == p { print $3 }' "$work/offsets.out" 2>/dev/null || true)
		if [[ -z $count ]]; then
			count=$(awk -v p="$p" '$1 == p { print $2 }' "$work/java.counts")
			say "  partition $p: no count from GetOffsetShell, using the expected $count"
		fi
		consume_java console "$p" "$count" "$work/java.got.p$p"
		if ! check same-order "$work/java.p$p" "$work/java.got.p$p" >"$work/cmp"; then
			fail "console consumer --partition $p --offset earliest --max-messages $count: $(cat "$work/cmp")" "$work/java.got.p$p.err"
		fi
		say "  partition $p: $count records in order"
		cat "$work/java.got.p$p" >>"$work/java.got"
	done
	check same-set "$work/java.in" "$work/java.got" >"$work/cmp" || fail "all partitions: $(cat "$work/cmp")"
}

kcat_metadata() {
	need_broker
	need_kcat
	kcat_b -L -t "$topic_console" -m 30 </dev/null >"$work/kcat-L.out" 2>"$work/kcat-L.err" ||
		fail "kcat -L exited with status $?" "$work/kcat-L.err"
	sed 's/^/    /' "$work/kcat-L.out"
	local addr
	for addr in ${bs//,/ }; do
		grep -Eq "broker -?[0-9]+ at ${addr//./\\.}( |$)" "$work/kcat-L.out" ||
			fail "kcat -L lists no broker at $addr: $(grep -E '^ +broker ' "$work/kcat-L.out" | paste -sd ';' -)" "$work/kcat-L.out"
	done
	grep -q "topic \"$topic_console\" with 3 partitions" "$work/kcat-L.out" ||
		fail "kcat -L does not list topic $topic_console with 3 partitions" "$work/kcat-L.out"
	for p in 0 1 2; do
		grep -Eq "partition $p, leader [0-9]+, replicas: [0-9]+, isrs: [0-9]+" "$work/kcat-L.out" ||
			fail "kcat -L shows no leader, replicas and ISR for partition $p" "$work/kcat-L.out"
	done
	say "  kcat -L lists the broker at $bs and $topic_console with 3 partitions, each with a leader, replicas and ISR"
}

# kcat writes N lines "kcat-key-i<TAB>kcat-value-i" to topic kcat, one share
# per codec, partitioned like Kafka (murmur2_random), checks the codecs of
# the stored batches, and reads them back. The producer runs with -d msg so
# that librdkafka says when it chose not to compress.
kcat_produce_consume() {
	need_broker
	need_kcat
	need_java # kafka-topics creates the topic
	create_topic kcat 3
	check lines kcat 0 "$N" >"$work/kcat.in"
	check partition 3 "$work/kcat.p" <"$work/kcat.in" >"$work/kcat.counts"
	local codecs=(snappy gzip lz4 zstd) i first last
	for i in "${!codecs[@]}"; do
		first=$((i * N / 4 + 1))
		last=$(((i + 1) * N / 4))
		sed -n "${first},${last}p" "$work/kcat.in" |
			kcat_b -P -t kcat -K "$tab" -z "${codecs[i]}" -X partitioner=murmur2_random -X acks=all -d msg \
				>"$work/kcat-produce-${codecs[i]}.out" 2>"$work/kcat-produce-${codecs[i]}.err" ||
			fail "kcat -P -z ${codecs[i]} (lines $first-$last) exited with status $?" "$work/kcat-produce-${codecs[i]}.err"
		no_errors "kcat -P -z ${codecs[i]}" "$work/kcat-produce-${codecs[i]}.err"
		say "  produced lines $first-$last with -z ${codecs[i]}"
	done
	# Both checks run, and a failure reports what each found.
	local got same=1 problems=()
	got=$(check codecs "$data"/kcat-{0,1,2} 2>/dev/null || true)
	say "  stored batches by codec: $(echo "$got" | tr '\n' ' ')"
	for codec in "${codecs[@]}"; do
		grep -q "^$codec " <<<"$got" && continue
		problems+=("$(kcat_codec_why "$codec" "$got")")
	done
	kcat_consume "$work/kcat.got" '%p\t%k\t%s\n' -t kcat || true
	compare_by_partition kcat "$work/kcat.got" || same=0
	if [[ -n $kcat_why ]]; then
		problems+=("$kcat_why; $cmp_why")
	elif ((!same)); then
		problems+=("kcat -C -t kcat: $cmp_why")
	else
		say "  read back $(wc -l <"$work/kcat.got") records, each partition in order"
	fi
	if ((${#problems[@]} > 0)); then
		local joined
		joined=$(printf '%s  |  ' "${problems[@]}")
		fail "${joined%  |  }"
	fi
}

# kcat_codec_why CODEC FOUND: why kcat's batches for CODEC were stored with
# another codec, from librdkafka's own debug output (-d msg on the producer,
# -d feature on a metadata request): librdkafka sends a batch uncompressed
# when it decides from ApiVersions that the broker lacks the codec.
kcat_codec_why() {
	local codec=$1 found=$2 why said feature
	why="no batch compressed with $codec in kcat's segments (found: $(echo "$found" | tr '\n' ' '))"
	said=$(grep -m1 -o "Broker does not support compression type ${codec}[^|]*" "$work/kcat-produce-$codec.err" || true)
	if [[ -z $said ]]; then
		echo "$why"
		return 0
	fi
	why+="; librdkafka said '$said'"
	feature=$(kcat_b -L -m 10 -d feature 2>&1 >/dev/null </dev/null | grep -m1 -oE "Feature ${codec^^}: .* NOT supported by broker" || true)
	[[ -z $feature ]] || why+=" because of its ApiVersions feature check '$feature'"
	[[ $codec != lz4 ]] || why+=" [librdkafka enables LZ4 only if the broker advertises FindCoordinator (key 10) from v0, as Kafka 4.x does]"
	echo "$why"
}

# compare_by_partition PREFIX GOT: GOT has "p<TAB>key<TAB>value" lines; each
# partition must hold PREFIX.p<p> in order, and all of them PREFIX.in. Sets
# cmp_why to what differs, or to a note that everything read matches.
compare_by_partition() {
	local prefix=$1 got=$2 p
	cmp_why=""
	cut -f2- "$got" >"$got.all"
	for p in 0 1 2; do
		awk -F'\t' -v p="$p" '$1 == p { print $2 "\t" $3 }' "$got" >"$got.p$p"
		if ! check same-order "$work/$prefix.p$p" "$got.p$p" >"$work/cmp"; then
			cmp_why="partition $p: $(cat "$work/cmp")"
			return 1
		fi
	done
	if ! check same-set "$work/$prefix.in" "$got.all" >"$work/cmp"; then
		cmp_why="all partitions: $(cat "$work/cmp")"
		return 1
	fi
	cmp_why="the $(wc -l <"$got") records it read are all that was written, each partition in order"
}

# kcat reads partition 0 of console, which the Java producer wrote.
kcat_reads_java() {
	need_broker
	need_kcat
	[[ -s $work/java.p0 ]] || fail "nothing was expected on console partition 0 (java-produce did not run)"
	kcat_consume "$work/kcat-java.got" '%k\t%s\n' -t console -p 0 || true
	if check same-order "$work/java.p0" "$work/kcat-java.got" >"$work/cmp"; then
		cmp_why="the $(wc -l <"$work/kcat-java.got") records it read are partition 0's, in order"
	else
		cmp_why="partition 0: $(cat "$work/cmp")"
		[[ -n $kcat_why ]] || fail "kcat -C -t console -p 0: $cmp_why"
	fi
	[[ -z $kcat_why ]] || fail "$kcat_why; $cmp_why"
	say "  $(wc -l <"$work/kcat-java.got") records in order"
}

# The Java console consumer reads partition 0 of kcat, which librdkafka
# compressed.
java_reads_kcat() {
	need_broker
	need_java
	[[ -s $work/kcat.p0 ]] || fail "nothing was expected on kcat partition 0 (kcat-produce-consume did not run)"
	local count
	count=$(wc -l <"$work/kcat.p0")
	consume_java kcat 0 "$count" "$work/java-kcat.got"
	check same-order "$work/kcat.p0" "$work/java-kcat.got" >"$work/cmp" ||
		fail "console consumer --topic kcat --partition 0 --offset earliest --max-messages $count: $(cat "$work/cmp")" "$work/java-kcat.got.err"
	say "  $count records in order"
}

# SIGTERM: the broker exits 0 within STOP_TIMEOUT and leaves Kafka's
# clean-shutdown marker in its log dir.
shutdown_sigterm() {
	need_broker
	say "  kill -TERM $(broker_pid)"
	local start=$SECONDS
	if ! stop_broker TERM; then
		kill -KILL "$(broker_pid)" 2>/dev/null || true
		fail "gregor serve did not exit within ${STOP_TIMEOUT}s of SIGTERM (killed); log tail: $(tail -n 5 "$work/gregor.log" | tr '\n' ' ')"
	fi
	local rc
	rc=$(cat "$work/broker.rc")
	say "  exited with status $rc after $((SECONDS - start))s"
	[[ $rc == 0 ]] || fail "gregor serve exited with status $rc after SIGTERM, expected 0; log tail: $(tail -n 5 "$work/gregor.log" | tr '\n' ' ')"
	[[ -e $data/.kafka_cleanshutdown ]] || fail "no clean-shutdown marker $data/.kafka_cleanshutdown after SIGTERM (contents: $(find "$data" -mindepth 1 -maxdepth 1 -printf '%f '))"
}

do_restart() {
	if broker_alive; then
		stop_broker KILL || true
	fi
	start_broker
}

# After the restart kcat still reads every record, in order.
restart_kcat() {
	need_broker
	need_kcat
	local t prefix same
	for t in console kcat; do
		prefix=$t
		[[ $t == console ]] && prefix=java
		[[ -s $work/$prefix.in ]] || fail "nothing was produced to $t before the restart"
		same=1
		kcat_consume "$work/restart-$t.got" '%p\t%k\t%s\n' -t "$t" || true
		compare_by_partition "$prefix" "$work/restart-$t.got" || same=0
		[[ -z $kcat_why ]] || fail "after the restart, $kcat_why; $cmp_why"
		((same)) || fail "after the restart, kcat -C -t $t: $cmp_why"
		say "  $t: $(wc -l <"$work/restart-$t.got") records, each partition in order"
	done
}

# After the restart the Java console consumer still reads every record, in
# order (partition by partition, counts from Kafka's partitioner).
restart_java() {
	need_broker
	need_java
	local t prefix p count
	for t in console kcat; do
		prefix=$t
		[[ $t == console ]] && prefix=java
		[[ -s $work/$prefix.in ]] || fail "nothing was produced to $t before the restart"
		for p in 0 1 2; do
			count=$(wc -l <"$work/$prefix.p$p")
			consume_java "$t" "$p" "$count" "$work/restart-java-$t.p$p"
			check same-order "$work/$prefix.p$p" "$work/restart-java-$t.p$p" >"$work/cmp" ||
				fail "after the restart, console consumer --topic $t --partition $p --offset earliest --max-messages $count: $(cat "$work/cmp")" "$work/restart-java-$t.p$p.err"
		done
		say "  $t: $(cat "$work/restart-java-$t".p{0,1,2} | wc -l) records, each partition in order"
	done
}

# --- consumer groups ------------------------------------------------------------

# The group scenarios share topic groups (3 partitions) with N lines from the
# Java producer, and group g1; kcat -G and Sarama each get a 4-partition
# topic of their own (kcatg, sarama) and a group (kcat-g, sarama-g). A
# scenario whose group ends with everything committed leaves <group>.ok, so
# that restart-groups knows what to look for after the restart.

# produce_java TOPIC FILE: the console producer writes FILE's key<TAB>value
# lines to TOPIC with acks=all.
produce_java() {
	kafka_java "$PRODUCER" --bootstrap-server "$bs" --topic "$1" --command-property acks=all \
		--reader-property parse.key=true --reader-property "key.separator=$tab" \
		<"$2" >"$work/produce-$1.out" 2>"$work/produce-$1.err" ||
		fail "console producer --topic $1 exited with status $?" "$work/produce-$1.err"
	no_errors "console producer --topic $1" "$work/produce-$1.err"
}

# groups_cmd OUT ARGS...: kafka-consumer-groups (ConsumerGroupCommand), stdout
# to OUT and stderr to OUT.err; a non-zero exit fails the scenario. Kafka's
# tool prints most errors ("Error: ...") on stdout and exits 0, so callers
# check what it printed.
groups_cmd() {
	local out=$1
	shift
	kafka_java "$CONSUMER_GROUPS" --bootstrap-server "$bs" "$@" </dev/null >"$out" 2>"$out.err" ||
		fail "kafka-consumer-groups $* exited with status $?" "$out.err"
}

# at_end PREFIX: describe-offsets specs (check.py) for a group that has
# committed every partition's end, from PREFIX.counts ("p count" lines).
at_end() { awk '{ printf "%d/%d ", $2, $2 }' "$work/$1.counts"; }

# count PREFIX P: how many lines of PREFIX.in Kafka's partitioner sends to P.
count() { awk -v p="$2" '$1 == p { print $2 }' "$work/$1.counts"; }

# describe_offsets GROUP TOPIC SPEC...: --describe --group GROUP must show
# the committed offsets SPEC says (check.py describe-offsets); WHEN says at
# which point, for the failure message.
describe_offsets() {
	local when=$1 group=$2 topic=$3 out=$work/describe-$2.out
	shift 3
	groups_cmd "$out" --describe --group "$group"
	check describe-offsets "$out" "$group" "$topic" "$@" >"$work/cmp" ||
		fail "kafka-consumer-groups --describe --group $group $when: $(cat "$work/cmp")" "$out"
	say "  --describe --group $group (partition:current/end): $(cat "$work/cmp")"
}

# new_offsets FILE: the NEW-OFFSET table --reset-offsets printed for g1 and
# topic groups, as "p:offset" words in partition order (Kafka's tool prints
# the partitions in no particular order).
new_offsets() {
	awk -v g="$group_g1" -v t="$topic_groups" '$1 == g && $2 == t { print $3 ":" $4 }' "$1" | sort -n | paste -sd ' ' -
}

# consume_g1 OUT COUNT ARGS...: the console consumer in group g1 on topic
# groups, stopping after COUNT records; sets consume_rc.
consume_g1() {
	local out=$1 count=$2
	shift 2
	consume_rc=0
	kafka_java "$CONSUMER" --bootstrap-server "$bs" --topic "$topic_groups" --group "$group_g1" --max-messages "$count" \
		--timeout-ms 30000 --formatter-property print.key=true "$@" \
		</dev/null >"$out" 2>"$out.err" || consume_rc=$?
}

# wait_group_state GROUP STATE MEMBERS: polls --describe --state until GROUP
# is in STATE with MEMBERS members, bounded by GROUP_WAIT; says how long it
# took and sets waited to those seconds.
GROUP_WAIT=60
wait_group_state() {
	local group=$1 want="$2 $3" start=$SECONDS got="" out=$work/state-$1.out
	while ((SECONDS < start + GROUP_WAIT)); do
		got=""
		if kafka_java "$CONSUMER_GROUPS" --bootstrap-server "$bs" --describe --group "$group" --state \
			</dev/null >"$out" 2>"$out.err"; then
			# GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS; the
			# coordinator column holds a space.
			got=$(awk -v g="$group" '$1 == g && NF >= 4 { print $(NF - 1), $NF }' "$out" | tail -n 1)
		fi
		if [[ $got == "$want" ]]; then
			waited=$((SECONDS - start))
			say "  group $group is $2 with $3 member(s) after ${waited}s"
			return 0
		fi
		sleep 0.5
	done
	[[ -s $out ]] || out=$out.err
	fail "group $group did not become $2 with $3 member(s) within ${GROUP_WAIT}s; --describe --state last showed '${got:-no row for $group}'" "$out"
}

group_produce() {
	need_broker
	need_java
	create_topic "$topic_groups" 3
	check lines grp 0 "$N" >"$work/grp.in"
	check partition 3 "$work/grp.p" <"$work/grp.in" >"$work/grp.counts"
	produce_java "$topic_groups" "$work/grp.in"
	say "  produced $N lines to groups (per partition: $(awk '{ printf "%s:%s ", $1, $2 }' "$work/grp.counts"))"
}

# The console consumer with --group g1 --from-beginning --max-messages N reads
# every line (in whatever partition order the group's assignment gives), and
# commits its position when it closes.
group_console_consume() {
	need_broker
	need_java
	[[ -s $work/grp.in ]] || fail "nothing was produced to groups (group-produce did not run)"
	consume_g1 "$work/g1.got" "$N" --from-beginning
	check same-set "$work/grp.in" "$work/g1.got" >"$work/cmp" ||
		fail "console consumer --group $group_g1 --from-beginning --max-messages $N (exit status $consume_rc): $(cat "$work/cmp")" "$work/g1.got.err"
	say "  read all $N lines"
}

# --list shows g1, also filtered by state (Empty, not Stable: its member has
# left) and by type (classic).
group_list() {
	need_broker
	need_java
	groups_cmd "$work/list.out" --list
	awk -v g="$group_g1" '$1 == g { found = 1 } END { exit !found }' "$work/list.out" ||
		fail "kafka-consumer-groups --list does not show $group_g1; it printed: $(tr '\n' ' ' <"$work/list.out")" "$work/list.out.err"
	groups_cmd "$work/list-empty.out" --list --state Empty
	awk -v g="$group_g1" '$1 == g && $2 == "Empty" { found = 1 } END { exit !found }' "$work/list-empty.out" ||
		fail "kafka-consumer-groups --list --state Empty does not show '$group_g1 Empty'; it printed: $(tr '\n' ' ' <"$work/list-empty.out")" "$work/list-empty.out.err"
	groups_cmd "$work/list-stable.out" --list --state Stable
	! awk -v g="$group_g1" '$1 == g { found = 1 } END { exit !found }' "$work/list-stable.out" ||
		fail "kafka-consumer-groups --list --state Stable shows $group_g1, which has no members; it printed: $(tr '\n' ' ' <"$work/list-stable.out")"
	groups_cmd "$work/list-classic.out" --list --type classic
	awk -v g="$group_g1" '$1 == g && $2 == "Classic" { found = 1 } END { exit !found }' "$work/list-classic.out" ||
		fail "kafka-consumer-groups --list --type classic does not show '$group_g1 Classic'; it printed: $(tr '\n' ' ' <"$work/list-classic.out")" "$work/list-classic.out.err"
	say "  --list, --list --state Empty and --list --type classic show $group_g1; --list --state Stable does not"
}

# --describe --group g1 shows each partition's CURRENT-OFFSET at its
# LOG-END-OFFSET, LAG 0.
group_describe() {
	need_broker
	need_java
	[[ -s $work/grp.counts ]] || fail "nothing was produced to groups (group-produce did not run)"
	# shellcheck disable=SC2046 # one spec per partition
	describe_offsets "after reading everything" "$group_g1" "$topic_groups" $(at_end grp)
}

# --reset-offsets --to-earliest --execute puts every partition back at 0,
# and a second console consumer in g1 (no --from-beginning) reads all N
# lines again, ending at the log end once more.
group_reset_earliest() {
	need_broker
	need_java
	[[ -s $work/grp.counts ]] || fail "nothing was produced to groups (group-produce did not run)"
	groups_cmd "$work/reset-earliest.out" --reset-offsets --group "$group_g1" --topic "$topic_groups" --to-earliest --execute
	[[ $(new_offsets "$work/reset-earliest.out") == "0:0 1:0 2:0" ]] ||
		fail "--reset-offsets --to-earliest --execute printed new offsets '$(new_offsets "$work/reset-earliest.out")', expected '0:0 1:0 2:0'" "$work/reset-earliest.out"
	# shellcheck disable=SC2046
	describe_offsets "after --reset-offsets --to-earliest" "$group_g1" "$topic_groups" $(awk '{ printf "0/%d ", $2 }' "$work/grp.counts")
	consume_g1 "$work/g1-again.got" "$N"
	check same-set "$work/grp.in" "$work/g1-again.got" >"$work/cmp" ||
		fail "after --reset-offsets --to-earliest, console consumer --group $group_g1 --max-messages $N (exit status $consume_rc): $(cat "$work/cmp")" "$work/g1-again.got.err"
	say "  a second consumer in $group_g1 read all $N lines again"
	# shellcheck disable=SC2046
	describe_offsets "after reading everything again" "$group_g1" "$topic_groups" $(at_end grp)
}

# --reset-offsets on one partition each: --to-offset 5 on groups:0 and
# --shift-by -3 on groups:1; partition 2 keeps its offset. A consumer in g1
# then reads exactly partition 0 from offset 5 and the last 3 lines of
# partition 1.
group_reset_partitions() {
	need_broker
	need_java
	[[ -s $work/grp.counts ]] || fail "nothing was produced to groups (group-produce did not run)"
	local c0 c1 c2 got
	c0=$(count grp 0)
	c1=$(count grp 1)
	c2=$(count grp 2)
	((c0 >= 5 && c1 >= 3)) || fail "partition 0 holds $c0 lines and partition 1 $c1; this needs at least 5 and 3 (raise CONSOLE_N)"
	groups_cmd "$work/reset-to.out" --reset-offsets --group "$group_g1" --topic "$topic_groups":0 --to-offset 5 --execute
	got=$(new_offsets "$work/reset-to.out")
	[[ $got == "0:5" ]] || fail "--reset-offsets --topic $topic_groups:0 --to-offset 5 --execute printed new offsets '$got', expected '0:5'" "$work/reset-to.out"
	groups_cmd "$work/reset-shift.out" --reset-offsets --group "$group_g1" --topic "$topic_groups":1 --shift-by -3 --execute
	got=$(new_offsets "$work/reset-shift.out")
	[[ $got == "1:$((c1 - 3))" ]] || fail "--reset-offsets --topic $topic_groups:1 --shift-by -3 --execute printed new offsets '$got', expected '1:$((c1 - 3))'" "$work/reset-shift.out"
	describe_offsets "after --to-offset 5 on partition 0 and --shift-by -3 on partition 1" "$group_g1" "$topic_groups" \
		"5/$c0" "$((c1 - 3))/$c1" "$c2/$c2"
	{
		tail -n +6 "$work/grp.p0"
		tail -n 3 "$work/grp.p1"
	} >"$work/g1-rest.want"
	consume_g1 "$work/g1-rest.got" "$((c0 - 5 + 3))"
	check same-set "$work/g1-rest.want" "$work/g1-rest.got" >"$work/cmp" ||
		fail "console consumer --group $group_g1 --max-messages $((c0 - 5 + 3)) after the resets (exit status $consume_rc): $(cat "$work/cmp")" "$work/g1-rest.got.err"
	say "  a consumer in $group_g1 then read partition 0 from offset 5 and partition 1's last 3 lines ($((c0 - 5 + 3)) lines)"
	# shellcheck disable=SC2046
	describe_offsets "after reading the rest" "$group_g1" "$topic_groups" $(at_end grp)
}

# --delete-offsets --group g1 --topic groups:1 (OffsetDelete) removes
# partition 1's committed offset, and only that one, while g1 has no members.
group_delete_offsets() {
	need_broker
	need_java
	[[ -s $work/grp.counts ]] || fail "nothing was produced to groups (group-produce did not run)"
	groups_cmd "$work/delete-offsets.out" --delete-offsets --group "$group_g1" --topic "$topic_groups":1
	awk -v t="$topic_groups" '$1 == t && $2 == 1 && $3 == "Successful" { found = 1 } END { exit !found }' "$work/delete-offsets.out" ||
		fail "--delete-offsets --group $group_g1 --topic $topic_groups:1 did not report partition 1 Successful; it printed: $(tr '\n' ' ' <"$work/delete-offsets.out")" "$work/delete-offsets.out.err"
	describe_offsets "after --delete-offsets --topic $topic_groups:1" "$group_g1" "$topic_groups" \
		"$(count grp 0)/$(count grp 0)" none "$(count grp 2)/$(count grp 2)"
}

# With a console consumer in g1 (in the background, --timeout-ms long),
# --describe --members shows it holding all 3 partitions, --delete fails
# with Kafka's GroupNotEmptyException message, --delete-offsets with its
# GroupSubscribedToTopicException and --reset-offsets refuses a Stable
# group. SIGTERM stops the consumer, which leaves the group on its way out:
# g1 becomes Empty.
group_delete_active() {
	need_broker
	need_java
	[[ -s $work/grp.in ]] || fail "nothing was produced to groups (group-produce did not run)"
	local member want start p
	start_bg "$work/g1-member.got" timeout -k 5 "$TOOL_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$libs/*" "$CONSUMER" \
		--bootstrap-server "$bs" --topic "$topic_groups" --group "$group_g1" --timeout-ms 100000
	member=$bg_pid
	wait_group_state "$group_g1" Stable 1
	groups_cmd "$work/members.out" --describe --group "$group_g1" --members
	sed 's/^/    /' "$work/members.out"
	# GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS
	awk -v g="$group_g1" '$1 == g && $4 == "console-consumer" && $5 == 3 { found = 1 } END { exit !found }' "$work/members.out" ||
		fail "--describe --group $group_g1 --members does not show one console-consumer member with 3 partitions" "$work/members.out"
	groups_cmd "$work/delete-active.out" --delete --group "$group_g1"
	want="* Group '$group_g1' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty."
	grep -qF -- "$want" "$work/delete-active.out" ||
		fail "--delete --group $group_g1 with an active member: expected Kafka's '$want'; it printed: $(tr '\n' ' ' <"$work/delete-active.out")" "$work/delete-active.out.err"
	say "  --delete with a member: $(grep -F 'could not be deleted' "$work/delete-active.out")"
	groups_cmd "$work/delete-offsets-active.out" --delete-offsets --group "$group_g1" --topic "$topic_groups"
	want="Error: org.apache.kafka.common.errors.GroupSubscribedToTopicException: Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."
	for p in 0 1 2; do
		awk -v t="$topic_groups" -v p="$p" -v want="$want" '$1 == t && $2 == p && index($0, want) { found = 1 } END { exit !found }' "$work/delete-offsets-active.out" ||
			fail "--delete-offsets --group $group_g1 --topic $topic_groups with a subscribed member: expected '$want' for partition $p; it printed: $(tr '\n' ' ' <"$work/delete-offsets-active.out")" "$work/delete-offsets-active.out.err"
	done
	say "  --delete-offsets with a member: GroupSubscribedToTopicException for partitions 0-2"
	groups_cmd "$work/reset-active.out" --reset-offsets --group "$group_g1" --topic "$topic_groups" --to-earliest --execute
	want="Error: Assignments can only be reset if the group '$group_g1' is inactive, but the current state is Stable."
	grep -qF -- "$want" "$work/reset-active.out" ||
		fail "--reset-offsets --group $group_g1 with an active member: expected Kafka's '$want'; it printed: $(tr '\n' ' ' <"$work/reset-active.out")" "$work/reset-active.out.err"
	say "  --reset-offsets with a member: $want"
	start=$SECONDS
	kill -TERM "$member"
	while kill -0 "$member" 2>/dev/null && ((SECONDS < start + 20)); do sleep 0.1; done
	! kill -0 "$member" 2>/dev/null || fail "the console consumer in $group_g1 did not exit within 20s of SIGTERM" "$work/g1-member.got.err"
	say "  the member exited $((SECONDS - start))s after SIGTERM"
	wait_group_state "$group_g1" Empty 0
	((waited <= 15)) ||
		fail "$group_g1 became Empty only ${waited}s after its member exited; the console consumer sends LeaveGroup as it closes, which empties the group at once in Kafka (this looks like the 45s session timeout instead)" "$work/gregor.log"
}

# With no member left, --delete --group g1 succeeds, --list no longer shows
# it and --describe says it is not found.
group_delete() {
	need_broker
	need_java
	local want="Deletion of requested consumer groups ('$group_g1') was successful."
	groups_cmd "$work/delete.out" --delete --group "$group_g1"
	grep -qF -- "$want" "$work/delete.out" ||
		fail "--delete --group $group_g1: expected '$want'; it printed: $(tr '\n' ' ' <"$work/delete.out")" "$work/delete.out.err"
	groups_cmd "$work/list-after-delete.out" --list
	! awk -v g="$group_g1" '$1 == g { found = 1 } END { exit !found }' "$work/list-after-delete.out" ||
		fail "--list still shows $group_g1 after --delete: $(tr '\n' ' ' <"$work/list-after-delete.out")"
	groups_cmd "$work/describe-deleted.out" --describe --group "$group_g1"
	grep -qE "GroupIdNotFoundException|does not exist" "$work/describe-deleted.out" ||
		fail "--describe --group $group_g1 after --delete does not say the group is not found; it printed: $(tr '\n' ' ' <"$work/describe-deleted.out")" "$work/describe-deleted.out.err"
	touch "$work/g1.deleted"
	say "  $want; --list no longer shows $group_g1; --describe: $(grep -oE 'GroupIdNotFoundException: .*|Consumer group .* does not exist.*' "$work/describe-deleted.out" | head -n 1)"
}

# Two kcat -G members (librdkafka's group consumer) read the 4-partition
# topic kcatg in group kcat-g. -e does not work with -G, so they run in the
# background until their output together holds all N records (partition,
# offset); SIGINT then stops them, and they commit as they close. Every
# record was seen at its offset (duplicates are allowed), both members had
# partitions and records, and --describe shows the commits at the log end.
KCAT_GROUP_WAIT=60
kcat_group() {
	need_broker
	need_kcat
	need_java
	create_topic "$topic_kcatg" 4
	check lines kg 0 "$N" >"$work/kg.in"
	check partition 4 "$work/kg.p" <"$work/kg.in" >"$work/kg.counts"
	local i p pids=() start seen=0 rc assigned
	for i in 1 2; do
		start_bg "$work/kg-$i.got" timeout -k 5 "$TOOL_TIMEOUT" kcat -b "$bs" "${kcat_security[@]}" -G "$group_kcat" -u \
			-X auto.offset.reset=earliest -f '%p\t%o\t%k\t%s\n' "$topic_kcatg"
		pids+=("$bg_pid")
	done
	# The records are produced once both members hold partitions: a member
	# alone in the group gets all four and could read everything before the
	# second one joins.
	start=$SECONDS
	while ((SECONDS < start + KCAT_GROUP_WAIT)); do
		assigned=0
		for i in 1 2; do
			grep -qE 'assigned: .*\[[0-9]+\]' "$work/kg-$i.got.err" && assigned=$((assigned + 1))
		done
		((assigned < 2)) || break
		for i in 0 1; do
			kill -0 "${pids[i]}" 2>/dev/null || fail "kcat -G member $((i + 1)) exited before the group formed" "$work/kg-$((i + 1)).got.err"
		done
		sleep 0.2
	done
	((assigned == 2)) || fail "kcat -G: $assigned of 2 members were assigned partitions within ${KCAT_GROUP_WAIT}s" "$work/kg-2.got.err"
	kcat_b -P -t "$topic_kcatg" -K "$tab" -X partitioner=murmur2_random -X acks=all \
		<"$work/kg.in" >"$work/kg-produce.out" 2>"$work/kg-produce.err" ||
		fail "kcat -P -t $topic_kcatg exited with status $?" "$work/kg-produce.err"
	no_errors "kcat -P -t $topic_kcatg" "$work/kg-produce.err"
	start=$SECONDS
	while ((SECONDS < start + KCAT_GROUP_WAIT)); do
		seen=$(cat "$work"/kg-{1,2}.got | awk -F'\t' 'NF == 4 { print $1 "\t" $2 }' | sort -u | wc -l)
		((seen < N)) || break
		for i in 0 1; do
			kill -0 "${pids[i]}" 2>/dev/null || fail "kcat -G member $((i + 1)) exited early (after $((SECONDS - start))s, $seen of $N records seen)" "$work/kg-$((i + 1)).got.err"
		done
		sleep 0.5
	done
	say "  the two members saw $seen distinct records after $((SECONDS - start))s"
	for i in 0 1; do kill -INT "${pids[i]}" 2>/dev/null || true; done
	for i in 0 1; do
		start=$SECONDS
		while kill -0 "${pids[i]}" 2>/dev/null && ((SECONDS < start + 20)); do sleep 0.1; done
		! kill -0 "${pids[i]}" 2>/dev/null || fail "kcat -G member $((i + 1)) did not exit within 20s of SIGINT" "$work/kg-$((i + 1)).got.err"
		rc=0
		wait "${pids[i]}" || rc=$?
		((rc == 0)) || fail "kcat -G member $((i + 1)) exited with status $rc after SIGINT, expected 0" "$work/kg-$((i + 1)).got.err"
	done
	if ((seen < N)); then
		local per=""
		for p in 0 1 2 3; do
			per+="partition $p: $(cat "$work"/kg-{1,2}.got | awk -F'\t' -v p="$p" 'NF == 4 && $1 == p { print $2 }' | sort -u | wc -l) of $(count kg "$p"); "
		done
		fail "kcat -G: the two members saw $seen of $N records within ${KCAT_GROUP_WAIT}s (${per%; })" "$work/kg-1.got.err"
	fi
	for p in 0 1 2 3; do awk -v p="$p" '{ print p "\t" NR - 1 "\t" $0 }' "$work/kg.p$p"; done >"$work/kg.want"
	cat "$work"/kg-{1,2}.got | sort -u >"$work/kg.got"
	check same-set "$work/kg.want" "$work/kg.got" >"$work/cmp" ||
		fail "kcat -G: the distinct partition/offset/key/value lines the members printed are not the records written there: $(cat "$work/cmp")"
	for i in 1 2; do
		grep -qE 'assigned: .*\[[0-9]+\]' "$work/kg-$i.got.err" ||
			fail "kcat -G member $i was never assigned a partition" "$work/kg-$i.got.err"
		[[ -s $work/kg-$i.got ]] || fail "kcat -G member $i printed no records" "$work/kg-$i.got.err"
		say "  member $i: $(wc -l <"$work/kg-$i.got") records; $(grep -oE 'assigned: .*' "$work/kg-$i.got.err" | paste -sd ';' -)"
	done
	# shellcheck disable=SC2046
	describe_offsets "after both kcat -G members stopped" "$group_kcat" "$topic_kcatg" $(at_end kg)
	touch "$work/kcat-g.ok"
}

# compat-tests/sarama, built here into compat-tests/.cache/sarama-group,
# runs two Sarama group members (one client each) in group sarama-g over
# the 4-partition topic sarama, which the Java producer wrote, until they
# have seen all N records; it checks its own commits with OffsetFetch, and
# --describe must show them at the log end too.
SARAMA_WAIT=90
sarama_group() {
	need_broker
	need_java
	command -v go >/dev/null || fail "go not found"
	local bin=$root/compat-tests/.cache/sarama-group
	(cd "$root/compat-tests/sarama" && go build -o ../.cache/sarama-group .) >"$work/sarama-build.out" 2>&1 ||
		fail "go build in compat-tests/sarama failed" "$work/sarama-build.out"
	create_topic sarama 4
	check lines sarama 0 "$N" >"$work/sarama.in"
	check partition 4 "$work/sarama.p" <"$work/sarama.in" >"$work/sarama.counts"
	produce_java sarama "$work/sarama.in"
	timeout -k 5 "$((SARAMA_WAIT + 30))" "$bin" -brokers "$bs" -topic sarama -group sarama-g -members 2 \
		-expect "$N" -timeout "${SARAMA_WAIT}s" </dev/null >"$work/sarama.out" 2>"$work/sarama.err" ||
		fail "sarama-group -topic sarama -group sarama-g -members 2 -expect $N exited with status $?: $(grep -m1 'FAIL' "$work/sarama.err" | sed 's/^sarama-group: [0-9:.]* //')" "$work/sarama.err"
	grep -E 'assigned|seen|committed offsets' "$work/sarama.err" | sed -E 's/^sarama-group: [0-9:.]+ /    /'
	# shellcheck disable=SC2046
	describe_offsets "after sarama-group" sarama-g sarama $(at_end sarama)
	touch "$work/sarama-g.ok"
}

# After the restart, the groups come back from __consumer_offsets: kcat-g and
# sarama-g are listed with their offsets at the log end, and g1, deleted
# before the restart, stays deleted.
restart_groups() {
	need_broker
	need_java
	local g prefix topic checked=0
	groups_cmd "$work/restart-list.out" --list
	say "  --list: $(tr '\n' ' ' <"$work/restart-list.out")"
	if [[ -e $work/g1.deleted ]]; then
		! awk -v g="$group_g1" '$1 == g { found = 1 } END { exit !found }' "$work/restart-list.out" ||
			fail "after the restart --list shows $group_g1 again, which was deleted before it"
	fi
	for g in kcat-g sarama-g; do
		[[ -e $work/$g.ok ]] || continue
		awk -v g="$g" '$1 == g { found = 1 } END { exit !found }' "$work/restart-list.out" ||
			fail "after the restart --list does not show $g; it printed: $(tr '\n' ' ' <"$work/restart-list.out")" "$work/restart-list.out.err"
		prefix=kg topic=kcatg
		[[ $g == sarama-g ]] && prefix=sarama topic=sarama
		# shellcheck disable=SC2046
		describe_offsets "after the restart" "$g" "$topic" $(at_end "$prefix")
		checked=$((checked + 1))
	done
	((checked > 0)) || [[ -e $work/g1.deleted ]] || fail "no group scenario passed before the restart, so there is nothing to check"
}

# acls: kafka-acls (AclCommand) against the broker. Without an authorizer
# --list fails with Kafka's SecurityDisabledException. The broker is then
# restarted with the StandardAuthorizer and User:ANONYMOUS (the principal
# of every PLAINTEXT connection, so of these tools) as super user:
# --add a literal ALLOW and a prefixed DENY with a host, --list prints both
# as Kafka prints them, --list --principal only the first, --remove --force
# the prefixed one, and --list then shows only the literal one. The console
# consumer, a super user, still reads the topic written before.
acls_cmd() { tool_cmd "$ACLS" kafka-acls "$@"; }

acls() {
	need_broker
	need_java
	if kafka_java "$ACLS" --bootstrap-server "$bs" --list </dev/null >"$work/acls-off.out" 2>"$work/acls-off.out.err"; then
		fail "kafka-acls --list on a broker without an authorizer succeeded; it printed: $(lines_of "$work/acls-off.out")"
	fi
	grep -q 'SecurityDisabledException' "$work/acls-off.out" "$work/acls-off.out.err" ||
		fail "kafka-acls --list without an authorizer did not fail with SecurityDisabledException" "$work/acls-off.out.err"
	stop_broker TERM || fail "the broker did not stop on SIGTERM within ${STOP_TIMEOUT}s"
	GREGOR_SERVE_ARGS="${GREGOR_SERVE_ARGS:-} --authorizer.class.name org.apache.kafka.metadata.authorizer.StandardAuthorizer --super.users User:ANONYMOUS" \
		start_broker || fail "$(cat "$work/reason")"
	acls_cmd "$work/acls-add1.out" --add --allow-principal User:alice --operation Read --topic orders
	acls_cmd "$work/acls-add2.out" --add --deny-principal User:bob --deny-host 10.0.0.1 --operation Write \
		--topic orders- --resource-pattern-type prefixed
	acls_cmd "$work/acls-list.out" --list
	local want1='ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)'
	local entry1='(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)'
	local want2='ResourcePattern(resourceType=TOPIC, name=orders-, patternType=PREFIXED)'
	local entry2='(principal=User:bob, host=10.0.0.1, operation=WRITE, permissionType=DENY)'
	for w in "$want1" "$entry1" "$want2" "$entry2"; do
		grep -qF "$w" "$work/acls-list.out" || fail "kafka-acls --list does not show $w; it printed: $(lines_of "$work/acls-list.out")"
	done
	acls_cmd "$work/acls-alice.out" --list --principal User:alice
	grep -qF "$entry1" "$work/acls-alice.out" && ! grep -qF "$want2" "$work/acls-alice.out" ||
		fail "kafka-acls --list --principal User:alice printed: $(lines_of "$work/acls-alice.out")"
	acls_cmd "$work/acls-remove.out" --remove --force --deny-principal User:bob --deny-host 10.0.0.1 --operation Write \
		--topic orders- --resource-pattern-type prefixed
	acls_cmd "$work/acls-after.out" --list
	grep -qF "$entry1" "$work/acls-after.out" && ! grep -qF "$want2" "$work/acls-after.out" ||
		fail "after --remove, kafka-acls --list printed: $(lines_of "$work/acls-after.out")"
	say "  --list shows the two ACLs added, then the one left after --remove"
	[[ -s $work/java.in ]] || return 0
	local count
	count=$(wc -l <"$work/java.p0")
	consume_java console 0 "$count" "$work/acls-java.p0"
	check same-order "$work/java.p0" "$work/acls-java.p0" >"$work/cmp" ||
		fail "with the authorizer on, the console consumer (a super user) of console partition 0: $(cat "$work/cmp")" "$work/acls-java.p0.err"
	say "  with the authorizer on, the console consumer read console partition 0 ($count records) in order"
}

# scram: SCRAM credentials with kafka-configs --entity-type users. Kafka 4's
# controller alters a user at most once per request, so both mechanisms in
# one --add-config fail (DuplicateResourceException) and store nothing;
# added one per command, --describe (of alice, and of every user) prints
# both with their iterations (8192 given, 4096 the tool's default),
# --delete-config SCRAM-SHA-256 leaves SCRAM-SHA-512 alone, and deleting
# it again fails with ResourceNotFoundException.
scram() {
	need_broker
	need_java
	local user=(--entity-type users --entity-name alice)
	if kafka_java "$CONFIGS" --bootstrap-server "$bs" --alter "${user[@]}" \
		--add-config 'SCRAM-SHA-256=[iterations=8192,password=x],SCRAM-SHA-512=[password=y]' \
		</dev/null >"$work/scram-both.out" 2>"$work/scram-both.out.err"; then
		fail "kafka-configs --add-config with both mechanisms for one user succeeded; Kafka 4 refuses it"
	fi
	grep -q 'DuplicateResourceException' "$work/scram-both.out" "$work/scram-both.out.err" ||
		fail "both mechanisms in one --add-config did not fail with DuplicateResourceException" "$work/scram-both.out.err"
	configs_cmd "$work/scram-none.out" --describe "${user[@]}"
	! grep -q 'SCRAM' "$work/scram-none.out" ||
		fail "the refused --add-config stored something: $(lines_of "$work/scram-none.out")"
	configs_cmd "$work/scram-add256.out" --alter "${user[@]}" --add-config 'SCRAM-SHA-256=[iterations=8192,password=x]'
	configs_cmd "$work/scram-add512.out" --alter "${user[@]}" --add-config 'SCRAM-SHA-512=[password=y]'
	local both="SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
	configs_cmd "$work/scram-alice.out" --describe "${user[@]}"
	grep -qxF "$both" "$work/scram-alice.out" ||
		fail "kafka-configs --describe of alice printed: $(lines_of "$work/scram-alice.out")"
	configs_cmd "$work/scram-users.out" --describe --entity-type users
	grep -qxF "$both" "$work/scram-users.out" ||
		fail "kafka-configs --describe --entity-type users printed: $(lines_of "$work/scram-users.out")"
	configs_cmd "$work/scram-del.out" --alter "${user[@]}" --delete-config SCRAM-SHA-256
	configs_cmd "$work/scram-after.out" --describe "${user[@]}"
	grep -qxF "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=4096" "$work/scram-after.out" ||
		fail "after --delete-config SCRAM-SHA-256, --describe of alice printed: $(lines_of "$work/scram-after.out")"
	if kafka_java "$CONFIGS" --bootstrap-server "$bs" --alter "${user[@]}" --delete-config SCRAM-SHA-256 \
		</dev/null >"$work/scram-del2.out" 2>"$work/scram-del2.out.err"; then
		fail "deleting alice's SCRAM-SHA-256 credential twice succeeded"
	fi
	grep -q 'ResourceNotFoundException' "$work/scram-del2.out" "$work/scram-del2.out.err" ||
		fail "deleting a missing credential did not fail with ResourceNotFoundException" "$work/scram-del2.out.err"
	say "  both mechanisms added (one per command), described with their iterations, SCRAM-SHA-256 deleted"
}

# sasl: a SASL_PLAINTEXT listener next to the PLAINTEXT one. The broker is
# restarted with both (SASL_PLAINTEXT on $sasl_bs), offering PLAIN (users
# admin and alice, from the listener's JAAS config) and SCRAM-SHA-256/512
# (users from the registry). With the Kafka tools and kcat:
#   - kafka-configs over PLAINTEXT gives carol a SCRAM-SHA-512 and a
#     SCRAM-SHA-256 credential (one per command, as Kafka 4 wants);
#   - over SASL_PLAINTEXT, kafka-topics as carol (SCRAM-SHA-256) creates
#     and lists topic sasl, the console producer as carol (SCRAM-SHA-512)
#     writes N lines, kafka-get-offsets over PLAINTEXT counts N, and the
#     console consumer as alice (PLAIN, in a group) reads them in order;
#   - a wrong password (SCRAM and PLAIN) and an unknown SCRAM user fail
#     with SaslAuthenticationException: kafka-topics exits non-zero; the
#     console producer and consumer, which exit 0 all the same on Kafka
#     4.4, write and read nothing. A mechanism the listener does not offer
#     (OAUTHBEARER) fails with UnsupportedSaslMechanismException;
#   - a client without SASL settings on the SASL port gets nowhere: Kafka
#     answers its ApiVersions, closes the connection at the next request,
#     and kafka-topics times out waiting for a node; kcat reports the
#     disconnect;
#   - kcat over SASL_PLAINTEXT produces, consumes, and reads the console
#     producer's lines: with SCRAM-SHA-512 as carol when its librdkafka is
#     2.6.1 or later. Older ones repeat the client nonce in their
#     client-final-message, which Kafka 4 refuses (the Java client gets in
#     with the same password), so there SCRAM must be refused and the round
#     trip uses PLAIN as alice.
# sasl-reauth, sasl-acls and sasl-oauthbearer follow, then sasl-restore,
# which restarts the broker as console-test started it whether they passed
# or not.
sasl_jaas='org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
carol_password=carol-secret

# sasl_props FILE MECHANISM USER PASSWORD: client settings for
# SASL_PLAINTEXT with MECHANISM as USER.
sasl_props() {
	local module=scram.ScramLoginModule
	[[ $2 != PLAIN ]] || module=plain.PlainLoginModule
	printf '%s\n' security.protocol=SASL_PLAINTEXT "sasl.mechanism=$2" \
		"sasl.jaas.config=org.apache.kafka.common.security.$module required username=\"$3\" password=\"$4\";" >"$1"
}

# sasl_topics OUT PROPS ARGS...: kafka-topics on the SASL listener with the
# client settings in PROPS; stdout to OUT, stderr to OUT.err; sets tool_rc.
sasl_topics() {
	local out=$1 props=$2
	shift 2
	tool_rc=0
	kafka_java "$TOPICS" --bootstrap-server "$sasl_bs" --command-config "$props" "$@" \
		</dev/null >"$out" 2>"$out.err" || tool_rc=$?
}

# sasl_refused WHAT PROPS EXCEPTION [MESSAGE]: kafka-topics --list with
# PROPS fails (exits non-zero; TOOL_TIMEOUT bounds it) with EXCEPTION in
# its output. When its error line is not "Error while executing topic
# command : MESSAGE", as with Kafka 4.4, that is noted in sasl-differs.
sasl_refused() {
	local what=$1 out=$work/sasl-refused-${1// /-}.out
	sasl_topics "$out" "$2" --list
	((tool_rc != 0)) || fail "kafka-topics --list with $what succeeded; it printed: $(lines_of "$out")" "$out.err"
	grep -q "$3" "$out" "$out.err" ||
		fail "kafka-topics --list with $what exited with status $tool_rc without a $3" "$out.err"
	say "  $what: status $tool_rc, $(head -n 1 "$out")"
	[[ -z ${4:-} ]] || grep -qxF "Error while executing topic command : $4" "$out" ||
		echo "$what: '$4' on Kafka 4.4, here '$(head -n 1 "$out")'" >>"$work/sasl-differs"
}

# sasl_end_offset: topic sasl's end offset, read over PLAINTEXT.
sasl_end_offset() {
	offsets_cmd "$work/sasl-offsets.out" --topic sasl --time -1
	awk -F: '$1 == "sasl" && $2 == 0 { print $3 }' "$work/sasl-offsets.out"
}

# sasl_start [FLAGS...]: restarts the broker with the SASL_PLAINTEXT
# listener, and FLAGS (last, so that they may replace a setting).
sasl_start() {
	if broker_alive; then
		stop_broker TERM || fail "the broker did not stop on SIGTERM within ${STOP_TIMEOUT}s"
	fi
	serve_extra=(--listeners "PLAINTEXT://$bs,SASL_PLAINTEXT://$sasl_bs"
		--sasl.enabled.mechanisms PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
		--listener.name.sasl_plaintext.plain.sasl.jaas.config "$sasl_jaas" "$@")
	start_broker || fail "$(cat "$work/reason")"
}

# sasl_first_login PROPS WHAT: kafka-topics --list with PROPS until it
# succeeds. A SCRAM credential reaches the broker after
# AlterUserScramCredentials returns (on Kafka through the metadata log), so
# the first login may come too early; it is retried until a deadline.
sasl_first_login() {
	local deadline=$((SECONDS + 30)) tries=1
	until sasl_topics "$work/sasl-first.out" "$1" --list && ((tool_rc == 0)); do
		((SECONDS < deadline)) ||
			fail "kafka-topics --list as $2 still failed after $tries tries in 30s (status $tool_rc)" "$work/sasl-first.out.err"
		tries=$((tries + 1))
		sleep 1
	done
	say "  first login as $2: kafka-topics --list exited 0 (try $tries)"
}

sasl() {
	need_broker
	need_java
	sasl_start

	local user=(--entity-type users --entity-name carol)
	configs_cmd "$work/sasl-add512.out" --alter "${user[@]}" --add-config "SCRAM-SHA-512=[password=$carol_password]"
	configs_cmd "$work/sasl-add256.out" --alter "${user[@]}" --add-config "SCRAM-SHA-256=[password=$carol_password]"
	configs_cmd "$work/sasl-carol.out" --describe "${user[@]}"
	# Kafka lists the two in either order from one run to the next.
	local m
	for m in SCRAM-SHA-256 SCRAM-SHA-512; do
		grep -qE "^SCRAM credential configs for user-principal 'carol' are .*$m=iterations=4096" "$work/sasl-carol.out" ||
			fail "kafka-configs --describe of carol printed: $(lines_of "$work/sasl-carol.out")"
	done
	say "  kafka-configs over PLAINTEXT: carol has SCRAM-SHA-256 and SCRAM-SHA-512 credentials"

	local c256=$work/sasl-carol-256.properties c512=$work/sasl-carol-512.properties alice=$work/sasl-alice.properties
	sasl_props "$c256" SCRAM-SHA-256 carol "$carol_password"
	sasl_props "$c512" SCRAM-SHA-512 carol "$carol_password"
	sasl_props "$alice" PLAIN alice alice-secret
	sasl_first_login "$c512" "carol (SCRAM-SHA-512)"
	sasl_topics "$work/sasl-create.out" "$c256" --create --topic sasl --partitions 1 --replication-factor 1
	((tool_rc == 0)) && grep -q 'Created topic sasl' "$work/sasl-create.out" ||
		fail "kafka-topics --create --topic sasl as carol (SCRAM-SHA-256) exited with status $tool_rc: $(lines_of "$work/sasl-create.out")" "$work/sasl-create.out.err"
	sasl_topics "$work/sasl-list.out" "$c256" --list
	((tool_rc == 0)) && grep -qx sasl "$work/sasl-list.out" ||
		fail "kafka-topics --list as carol (SCRAM-SHA-256) exited with status $tool_rc: $(lines_of "$work/sasl-list.out")" "$work/sasl-list.out.err"
	say "  kafka-topics as carol (SCRAM-SHA-256): --create and --list of topic sasl"

	check lines sasl 0 "$N" >"$work/sasl.in"
	kafka_java "$PRODUCER" --bootstrap-server "$sasl_bs" --topic sasl --command-config "$c512" \
		--command-property acks=all --reader-property parse.key=true --reader-property "key.separator=$tab" \
		<"$work/sasl.in" >"$work/sasl-produce.out" 2>"$work/sasl-produce.err" ||
		fail "console producer as carol (SCRAM-SHA-512) exited with status $?" "$work/sasl-produce.err"
	no_errors "console producer as carol (SCRAM-SHA-512)" "$work/sasl-produce.err"
	local end
	end=$(sasl_end_offset)
	[[ $end == "$N" ]] || fail "after the console producer wrote $N lines over SASL, kafka-get-offsets over PLAINTEXT says sasl ends at '$end'"
	kafka_java "$CONSUMER" --bootstrap-server "$sasl_bs" --topic sasl --group sasl-alice --from-beginning \
		--max-messages "$N" --timeout-ms 30000 --formatter-property print.key=true --command-config "$alice" \
		</dev/null >"$work/sasl-consume.out" 2>"$work/sasl-consume.err" || true
	check same-order "$work/sasl.in" "$work/sasl-consume.out" >"$work/cmp" ||
		fail "console consumer as alice (PLAIN) --group sasl-alice --from-beginning --max-messages $N: $(cat "$work/cmp")" "$work/sasl-consume.err"
	say "  console producer as carol (SCRAM-SHA-512) wrote $N lines; the console consumer as alice (PLAIN) read them in order"

	local bad=$work/sasl-bad
	sasl_props "$bad-512.properties" SCRAM-SHA-512 carol not-carols
	sasl_props "$bad-plain.properties" PLAIN alice not-alices
	sasl_props "$bad-unknown.properties" SCRAM-SHA-256 mallory "$carol_password"
	printf '%s\n' security.protocol=SASL_PLAINTEXT sasl.mechanism=OAUTHBEARER \
		'sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="carol";' \
		>"$bad-oauth.properties"
	# The messages are Kafka's: a SCRAM failure says only that the
	# credentials did not match, PLAIN's own message is its server's.
	: >"$work/sasl-differs"
	sasl_refused "a wrong SCRAM-SHA-512 password" "$bad-512.properties" SaslAuthenticationException \
		"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
	sasl_refused "a wrong PLAIN password" "$bad-plain.properties" SaslAuthenticationException \
		"Authentication failed: Invalid username or password"
	sasl_refused "an unknown SCRAM user" "$bad-unknown.properties" SaslAuthenticationException \
		"Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
	# Kafka lists the enabled mechanisms in no particular order.
	sasl_refused "OAUTHBEARER" "$bad-oauth.properties" UnsupportedSaslMechanismException
	for m in PLAIN SCRAM-SHA-256 SCRAM-SHA-512; do
		grep -q "enabled mechanisms are \[.*$m" "$work/sasl-refused-OAUTHBEARER.out" ||
			fail "refusing OAUTHBEARER, the broker did not list $m among its mechanisms: $(lines_of "$work/sasl-refused-OAUTHBEARER.out")"
	done

	local rc=0
	head -n 5 "$work/sasl.in" |
		kafka_java "$PRODUCER" --bootstrap-server "$sasl_bs" --topic sasl --command-config "$bad-512.properties" \
			--reader-property parse.key=true --reader-property "key.separator=$tab" \
			>"$work/sasl-bad-produce.out" 2>"$work/sasl-bad-produce.err" || rc=$?
	grep -q SaslAuthenticationException "$work/sasl-bad-produce.err" ||
		fail "the console producer with a wrong SCRAM-SHA-512 password (status $rc) reported no SaslAuthenticationException" "$work/sasl-bad-produce.err"
	end=$(sasl_end_offset)
	[[ $end == "$N" ]] || fail "the console producer with a wrong password moved the end of sasl from $N to '$end'"
	rc=0
	kafka_java "$CONSUMER" --bootstrap-server "$sasl_bs" --topic sasl --from-beginning --max-messages 5 \
		--timeout-ms 20000 --command-config "$bad-plain.properties" \
		</dev/null >"$work/sasl-bad-consume.out" 2>"$work/sasl-bad-consume.err" || rc=$?
	grep -q SaslAuthenticationException "$work/sasl-bad-consume.err" ||
		fail "the console consumer with a wrong PLAIN password (status $rc) reported no SaslAuthenticationException" "$work/sasl-bad-consume.err"
	! grep -q 'sasl-key' "$work/sasl-bad-consume.out" ||
		fail "the console consumer with a wrong PLAIN password read records: $(lines_of "$work/sasl-bad-consume.out")"
	say "  with wrong passwords the console producer wrote nothing and the console consumer read nothing, both with a SaslAuthenticationException"

	# No SASL settings; short timeouts, as such a client waits for a node
	# until default.api.timeout.ms (60 s by default).
	printf '%s\n' request.timeout.ms=10000 default.api.timeout.ms=10000 >"$work/sasl-plaintext.properties"
	rc=0
	kafka_java "$TOPICS" --bootstrap-server "$sasl_bs" --command-config "$work/sasl-plaintext.properties" --list \
		</dev/null >"$work/sasl-plaintext.out" 2>"$work/sasl-plaintext.out.err" || rc=$?
	((rc != 0)) || fail "kafka-topics --list without SASL on the SASL port succeeded; it printed: $(lines_of "$work/sasl-plaintext.out")"
	grep -q 'Timed out waiting for a node assignment' "$work/sasl-plaintext.out" "$work/sasl-plaintext.out.err" ||
		fail "kafka-topics --list without SASL on the SASL port exited with status $rc but did not time out waiting for a node" "$work/sasl-plaintext.out.err"
	say "  without SASL on the SASL port: status $rc, $(head -n 1 "$work/sasl-plaintext.out")"

	if command -v kcat >/dev/null; then
		sasl_kcat
	else
		say "  kcat is not installed: its part of sasl did not run"
	fi
	# Last, so that a message differing from Kafka's does not hide the
	# checks after it.
	[[ ! -s $work/sasl-differs ]] ||
		fail "the tools printed other errors than with Kafka 4.4: $(paste -sd ';' "$work/sasl-differs")"
}

# sasl_kcat: kcat's part of sasl (see there).
sasl_kcat() {
	local rc=0
	timeout -k 5 30 kcat -b "$sasl_bs" -L -m 10 </dev/null >"$work/sasl-kcat-plain.out" 2>"$work/sasl-kcat-plain.err" || rc=$?
	((rc != 0)) || fail "kcat -L without SASL on the SASL port succeeded: $(lines_of "$work/sasl-kcat-plain.out")"
	grep -q 'Disconnected' "$work/sasl-kcat-plain.err" ||
		fail "kcat -L without SASL on the SASL port (status $rc) reported no disconnect" "$work/sasl-kcat-plain.err"
	say "  kcat without SASL on the SASL port: $(grep -m1 -o 'Disconnected[^(]*' "$work/sasl-kcat-plain.err" | sed 's/ *$//')"

	local lib scram=(-X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=carol -X "sasl.password=$carol_password") kc who
	lib=$(kcat -V 2>&1 | sed -nE 's/.*librdkafka ([0-9.]+).*/\1/p' | head -n 1)
	if [[ -n $lib && $(printf '%s\n' 2.6.1 "$lib" | sort -V | head -n 1) == 2.6.1 ]]; then
		kc=("${scram[@]}")
		who="carol (SCRAM-SHA-512)"
	else
		rc=0
		timeout -k 5 30 kcat -b "$sasl_bs" "${scram[@]}" -L -m 10 </dev/null >"$work/sasl-kcat-scram.out" 2>"$work/sasl-kcat-scram.err" || rc=$?
		((rc != 0)) ||
			fail "kcat (librdkafka $lib) logged in with SCRAM-SHA-512, which Kafka 4 refuses: librdkafka before 2.6.1 repeats the client nonce in its client-final-message"
		grep -q 'SASL authentication error' "$work/sasl-kcat-scram.err" ||
			fail "kcat (librdkafka $lib) with SCRAM-SHA-512 exited with status $rc without a SASL authentication error" "$work/sasl-kcat-scram.err"
		say "  kcat (librdkafka $lib, before 2.6.1) refused with SCRAM-SHA-512, as on Kafka 4: $(grep -m1 -o 'SASL authentication error[^(]*' "$work/sasl-kcat-scram.err" | sed 's/ *$//')"
		kc=(-X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=PLAIN -X sasl.username=alice -X sasl.password=alice-secret)
		who="alice (PLAIN)"
	fi
	create_topic sasl-kcat 1
	check lines kcat-sasl 0 "$N" >"$work/sasl-kcat.in"
	timeout -k 5 "$TOOL_TIMEOUT" kcat -b "$sasl_bs" "${kc[@]}" -P -t sasl-kcat -K "$tab" \
		<"$work/sasl-kcat.in" >"$work/sasl-kcat-produce.out" 2>"$work/sasl-kcat-produce.err" ||
		fail "kcat -P as $who exited with status $?" "$work/sasl-kcat-produce.err"
	no_errors "kcat -P as $who" "$work/sasl-kcat-produce.err"
	local t
	for t in sasl-kcat sasl; do
		rc=0
		timeout -k 5 "$KCAT_CONSUME_TIMEOUT" kcat -b "$sasl_bs" "${kc[@]}" -C -t "$t" -o beginning -e -f '%k\t%s\n' \
			</dev/null >"$work/sasl-kcat-$t.got" 2>"$work/sasl-kcat-$t.got.err" || rc=$?
		((rc == 0)) || fail "kcat -C -e -t $t as $who exited with status $rc (read $(wc -l <"$work/sasl-kcat-$t.got") records)" "$work/sasl-kcat-$t.got.err"
	done
	check same-order "$work/sasl-kcat.in" "$work/sasl-kcat-sasl-kcat.got" >"$work/cmp" ||
		fail "kcat -C -t sasl-kcat as $who: $(cat "$work/cmp")"
	check same-order "$work/sasl.in" "$work/sasl-kcat-sasl.got" >"$work/cmp" ||
		fail "kcat -C -t sasl as $who (the console producer's lines): $(cat "$work/cmp")"
	say "  kcat as $who read back in order the $N lines it wrote and the $N the console producer wrote"
}

# sasl-reauth: restarted with connections.max.reauth.ms=3000, the broker
# gives each SASL session 3 s (SaslAuthenticate's session lifetime) and
# the Java client re-authenticates on its open connections before they
# expire (KIP-368). A console consumer as carol (SCRAM-SHA-512), logging
# its authenticator at debug, waits on an empty topic until it has
# re-authenticated; the console producer then writes N lines, which the
# consumer reads in order on the connections it kept.
SASL_REAUTH_MS=3000
sasl_reauth() {
	need_broker
	need_java
	sasl_start --connections.max.reauth.ms "$SASL_REAUTH_MS"
	local c512=$work/sasl-carol-512.properties out=$work/sasl-reauth.got consumer deadline
	configs_cmd "$work/sasl-reauth-add.out" --alter --entity-type users --entity-name carol \
		--add-config "SCRAM-SHA-512=[password=$carol_password]"
	sasl_props "$c512" SCRAM-SHA-512 carol "$carol_password"
	sasl_first_login "$c512" "carol (SCRAM-SHA-512)"
	create_topic sasl-reauth 1
	start_bg "$out" timeout -k 5 "$TOOL_TIMEOUT" java "${JAVA_OPTS[@]}" \
		-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common.security.authenticator=debug \
		-cp "$libs/*" "$CONSUMER" --bootstrap-server "$sasl_bs" --topic sasl-reauth --group sasl-reauth \
		--from-beginning --max-messages "$N" --timeout-ms 60000 --formatter-property print.key=true \
		--command-config "$c512"
	consumer=$bg_pid
	deadline=$((SECONDS + 30))
	until grep -q 'Finished re-authentication' "$out.err"; do
		kill -0 "$consumer" 2>/dev/null || fail "the console consumer as carol exited before it re-authenticated" "$out.err"
		((SECONDS < deadline)) ||
			fail "the console consumer as carol did not re-authenticate within 30s (sessions of ${SASL_REAUTH_MS} ms)" "$out.err"
		sleep 0.2
	done
	grep -q "Finished authentication with session expiration in $SASL_REAUTH_MS ms" "$out.err" ||
		fail "the console consumer's first authentication did not get a session of $SASL_REAUTH_MS ms: $(grep -m1 -o 'Finished authentication[^\[]*' "$out.err")" "$out.err"
	check lines reauth 0 "$N" >"$work/sasl-reauth.in"
	kafka_java "$PRODUCER" --bootstrap-server "$sasl_bs" --topic sasl-reauth --command-config "$c512" \
		--command-property acks=all --reader-property parse.key=true --reader-property "key.separator=$tab" \
		<"$work/sasl-reauth.in" >"$work/sasl-reauth-produce.out" 2>"$work/sasl-reauth-produce.err" ||
		fail "console producer as carol (SCRAM-SHA-512) exited with status $?" "$work/sasl-reauth-produce.err"
	no_errors "console producer as carol (SCRAM-SHA-512)" "$work/sasl-reauth-produce.err"
	wait "$consumer" || fail "the console consumer as carol exited with status $?" "$out.err"
	check same-order "$work/sasl-reauth.in" "$out" >"$work/cmp" ||
		fail "the re-authenticating console consumer (--max-messages $N): $(cat "$work/cmp")" "$out.err"
	no_errors "the re-authenticating console consumer" "$out.err"
	say "  the console consumer re-authenticated $(grep -c 'Finished re-authentication' "$out.err") times (sessions of ${SASL_REAUTH_MS} ms), then read the $N lines written after that, in order"
}

# sasl-acls: the SASL principals are what the authorizer sees. Restarted
# with the StandardAuthorizer (User:ANONYMOUS, the PLAINTEXT tools, a super
# user) next to the SASL settings; kafka-acls over PLAINTEXT lets
# User:carol write topic sasl-acl and User:alice read it in group
# sasl-acl-g. Then carol (SCRAM-SHA-512) writes N lines, which alice
# (PLAIN) reads in the group, in order; alice may not write (her producer
# gets no producer id, ClusterAuthorizationException, or without
# idempotence a TopicAuthorizationException; nothing is written) and carol
# may not read (GroupAuthorizationException).
sasl_acls() {
	need_broker
	need_java
	sasl_start --authorizer.class.name org.apache.kafka.metadata.authorizer.StandardAuthorizer --super.users User:ANONYMOUS
	local c512=$work/sasl-carol-512.properties alice=$work/sasl-alice.properties end rc
	configs_cmd "$work/sasl-acls-add.out" --alter --entity-type users --entity-name carol \
		--add-config "SCRAM-SHA-512=[password=$carol_password]"
	sasl_props "$c512" SCRAM-SHA-512 carol "$carol_password"
	sasl_props "$alice" PLAIN alice alice-secret
	create_topic sasl-acl 1
	acls_cmd "$work/sasl-acls-carol.out" --add --allow-principal User:carol --operation Write --topic sasl-acl
	acls_cmd "$work/sasl-acls-alice.out" --add --allow-principal User:alice --operation Read --topic sasl-acl --group sasl-acl-g
	sasl_first_login "$c512" "carol (SCRAM-SHA-512)"

	check lines acl 0 "$N" >"$work/sasl-acl.in"
	kafka_java "$PRODUCER" --bootstrap-server "$sasl_bs" --topic sasl-acl --command-config "$c512" \
		--command-property acks=all --reader-property parse.key=true --reader-property "key.separator=$tab" \
		<"$work/sasl-acl.in" >"$work/sasl-acl-produce.out" 2>"$work/sasl-acl-produce.err" ||
		fail "console producer as carol (SCRAM-SHA-512), allowed to write sasl-acl, exited with status $?" "$work/sasl-acl-produce.err"
	no_errors "console producer as carol (SCRAM-SHA-512), allowed to write sasl-acl" "$work/sasl-acl-produce.err"
	kafka_java "$CONSUMER" --bootstrap-server "$sasl_bs" --topic sasl-acl --group sasl-acl-g --from-beginning \
		--max-messages "$N" --timeout-ms 30000 --formatter-property print.key=true --command-config "$alice" \
		</dev/null >"$work/sasl-acl-consume.out" 2>"$work/sasl-acl-consume.err" || true
	check same-order "$work/sasl-acl.in" "$work/sasl-acl-consume.out" >"$work/cmp" ||
		fail "console consumer as alice (PLAIN), allowed to read sasl-acl in group sasl-acl-g: $(cat "$work/cmp")" "$work/sasl-acl-consume.err"
	say "  carol (SCRAM-SHA-512) wrote $N lines to sasl-acl, alice (PLAIN) read them in group sasl-acl-g, in order"

	# alice's producer is refused its producer id (idempotence is on by
	# default and she may write nowhere), and, without idempotence, the
	# write itself.
	local idem want out
	for idem in true false; do
		want=ClusterAuthorizationException
		[[ $idem == true ]] || want=TopicAuthorizationException
		out=$work/sasl-acl-alice-produce-$idem
		rc=0
		head -n 5 "$work/sasl-acl.in" |
			kafka_java "$PRODUCER" --bootstrap-server "$sasl_bs" --topic sasl-acl --command-config "$alice" \
				--command-property "enable.idempotence=$idem" \
				--reader-property parse.key=true --reader-property "key.separator=$tab" \
				>"$out.out" 2>"$out.err" || rc=$?
		grep -q "$want" "$out.err" ||
			fail "the console producer as alice (enable.idempotence=$idem), who may only read sasl-acl, reported no $want (status $rc)" "$out.err"
		say "  alice writing with enable.idempotence=$idem: $(grep -m1 -o "$want.*" "$out.err")"
	done
	offsets_cmd "$work/sasl-acl-offsets.out" --topic sasl-acl --time -1
	end=$(awk -F: '$1 == "sasl-acl" && $2 == 0 { print $3 }' "$work/sasl-acl-offsets.out")
	[[ $end == "$N" ]] || fail "the console producer as alice, who may only read sasl-acl, moved its end from $N to '$end'"
	rc=0
	kafka_java "$CONSUMER" --bootstrap-server "$sasl_bs" --topic sasl-acl --group sasl-acl-g --from-beginning \
		--max-messages 5 --timeout-ms 20000 --command-config "$c512" \
		</dev/null >"$work/sasl-acl-carol-consume.out" 2>"$work/sasl-acl-carol-consume.err" || rc=$?
	grep -q 'GroupAuthorizationException' "$work/sasl-acl-carol-consume.err" ||
		fail "the console consumer as carol, who may not read group sasl-acl-g, reported no GroupAuthorizationException (status $rc)" "$work/sasl-acl-carol-consume.err"
	! grep -q 'acl-key' "$work/sasl-acl-carol-consume.out" ||
		fail "the console consumer as carol, who may not read sasl-acl, read records: $(lines_of "$work/sasl-acl-carol-consume.out")"
	say "  carol reading: $(grep -m1 -o 'GroupAuthorizationException.*' "$work/sasl-acl-carol-consume.err")"
}

# sasl-oauthbearer: OAUTHBEARER next to the others, with Kafka's unsecured
# validator (no JWKS: the listener takes unsigned tokens, for tests only)
# requiring scope kafka. The Kafka tools' unsecured login module makes the
# tokens: erin's, without that scope, is refused with
# SaslAuthenticationException; with dave's, which has it, the console
# producer writes N lines and the console consumer, in a group, reads them
# in order.
sasl_oauthbearer() {
	need_broker
	need_java
	local module=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule
	sasl_start --sasl.enabled.mechanisms PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER \
		--listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config \
		"$module required unsecuredLoginStringClaim_sub=\"admin\" unsecuredValidatorRequiredScope=\"kafka\";"
	local dave=$work/sasl-dave.properties erin=$work/sasl-erin.properties
	printf '%s\n' security.protocol=SASL_PLAINTEXT sasl.mechanism=OAUTHBEARER \
		"sasl.jaas.config=$module required unsecuredLoginStringClaim_sub=\"dave\" unsecuredLoginListClaim_scope=\",kafka,other\";" >"$dave"
	printf '%s\n' security.protocol=SASL_PLAINTEXT sasl.mechanism=OAUTHBEARER \
		"sasl.jaas.config=$module required unsecuredLoginStringClaim_sub=\"erin\";" >"$erin"
	create_topic sasl-oauth 1
	sasl_first_login "$dave" "dave (OAUTHBEARER)"
	: >"$work/sasl-differs"
	sasl_refused "a token without the required scope" "$erin" SaslAuthenticationException \
		'{"status":"insufficient_scope", "scope":"[kafka]"}'
	check lines oauth 0 "$N" >"$work/sasl-oauth.in"
	kafka_java "$PRODUCER" --bootstrap-server "$sasl_bs" --topic sasl-oauth --command-config "$dave" \
		--command-property acks=all --reader-property parse.key=true --reader-property "key.separator=$tab" \
		<"$work/sasl-oauth.in" >"$work/sasl-oauth-produce.out" 2>"$work/sasl-oauth-produce.err" ||
		fail "console producer as dave (OAUTHBEARER) exited with status $?" "$work/sasl-oauth-produce.err"
	no_errors "console producer as dave (OAUTHBEARER)" "$work/sasl-oauth-produce.err"
	kafka_java "$CONSUMER" --bootstrap-server "$sasl_bs" --topic sasl-oauth --group sasl-oauth-g --from-beginning \
		--max-messages "$N" --timeout-ms 30000 --formatter-property print.key=true --command-config "$dave" \
		</dev/null >"$work/sasl-oauth-consume.out" 2>"$work/sasl-oauth-consume.err" || true
	check same-order "$work/sasl-oauth.in" "$work/sasl-oauth-consume.out" >"$work/cmp" ||
		fail "console consumer as dave (OAUTHBEARER) --group sasl-oauth-g: $(cat "$work/cmp")" "$work/sasl-oauth-consume.err"
	say "  as dave (OAUTHBEARER, an unsigned token) the console producer wrote $N lines and the console consumer read them in order"
	[[ ! -s $work/sasl-differs ]] ||
		fail "the tools printed other errors than with Kafka 4.4: $(paste -sd ';' "$work/sasl-differs")"
}

# sasl-restore: the broker as console-test started it, without the SASL
# listener (whose port then refuses connections).
sasl_restore() {
	if broker_alive; then
		stop_broker TERM || fail "the broker did not stop on SIGTERM within ${STOP_TIMEOUT}s"
	fi
	serve_extra=()
	start_broker || fail "$(cat "$work/reason")"
	! python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()' "$sasl_port" 2>/dev/null ||
		fail "after the restart without SASL, port $sasl_port still accepts connections"
}

# --- lab scenarios ------------------------------------------------------------

# The scenarios of run.sh BOOTSTRAP that console-test does not run, named
# after the lab's shared scenarios. Each has topics (and groups) of its own,
# $COMPAT_PREFIX-<name>, so that one failing leaves the others alone, and
# each checks what it read against what it wrote.

# topics_cmd, configs_cmd, offsets_cmd OUT ARGS...: kafka-topics,
# kafka-configs and kafka-get-offsets with stdout to OUT and stderr to
# OUT.err; a non-zero exit fails the scenario.
topics_cmd() { tool_cmd "$TOPICS" kafka-topics "$@"; }
configs_cmd() { tool_cmd "$CONFIGS" kafka-configs "$@"; }
offsets_cmd() { tool_cmd "$OFFSETS" kafka-get-offsets "$@"; }
tool_cmd() {
	local class=$1 name=$2 out=$3
	shift 3
	kafka_java "$class" --bootstrap-server "$bs" "$@" </dev/null >"$out" 2>"$out.err" ||
		fail "$name $* exited with status $?" "$out.err"
}

# lines_of FILE: FILE's lines joined with spaces, for a reason.
lines_of() { tr '\n\t' '  ' <"$1" | head -c 400; }

# offsets_summary FILE: "p0=o0 p1=o1 ..." from kafka-get-offsets'
# "topic:p:offset" or kcat -Q's "topic [p] offset o" lines.
offsets_summary() {
	sed -nE 's/.*:([0-9]+):(-?[0-9]+)$/p\1=\2/p; s/.* \[([0-9]+)\] offset (-?[0-9]+)$/p\1=\2/p' "$1" | sort | paste -sd ' ' -
}

# pcount PREFIX P: the line count check.py partition gave partition P.
pcount() { awk -v p="$2" '$1 == p { print $2 }' "$work/$1.counts"; }

# kafka-topics, in the order a person uses it: --create with 3 partitions
# and a config; --list shows the topic; --describe shows the partitions,
# replication factor, leaders and the config; --alter --partitions 5 adds
# two partitions; --delete removes it: --list stops showing it (deletion
# may complete after the call returns, so that is polled) and --describe
# says it does not exist.
lab_admin_topics() {
	need_java
	local topic=${P}admin-topics out=$work/admin-topics start
	create_topic "$topic" 3 --config retention.ms=3600000
	topics_cmd "$out.list" --list
	grep -Fxq -- "$topic" "$out.list" || fail "kafka-topics --list does not show $topic after --create; it printed: $(lines_of "$out.list")" "$out.list.err"
	describe_topic "$topic" 3 "$out.describe"
	grep -Eq "Configs:.*(^|[[:space:],])retention\.ms=3600000([,[:space:]]|$)" "$out.describe" ||
		fail "kafka-topics --describe does not show the config given at --create (retention.ms=3600000); it printed: $(head -n 1 "$out.describe" | tr '\t' ' ')"
	topics_cmd "$out.alter" --alter --topic "$topic" --partitions 5
	# The new partitions may reach the metadata a moment after the call.
	start=$SECONDS
	until topics_cmd "$out.describe5" --describe --topic "$topic" && grep -q 'PartitionCount: 5' "$out.describe5"; do
		((SECONDS < start + 30)) || break
		sleep 0.5
	done
	describe_topic "$topic" 5 "$out.describe5"
	topics_cmd "$out.delete" --delete --topic "$topic"
	start=$SECONDS
	while topics_cmd "$out.list2" --list && grep -Fxq -- "$topic" "$out.list2"; do
		((SECONDS < start + 30)) || fail "kafka-topics --list still shows $topic 30s after --delete"
		sleep 0.5
	done
	if kafka_java "$TOPICS" --bootstrap-server "$bs" --describe --topic "$topic" </dev/null >"$out.describe-deleted" 2>&1; then
		fail "kafka-topics --describe --topic $topic after --delete exited with status 0; it printed: $(lines_of "$out.describe-deleted")"
	fi
	grep -q "Topic '$topic' does not exist" "$out.describe-deleted" ||
		fail "kafka-topics --describe --topic $topic after --delete does not say the topic does not exist; it printed: $(lines_of "$out.describe-deleted")"
	say "  --create (3 partitions, retention.ms=3600000), --list, --describe, --alter --partitions 5, --delete: all as expected"
}

# config_keys FILE: the config names kafka-configs --describe listed, sorted.
config_keys() { sed -nE 's/^  ([^= ]+)=.*/\1/p' "$1" | sort | paste -sd ' ' -; }

# config_value FILE NAME: the value kafka-configs --describe shows for NAME
# ("  name=value sensitive=... synonyms={...}").
config_value() {
	awk -v k="$2" 'index($0, "  " k "=") == 1 { v = substr($0, length(k) + 4); sub(/ sensitive=(true|false) synonyms=\{.*\}$/, "", v); print v; exit }' "$1"
}

# malformed_configs FILE: the first line of a kafka-configs --describe
# listing, after its header, that is not "  name=value sensitive=... synonyms={...}".
malformed_configs() { tail -n +2 "$1" | grep -vEm1 '^  [a-z0-9._-]+=.* sensitive=(true|false) synonyms=\{.*\}$' || true; }

# kafka-configs (ConfigCommand) on a topic created with
# max.message.bytes=200000: --describe shows exactly that dynamic config;
# --alter --add-config retention.ms and cleanup.policy (a list value, in
# brackets) adds both and keeps the first; --alter --delete-config
# retention.ms removes it again, and --describe --all then shows
# retention.ms back at a default. On the broker that leads partition 0,
# --describe --entity-type brokers --entity-name <id> answers with its
# (possibly empty) dynamic configs, and with --all a well-formed listing
# in which node.id and broker.id are that id.
lab_admin_configs() {
	need_java
	local topic=${P}admin-configs out=$work/admin-configs got id
	create_topic "$topic" 3 --config max.message.bytes=200000
	configs_cmd "$out.1" --describe --entity-type topics --entity-name "$topic"
	[[ $(head -n 1 "$out.1") == "Dynamic configs for topic $topic are:" ]] ||
		fail "kafka-configs --describe --entity-type topics --entity-name $topic: expected the header 'Dynamic configs for topic $topic are:'; it printed: $(lines_of "$out.1")" "$out.1.err"
	got=$(config_keys "$out.1")
	[[ $got == max.message.bytes && $(config_value "$out.1" max.message.bytes) == 200000 ]] ||
		fail "kafka-configs --describe after --create --config max.message.bytes=200000: expected just max.message.bytes=200000; it printed: $(lines_of "$out.1")"

	configs_cmd "$out.add" --alter --entity-type topics --entity-name "$topic" --add-config 'retention.ms=123456789,cleanup.policy=[compact,delete]'
	grep -Fxq "Completed updating config for topic $topic." "$out.add" ||
		fail "kafka-configs --alter --add-config: expected 'Completed updating config for topic $topic.'; it printed: $(lines_of "$out.add")" "$out.add.err"
	configs_cmd "$out.2" --describe --entity-type topics --entity-name "$topic"
	got=$(config_keys "$out.2")
	[[ $got == "cleanup.policy max.message.bytes retention.ms" ]] ||
		fail "kafka-configs --describe after --add-config retention.ms,cleanup.policy: expected the dynamic configs cleanup.policy max.message.bytes retention.ms, got '$got': $(lines_of "$out.2")"
	for got in retention.ms=123456789 cleanup.policy=compact,delete max.message.bytes=200000; do
		[[ $(config_value "$out.2" "${got%%=*}") == "${got#*=}" ]] ||
			fail "kafka-configs --describe after --add-config: expected $got, got ${got%%=*}=$(config_value "$out.2" "${got%%=*}")"
	done

	configs_cmd "$out.del" --alter --entity-type topics --entity-name "$topic" --delete-config retention.ms
	grep -Fxq "Completed updating config for topic $topic." "$out.del" ||
		fail "kafka-configs --alter --delete-config retention.ms: expected 'Completed updating config for topic $topic.'; it printed: $(lines_of "$out.del")" "$out.del.err"
	configs_cmd "$out.3" --describe --entity-type topics --entity-name "$topic"
	got=$(config_keys "$out.3")
	[[ $got == "cleanup.policy max.message.bytes" ]] ||
		fail "kafka-configs --describe after --delete-config retention.ms: expected the dynamic configs cleanup.policy max.message.bytes, got '$got': $(lines_of "$out.3")"
	configs_cmd "$out.all" --describe --all --entity-type topics --entity-name "$topic"
	[[ $(head -n 1 "$out.all") == "All configs for topic $topic are:" ]] ||
		fail "kafka-configs --describe --all: expected the header 'All configs for topic $topic are:'; it printed: $(head -n 3 "$out.all" | tr '\n' ' ')" "$out.all.err"
	got=$(malformed_configs "$out.all")
	[[ -z $got ]] || fail "kafka-configs --describe --all --entity-name $topic printed a line that is not 'name=value sensitive=... synonyms={...}': '$got'"
	got=$(config_value "$out.all" retention.ms)
	[[ $got =~ ^-?[0-9]+$ && $got != 123456789 ]] ||
		fail "kafka-configs --describe --all after --delete-config retention.ms: expected retention.ms back at a default, got retention.ms='$got'"
	[[ $(config_value "$out.all" cleanup.policy) == compact,delete ]] ||
		fail "kafka-configs --describe --all: expected cleanup.policy=compact,delete, got '$(config_value "$out.all" cleanup.policy)'"

	describe_topic "$topic" 3 "$out.topic"
	id=$(sed -nE 's/.*Partition: 0[[:space:]]+Leader: ([0-9]+).*/\1/p' "$out.topic")
	configs_cmd "$out.broker" --describe --entity-type brokers --entity-name "$id"
	[[ $(head -n 1 "$out.broker") == "Dynamic configs for broker $id are:" ]] ||
		fail "kafka-configs --describe --entity-type brokers --entity-name $id: expected the header 'Dynamic configs for broker $id are:'; it printed: $(lines_of "$out.broker")" "$out.broker.err"
	got=$(malformed_configs "$out.broker")
	[[ -z $got ]] || fail "kafka-configs --describe --entity-type brokers --entity-name $id printed a line that is not 'name=value sensitive=... synonyms={...}': '$got'"
	configs_cmd "$out.broker-all" --describe --all --entity-type brokers --entity-name "$id"
	[[ $(head -n 1 "$out.broker-all") == "All configs for broker $id are:" ]] ||
		fail "kafka-configs --describe --all --entity-type brokers --entity-name $id: expected the header 'All configs for broker $id are:'; it printed: $(head -n 3 "$out.broker-all" | tr '\n' ' ')" "$out.broker-all.err"
	got=$(malformed_configs "$out.broker-all")
	[[ -z $got ]] || fail "kafka-configs --describe --all --entity-type brokers --entity-name $id printed a line that is not 'name=value sensitive=... synonyms={...}': '$got'"
	for got in node.id broker.id; do
		[[ $(config_value "$out.broker-all" "$got") == "$id" ]] ||
			fail "kafka-configs --describe --all --entity-type brokers --entity-name $id shows $got=$(config_value "$out.broker-all" "$got"), expected $got=$id (the broker's own id; Kafka sets broker.id from node.id)"
	done
	say "  topic: --describe, --add-config retention.ms and cleanup.policy=[compact,delete], --delete-config retention.ms, --describe --all as expected; broker $id: --describe and --describe --all ($(($(wc -l <"$out.broker-all") - 1)) configs) well-formed"
}

# The console producer writes N keyed records with headers (an empty header
# value and a null one among them), control characters and multi-byte UTF-8
# in the values, some null and some empty values, to a 3-partition topic
# with acks=all and --compression-codec CODEC. kafka-get-offsets shows each
# partition's end at the count Kafka's partitioner gives it, and the console
# consumer, one partition at a time from the earliest offset, prints the
# timestamp, partition, offset, headers, key and value of each record:
# check.py lab-verify compares them with what was written.
lab_console_produce_consume() {
	need_java
	local codec=$1 topic=${P}console-$1 out=$work/pc-$1 t0 t1 p count got
	create_topic "$topic" 3
	check lab-records console "$topic" "$N" 3 "$out" >"$out.counts"
	t0=$(now_ms)
	kafka_java "$PRODUCER" --bootstrap-server "$bs" --topic "$topic" \
		--command-property acks=all --compression-codec "$codec" \
		--reader-property parse.key=true --reader-property parse.headers=true --reader-property 'null.marker=<NULL>' \
		<"$out.in" >"$out.produce" 2>"$out.produce.err" ||
		fail "console producer --compression-codec $codec exited with status $?" "$out.produce.err"
	t1=$(now_ms)
	no_errors "console producer --compression-codec $codec" "$out.produce.err"
	offsets_cmd "$out.end" --topic "$topic" --time -1
	for p in 0 1 2; do
		got=$(awk -F: -v t="$topic" -v p="$p" '$1 == t && $2 == p { print $3 }' "$out.end")
		[[ $got == "$(awk -v p="$p" '$1 == p { print $2 }' "$out.counts")" ]] ||
			fail "partition $p: kafka-get-offsets --time -1 says end offset '$got', expected $(awk -v p="$p" '$1 == p { print $2 }' "$out.counts") (the records Kafka's partitioner sends there)"
	done
	: >"$out.got"
	for p in 0 1 2; do
		count=$(awk -v p="$p" '$1 == p { print $2 }' "$out.counts")
		kafka_java "$CONSUMER" --bootstrap-server "$bs" --topic "$topic" --partition "$p" --offset earliest \
			--max-messages "$count" --timeout-ms 30000 \
			--formatter-property print.timestamp=true --formatter-property print.partition=true \
			--formatter-property print.offset=true --formatter-property print.headers=true \
			--formatter-property print.key=true --formatter-property 'null.literal=(null)' \
			</dev/null >"$out.got.p$p" 2>"$out.got.p$p.err" || true
		cat "$out.got.p$p" >>"$out.got"
	done
	if ! check lab-verify console "$out" "$out.got" "$t0" "$t1" >"$work/cmp"; then
		# Shown with the reason: the first consumer's stderr that has something.
		for p in 0 1 2; do [[ ! -s $out.got.p$p.err ]] || break; done
		fail "console consumer --partition P --offset earliest after the console producer with --compression-codec $codec: $(cat "$work/cmp")" "$out.got.p$p.err"
	fi
	say "  $(cat "$work/cmp")"
}

# The same with kcat: -P -K<TAB> -Z (an empty value is sent as null) -z
# CODEC, headers with -H (one of them empty, one null), values with any
# byte but newline; kcat -C -e reads every partition back with a format
# that prints partition, offset, timestamp, headers, key, value size (-1
# for null) and value.
lab_kcat_produce_consume() {
	need_kcat
	need_java # kafka-topics creates the topic
	local codec=$1 topic=${P}kcat-$1 out=$work/kpc-$1 t0 t1 h hargs=()
	create_topic "$topic" 3
	check lab-records kcat "$topic" "$N" 3 "$out" >"$out.counts"
	while IFS= read -r h; do hargs+=(-H "$h"); done <"$out.hargs"
	t0=$(now_ms)
	kcat_b -P -t "$topic" -K "$tab" -Z -z "$codec" "${hargs[@]}" -X partitioner=murmur2_random -X acks=all \
		<"$out.in" >"$out.produce" 2>"$out.produce.err" ||
		fail "kcat -P -z $codec exited with status $?" "$out.produce.err"
	t1=$(now_ms)
	no_errors "kcat -P -z $codec" "$out.produce.err"
	kcat_consume "$out.got" '%p\t%o\t%T\t%h\t%k\t%S\t%s\n' -t "$topic" || true
	if ! check lab-verify kcat "$out" "$out.got" "$t0" "$t1" >"$work/cmp"; then
		fail "kcat -C -t $topic after kcat -P -z $codec: $(cat "$work/cmp")${kcat_why:+; $kcat_why}"
	fi
	[[ -z $kcat_why ]] || fail "$kcat_why"
	say "  $(cat "$work/cmp")"
}

# produce_two_runs TOPIC PREFIX PRODUCER: writes N lines in each of two
# producer runs (PRODUCER java or kcat) to TOPIC, 3 partitions, and sets
# t_mid to a wall-clock millisecond after every timestamp of the first run
# and at or before every one of the second. PREFIX-1 and PREFIX-2 get
# check.py's per-partition files and counts.
produce_two_runs() {
	local topic=$1 prefix=$2 producer=$3 run p
	for run in 1 2; do
		check lines "$prefix$run" $(((run - 1) * N)) "$N" >"$work/$prefix-$run.in"
		check partition 3 "$work/$prefix-$run.p" <"$work/$prefix-$run.in" >"$work/$prefix-$run.counts"
		if [[ $producer == java ]]; then
			produce_java "$topic" "$work/$prefix-$run.in"
		else
			kcat_b -P -t "$topic" -K "$tab" -X partitioner=murmur2_random -X acks=all \
				<"$work/$prefix-$run.in" >"$work/$prefix-$run.produce" 2>"$work/$prefix-$run.produce.err" ||
				fail "kcat -P -t $topic exited with status $?" "$work/$prefix-$run.produce.err"
			no_errors "kcat -P -t $topic" "$work/$prefix-$run.produce.err"
		fi
		if ((run == 1)); then
			# The first run's producer has exited: its records are stamped
			# before now. Wait for the clock to pass t_mid, so that the
			# second run's are stamped at t_mid or later.
			t_mid=$(($(now_ms) + 1))
			while (($(now_ms) <= t_mid)); do :; done
		fi
	done
	for p in 0 1 2; do
		(($(pcount "$prefix-2" "$p") > 0)) || fail "the second run sends nothing to partition $p (raise CONSOLE_N)"
	done
}

# kafka-get-offsets (GetOffsetShell) on a topic written in two runs:
# --time -2 (earliest) is 0, --time -1 (latest) the count of both runs,
# --time <a millisecond between the runs> the first run's count, and a
# time after every record returns no offset (Kafka's tool then prints no
# line for the partition).
lab_console_list_offsets() {
	need_java
	local topic=${P}list-offsets out=$work/list-offsets p want got spec future
	create_topic "$topic" 3
	produce_two_runs "$topic" lo java
	future=$(($(now_ms) + 3600000))
	for spec in -2 -1 "$t_mid" "$future"; do
		offsets_cmd "$out.$spec" --topic "$topic" --time "$spec"
		for p in 0 1 2; do
			case $spec in
			-2) want=0 ;;
			-1) want=$(($(pcount lo-1 "$p") + $(pcount lo-2 "$p"))) ;;
			"$t_mid") want=$(pcount lo-1 "$p") ;;
			*) want="" ;;
			esac
			got=$(awk -F: -v t="$topic" -v p="$p" '$1 == t && $2 == p { print $3 }' "$out.$spec")
			[[ $got == "$want" ]] ||
				fail "partition $p: kafka-get-offsets --time $spec printed offset '${got}', expected '${want}' (-2 earliest, -1 latest, $t_mid between two produce runs of $N records, $future after all); it printed: $(lines_of "$out.$spec")" "$out.$spec.err"
		done
	done
	say "  --time -2, -1, <between the runs>, <after all> as expected; latest $(offsets_summary "$out.-1"), by time $(offsets_summary "$out.$t_mid")"
}

# kcat -Q (offsetsForTimes) on a topic kcat wrote in two runs: timestamps
# -2 and -1 give the earliest and latest offsets, a millisecond between the
# runs the first run's count, and a time after every record -1.
lab_kcat_list_offsets() {
	need_kcat
	need_java
	local topic=${P}kcat-list-offsets out=$work/kcat-list-offsets p want got spec future args
	create_topic "$topic" 3
	produce_two_runs "$topic" klo kcat
	future=$(($(now_ms) + 3600000))
	for spec in -2 -1 "$t_mid" "$future"; do
		args=()
		for p in 0 1 2; do args+=(-t "$topic:$p:$spec"); done
		kcat_b -Q "${args[@]}" </dev/null >"$out.$spec" 2>"$out.$spec.err" ||
			fail "kcat -Q ${args[*]} exited with status $?" "$out.$spec.err"
		for p in 0 1 2; do
			case $spec in
			-2) want=0 ;;
			-1) want=$(($(pcount klo-1 "$p") + $(pcount klo-2 "$p"))) ;;
			"$t_mid") want=$(pcount klo-1 "$p") ;;
			*) want=-1 ;;
			esac
			# "topic [p] offset o"
			got=$(awk -v t="$topic" -v p="[$p]" '$1 == t && $2 == p && $3 == "offset" { print $4 }' "$out.$spec")
			[[ $got == "$want" ]] ||
				fail "partition $p: kcat -Q -t $topic:$p:$spec printed offset '${got}', expected '$want' (-2 earliest, -1 latest, $t_mid between two produce runs of $N records, $future after all); it printed: $(lines_of "$out.$spec")" "$out.$spec.err"
		done
	done
	say "  -Q with -2, -1, <between the runs>, <after all> as expected; latest $(offsets_summary "$out.-1"), by time $(offsets_summary "$out.$t_mid")"
}

# The console consumer assigned to partition 0 at --offset 5 prints offsets
# 5, 6, ... with exactly the records written there, and the same on
# partition 2 from its third-last offset.
lab_console_consume_from_offset() {
	need_java
	local topic=${P}from-offset p from count
	create_topic "$topic" 3
	check lines cfo 0 "$N" >"$work/cfo.in"
	check partition 3 "$work/cfo.p" <"$work/cfo.in" >"$work/cfo.counts"
	produce_java "$topic" "$work/cfo.in"
	for p in 0 2; do
		from=5
		((p == 0)) || from=$(($(pcount cfo "$p") - 3))
		count=$(($(pcount cfo "$p") - from))
		((from >= 0 && count > 0)) || fail "partition $p holds $(pcount cfo "$p") records, too few (raise CONSOLE_N)"
		awk -v from="$from" 'NR > from { print "Offset:" NR - 1 "\t" $0 }' "$work/cfo.p$p" >"$work/cfo.want$p"
		kafka_java "$CONSUMER" --bootstrap-server "$bs" --topic "$topic" --partition "$p" --offset "$from" \
			--max-messages "$count" --timeout-ms 30000 --formatter-property print.offset=true --formatter-property print.key=true \
			</dev/null >"$work/cfo.got$p" 2>"$work/cfo.got$p.err" || true
		check same-order "$work/cfo.want$p" "$work/cfo.got$p" >"$work/cmp" ||
			fail "console consumer --partition $p --offset $from --max-messages $count: $(cat "$work/cmp")" "$work/cfo.got$p.err"
	done
	say "  --partition 0 --offset 5 and --partition 2 --offset $from read exactly the records from there"
}

# kcat -C -p 0 -o 5 reads partition 0 from offset 5 to its end, and
# -p 1 -o -3 (relative to the end) its last three records.
lab_kcat_consume_from_offset() {
	need_kcat
	need_java
	local topic=${P}kcat-from-offset p from spec
	create_topic "$topic" 3
	check lines kfo 0 "$N" >"$work/kfo.in"
	check partition 3 "$work/kfo.p" <"$work/kfo.in" >"$work/kfo.counts"
	kcat_b -P -t "$topic" -K "$tab" -X partitioner=murmur2_random -X acks=all \
		<"$work/kfo.in" >"$work/kfo.produce" 2>"$work/kfo.produce.err" ||
		fail "kcat -P -t $topic exited with status $?" "$work/kfo.produce.err"
	no_errors "kcat -P -t $topic" "$work/kfo.produce.err"
	for p in 0 1; do
		spec=5 from=5
		((p == 0)) || { spec=-3 from=$(($(pcount kfo "$p") - 3)); }
		((from >= 0 && $(pcount kfo "$p") > from)) || fail "partition $p holds $(pcount kfo "$p") records, too few (raise CONSOLE_N)"
		awk -v from="$from" 'NR > from { print NR - 1 "\t" $0 }' "$work/kfo.p$p" >"$work/kfo.want$p"
		# kcat_consume starts with -o beginning; the -o given here comes later and wins.
		kcat_consume "$work/kfo.got$p" '%o\t%k\t%s\n' -t "$topic" -p "$p" -o "$spec" || true
		check same-order "$work/kfo.want$p" "$work/kfo.got$p" >"$work/cmp" ||
			fail "kcat -C -t $topic -p $p -o $spec: $(cat "$work/cmp")${kcat_why:+; $kcat_why}"
		[[ -z $kcat_why ]] || fail "$kcat_why"
	done
	say "  -p 0 -o 5 and -p 1 -o -3 read exactly the records from there to the end"
}

# A console consumer in a fresh group reads a third of a 3-partition topic,
# one record per poll (max.poll.records=1, so that the position it commits
# as it closes is just past what it printed), and each partition's share
# must be that partition's first records. A second console consumer in the
# same group, without --from-beginning, must then read exactly the rest of
# every partition, in order: nothing lost, nothing read twice. At the end,
# --describe shows the group's offsets at the log end.
#
# The first consumer commits a position only for the partitions it has one
# for: on a cluster it can read its share from one partition's leader before
# the offset lookups of the others (on other brokers) have come back, and
# then commits nothing for those. The second consumer starts such a
# partition from its earliest offset (auto.offset.reset=earliest), which is
# where the first one stopped, having read none of it; a commit that was
# made still decides where it resumes, so a lost commit shows as records
# read twice.
lab_console_group_commit_resume() {
	need_java
	local topic=${P}commit-resume group=${P}commit-resume k=$((N / 3)) p got count more n1
	create_topic "$topic" 3
	check lines gcr 0 "$N" >"$work/gcr.in"
	check partition 3 "$work/gcr.p" <"$work/gcr.in" >"$work/gcr.counts"
	produce_java "$topic" "$work/gcr.in"
	for got in first second; do
		count=$k more=(--from-beginning)
		[[ $got == first ]] || { count=$((N - k)) more=(--command-property auto.offset.reset=earliest); }
		kafka_java "$CONSUMER" --bootstrap-server "$bs" --topic "$topic" --group "$group" "${more[@]}" \
			--max-messages "$count" --timeout-ms 30000 --command-property max.poll.records=1 \
			--formatter-property print.partition=true --formatter-property print.key=true \
			</dev/null >"$work/gcr.$got" 2>"$work/gcr.$got.err" || true
		for p in 0 1 2; do
			awk -F'\t' -v p="Partition:$p" '$1 == p { print $2 "\t" $3 }' "$work/gcr.$got" >"$work/gcr.$got.p$p"
		done
	done
	for p in 0 1 2; do
		n1=$(wc -l <"$work/gcr.first.p$p")
		head -n "$n1" "$work/gcr.p$p" >"$work/gcr.want-first.p$p"
		check same-order "$work/gcr.want-first.p$p" "$work/gcr.first.p$p" >"$work/cmp" ||
			fail "the first consumer in $group (--from-beginning --max-messages $k) did not read partition $p's first records: $(cat "$work/cmp")" "$work/gcr.first.err"
		tail -n +"$((n1 + 1))" "$work/gcr.p$p" >"$work/gcr.want-second.p$p"
		check same-order "$work/gcr.want-second.p$p" "$work/gcr.second.p$p" >"$work/cmp" ||
			fail "partition $p: the first consumer in $group read its first $n1 records and committed; the second (--max-messages $((N - k))) should resume at offset $n1 and read the rest: $(cat "$work/cmp")" "$work/gcr.second.err"
	done
	# shellcheck disable=SC2046
	describe_offsets "after the second consumer" "$group" "$topic" $(at_end gcr)
	say "  the first consumer read $(wc -l <"$work/gcr.first") records ($(for p in 0 1 2; do printf 'p%s:%s ' "$p" "$(wc -l <"$work/gcr.first.p$p")"; done | sed 's/ $//')), the second resumed after its commits and read the other $(wc -l <"$work/gcr.second"); offsets at the log end"
}

# kafka-consumer-groups, as console-test runs it one scenario at a time:
# a console consumer in a new group reads a topic; --list (with --state and
# --type filters) and --describe show it; --reset-offsets (--to-earliest,
# --to-offset, --shift-by) move its offsets, which a consumer then follows;
# --delete-offsets drops one partition's; with a member present --delete,
# --delete-offsets and --reset-offsets are refused with Kafka's messages;
# once it has left, --delete removes the group.
lab_console_admin_groups() {
	need_java
	group_produce
	group_console_consume
	group_list
	group_describe
	group_reset_earliest
	group_reset_partitions
	group_delete_offsets
	group_delete_active
	group_delete
	say "  $group_g1: --list (--state, --type), --describe, --reset-offsets (--to-earliest, --to-offset, --shift-by), --delete-offsets, refusals while a member is active, --delete: all as expected"
}

# The console consumer in a group of the consumer group protocol of KIP-848
# (--command-property group.protocol=consumer: ConsumerGroupHeartbeat, the
# broker assigns the partitions), as kafka-consumer-groups shows it:
#   - a first consumer with --from-beginning --max-messages N reads every
#     line the console producer wrote to a 3-partition topic and commits as
#     it closes: --describe shows CURRENT-OFFSET at LOG-END-OFFSET;
#   - a second one runs in the background: the group is Stable with one
#     member; --list --type shows it as Consumer (and --type consumer lists
#     it, --type classic does not); --describe --state --verbose shows the
#     broker's assignor (uniform, Kafka's default) and the group epoch equal
#     to the target assignment epoch; --describe --members --verbose shows
#     the member holding partitions 0-2 as its current and its target
#     assignment, at the same epoch;
#   - the producer then writes M more lines: the second consumer
#     (--max-messages M, no --from-beginning) reads exactly those, resuming
#     from the first one's commits, and leaves as it exits, which empties
#     the group at once; --describe shows the offsets at the new log end.
# Against a broker without the protocol the consumer exits with its
# UnsupportedVersionException, which the failure shows.
lab_console_consumer_protocol_group() {
	need_java
	local topic=${P}cp-group group=${P}cp-group m=$((N / 5)) member start row hdr want got=()
	local proto=(--command-property group.protocol=consumer)
	create_topic "$topic" 3
	check lines cpg 0 "$N" >"$work/cpg.in"
	check partition 3 "$work/cpg.p" <"$work/cpg.in" >"$work/cpg.counts"
	produce_java "$topic" "$work/cpg.in"
	kafka_java "$CONSUMER" --bootstrap-server "$bs" --topic "$topic" --group "$group" "${proto[@]}" --from-beginning \
		--max-messages "$N" --timeout-ms 30000 --formatter-property print.key=true \
		</dev/null >"$work/cpg.first" 2>"$work/cpg.first.err" || true
	check same-set "$work/cpg.in" "$work/cpg.first" >"$work/cmp" ||
		fail "console consumer --group $group ${proto[*]} --from-beginning --max-messages $N: $(cat "$work/cmp")" "$work/cpg.first.err"
	# shellcheck disable=SC2046 # one spec per partition
	describe_offsets "after the first consumer" "$group" "$topic" $(at_end cpg)

	start_bg "$work/cpg.second" timeout -k 5 "$TOOL_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$libs/*" "$CONSUMER" \
		--bootstrap-server "$bs" --topic "$topic" --group "$group" "${proto[@]}" --max-messages "$m" \
		--timeout-ms 100000 --formatter-property print.key=true
	member=$bg_pid
	wait_group_state "$group" Stable 1

	groups_cmd "$work/cpg-list-type.out" --list --type
	awk -v g="$group" '$1 == g && $2 == "Consumer" { found = 1 } END { exit !found }' "$work/cpg-list-type.out" ||
		fail "kafka-consumer-groups --list --type does not show '$group Consumer'; it printed: $(lines_of "$work/cpg-list-type.out")" "$work/cpg-list-type.out.err"
	groups_cmd "$work/cpg-list-consumer.out" --list --type consumer
	awk -v g="$group" '$1 == g && $2 == "Consumer" { found = 1 } END { exit !found }' "$work/cpg-list-consumer.out" ||
		fail "kafka-consumer-groups --list --type consumer does not show '$group Consumer'; it printed: $(lines_of "$work/cpg-list-consumer.out")" "$work/cpg-list-consumer.out.err"
	groups_cmd "$work/cpg-list-classic.out" --list --type classic
	! awk -v g="$group" '$1 == g { found = 1 } END { exit !found }' "$work/cpg-list-classic.out" ||
		fail "kafka-consumer-groups --list --type classic shows $group, a consumer protocol group: $(lines_of "$work/cpg-list-classic.out")"

	groups_cmd "$work/cpg-state.out" --describe --group "$group" --state --verbose
	hdr=$(awk '$1 == "GROUP" { $1 = $1; print; exit }' "$work/cpg-state.out")
	want="GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS"
	[[ $hdr == "$want" ]] ||
		fail "--describe --group $group --state --verbose: header '$hdr', expected '$want' (a consumer protocol group's epochs)" "$work/cpg-state.out"
	# ASSIGNMENT-STRATEGY STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS,
	# counted from the end (the coordinator column holds a space).
	row=$(awk -v g="$group" '$1 == g { print $(NF - 4), $(NF - 3), $(NF - 2), $(NF - 1), $NF; exit }' "$work/cpg-state.out")
	read -r -a got <<<"$row"
	[[ ${got[0]:-} == uniform && ${got[1]:-} == Stable && ${got[2]:-} =~ ^[1-9][0-9]*$ && ${got[2]} == "${got[3]:-}" && ${got[4]:-} == 1 ]] ||
		fail "--describe --group $group --state --verbose: '${row:-no row}' (strategy, state, group epoch, target assignment epoch, members), expected 'uniform Stable E E 1'" "$work/cpg-state.out"
	say "  --describe --state --verbose: $(awk -v g="$group" '$1 == g { $1 = $1; print; exit }' "$work/cpg-state.out")"

	groups_cmd "$work/cpg-members.out" --describe --group "$group" --members --verbose
	hdr=$(awk '$1 == "GROUP" { $1 = $1; print; exit }' "$work/cpg-members.out")
	want="GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT"
	[[ $hdr == "$want" ]] ||
		fail "--describe --group $group --members --verbose: header '$hdr', expected '$want'" "$work/cpg-members.out"
	# CLIENT-ID #PARTITIONS CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT
	row=$(awk -v g="$group" '$1 == g { print $4, $5, $6, $7, $8, $9; n++ } END { exit n != 1 }' "$work/cpg-members.out") ||
		fail "--describe --group $group --members --verbose: expected one member row" "$work/cpg-members.out"
	read -r -a got <<<"$row"
	[[ ${got[0]} == console-consumer && ${got[1]} == 3 && ${got[3]} == "$topic:0,1,2" && ${got[5]:-} == "$topic:0,1,2" && ${got[2]} == "${got[4]:-}" ]] ||
		fail "--describe --group $group --members --verbose: '$row' (client id, partitions, current epoch and assignment, target epoch and assignment), expected 'console-consumer 3 E $topic:0,1,2 E $topic:0,1,2'" "$work/cpg-members.out"

	check lines cpg "$N" "$m" >"$work/cpg2.in"
	produce_java "$topic" "$work/cpg2.in"
	start=$SECONDS
	while kill -0 "$member" 2>/dev/null && ((SECONDS < start + 60)); do sleep 0.2; done
	! kill -0 "$member" 2>/dev/null ||
		fail "the second console consumer (--max-messages $m) did not exit within 60s of the produce; it read $(wc -l <"$work/cpg.second") lines" "$work/cpg.second.err"
	check same-set "$work/cpg2.in" "$work/cpg.second" >"$work/cmp" ||
		fail "the second console consumer in $group should resume at the first one's commits and read just the $m new lines: $(cat "$work/cmp")" "$work/cpg.second.err"
	wait_group_state "$group" Empty 0
	((waited <= 15)) ||
		fail "$group became Empty only ${waited}s after its member exited (a consumer protocol member leaves with a heartbeat at epoch -1 as it closes)"
	cat "$work/cpg.in" "$work/cpg2.in" | check partition 3 "$work/cpg-all.p" >"$work/cpg-all.counts"
	# shellcheck disable=SC2046
	describe_offsets "after the second consumer" "$group" "$topic" $(at_end cpg-all)
	say "  group.protocol=consumer: the first console consumer read $N lines and committed; with a second one in the group, --list --type showed Consumer, --describe --state --verbose '$(awk -v g="$group" '$1 == g { print $(NF - 4), $(NF - 3), "epoch", $(NF - 2) "/" $(NF - 1), "members", $NF; exit }' "$work/cpg-state.out")', --members --verbose the member at $topic:0,1,2 (current = target); it resumed at the commits and read the $m new lines; Empty after it left; offsets at the log end"
}

# Share groups (KIP-932): the group's share.auto.offset.reset is set to
# earliest with kafka-configs --entity-type groups; two
# kafka-console-share-consumer processes share a one-partition topic and
# between them print every line once (each record acknowledged once, the
# default accept); kafka-share-groups lists the group, describes its two
# members while they run, and once they are gone shows the partition with
# lag 0 and the group Empty.
lab_console_share_group() {
	need_java
	local topic=${P}share group=${P}share-group a b start row hdr out=$work/share-members.out
	create_topic "$topic" 1
	check lines shg 0 "$N" >"$work/shg.in"
	produce_java "$topic" "$work/shg.in"
	configs_cmd "$work/shg-config.out" --entity-type groups --entity-name "$group" --alter \
		--add-config share.auto.offset.reset=earliest
	configs_cmd "$work/shg-config-describe.out" --entity-type groups --entity-name "$group" --describe
	grep -q "share.auto.offset.reset=earliest" "$work/shg-config-describe.out" ||
		fail "kafka-configs --entity-type groups --describe does not show share.auto.offset.reset=earliest: $(lines_of "$work/shg-config-describe.out")" "$work/shg-config-describe.out.err"
	# Each consumer prints what it gets until the other has taken the rest:
	# together they stop once no line is left for 15 s.
	start_bg "$work/shg.a" timeout -k 5 "$TOOL_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$libs/*" "$SHARE_CONSUMER" \
		--bootstrap-server "$bs" --topic "$topic" --group "$group" --timeout-ms 15000 --formatter-property print.key=true
	a=$bg_pid
	start_bg "$work/shg.b" timeout -k 5 "$TOOL_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$libs/*" "$SHARE_CONSUMER" \
		--bootstrap-server "$bs" --topic "$topic" --group "$group" --timeout-ms 15000 --formatter-property print.key=true
	b=$bg_pid
	start=$SECONDS
	row=""
	while ((SECONDS < start + GROUP_WAIT)); do
		if kafka_java "$SHARE_GROUPS" --bootstrap-server "$bs" --describe --group "$group" --members --verbose \
			</dev/null >"$out" 2>"$out.err"; then
			# Both members, each assigned the partition.
			row=$(awk -v g="$group" -v t="$topic:0" '$1 == g && $5 == 1 && $7 == t { n++ } END { print n + 0 }' "$out")
			[[ $row == 2 ]] && break
		fi
		sleep 0.5
	done
	[[ $row == 2 ]] || fail "kafka-share-groups --describe --group $group --members --verbose did not show two members, each with $topic:0, within ${GROUP_WAIT}s: $(lines_of "$out")" "$out"
	hdr=$(awk '$1 == "GROUP" { $1 = $1; print; exit }' "$out")
	[[ $hdr == "GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS MEMBER-EPOCH ASSIGNMENT" ]] ||
		fail "kafka-share-groups --describe --members --verbose: header '$hdr'" "$out"
	for pid in "$a" "$b"; do
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < start + 120)); do sleep 0.2; done
		! kill -0 "$pid" 2>/dev/null || fail "a console share consumer did not exit within 120s" "$work/shg.a.err"
	done
	cat "$work/shg.a" "$work/shg.b" >"$work/shg.out"
	check same-set "$work/shg.in" "$work/shg.out" >"$work/cmp" ||
		fail "two console share consumers of $group should print every line once between them: $(cat "$work/cmp")" "$work/shg.a.err"
	tool_cmd "$SHARE_GROUPS" kafka-share-groups "$work/shg-list.out" --list
	grep -qx "$group" "$work/shg-list.out" ||
		fail "kafka-share-groups --list does not show $group: $(lines_of "$work/shg-list.out")" "$work/shg-list.out.err"
	row=""
	start=$SECONDS
	while ((SECONDS < start + GROUP_WAIT)); do
		tool_cmd "$SHARE_GROUPS" kafka-share-groups "$work/shg-describe.out" --describe --group "$group"
		# GROUP TOPIC PARTITION START-OFFSET LAG
		row=$(awk -v g="$group" -v t="$topic" '$1 == g && $2 == t { print $3, $5; exit }' "$work/shg-describe.out")
		[[ $row == "0 0" ]] && break
		sleep 0.5
	done
	[[ $row == "0 0" ]] ||
		fail "kafka-share-groups --describe --group $group: '${row:-no row}' (partition, lag), expected '0 0'" "$work/shg-describe.out"
	tool_cmd "$SHARE_GROUPS" kafka-share-groups "$work/shg-state.out" --describe --group "$group" --state --verbose
	# ... STATE GROUP-EPOCH ASSIGNMENT-EPOCH #MEMBERS, from the end
	row=$(awk -v g="$group" '$1 == g { print $(NF - 3), $NF; exit }' "$work/shg-state.out")
	[[ $row == "Empty 0" ]] ||
		fail "kafka-share-groups --describe --group $group --state --verbose: '${row:-no row}', expected 'Empty 0' once both consumers left" "$work/shg-state.out"
	say "  share group: kafka-configs set share.auto.offset.reset=earliest; two console share consumers printed the $N lines once between them ($(wc -l <"$work/shg.a") and $(wc -l <"$work/shg.b")); kafka-share-groups listed the group, showed both members on $topic:0, then lag 0 and Empty"
}

# kcat -L lists the broker and a 3-partition topic made for it.
lab_kcat_metadata() {
	need_kcat
	need_java
	create_topic "$topic_console" 3
	kcat_metadata
}

# --- admin tools: kafka-transactions, kafka-leader-election,
# kafka-reassign-partitions ---------------------------------------------------

TRANSACTIONS=org.apache.kafka.tools.TransactionsCommand # kafka-transactions
LEADER_ELECTION=org.apache.kafka.tools.LeaderElectionCommand # kafka-leader-election
REASSIGN=org.apache.kafka.tools.reassign.ReassignPartitionsCommand # kafka-reassign-partitions
txns_cmd() { tool_cmd "$TRANSACTIONS" kafka-transactions "$@"; }

# txn_tool OUT MODE ARGS...: compat-tests/console/TxnTool.java (a
# single-file program on the tools' kafka-clients) with stdout to OUT.
txn_tool() {
	local out=$1
	shift
	timeout -k 5 "$TOOL_TIMEOUT" java "${JAVA_OPTS[@]}" -cp "$libs/*" "$here/TxnTool.java" "$1" "$bs" "${@:2}" \
		</dev/null >"$out" 2>"$out.err" || fail "TxnTool.java $* exited with status $?" "$out.err"
}

# table_header FILE: the column names of a kafka-transactions table.
table_header() { awk 'NR == 1 { $1 = $1; print }' "$1"; }

# table_col FILE KEYCOL KEY COL: column COL (1-based) of the table row whose
# column KEYCOL is KEY.
table_col() { awk -v kc="$2" -v k="$3" -v c="$4" 'NR > 1 && $kc == k { print $c; exit }' "$1"; }

# hw_lso FILE P: "high-watermark last-stable-offset" of partition P in
# TxnTool offsets' output.
hw_lso() { awk -v p="$2" '$1 == p { print $2, $3 }' "$1"; }

# kafka-transactions (TransactionsCommand) on a 2-partition topic: producer
# txn-open (TxnTool open) writes 5 records to each partition in a
# transaction and halts without committing or aborting (the transaction's
# timeout is 120 s); producer txn-done then writes 5 records to partition 0
# and commits. The last stable offset of both partitions stays at the open
# transaction's first offset (0). Then, checked column by column against
# Kafka's tables:
#   list                shows txn-open Ongoing and txn-done CompleteCommit;
#   describe            txn-open: Ongoing, timeout 120000, a start time,
#                       TopicPartitions T-0 and T-1, its list ProducerId;
#   describe-producers  partition 0: txn-open's producer with
#                       CurrentTransactionStartOffset 0, txn-done's with None;
#   find-hanging        --topic T, then --broker-id <partition 0's
#                       leader>, each with --max-transaction-timeout 0 (minutes; 0 is accepted
#                       and makes every open transaction a candidate at
#                       once): no row for the topic, as the coordinator
#                       knows the open transaction and its partitions (a
#                       transaction is hanging only when a partition holds
#                       it open that its coordinator does not list, which
#                       no client can bring about on a 4.x broker);
#   abort               --topic T --partition 0 --start-offset 0 writes the
#                       abort marker: partition 0's last stable offset moves
#                       to its high watermark, partition 1's stays at 0, a
#                       read_committed console consumer reads txn-done's 5
#                       records from partition 0 and describe-producers
#                       shows no open transaction for txn-open there.
lab_admin_transactions() {
	need_java
	local topic=${P}admin-txn open=${P}txn-open done=${P}txn-done out=$work/admin-txn
	local got want pid_open pid_done leader start hl
	create_topic "$topic" 2
	txn_tool "$out.open" open "$topic" "$open"
	[[ $(sort "$out.open" | paste -sd ' ' -) == "open 0 0 open 1 0" ]] ||
		fail "TxnTool open: expected its first records at offset 0 of partitions 0 and 1, it printed: $(lines_of "$out.open")" "$out.open.err"
	txn_tool "$out.done" commit "$topic" "$done"
	[[ $(cat "$out.done") == "commit 0 5" ]] ||
		fail "TxnTool commit: expected its first record at offset 5 of partition 0, it printed: $(lines_of "$out.done")" "$out.done.err"
	txn_tool "$out.offsets1" offsets "$topic"
	hl=$(hw_lso "$out.offsets1" 0)
	[[ $hl == "11 0" ]] ||
		fail "partition 0 with an open transaction from offset 0 and a committed one at 5-9 (marker at 10): expected high watermark 11 and last stable offset 0, got '$hl'"
	hl=$(hw_lso "$out.offsets1" 1)
	[[ $hl == "5 0" ]] || fail "partition 1 with an open transaction at 0-4: expected high watermark 5 and last stable offset 0, got '$hl'"

	# list: the commit's state reaches CompleteCommit once its markers are
	# written, which may be a moment after commitTransaction returned.
	start=$SECONDS
	while :; do
		txns_cmd "$out.list" list
		[[ $(table_col "$out.list" 1 "$done" 4) == CompleteCommit ]] && break
		((SECONDS < start + 20)) || break
		sleep 1
	done
	got=$(table_header "$out.list")
	[[ $got == "TransactionalId Coordinator ProducerId TransactionState" ]] ||
		fail "kafka-transactions list: expected the columns TransactionalId Coordinator ProducerId TransactionState, got '$got'"
	got="$(table_col "$out.list" 1 "$open" 4) $(table_col "$out.list" 1 "$done" 4)"
	[[ $got == "Ongoing CompleteCommit" ]] ||
		fail "kafka-transactions list: expected $open Ongoing and $done CompleteCommit, got states '$got': $(grep -E "$open|$done" "$out.list" | tr -s ' ' | paste -sd ';' -)"
	pid_open=$(table_col "$out.list" 1 "$open" 3)
	pid_done=$(table_col "$out.list" 1 "$done" 3)
	[[ $pid_open =~ ^[0-9]+$ && $pid_done =~ ^[0-9]+$ && $pid_open != "$pid_done" ]] ||
		fail "kafka-transactions list: expected two different producer ids, got $open: '$pid_open', $done: '$pid_done'"

	txns_cmd "$out.describe" describe --transactional-id "$open"
	got=$(table_header "$out.describe")
	[[ $got == "CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState TransactionTimeoutMs CurrentTransactionStartTimeMs TransactionDurationMs TopicPartitions" ]] ||
		fail "kafka-transactions describe: unexpected columns '$got'"
	got=$(awk 'NR == 2 { print $2, $3, $5, $6 }' "$out.describe")
	[[ $got == "$open $pid_open Ongoing 120000" ]] ||
		fail "kafka-transactions describe --transactional-id $open: expected TransactionalId, ProducerId, TransactionState, TransactionTimeoutMs '$open $pid_open Ongoing 120000', got '$got'"
	got=$(awk 'NR == 2 { print $7, $8 }' "$out.describe")
	[[ $got =~ ^[0-9]{13}\ [0-9]+$ ]] ||
		fail "kafka-transactions describe: expected a start time (ms since the epoch) and a duration for the open transaction, got '$got'"
	got=$(awk 'NR == 2 { print $9 }' "$out.describe" | tr ',' '\n' | sort | paste -sd ',' -)
	[[ $got == "$topic-0,$topic-1" ]] ||
		fail "kafka-transactions describe: expected TopicPartitions $topic-0,$topic-1, got '$got'"

	txns_cmd "$out.producers" describe-producers --topic "$topic" --partition 0
	got=$(table_header "$out.producers")
	[[ $got == "ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp CurrentTransactionStartOffset" ]] ||
		fail "kafka-transactions describe-producers: unexpected columns '$got'"
	got="$(table_col "$out.producers" 1 "$pid_open" 6) $(table_col "$out.producers" 1 "$pid_done" 6)"
	[[ $got == "0 None" ]] ||
		fail "kafka-transactions describe-producers --partition 0: expected CurrentTransactionStartOffset 0 for $open (producer $pid_open) and None for $done (producer $pid_done), got '$got': $(lines_of "$out.producers")"
	# The open transaction's producer: epoch 0, sequences 0-4, no marker
	# yet (coordinator epoch -1). (The committed one's row is past its
	# marker: Kafka 4.x, transaction version 2, shows it with the epoch the
	# commit bumped and LastSequence -1, so its sequence is not checked.)
	got=$(awk -v k="$pid_open" 'NR > 1 && $1 == k { print $2, $3, $4; exit }' "$out.producers")
	[[ $got == "0 -1 4" ]] ||
		fail "kafka-transactions describe-producers --partition 0: expected ProducerEpoch 0, LatestCoordinatorEpoch -1 and LastSequence 4 for $open (producer $pid_open; 5 records, no marker yet), got '$got'"

	topics_cmd "$out.topic" --describe --topic "$topic"
	leader=$(sed -nE 's/.*Partition: 0[[:space:]]+Leader: ([0-9]+).*/\1/p' "$out.topic")
	txns_cmd "$out.hanging-topic" find-hanging --topic "$topic" --max-transaction-timeout 0
	got=$(awk 'NR > 1' "$out.hanging-topic" | grep -c . || true)
	[[ $got == 0 ]] ||
		fail "kafka-transactions find-hanging --topic $topic: $open's transaction is known to its coordinator, so not hanging, but it listed: $(awk 'NR > 1' "$out.hanging-topic" | tr -s ' \t' '  ' | paste -sd ';' -)"
	# With --broker-id the tool asks that broker about every partition it
	# holds a replica of, led or followed (internal topics included).
	txns_cmd "$out.hanging" find-hanging --broker-id "$leader" --max-transaction-timeout 0
	got=$(table_header "$out.hanging")
	[[ $got == "Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset LastTimestamp Duration(min)" ]] ||
		fail "kafka-transactions find-hanging: unexpected columns '$got'"
	! awk -v t="$topic" 'NR > 1 && $1 == t { f = 1 } END { exit !f }' "$out.hanging" ||
		fail "kafka-transactions find-hanging --broker-id $leader: $open's transaction is known to its coordinator, so not hanging, but it listed: $(grep -F "$topic" "$out.hanging" | tr -s ' ' | paste -sd ';' -)"

	txns_cmd "$out.abort" abort --topic "$topic" --partition 0 --start-offset 0
	start=$SECONDS
	while :; do
		txn_tool "$out.offsets2" offsets "$topic"
		hl=$(hw_lso "$out.offsets2" 0)
		[[ $hl == "12 12" ]] && break
		((SECONDS < start + 15)) || fail "kafka-transactions abort --partition 0 --start-offset 0: expected partition 0's high watermark and last stable offset at 12 (the abort marker at 11), got '$hl'"
		sleep 1
	done
	hl=$(hw_lso "$out.offsets2" 1)
	[[ $hl == "5 0" ]] || fail "after the abort of partition 0 only, partition 1 should keep its open transaction (high watermark 5, last stable offset 0), got '$hl'"
	kafka_java "$CONSUMER" --bootstrap-server "$bs" --topic "$topic" --partition 0 --offset earliest \
		--isolation-level read_committed --max-messages 5 --timeout-ms 20000 --formatter-property print.offset=true \
		</dev/null >"$out.rc" 2>"$out.rc.err" || fail "read_committed console consumer on partition 0 exited with status $?" "$out.rc.err"
	want=$(for i in 0 1 2 3 4; do echo "Offset:$((5 + i))${tab}$done value $i"; done)
	[[ $(cat "$out.rc") == "$want" ]] ||
		fail "read_committed console consumer on partition 0 after the abort: expected $done's 5 records at offsets 5-9, got: $(lines_of "$out.rc")" "$out.rc.err"
	txns_cmd "$out.producers2" describe-producers --topic "$topic" --partition 0
	got=$(table_col "$out.producers2" 1 "$pid_open" 6)
	[[ $got == None ]] ||
		fail "kafka-transactions describe-producers --partition 0 after the abort: expected CurrentTransactionStartOffset None for $open, got '$got'"
	say "  list: $open Ongoing, $done CompleteCommit; describe: Ongoing on $topic-0,$topic-1; describe-producers: start offset 0; find-hanging --broker-id $leader --max-transaction-timeout 0: none; abort --partition 0 --start-offset 0: LSO 0 -> 12, read_committed reads $done's 5 records"
}

# reassign_cmd, election_cmd OUT ARGS...: kafka-reassign-partitions and
# kafka-leader-election, as tool_cmd runs the others; both print their
# errors to stdout, which a failure quotes.
reassign_cmd() { stdout_tool_cmd "$REASSIGN" kafka-reassign-partitions "$@"; }
election_cmd() { stdout_tool_cmd "$LEADER_ELECTION" kafka-leader-election "$@"; }
stdout_tool_cmd() {
	local class=$1 name=$2 out=$3 rc=0
	shift 3
	kafka_java "$class" --bootstrap-server "$bs" "$@" </dev/null >"$out" 2>"$out.err" || rc=$?
	((rc == 0)) || fail "$name $* exited with status $rc, printing: $(grep -v '^\s*at ' "$out" | head -n 3 | tr '\n' ' ' | head -c 400)" "$out.err"
}

# brokers_given: how many brokers the bootstrap list names (the lab numbers
# a cluster's nodes 1..N, compat-tests/README.md).
brokers_given() { tr ',' '\n' <<<"$bs" | grep -c .; }

# partition_row FILE P: "leader replicas isr" of partition P in a
# kafka-topics --describe output.
partition_row() {
	sed -nE "s/.*Partition: $2[[:space:]]+Leader: ([0-9-]+)[[:space:]]+Replicas: ([0-9,]+)[[:space:]]+Isr: ([0-9,]*).*/\1 \2 \3/p" "$1" | head -n 1
}

# wait_reassigned JSON OUT: kafka-reassign-partitions --verify (which also
# clears the throttles once nothing moves) until it says every partition of
# JSON is completed, within 60 s.
wait_reassigned() {
	local json=$1 out=$2 start=$SECONDS
	while :; do
		reassign_cmd "$out" --verify --reassignment-json-file "$json"
		! grep -q 'is still in progress' "$out" && grep -q 'is completed' "$out" && return 0
		((SECONDS < start + 60)) || fail "kafka-reassign-partitions --verify still shows a reassignment in progress after 60s: $(lines_of "$out")"
		sleep 1
	done
}

# kafka-leader-election (LeaderElectionCommand). On one broker every
# partition already has its preferred (only) leader: --election-type
# PREFERRED --topic T --partition 0, UNCLEAN on the same partition, and
# PREFERRED --all-topic-partitions all exit 0, the first two saying "Valid
# replica already elected for partitions T-0" (ELECTION_NOT_NEEDED), none
# reporting an error. On a cluster a partition created on replicas 1,2,3
# (leader 1) is reassigned to 2,1,3 (same replicas, new order, so broker 1
# stays leader while 2 is now preferred; no broker is stopped): the
# PREFERRED election on it says "Successfully completed leader election
# (PREFERRED) for partitions T-0" and kafka-topics --describe then shows
# leader 2; a second one says the valid replica is already elected; and
# --all-topic-partitions exits 0 with no error.
lab_admin_leader_election() {
	need_java
	local topic=${P}admin-election out=$work/admin-election got nb
	nb=$(brokers_given)
	if ((nb == 1)); then
		create_topic "$topic" 2
	else
		topics_cmd "$out.create" --create --topic "$topic" --replica-assignment 1:2:3
		printf '{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[2,1,3]}]}\n' "$topic" >"$out.json"
		reassign_cmd "$out.execute" --execute --reassignment-json-file "$out.json"
		wait_reassigned "$out.json" "$out.verify"
		topics_cmd "$out.before" --describe --topic "$topic"
		got=$(partition_row "$out.before" 0)
		[[ $got == "1 2,1,3 "* ]] ||
			fail "after reassigning $topic-0 from 1,2,3 to 2,1,3: expected leader 1 (not the preferred one) and replicas 2,1,3, kafka-topics --describe shows leader, replicas, isr '$got'"
		election_cmd "$out.preferred" --election-type PREFERRED --topic "$topic" --partition 0
		grep -Fxq "Successfully completed leader election (PREFERRED) for partitions $topic-0" "$out.preferred" ||
			fail "kafka-leader-election --election-type PREFERRED --topic $topic --partition 0 with leader 1 and preferred 2: expected 'Successfully completed leader election (PREFERRED) for partitions $topic-0', it printed: $(lines_of "$out.preferred")" "$out.preferred.err"
		topics_cmd "$out.after" --describe --topic "$topic"
		got=$(partition_row "$out.after" 0)
		[[ $got == "2 2,1,3 "* ]] ||
			fail "after the preferred election: expected leader 2, kafka-topics --describe shows leader, replicas, isr '$got'"
	fi
	election_cmd "$out.noop" --election-type PREFERRED --topic "$topic" --partition 0
	grep -Fxq "Valid replica already elected for partitions $topic-0" "$out.noop" ||
		fail "kafka-leader-election --election-type PREFERRED --topic $topic --partition 0 on its preferred leader: expected 'Valid replica already elected for partitions $topic-0', it printed: $(lines_of "$out.noop")" "$out.noop.err"
	election_cmd "$out.unclean" --election-type UNCLEAN --topic "$topic" --partition 0
	grep -Fxq "Valid replica already elected for partitions $topic-0" "$out.unclean" ||
		fail "kafka-leader-election --election-type UNCLEAN --topic $topic --partition 0 with its leader alive: expected 'Valid replica already elected for partitions $topic-0', it printed: $(lines_of "$out.unclean")" "$out.unclean.err"
	election_cmd "$out.all" --election-type PREFERRED --all-topic-partitions
	! grep -q 'Error' "$out.all" ||
		fail "kafka-leader-election --election-type PREFERRED --all-topic-partitions reported an error: $(lines_of "$out.all")" "$out.all.err"
	if ((nb == 1)); then
		# Electing for all partitions, Kafka leaves out those that already
		# have their leader (ReplicationControlManager.electLeaders): on one
		# broker, every one, so the tool prints nothing.
		[[ ! -s $out.all ]] ||
			fail "kafka-leader-election --election-type PREFERRED --all-topic-partitions on one broker: expected no output (every partition already has its preferred leader, which the answer leaves out), it printed: $(lines_of "$out.all")"
		say "  PREFERRED and UNCLEAN on $topic-0: valid replica already elected; PREFERRED --all-topic-partitions: exit 0, nothing to elect"
	else
		say "  $topic-0 reassigned 1,2,3 -> 2,1,3 (leader 1); PREFERRED: elected 2; again, and UNCLEAN: valid replica already elected; --all-topic-partitions: exit 0, no error"
	fi
}

# throttle_configs OUT: the replication throttle configs kafka-configs
# --describe shows on the topics and brokers given after OUT (name=value,
# sorted, space-separated), "" when there are none.
throttle_configs() {
	local out=$1 t b
	shift
	: >"$out.all"
	for t in "$@"; do
		if [[ $t == broker:* ]]; then
			configs_cmd "$out.$t" --describe --entity-type brokers --entity-name "${t#broker:}"
		else
			configs_cmd "$out.$t" --describe --entity-type topics --entity-name "$t"
		fi
		sed -nE "s/^  ((leader|follower)\.replication\.throttled\.(replicas|rate)|replica\.alter\.log\.dirs\.io\.max\.bytes\.per\.second)=([^ ]*) .*/$t:\1=\4/p" "$out.$t" >>"$out.all"
	done
	sort "$out.all" | paste -sd ' ' -
}

# kafka-reassign-partitions (ReassignPartitionsCommand). On a cluster (node
# ids 1..N, N >= 3): topic A has partition 0 on broker 1 and 1 on broker 2;
# --generate --topics-to-move-json-file {A} --broker-list 2,3 prints the
# current assignment and a proposal on brokers 2 and 3 only; --execute of
# the proposal with --throttle 10000000 says it started and sets the
# throttles (topic: leader/follower.replication.throttled.replicas;
# brokers: leader/follower.replication.throttled.rate=10000000);
# --verify until completed, after which kafka-configs shows no throttle on
# the topic or any broker, --list finds no reassignment and kafka-topics
# --describe shows the proposed replicas. Then a move in flight: topic B,
# one partition on broker 1, gets 6 MB (kafka-producer-perf-test: 6,000
# records of 1,000 bytes) and is moved to broker 2 with --throttle 300000
# (about 20 s to copy): --list shows "B-0: replicas: 2,1. adding: 2.
# removing: 1.", --cancel says it cancelled B-0, --list then finds none,
# B-0 stays on broker 1 and the throttles are gone. On one broker only what
# one broker allows: --generate --broker-list 1 proposes the current
# assignment, --execute of it with --throttle, --verify completed and the
# throttles cleared, --list none, --cancel "None of the specified partition
# reassignments are active."
lab_admin_reassign() {
	need_java
	local a=${P}reassign-a b=${P}reassign-b out=$work/admin-reassign got nb want start brokers list=()
	nb=$(brokers_given)
	if ((nb == 1)); then brokers=1; else brokers=2,3; fi
	for ((i = 1; i <= nb; i++)); do list+=("broker:$i"); done
	if ((nb == 1)); then
		create_topic "$a" 2
	else
		topics_cmd "$out.create-a" --create --topic "$a" --replica-assignment 1,2
	fi
	printf '{"version":1,"topics":[{"topic":"%s"}]}\n' "$a" >"$out.topics.json"
	reassign_cmd "$out.generate" --generate --topics-to-move-json-file "$out.topics.json" --broker-list "$brokers"
	python3 - "$out.generate" "$a" "$brokers" "$nb" >"$out.json" <<'PY' || fail "kafka-reassign-partitions --generate: $(cat "$out.json")"
import json, sys
path, topic, brokers, nb = sys.argv[1], sys.argv[2], {int(b) for b in sys.argv[3].split(",")}, int(sys.argv[4])
lines = open(path).read().split("\n")
try:
    cur = json.loads(lines[lines.index("Current partition replica assignment") + 1])
    prop = json.loads(lines[lines.index("Proposed partition reassignment configuration") + 1])
except (ValueError, IndexError) as e:
    print(f"expected 'Current partition replica assignment' and 'Proposed partition reassignment configuration', each followed by a JSON line ({e}); it printed: {' '.join(lines)[:400]}")
    sys.exit(1)
want_cur = {0: [1], 1: [1]} if nb == 1 else {0: [1], 1: [2]}
got_cur = {p["partition"]: p["replicas"] for p in cur["partitions"] if p["topic"] == topic}
if got_cur != want_cur:
    print(f"current assignment {got_cur}, expected {want_cur}")
    sys.exit(1)
got = {p["partition"]: p["replicas"] for p in prop["partitions"] if p["topic"] == topic}
if sorted(got) != [0, 1] or any(len(r) != 1 or r[0] not in brokers for r in got.values()):
    print(f"proposed {got}, expected partitions 0 and 1 with one replica each on brokers {sorted(brokers)}")
    sys.exit(1)
print(json.dumps(prop))
PY
	want=$(python3 - "$out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%d:%d" % (p["partition"], p["replicas"][0]) for p in sorted(d["partitions"], key=lambda p: p["partition"])))
PY
)
	reassign_cmd "$out.execute" --execute --reassignment-json-file "$out.json" --throttle 10000000
	grep -q "^Successfully started partition reassignments\? for $a-[01]" "$out.execute" ||
		fail "kafka-reassign-partitions --execute --throttle 10000000: expected 'Successfully started partition reassignment(s) for $a-...', it printed: $(lines_of "$out.execute")" "$out.execute.err"
	got=$(throttle_configs "$out.thr1" "$a" "${list[@]}")
	[[ $got == *"follower.replication.throttled.rate=10000000"* && $got == *"leader.replication.throttled.rate=10000000"* ]] ||
		fail "after --execute --throttle 10000000: expected leader/follower.replication.throttled.rate=10000000 on the brokers, kafka-configs shows: '$got'"
	wait_reassigned "$out.json" "$out.verify"
	got=$(throttle_configs "$out.thr2" "$a" "${list[@]}")
	[[ -z $got ]] || fail "kafka-reassign-partitions --verify said completed but throttles remain: $got"
	reassign_cmd "$out.list" --list
	[[ $(cat "$out.list") == "No partition reassignments found." ]] ||
		fail "kafka-reassign-partitions --list after --verify: expected 'No partition reassignments found.', it printed: $(lines_of "$out.list")"
	topics_cmd "$out.describe-a" --describe --topic "$a"
	got="0:$(partition_row "$out.describe-a" 0 | cut -d' ' -f2) 1:$(partition_row "$out.describe-a" 1 | cut -d' ' -f2)"
	[[ $got == "$want" ]] || fail "kafka-topics --describe after the reassignment: expected replicas $want, got $got"
	if ((nb == 1)); then
		reassign_cmd "$out.cancel" --cancel --reassignment-json-file "$out.json"
		grep -Fxq "None of the specified partition reassignments are active." "$out.cancel" ||
			fail "kafka-reassign-partitions --cancel with nothing moving: expected 'None of the specified partition reassignments are active.', it printed: $(lines_of "$out.cancel")"
		say "  --generate --broker-list 1, --execute --throttle (throttles set), --verify completed (throttles cleared), --list none, --cancel none active"
		return 0
	fi

	topics_cmd "$out.create-b" --create --topic "$b" --replica-assignment 1
	kafka_java org.apache.kafka.tools.ProducerPerformance --topic "$b" --num-records 6000 --record-size 1000 \
		--throughput -1 --producer-props "bootstrap.servers=$bs" acks=1 </dev/null >"$out.perf" 2>"$out.perf.err" ||
		fail "kafka-producer-perf-test --num-records 6000 --record-size 1000 exited with status $?" "$out.perf.err"
	printf '{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[2]}]}\n' "$b" >"$out.b.json"
	reassign_cmd "$out.execute-b" --execute --reassignment-json-file "$out.b.json" --throttle 300000
	reassign_cmd "$out.list-b" --list
	grep -Fxq "$b-0: replicas: 2,1. adding: 2. removing: 1." "$out.list-b" ||
		fail "kafka-reassign-partitions --list during a throttled move of $b-0 (6 MB at 300 kB/s) from 1 to 2: expected '$b-0: replicas: 2,1. adding: 2. removing: 1.', it printed: $(lines_of "$out.list-b")"
	reassign_cmd "$out.cancel" --cancel --reassignment-json-file "$out.b.json"
	grep -Fxq "Successfully cancelled partition reassignment for: $b-0" "$out.cancel" ||
		fail "kafka-reassign-partitions --cancel: expected 'Successfully cancelled partition reassignment for: $b-0', it printed: $(lines_of "$out.cancel")" "$out.cancel.err"
	reassign_cmd "$out.list-c" --list
	[[ $(cat "$out.list-c") == "No partition reassignments found." ]] ||
		fail "kafka-reassign-partitions --list after --cancel: expected 'No partition reassignments found.', it printed: $(lines_of "$out.list-c")"
	topics_cmd "$out.describe-b" --describe --topic "$b"
	got=$(partition_row "$out.describe-b" 0)
	[[ $got == "1 1 1" ]] || fail "kafka-topics --describe after --cancel: expected $b-0 back on broker 1 alone (leader, replicas, isr '1 1 1'), got '$got'"
	got=$(throttle_configs "$out.thr3" "$b" "${list[@]}")
	[[ -z $got ]] || fail "kafka-reassign-partitions --cancel (without --preserve-throttles) left throttles: $got"
	say "  --generate --broker-list 2,3: $want; --execute --throttle 10000000 (throttles set), --verify completed (throttles cleared), --list none, replicas $want; 6 MB move of $b-0 1 -> 2 at 300 kB/s listed in flight, --cancel: back on 1, no throttles"
}

# kafka-log-dirs and a move between log dirs (the lab's brokers have two
# each): 3,000 records of 1 kB into L-0 on broker 1; kafka-log-dirs
# --describe lists broker 1's two log dirs and L-0 in one of them;
# kafka-reassign-partitions --execute with "log_dirs" naming the other one
# says it started moving the replica's log dir, --verify then reports
# "Reassignment of replica L-0-1 completed successfully.", kafka-log-dirs
# shows L-0 in the other dir and no future replica, and the 3,000 records
# read back.
lab_admin_log_dirs() {
	need_java
	local t=${P}logdirs out=$work/admin-log-dirs got from to start
	if (($(brokers_given) == 1)); then
		create_topic "$t" 1
	else
		topics_cmd "$out.create" --create --topic "$t" --replica-assignment 1
	fi
	kafka_java org.apache.kafka.tools.ProducerPerformance --topic "$t" --num-records 3000 --record-size 1000 \
		--throughput -1 --producer-props "bootstrap.servers=$bs" acks=all </dev/null >"$out.perf" 2>"$out.perf.err" ||
		fail "kafka-producer-perf-test --num-records 3000 --record-size 1000 exited with status $?" "$out.perf.err"
	logdirs_cmd "$out.describe1" --describe --topic-list "$t" --broker-list 1
	python3 - "$out.describe1" "$t" >"$out.dirs" <<'PY' || fail "kafka-log-dirs --describe --topic-list $t --broker-list 1: $(cat "$out.dirs")"
import json, sys
path, topic = sys.argv[1], sys.argv[2]
line = [l for l in open(path) if l.startswith("{")]
try:
    d = json.loads(line[0])
    b = [b for b in d["brokers"] if b["broker"] == 1][0]
except (IndexError, KeyError, ValueError) as e:
    print(f"expected a JSON line with broker 1 ({e}); it printed: {open(path).read()[:300]}")
    sys.exit(1)
dirs = [x["logDir"] for x in b["logDirs"]]
have = [x["logDir"] for x in b["logDirs"] for p in x["partitions"] if p["partition"] == topic + "-0" and not p["isFuture"]]
if len(dirs) != 2 or len(have) != 1 or any(x["error"] for x in b["logDirs"]):
    print(f"expected two log dirs without error and {topic}-0 in one of them, got dirs {dirs}, {topic}-0 in {have}: {line[0][:300]}")
    sys.exit(1)
print(have[0], [x for x in dirs if x != have[0]][0])
PY
	read -r from to <"$out.dirs"
	printf '{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[1],"log_dirs":["%s"]}]}\n' "$t" "$to" >"$out.json"
	reassign_cmd "$out.execute" --execute --reassignment-json-file "$out.json"
	grep -q "log directory.*$t.*0" "$out.execute" ||
		fail "kafka-reassign-partitions --execute with log_dirs: expected it to say it started moving the log directory of $t-0, it printed: $(lines_of "$out.execute")" "$out.execute.err"
	start=$SECONDS
	until reassign_cmd "$out.verify" --verify --reassignment-json-file "$out.json" &&
		grep -Fxq "Reassignment of replica $t-0-1 completed successfully." "$out.verify"; do
		((SECONDS < start + 60)) || fail "kafka-reassign-partitions --verify: no 'Reassignment of replica $t-0-1 completed successfully.' after 60s: $(lines_of "$out.verify")"
		sleep 1
	done
	logdirs_cmd "$out.describe2" --describe --topic-list "$t" --broker-list 1
	got=$(python3 - "$out.describe2" "$t" <<'PY'
import json, sys
path, topic = sys.argv[1], sys.argv[2]
d = json.loads([l for l in open(path) if l.startswith("{")][0])
print(" ".join(sorted(x["logDir"] + (":future" if p["isFuture"] else "")
    for b in d["brokers"] for x in b["logDirs"] for p in x["partitions"] if p["partition"] == topic + "-0")))
PY
)
	[[ $got == "$to" ]] || fail "kafka-log-dirs --describe after the move: expected $t-0 in $to alone, got '$got'"
	kafka_java "$CONSUMER" --bootstrap-server "$bs" --topic "$t" --partition 0 --offset earliest \
		--max-messages 3000 --timeout-ms 30000 </dev/null 2>"$out.consume.err" | wc -l >"$out.count"
	got=$(tr -d ' ' <"$out.count")
	[[ $got == 3000 ]] || fail "kafka-console-consumer after the move read $got records of 3000" "$out.consume.err"
	say "  $t-0 (3 MB) moved from $(basename "$from") to $(basename "$to") on broker 1: --execute with log_dirs, --verify completed, kafka-log-dirs shows it moved, 3000 records read back"
}
logdirs_cmd() { stdout_tool_cmd org.apache.kafka.tools.LogDirsCommand kafka-log-dirs "$@"; }

# lab_scenario CLIENT NAME FUNC ARGS...: runs a lab scenario and appends its
# result line to $COMPAT_RESULTS: client, version, scenario, pass or fail,
# seconds, and a one-line detail (the scenario's last summary line, or the
# reason it failed).
lab_scenario() {
	local client=$1 name=$2 version=$console_version status=pass detail
	shift 2
	[[ -z ${CONSOLE_ONLY:-} || "$client $name" =~ $CONSOLE_ONLY ]] || return 0
	[[ $client != kcat ]] || version=$kcat_version
	if [[ -n ${COMPAT_SECURITY:-} && ! $name =~ $SECURE_SCENARIOS ]]; then
		printf '%s\t%s\t%s\tskip\t0\tnot run over %s (produce/consume/group scenarios only)\n' \
			"$client" "$version" "$name" "$COMPAT_SECURITY" >>"$COMPAT_RESULTS"
		return 0
	fi
	run_scenario "$client $name" subshell "$@"
	if ((scenario_rc == 0)); then
		# The summary lines scenarios say are indented by two spaces.
		detail=$(grep '^  ' "$work/said" | tail -n 1)
	else
		status=fail
		detail=$(one_line_reason "$scenario_reason")
	fi
	: >"$work/said"
	detail=$(printf '%s' "$detail" | tr '\t\r\n' '   ' | sed -E 's/ +/ /g; s/^ //; s/ $//' | head -c 1500)
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$client" "$version" "$name" "$status" "$scenario_secs" "${detail:-(none)}" >>"$COMPAT_RESULTS"
}

# one_line_reason REASON: fail's first line, plus the tool's own complaint
# (an Error or Exception line from the stderr tail fail appended), if any.
one_line_reason() {
	local first=${1%%$'\n'*} rest tool
	rest=${1#"$first"}
	tool=$(grep -E 'Error|ERROR|Exception|% ' <<<"$rest" | grep -vE '^\s+at ' | tail -n 1 | sed -E 's/^ +//' || true)
	if [[ -n $tool && $first != *"$tool"* ]]; then
		printf '%s [tool said: %s]' "$first" "$tool"
	else
		printf '%s' "$first"
	fi
}

lab_main() {
	say "console lab: the Kafka console tools and kcat against $bs; prefix $COMPAT_PREFIX; work dir $work"
	: >"$work/said"
	configure_security "$work/security.properties"
	libs_why=""
	if ! libs=$(bash "$here/fetch.sh" 2>"$work/fetch.err"); then
		libs=""
		libs_why="fetch.sh failed, run setup.sh: $(grep -v '^\s*$' "$work/fetch.err" | tail -n 1)"
	fi
	# The versions as the tools report them: kafka-tools' --version, and
	# kcat -V's own version with the librdkafka it runs on.
	console_version=unknown
	if [[ -n $libs ]]; then
		console_version=$(kafka_java "$TOPICS" --version 2>/dev/null </dev/null | tail -n 1 | tr -d '[:space:]') || true
		if [[ -z $console_version ]]; then
			local jars=("$libs"/kafka-tools-*.jar)
			console_version=$(basename "${jars[0]}" .jar)
			console_version=${console_version#kafka-tools-}
		fi
	fi
	kcat_version=unknown
	if command -v kcat >/dev/null; then
		kcat_version=$(kcat -V 2>&1 | sed -nE 's/^Version ([^ ]+) .*librdkafka ([^ )]+).*/\1 (librdkafka \2)/p' | head -n 1)
		[[ -n $kcat_version ]] || kcat_version=unknown
	fi
	say "  console-tools $console_version, kcat $kcat_version"
	: >"$work/said"

	local codec
	lab_scenario console-tools admin-topics lab_admin_topics
	lab_scenario console-tools admin-configs lab_admin_configs
	for codec in none gzip snappy lz4 zstd; do
		lab_scenario console-tools "produce-consume-$codec" lab_console_produce_consume "$codec"
	done
	lab_scenario console-tools list-offsets lab_console_list_offsets
	lab_scenario console-tools consume-from-offset lab_console_consume_from_offset
	lab_scenario console-tools group-commit-resume lab_console_group_commit_resume
	lab_scenario console-tools admin-groups lab_console_admin_groups
	lab_scenario console-tools admin-transactions lab_admin_transactions
	lab_scenario console-tools admin-leader-election lab_admin_leader_election
	lab_scenario console-tools admin-reassign lab_admin_reassign
	lab_scenario console-tools admin-log-dirs lab_admin_log_dirs
	lab_scenario console-tools consumer-protocol-group lab_console_consumer_protocol_group
	lab_scenario console-tools share-group lab_console_share_group
	for codec in none gzip snappy lz4 zstd; do
		lab_scenario kcat "produce-consume-$codec" lab_kcat_produce_consume "$codec"
	done
	lab_scenario kcat metadata lab_kcat_metadata
	lab_scenario kcat consume-from-offset lab_kcat_consume_from_offset
	lab_scenario kcat list-offsets lab_kcat_list_offsets
	lab_scenario kcat group-rebalance kcat_group

	say ""
	say "console lab summary ($((SECONDS - t0))s in all), results appended to $COMPAT_RESULTS:"
	for line in "${summary[@]}"; do say "  $line"; done
	say "$passed passed, $failed failed; work dir $work"
}

# --- main -------------------------------------------------------------------

if ((lab)); then
	lab_main
	exit 0
fi

say "console-test: Kafka console tools and kcat against gregor; work dir $work"

if ! command -v kcat >/dev/null && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
	say "--- installing kcat (apt-get install -y kcat)"
	export DEBIAN_FRONTEND=noninteractive
	timeout 600 apt-get install -y -qq kcat >"$work/apt.log" 2>&1 ||
		{ timeout 600 apt-get update -qq >>"$work/apt.log" 2>&1 && timeout 600 apt-get install -y -qq kcat >>"$work/apt.log" 2>&1; } ||
		say "  apt-get install kcat failed (see $work/apt.log)"
fi

read -r kafka_port admin_port etcd_client_port etcd_peer_port sasl_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
')
bs=127.0.0.1:$kafka_port
sasl_bs=127.0.0.1:$sasl_port # the sasl scenario's SASL_PLAINTEXT listener

scenario build do_build
if ((failed > 0)); then
	say "  ${summary[0]}"
	say "work dir kept: $work"
	say "0 passed, 1 failed"
	exit 1
fi
scenario fetch-tools do_fetch
libs=$(cat "$work/libs" 2>/dev/null || true)
scenario broker-start do_start inline
scenario java-topics java_topics
scenario java-produce java_produce
scenario java-codecs-on-disk java_codecs_on_disk
scenario java-offsets java_offsets
scenario java-consume java_consume
scenario kcat-metadata kcat_metadata
scenario kcat-produce-consume kcat_produce_consume
scenario kcat-reads-java-p0 kcat_reads_java
scenario java-reads-kcat-p0 java_reads_kcat
scenario group-produce group_produce
scenario group-console-consume group_console_consume
scenario group-list group_list
scenario group-describe group_describe
scenario group-reset-earliest group_reset_earliest
scenario group-reset-partitions group_reset_partitions
scenario group-delete-offsets group_delete_offsets
scenario group-delete-active group_delete_active
scenario group-delete group_delete
scenario kcat-group kcat_group
scenario sarama-group sarama_group
scenario shutdown-sigterm shutdown_sigterm
scenario broker-restart do_restart inline
scenario restart-kcat restart_kcat
scenario restart-java restart_java
scenario restart-groups restart_groups
scenario acls acls
scenario scram scram
scenario sasl sasl
scenario sasl-reauth sasl_reauth
scenario sasl-acls sasl_acls
scenario sasl-oauthbearer sasl_oauthbearer
scenario sasl-restore sasl_restore

say ""
say "console-test summary ($((SECONDS - t0))s in all):"
for line in "${summary[@]}"; do say "  $line"; done
if ((failed > 0)) || [[ ${KEEP_WORK:-0} == 1 ]]; then
	say "work dir kept: $work (tool output, broker log gregor.log, data/)"
fi
say "$passed passed, $failed failed"
((failed == 0))
