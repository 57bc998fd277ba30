#!/usr/bin/env bash
# Starts and stops the reference Apache Kafka broker of the compatibility lab:
# one KRaft node acting as broker and controller, from the kafka_2.13 jars on
# Maven Central (pinned in pom.xml), configured as Kafka's own
# config/server.properties sample configures a single-node cluster; or a
# cluster of such nodes.
#
#   kafka.sh fetch                   copy the jars into the cache (once); prints the libs dir
#   kafka.sh start WORKDIR PORT [CONTROLLER_PORT]
#                                    format WORKDIR/data, start the broker on 127.0.0.1:PORT,
#                                    wait until it answers; its log is WORKDIR/server.log
#   kafka.sh start-cluster WORKDIR PORT,PORT,PORT...
#                                    one node per port, node ids 1..N, each broker and
#                                    controller (combined mode) with its own free
#                                    controller port, all voters of one quorum, formatted
#                                    with one cluster id, in WORKDIR/node-<id>; waits
#                                    until every node has started
#   kafka.sh stop WORKDIR            SIGTERM (to every node of a cluster at once), wait
#                                    for the exit (SIGKILL after 60 s)
#
# The single node's controller listens on CONTROLLER_PORT, or
# KAFKA_CONTROLLER_PORT, or else a free port picked at random. KAFKA_HEAP
# sets -Xms/-Xmx of each JVM (default 1g, 768m in a cluster: three JVMs
# share the lab machine). Extra broker settings, one key=value per line, can
# be appended with KAFKA_EXTRA_PROPERTIES. KAFKA_TWO_LOG_DIRS (non-empty)
# gives each node a second log dir, WORKDIR/data-b, formatted with the
# first (the compatibility lab's brokers have two, for kafka-log-dirs and
# moves between log dirs).
#
# A cluster differs from the single node only where a cluster must: the
# internal topics are replicated to three brokers
# (offsets.topic.replication.factor=3,
# transaction.state.log.replication.factor=3 with min.isr 2, the same for
# the share-group state topic); topics a client creates without a
# replication factor keep default.replication.factor=1, as on one node.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pom=$here/pom.xml
cache=${COMPAT_CACHE:-$(cd "$here/.." && pwd)/.cache}
START_TIMEOUT=${KAFKA_START_TIMEOUT:-120}

die() { echo "kafka.sh: $*" >&2; exit 1; }

# fetch: the libs dir, copied by Maven on first use. The copy goes to a
# temporary dir renamed into place, with a stamp of the pom's checksum, so an
# interrupted download never looks complete.
fetch() {
	local version sum dest tmp
	version=$(sed -nE 's|.*<kafka.version>([^<]+)</kafka.version>.*|\1|p' "$pom")
	[[ -n $version ]] || die "no <kafka.version> in $pom"
	dest=$cache/kafka-server-$version
	sum=$(sha256sum "$pom" | cut -d' ' -f1)
	if [[ -f $dest/.complete && $(cat "$dest/.complete") == "$sum" ]]; then
		echo "$dest/libs"
		return
	fi
	command -v mvn >/dev/null || die "mvn not found (apt-get install -y maven)"
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/.kafka-server-$version.XXXXXX")
	echo "kafka.sh: downloading Kafka $version with Maven" >&2
	if ! mvn -B -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
		-DoutputDirectory="$tmp/libs" >&2; then
		rm -rf "$tmp"
		die "Maven could not copy the Kafka jars"
	fi
	[[ -f $tmp/libs/kafka_2.13-$version.jar ]] || { rm -rf "$tmp"; die "Maven did not copy kafka_2.13-$version.jar"; }
	echo "$sum" >"$tmp/.complete"
	rm -rf "$dest"
	mv "$tmp" "$dest"
	echo "$dest/libs"
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# answers PORT: true when a TCP connection to 127.0.0.1:PORT succeeds.
answers() {
	python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
PY
}

# write_config DIR NODE_ID PORT CONTROLLER_PORT VOTERS RF: DIR/server.properties
# and DIR/log4j2.properties of one combined broker+controller node; RF is the
# replication factor of the internal topics (1, or 3 in a cluster).
write_config() {
	local dir=$1 id=$2 port=$3 cport=$4 voters=$5 rf=$6 min_isr=1
	((rf < 2)) || min_isr=2
	cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data${KAFKA_TWO_LOG_DIRS:+,$dir/data-b}
num.partitions=1
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$min_isr
group.initial.rebalance.delay.ms=0
PROPS
	if ((rf > 1)); then
		echo "default.replication.factor=1" >>"$dir/server.properties"
	fi
	if [[ -n ${KAFKA_EXTRA_PROPERTIES:-} ]]; then
		printf '%s\n' "$KAFKA_EXTRA_PROPERTIES" >>"$dir/server.properties"
	fi
	cat >"$dir/log4j2.properties" <<PROPS
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
PROPS
}

# java_opts DIR HEAP: sets the array java_opts for a node in DIR.
java_opts() {
	java_opts=(-Xms"$2" -Xmx"$2" -XX:+UseG1GC
		-Djava.awt.headless=true -Dlog4j2.configurationFile="$1/log4j2.properties")
}

# format DIR LIBS CLUSTER_ID: formats DIR/data unless it already is.
format() {
	local dir=$1 libs=$2 cluster=$3
	[[ ! -f $dir/data/meta.properties ]] || return 0
	java "${java_opts[@]}" -cp "$libs/*" kafka.tools.StorageTool format \
		-t "$cluster" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
		die "formatting $dir/data failed: $(tail -n 5 "$dir/format.log")"
}

# launch DIR LIBS: starts the node configured in DIR in the background and
# records its pid in DIR/kafka.pid.
launch() {
	local dir=$1 libs=$2
	nohup java "${java_opts[@]}" -cp "$libs/*" kafka.Kafka "$dir/server.properties" \
		</dev/null >>"$dir/stdout.log" 2>&1 &
	echo "$!" >"$dir/kafka.pid"
}

# started DIR PORT: true once the node in DIR answers on PORT and has logged
# its start.
started() {
	answers "$2" && grep -q 'Kafka Server started' "$1/server.log" 2>/dev/null
}

# exited DIR: true (with the reason on stderr) when the node in DIR is gone.
exited() {
	kill -0 "$(cat "$1/kafka.pid")" 2>/dev/null && return 1
	echo "kafka.sh: the broker in $1 exited before it was ready; see $1/server.log and $1/stdout.log: $(tail -n 5 "$1/stdout.log")" >&2
}

not_running() {
	[[ ! -s $1/kafka.pid ]] || ! kill -0 "$(cat "$1/kafka.pid")" 2>/dev/null ||
		die "a broker from $1 is already running (pid $(cat "$1/kafka.pid"))"
}

start() {
	local work=$1 port=$2 cport=${3:-${KAFKA_CONTROLLER_PORT:-}} libs cluster deadline
	libs=$(fetch)
	mkdir -p "$work"
	work=$(cd "$work" && pwd)
	not_running "$work"
	[[ -n $cport ]] || cport=$(free_port)
	[[ $cport =~ ^[0-9]+$ && $cport != "$port" ]] || die "controller port '$cport' must be a number other than the broker port $port"
	write_config "$work" 1 "$port" "$cport" "1@127.0.0.1:$cport" 1
	java_opts "$work" "${KAFKA_HEAP:-1g}"
	if [[ ! -f $work/data/meta.properties ]]; then
		cluster=$(java -cp "$libs/*" kafka.tools.StorageTool random-uuid)
		format "$work" "$libs" "$cluster"
	fi
	launch "$work" "$libs"
	deadline=$((SECONDS + START_TIMEOUT))
	until started "$work" "$port"; do
		! exited "$work" || exit 1
		((SECONDS < deadline)) || { kill -KILL "$(cat "$work/kafka.pid")" 2>/dev/null || true; die "the broker was not ready on 127.0.0.1:$port within ${START_TIMEOUT}s"; }
		sleep 0.5
	done
	echo "kafka.sh: Kafka (pid $(cat "$work/kafka.pid")) ready on 127.0.0.1:$port" >&2
}

# start_cluster WORKDIR PORTS: node i (1-based) listens on the i-th of the
# comma-separated PORTS; all nodes start before any is waited for, since
# none can start without a quorum of controllers.
start_cluster() {
	local work=$1 ports cports=() voters="" libs cluster n i dir deadline pending
	IFS=, read -r -a ports <<<"$2"
	n=${#ports[@]}
	((n >= 2)) || die "start-cluster wants two or more ports, got '$2'"
	libs=$(fetch)
	mkdir -p "$work"
	work=$(cd "$work" && pwd)
	for ((i = 1; i <= n; i++)); do
		[[ ${ports[i - 1]} =~ ^[0-9]+$ ]] || die "port '${ports[i - 1]}' is not a number"
		not_running "$work/node-$i"
		cports+=("$(free_port)")
		voters+="${voters:+,}$i@127.0.0.1:${cports[i - 1]}"
	done
	cluster=$(java -cp "$libs/*" kafka.tools.StorageTool random-uuid)
	for ((i = 1; i <= n; i++)); do
		dir=$work/node-$i
		mkdir -p "$dir"
		write_config "$dir" "$i" "${ports[i - 1]}" "${cports[i - 1]}" "$voters" 3
		java_opts "$dir" "${KAFKA_HEAP:-768m}"
		format "$dir" "$libs" "$cluster"
	done
	for ((i = 1; i <= n; i++)); do
		java_opts "$work/node-$i" "${KAFKA_HEAP:-768m}"
		launch "$work/node-$i" "$libs"
	done
	deadline=$((SECONDS + START_TIMEOUT))
	while :; do
		pending=""
		for ((i = 1; i <= n; i++)); do
			started "$work/node-$i" "${ports[i - 1]}" && continue
			if exited "$work/node-$i"; then
				stop "$work"
				exit 1
			fi
			pending+=" $i"
		done
		[[ -n $pending ]] || break
		if ((SECONDS >= deadline)); then
			stop "$work"
			die "node(s)$pending not ready within ${START_TIMEOUT}s; see $work/node-*/server.log"
		fi
		sleep 0.5
	done
	echo "kafka.sh: Kafka cluster of $n nodes ready on 127.0.0.1:${2//,/,127.0.0.1:}" >&2
}

# stop WORKDIR: the node of WORKDIR, or every node of a cluster in it, all
# signalled at once (a cluster's last broker waits in vain for a controller
# quorum when its peers are already gone, so none is stopped before the
# others).
stop() {
	local work=$1 f pids=() pid deadline
	for f in "$work/kafka.pid" "$work"/node-*/kafka.pid; do
		[[ -s $f ]] || continue
		pid=$(cat "$f")
		rm -f "$f"
		kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
	done
	deadline=$((SECONDS + 60))
	for pid in "${pids[@]}"; do
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
		kill -KILL "$pid" 2>/dev/null || true
	done
}

case ${1:-} in
fetch) fetch ;;
start) [[ $# -eq 3 || $# -eq 4 ]] || die "usage: kafka.sh start WORKDIR PORT [CONTROLLER_PORT]"; start "$2" "$3" "${4:-}" ;;
start-cluster) [[ $# -eq 3 ]] || die "usage: kafka.sh start-cluster WORKDIR PORT,PORT,PORT..."; start_cluster "$2" "$3" ;;
stop) [[ $# -eq 2 ]] || die "usage: kafka.sh stop WORKDIR"; stop "$2" ;;
*) die "usage: kafka.sh fetch | start WORKDIR PORT [CONTROLLER_PORT] | start-cluster WORKDIR PORT,PORT,PORT... | stop WORKDIR" ;;
esac
