#!/usr/bin/env bash
# Starts and stops the reference Apache Kafka broker of the compatibility lab:
# one KRaft node acting as broker and controller, from the kafka_2.13 jars on
# Maven Central (pinned in pom.xml), configured as Kafka's own
# config/server.properties sample configures a single-node cluster.
#
#   kafka.sh fetch                   copy the jars into the cache (once); prints the libs dir
#   kafka.sh start WORKDIR PORT [CONTROLLER_PORT]
#                                    format WORKDIR/data, start the broker on 127.0.0.1:PORT,
#                                    wait until it answers; its log is WORKDIR/server.log
#   kafka.sh stop WORKDIR            SIGTERM, wait for the exit (SIGKILL after 60 s)
#
# The controller listens on CONTROLLER_PORT, or KAFKA_CONTROLLER_PORT, or
# else a free port picked at random. KAFKA_HEAP (default 1g) sets
# -Xms/-Xmx. Extra broker settings, one key=value per line, can be appended
# with KAFKA_EXTRA_PROPERTIES.
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

start() {
	local work=$1 port=$2 cport=${3:-${KAFKA_CONTROLLER_PORT:-}} libs cluster java_opts pid deadline
	libs=$(fetch)
	mkdir -p "$work"
	work=$(cd "$work" && pwd)
	[[ ! -s $work/kafka.pid ]] || ! kill -0 "$(cat "$work/kafka.pid")" 2>/dev/null ||
		die "a broker from $work is already running (pid $(cat "$work/kafka.pid"))"
	[[ -n $cport ]] || cport=$(free_port)
	[[ $cport =~ ^[0-9]+$ && $cport != "$port" ]] || die "controller port '$cport' must be a number other than the broker port $port"
	cat >"$work/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$work/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
	if [[ -n ${KAFKA_EXTRA_PROPERTIES:-} ]]; then
		printf '%s\n' "$KAFKA_EXTRA_PROPERTIES" >>"$work/server.properties"
	fi
	cat >"$work/log4j2.properties" <<PROPS
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = $work/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
PROPS
	java_opts=(-Xms"${KAFKA_HEAP:-1g}" -Xmx"${KAFKA_HEAP:-1g}" -XX:+UseG1GC
		-Djava.awt.headless=true -Dlog4j2.configurationFile="$work/log4j2.properties")
	if [[ ! -f $work/data/meta.properties ]]; then
		cluster=$(java -cp "$libs/*" kafka.tools.StorageTool random-uuid)
		java "${java_opts[@]}" -cp "$libs/*" kafka.tools.StorageTool format \
			-t "$cluster" -c "$work/server.properties" >"$work/format.log" 2>&1 ||
			die "formatting $work/data failed: $(tail -n 5 "$work/format.log")"
	fi
	nohup java "${java_opts[@]}" -cp "$libs/*" kafka.Kafka "$work/server.properties" \
		</dev/null >>"$work/stdout.log" 2>&1 &
	pid=$!
	echo "$pid" >"$work/kafka.pid"
	deadline=$((SECONDS + START_TIMEOUT))
	until answers "$port" && grep -q 'Kafka Server started' "$work/server.log" 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null || die "the broker exited before it was ready; see $work/server.log and $work/stdout.log: $(tail -n 5 "$work/stdout.log")"
		((SECONDS < deadline)) || { kill -KILL "$pid" 2>/dev/null || true; die "the broker was not ready on 127.0.0.1:$port within ${START_TIMEOUT}s"; }
		sleep 0.5
	done
	echo "kafka.sh: Kafka (pid $pid) ready on 127.0.0.1:$port" >&2
}

stop() {
	local work=$1 pid deadline
	[[ -s $work/kafka.pid ]] || return 0
	pid=$(cat "$work/kafka.pid")
	kill -TERM "$pid" 2>/dev/null || { rm -f "$work/kafka.pid"; return 0; }
	deadline=$((SECONDS + 60))
	while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$work/kafka.pid"
}

case ${1:-} in
fetch) fetch ;;
start) [[ $# -eq 3 || $# -eq 4 ]] || die "usage: kafka.sh start WORKDIR PORT [CONTROLLER_PORT]"; start "$2" "$3" "${4:-}" ;;
stop) [[ $# -eq 2 ]] || die "usage: kafka.sh stop WORKDIR"; stop "$2" ;;
*) die "usage: kafka.sh fetch | start WORKDIR PORT [CONTROLLER_PORT] | stop WORKDIR" ;;
esac
