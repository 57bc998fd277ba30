#!/usr/bin/env bash
# Checks the Grafana dashboard and the alert rules against live metrics
# (`make dashboard-check`): starts three Gregor brokers (etcd embedded in
# each) on free ports, puts a small load on them (a topic of 6 partitions
# with 3 replicas, a producer at 2,000 records/s and a consumer group),
# starts Prometheus (Debian's package) scraping the three admin servers
# every second with deploy/prometheus/alerts.yml loaded, then runs every
# query of deploy/grafana/gregor-dashboard.json and every alert expression
# (and the series under it) through the Prometheus HTTP API with
# deploy/prometheus/check_queries.py, which prints a table and fails when
# one returns no data.
#
# Usage: deploy/check-dashboard.sh [BIN]   (BIN default: bin/gregor)
# Needs python3, and prometheus and promtool, which it installs with
# apt-get when run as root and they are missing. KEEP_WORK=1 keeps the
# work dir (brokers' and Prometheus' data and logs); it is kept on failure.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(realpath "${1:-$root/bin/gregor}")
[[ -x $bin ]] || { echo "check-dashboard: $bin not found; run make build" >&2; exit 1; }
say() { echo "check-dashboard: $*" >&2; }

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		say "installing prometheus (apt-get install -y prometheus)"
		export DEBIAN_FRONTEND=noninteractive
		timeout 600 apt-get install -y -qq --no-install-recommends prometheus >/tmp/check-dashboard-apt.log 2>&1 ||
			{ timeout 600 apt-get update -qq >>/tmp/check-dashboard-apt.log 2>&1 &&
				timeout 600 apt-get install -y -qq --no-install-recommends prometheus >>/tmp/check-dashboard-apt.log 2>&1; } ||
			{ say "apt-get install prometheus failed (see /tmp/check-dashboard-apt.log)"; exit 1; }
	else
		say "prometheus and promtool are needed (apt-get install prometheus, as root)"
		exit 1
	fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/check-dashboard.XXXXXX")
pids=()
ok=0
cleanup() {
	# Only the processes this script started, by their ids.
	if ((${#pids[@]})); then
		kill -TERM "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	fi
	if ((ok)) && [[ -z ${KEEP_WORK:-} ]]; then
		rm -rf "$work"
	else
		say "work dir kept: $work"
	fi
}
trap cleanup EXIT

# 13 free ports: per broker Kafka, admin, etcd client and peer; Prometheus.
mapfile -t ports < <(python3 - <<'EOF'
import socket
socks = []
for _ in range(13):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
EOF
)
kafka=("${ports[@]:0:3}") admin=("${ports[@]:3:3}") eclient=("${ports[@]:6:3}") epeer=("${ports[@]:9:3}")
prom_port=${ports[12]}

initial=""
bootstrap=""
for i in 0 1 2; do
	initial+="${initial:+,}gregor-$((i + 1))=http://127.0.0.1:${epeer[i]}"
	bootstrap+="${bootstrap:+,}127.0.0.1:${kafka[i]}"
done
for i in 0 1 2; do
	n=$((i + 1))
	mkdir -p "$work/broker-$n"
	setsid "$bin" serve \
		--node.id "$n" \
		--log.dirs "$work/broker-$n/data" \
		--listeners "PLAINTEXT://127.0.0.1:${kafka[i]}" \
		--admin.listener "127.0.0.1:${admin[i]}" \
		--etcd.client.addr "127.0.0.1:${eclient[i]}" \
		--etcd.peer.addr "127.0.0.1:${epeer[i]}" \
		--etcd.initial.cluster "$initial" \
		--offsets.topic.num.partitions 6 \
		--group.initial.rebalance.delay.ms 0 \
		>"$work/broker-$n/log" 2>&1 &
	pids+=($!)
done
say "brokers on $bootstrap, admin on ${admin[*]}; work dir $work"

deadline=$((SECONDS + 90))
for i in 0 1 2; do
	until "$bin" health --url "http://127.0.0.1:${admin[i]}/readyz" --timeout 2s >/dev/null 2>&1; do
		((SECONDS < deadline)) || { say "broker $((i + 1)) not ready after 90 s; its log: $work/broker-$((i + 1))/log"; tail -n 20 "$work/broker-$((i + 1))/log" >&2; exit 1; }
		sleep 0.5
	done
done

rules=$work/alerts.yml
cp "$root/deploy/prometheus/alerts.yml" "$rules"
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $rules
scrape_configs:
  - job_name: gregor
    static_configs:
      - targets: ['127.0.0.1:${admin[0]}', '127.0.0.1:${admin[1]}', '127.0.0.1:${admin[2]}']
EOF
promtool check config "$work/prometheus.yml" >/dev/null
prometheus --config.file "$work/prometheus.yml" --storage.tsdb.path "$work/prometheus" \
	--web.listen-address "127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
prom=http://127.0.0.1:$prom_port
say "prometheus on $prom"

# The load: a replicated topic, a producer for 25 s, and a consumer group
# that reads part of what was produced and commits (consumer lag metrics).
export GREGOR_BOOTSTRAP_SERVER=$bootstrap
"$bin" topic create dashboard-load -p 6 -r 3 >"$work/load.log" 2>&1
"$bin" bench produce --topic dashboard-load --rate 2000 --record-size 256 --duration 25s --progress 0 >>"$work/load.log" 2>&1 &
producer=$!
pids+=("$producer")
sleep 5
"$bin" consume dashboard-load --group dashboard-check --offset start -n 2000 --format '' >>"$work/load.log" 2>&1
wait "$producer" || { say "the producer failed; its output: $work/load.log"; tail -n 20 "$work/load.log" >&2; exit 1; }

# Every target up, then a few more scrapes after the load.
until [[ $(curl -fsS "$prom/api/v1/query?query=count(up%3D%3D1)" 2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)' 2>/dev/null) == 3 ]]; do
	((SECONDS < deadline + 60)) || { say "prometheus does not see the three brokers up; its log: $work/prometheus.log"; exit 1; }
	sleep 1
done
sleep 5

python3 "$root/deploy/prometheus/check_queries.py" "$prom" "$root/deploy/grafana/gregor-dashboard.json" "$root/deploy/prometheus/alerts.yml"
ok=1
