#!/usr/bin/env bash
# Runs the gregor CLI's scenarios against BOOTSTRAP (host:port, or a comma
# list of a cluster's brokers) and appends one result line per scenario to
# $COMPAT_RESULTS. The CLI is a client like any other: it must work against
# any Kafka-compatible cluster, so the same scenarios run against Gregor and
# against Apache Kafka. Exits non-zero only when the harness itself broke
# (missing arguments, CLI not built).
#
# Every CLI call is bounded by CALL_TIMEOUT seconds (default 60), so a stuck
# command fails its scenario instead of hanging the suite. Each scenario
# checks what the CLI prints against what it was given: record by record,
# per partition in order.
#
# By hand: COMPAT_CACHE defaults to ../.cache, COMPAT_WORK to a temp dir,
# COMPAT_PREFIX to cli<epoch seconds>, COMPAT_RESULTS to
# $COMPAT_WORK/results.tsv. CLI_SCENARIOS=name,name runs only those.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
bootstrap="${1:?usage: run.sh BOOTSTRAP}"
export COMPAT_CACHE="${COMPAT_CACHE:-$(cd "$here/.." && pwd)/.cache}"
export COMPAT_WORK="${COMPAT_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/compat-gregor-cli.XXXXXX")}"
export COMPAT_PREFIX="${COMPAT_PREFIX:-cli$(date +%s)}"
export COMPAT_RESULTS="${COMPAT_RESULTS:-$COMPAT_WORK/results.tsv}"
CALL_TIMEOUT="${CALL_TIMEOUT:-60}"

cli="$COMPAT_CACHE/gregor-cli/gregor"
if [[ ! -x "$cli" ]]; then
	echo "the gregor CLI is not built ($cli): run setup.sh first" >&2
	exit 2
fi
command -v python3 >/dev/null || { echo "python3 is needed to check the results" >&2; exit 2; }
version="$("$cli" version | awk '{print $2}')"
[[ -n "$version" ]] || { echo "gregor version printed nothing" >&2; exit 2; }

mkdir -p "$COMPAT_WORK"
log="$COMPAT_WORK/gregor-cli.log"
echo "gregor-cli suite: CLI $version, logs in $log, results to $COMPAT_RESULTS"

# g ARGS...: the CLI against the broker, bounded in time. stdout is the
# caller's; the command line and stderr go to the log.
g() {
	printf '+ gregor %s\n' "$*" >>"$log"
	timeout -k 5 "$CALL_TIMEOUT" "$cli" "$@" -b "$bootstrap" 2>>"$log"
}

# A scenario is a function sc_<name> (dashes as underscores) that prints its
# detail on its last line of stdout and returns 0 on success; fail prints the
# reason and returns 1, so a scenario ends with `fail ...; return`.
fail() { printf '%s\n' "$*"; return 1; }

# Record format for consume: partition, offset, key, value and the headers,
# separated by control characters that the data below never contains.
US=$'\x1f'
fmt='{{.Partition}}{{"\x1f"}}{{.Offset}}{{"\x1f"}}{{.Key}}{{"\x1f"}}{{.Value}}{{"\x1f"}}{{range .Headers}}{{.Key}}={{.Value}}{{"\x1e"}}{{end}}'

# records N: N keyed lines for produce --key-separator ':'. Seven keys,
# values with spaces, a tab, colons (the line splits at the first one),
# non-ASCII text, an empty value and an empty key.
records() {
	local i
	for ((i = 0; i < $1; i++)); do
		case $((i % 10)) in
		3) printf 'k%d:\n' $((i % 7)) ;;
		5) printf ':value %d with no key\n' "$i" ;;
		7) printf 'k%d:a:b:c %d\ttab ünï€ode\n' $((i % 7)) "$i" ;;
		*) printf 'k%d:value %d\n' $((i % 7)) "$i" ;;
		esac
	done
}

# check_consumed PRODUCED CONSUMED HEADERS: the consumed records (consume
# --format "$fmt") are exactly the produced lines: every key in one
# partition, each partition's records in produce order at dense offsets from
# 0, every record with HEADERS (k=v, comma-separated). Prints a summary.
check_consumed() {
	python3 - "$1" "$2" "$3" <<'EOF'
import sys
produced_path, consumed_path, headers = sys.argv[1:]
want_headers = [h for h in headers.split(",") if h]
produced = []
with open(produced_path, encoding="utf-8", newline="\n") as f:
    for line in f.read().split("\n")[:-1]:
        k, _, v = line.partition(":")
        produced.append((k, v))
got = {}
with open(consumed_path, encoding="utf-8", newline="\n") as f:
    lines = f.read().split("\n")
if lines and lines[-1] == "":
    lines.pop()
for n, line in enumerate(lines):
    fields = line.split("\x1f")
    if len(fields) != 5:
        sys.exit(f"consumed line {n + 1} has {len(fields)} fields, not 5: {line!r}")
    p, o, k, v, hs = fields
    hs = [h for h in hs.split("\x1e") if h]
    if hs != want_headers:
        sys.exit(f"partition {p} offset {o}: headers {hs}, want {want_headers}")
    got.setdefault(int(p), []).append((int(o), k, v))
if sum(map(len, got.values())) != len(produced):
    sys.exit(f"consumed {sum(map(len, got.values()))} records, produced {len(produced)}")
key_partition = {}
for p, recs in got.items():
    for o, k, v in recs:
        if key_partition.setdefault(k, p) != p:
            sys.exit(f"key {k!r} in partitions {key_partition[k]} and {p}")
for p, recs in sorted(got.items()):
    offsets = [o for o, _, _ in recs]
    if offsets != list(range(len(recs))):
        sys.exit(f"partition {p}: offsets {offsets[:10]}..., want 0..{len(recs) - 1}")
    want = [(k, v) for k, v in produced if key_partition[k] == p]
    have = [(k, v) for _, k, v in recs]
    if have != want:
        for i, (h, w) in enumerate(zip(have, want)):
            if h != w:
                sys.exit(f"partition {p} offset {i}: got {h!r}, want {w!r}")
        sys.exit(f"partition {p}: {len(have)} records, want {len(want)}")
print(f"{len(produced)} records in {len(got)} partitions, " + ",".join(f"p{p}={len(r)}" for p, r in sorted(got.items())))
EOF
}

# json_get EXPR: evaluates the Python expression EXPR over the JSON document
# on stdin (bound to d) and prints the result.
json_get() {
	python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}

sc_admin_topics() {
	local t="$COMPAT_PREFIX-admin-topics" out i
	g topic create "$t" -p 3 -c retention.ms=86400000 >/dev/null || { fail "topic create failed: $(tail -n 1 "$log")"; return; }
	g topic list | awk 'NR > 1 {print $1}' | grep -qxF "$t" || { fail "topic list does not show $t"; return; }
	out=$(g topic describe "$t") || { fail "topic describe failed: $(tail -n 1 "$log")"; return; }
	grep -q "Partitions: 3 " <<<"$out" || { fail "describe after create: no 'Partitions: 3': $(head -n 1 <<<"$out")"; return; }
	[[ $(awk '/^PARTITION /{t=1; next} t && /^[0-9]/' <<<"$out" | wc -l) == 3 ]] || { fail "describe after create: not 3 partition rows"; return; }
	grep -qE '^ +retention\.ms=86400000 ' <<<"$out" || { fail "describe after create does not show retention.ms=86400000"; return; }
	g topic add-partitions "$t" --count 2 >/dev/null || { fail "add-partitions failed: $(tail -n 1 "$log")"; return; }
	out=$(g topic describe "$t") || { fail "topic describe failed: $(tail -n 1 "$log")"; return; }
	[[ $(awk '/^PARTITION /{t=1; next} t && /^[0-9]/' <<<"$out" | wc -l) == 5 ]] || { fail "describe after add-partitions: not 5 partition rows"; return; }
	g topic alter-config "$t" --set cleanup.policy=compact --delete retention.ms >/dev/null || { fail "alter-config failed: $(tail -n 1 "$log")"; return; }
	out=$(g topic describe "$t" --json) || { fail "topic describe --json failed: $(tail -n 1 "$log")"; return; }
	local cfg
	cfg=$(json_get '",".join(sorted(c["name"] + "=" + c["value"] for c in d[0]["configs"] if c["source"] == "DYNAMIC_TOPIC_CONFIG"))' <<<"$out")
	[[ $cfg == "cleanup.policy=compact" ]] || { fail "topic configs after alter-config: '$cfg', want 'cleanup.policy=compact'"; return; }
	[[ $(json_get 'len(d[0]["partitions"])' <<<"$out") == 5 ]] || { fail "describe --json: not 5 partitions"; return; }
	g topic delete "$t" >/dev/null || { fail "topic delete failed: $(tail -n 1 "$log")"; return; }
	# Deletion may finish after the response (Kafka): wait up to 15 s.
	for ((i = 0; i < 30; i++)); do
		if ! g topic list | awk 'NR > 1 {print $1}' | grep -qxF "$t" && ! g topic describe "$t" >/dev/null; then
			echo "create -p 3 -c, list, describe, add-partitions 3->5, alter-config set+delete, delete"
			return 0
		fi
		sleep 0.5
	done
	fail "topic $t still listed or described 15 s after delete"
}

# produce_consume CODEC
produce_consume() {
	local codec=$1 t="$COMPAT_PREFIX-pc-$1" n=60 produced="$COMPAT_WORK/pc-$1.in" consumed="$COMPAT_WORK/pc-$1.out" res
	g topic create "$t" -p 3 >/dev/null || { fail "topic create failed: $(tail -n 1 "$log")"; return; }
	records "$n" >"$produced"
	g produce "$t" --key-separator : -H source=compat -H empty= -H eq=a=b --acks all --compression "$codec" <"$produced" >/dev/null ||
		{ fail "produce failed: $(tail -n 1 "$log")"; return; }
	g consume "$t" --offset start -n "$n" --timeout 20s --format "$fmt" >"$consumed" ||
		{ fail "consume failed: $(tail -n 1 "$log")"; return; }
	res=$(check_consumed "$produced" "$consumed" "source=compat,empty=,eq=a=b" 2>&1) || { fail "$res"; return; }
	echo "$res, $codec"
}
sc_produce_consume_none() { produce_consume none; }
sc_produce_consume_zstd() { produce_consume zstd; }

sc_group_commit_resume() {
	local t="$COMPAT_PREFIX-gcr" grp="$COMPAT_PREFIX-gcr-group" n=200 k=75 produced="$COMPAT_WORK/gcr.in" res
	g topic create "$t" -p 3 >/dev/null || { fail "topic create failed: $(tail -n 1 "$log")"; return; }
	records "$n" >"$produced"
	g produce "$t" --key-separator : -H source=compat <"$produced" >/dev/null || { fail "produce failed: $(tail -n 1 "$log")"; return; }
	g consume "$t" --group "$grp" --offset start -n "$k" --timeout 20s --format "$fmt" >"$COMPAT_WORK/gcr.1" ||
		{ fail "first consume failed: $(tail -n 1 "$log")"; return; }
	[[ $(wc -l <"$COMPAT_WORK/gcr.1") == "$k" ]] || { fail "first consume -n $k printed $(wc -l <"$COMPAT_WORK/gcr.1") records"; return; }
	# The next members start where the group left off, with consume's
	# default --offset (end) for partitions without a commit: every
	# partition the first member was assigned must have been committed.
	g consume "$t" --group "$grp" -n $((n - k)) --timeout 20s --format "$fmt" >"$COMPAT_WORK/gcr.2" ||
		{ fail "second consume failed: $(tail -n 1 "$log")"; return; }
	# Nothing may be left for a third member.
	g consume "$t" --group "$grp" --timeout 3s --format "$fmt" >"$COMPAT_WORK/gcr.3" ||
		{ fail "third consume failed: $(tail -n 1 "$log")"; return; }
	[[ ! -s $COMPAT_WORK/gcr.3 ]] || { fail "a third member read $(wc -l <"$COMPAT_WORK/gcr.3") records again, first: $(head -n 1 "$COMPAT_WORK/gcr.3" | tr '\037\036' '|;')"; return; }
	sort -t "$US" -k1,1n -k2,2n "$COMPAT_WORK/gcr.1" "$COMPAT_WORK/gcr.2" >"$COMPAT_WORK/gcr.all"
	res=$(check_consumed "$produced" "$COMPAT_WORK/gcr.all" "source=compat" 2>&1) || { fail "first $k + second $((n - k)) records: $res"; return; }
	echo "$k then $((n - k)) of $n records, none again; $res"
}

# total_lag GROUP: the "Total lag: N" of group describe.
total_lag() {
	g group describe "$1" | sed -n 's/^Total lag: \([0-9-]*\)$/\1/p'
}

sc_admin_groups() {
	local t="$COMPAT_PREFIX-ag" grp="$COMPAT_PREFIX-ag-group" n=25 out lag i
	g topic create "$t" -p 3 >/dev/null || { fail "topic create failed: $(tail -n 1 "$log")"; return; }
	records "$n" | g produce "$t" --key-separator : >/dev/null || { fail "produce failed: $(tail -n 1 "$log")"; return; }
	g consume "$t" --group "$grp" --offset start -n "$n" --timeout 20s >/dev/null || { fail "consume failed: $(tail -n 1 "$log")"; return; }
	out=$(g group list) || { fail "group list failed: $(tail -n 1 "$log")"; return; }
	awk 'NR > 1 {print $1}' <<<"$out" | grep -qxF "$grp" || { fail "group list does not show $grp"; return; }
	out=$(g group describe "$grp") || { fail "group describe failed: $(tail -n 1 "$log")"; return; }
	lag=$(sed -n 's/^Total lag: \([0-9-]*\)$/\1/p' <<<"$out")
	[[ $lag == 0 ]] || { fail "lag after reading all $n records: '$lag', want 0"; return; }
	[[ $(awk -v t="$t" '$1 == t' <<<"$out" | wc -l) == 3 ]] || { fail "group describe does not show the 3 partitions of $t"; return; }
	g group reset-offsets "$grp" --topic "$t" --to-earliest --execute >/dev/null || { fail "reset-offsets failed: $(tail -n 1 "$log")"; return; }
	lag=$(total_lag "$grp")
	[[ $lag == "$n" ]] || { fail "lag after reset-offsets --to-earliest: '$lag', want $n"; return; }
	g group delete "$grp" >/dev/null || { fail "group delete failed: $(tail -n 1 "$log")"; return; }
	for ((i = 0; i < 20; i++)); do
		if ! g group list | awk 'NR > 1 {print $1}' | grep -qxF "$grp"; then
			echo "list, describe lag 0 after $n records, reset --to-earliest lag $n, delete"
			return 0
		fi
		sleep 0.5
	done
	fail "group $grp still listed 10 s after delete"
}

# sc_cluster_info: the brokers cluster info lists are those of the bootstrap
# list, one broker or every broker of a cluster.
sc_cluster_info() {
	local out rows want got
	want=$(tr ',' '\n' <<<"$bootstrap" | sed 's/.*://' | sort -n | paste -sd ' ' -)
	out=$(g cluster info) || { fail "cluster info failed: $(tail -n 1 "$log")"; return; }
	rows=$(awk '/^BROKER /{t=1; next} t && NF' <<<"$out")
	got=$(awk '{sub(/.*:/, "", $2); print $2}' <<<"$rows" | sort -n | paste -sd ' ' -)
	[[ $got == "$want" ]] || { fail "cluster info lists brokers on ports '$got', want '$want': $(tr '\n' ';' <<<"$rows")"; return; }
	grep -q '^Cluster ID: .' <<<"$out" || { fail "no cluster id"; return; }
	out=$(g cluster info --json) || { fail "cluster info --json failed: $(tail -n 1 "$log")"; return; }
	got=$(json_get '" ".join(str(p) for p in sorted(b["port"] for b in d["brokers"]))' <<<"$out") || got="unreadable"
	[[ $got == "$want" ]] || { fail "cluster info --json brokers: $(tr -d '\n ' <<<"$out")"; return; }
	local n
	n=$(wc -l <<<"$rows")
	echo "$n broker$( ((n == 1)) || echo s) at $(awk '{print $2}' <<<"$rows" | paste -sd ' ' -)"
}

sc_bench() {
	local out recs errs
	out=$(g bench produce --topic "$COMPAT_PREFIX-bench" --partitions 1 --duration 2s --rate 50 --record-size 64 --progress 0 --json) ||
		{ fail "bench produce failed: $(tail -n 1 "$log")"; return; }
	if ! recs=$(json_get 'd["produce"]["records"]' <<<"$out") || ! errs=$(json_get 'd["produce"]["errors"]' <<<"$out"); then
		fail "bench produce --json: unexpected output: $(head -c 200 <<<"$out" | tr '\n' ' ')"
		return
	fi
	((recs > 0 && errs == 0)) || { fail "bench produce: $recs records, $errs errors"; return; }
	# bench consume --drain reads back exactly what bench produce wrote.
	local got cerrs
	out=$(g bench consume --topic "$COMPAT_PREFIX-bench" --offset start --drain --duration 30s --progress 0 --json) ||
		{ fail "bench consume failed: $(tail -n 1 "$log")"; return; }
	if ! got=$(json_get 'd["consume"]["records"]' <<<"$out") || ! cerrs=$(json_get 'd["consume"]["errors"]' <<<"$out"); then
		fail "bench consume --json: unexpected output: $(head -c 200 <<<"$out" | tr '\n' ' ')"
		return
	fi
	((got == recs && cerrs == 0)) || { fail "bench consume --drain read $got records ($cerrs errors), bench produce wrote $recs"; return; }
	# bench e2e produces and consumes at once: every record produced is
	# consumed, with an end-to-end latency.
	local eprod econs
	out=$(g bench e2e --topic "$COMPAT_PREFIX-bench-e2e" --partitions 1 --duration 2s --rate 50 --record-size 64 --progress 0 --json) ||
		{ fail "bench e2e failed: $(tail -n 1 "$log")"; return; }
	if ! eprod=$(json_get 'd["produce"]["records"] if d["produce"]["errors"] == 0 else -1' <<<"$out") ||
		! econs=$(json_get 'd["consume"]["records"] if d["consume"]["errors"] == 0 and d["consume"]["latency_ms"]["max"] > 0 else -1' <<<"$out"); then
		fail "bench e2e --json: unexpected output: $(head -c 200 <<<"$out" | tr '\n' ' ')"
		return
	fi
	((eprod > 0 && econs == eprod)) || { fail "bench e2e: produced $eprod, consumed $econs (-1: errors or no latency)"; return; }
	echo "bench produce 2s at 50/s: $recs records, 0 errors; bench consume --drain read $got; bench e2e $eprod produced and consumed"
}

scenarios=(admin-topics produce-consume-none produce-consume-zstd group-commit-resume admin-groups cluster-info bench)
if [[ -n ${CLI_SCENARIOS:-} ]]; then
	IFS=, read -r -a scenarios <<<"$CLI_SCENARIOS"
fi

for s in "${scenarios[@]}"; do
	echo "== $s" >>"$log"
	start=$(date +%s.%N)
	if out=$("sc_${s//-/_}"); then status=pass; else status=fail; fi
	secs=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
	detail=$(tail -n 1 <<<"$out" | tr '\t\r' '  ')
	[[ -n $detail ]] || detail="no detail"
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' gregor-cli "$version" "$s" "$status" "$secs" "$detail" | tee -a "$COMPAT_RESULTS"
done
