#!/usr/bin/env python3
"""Records and reports the Gregor vs Kafka benchmark (stdlib only).

    report.py record --file F.jsonl --kind KIND --output OUT --rc N --set k=v ...
        parse one load generator's output and append one record to F.jsonl
    report.py last --file F.jsonl --field NAME      the field of F's last record
    report.py merge --into F.jsonl --new N.jsonl --modes "M ..." --tools "T ..."
        replace F's records of those modes and tools by N's, keep the rest
    report.py w3rate [--tool T]  half of Kafka's W2 default-mode median records/s
                            measured with load generator T (default gregor-bench)
    report.py w1bytes       the median bytes of Gregor's W1 produce runs
    report.py render        results/*.jsonl -> RESULTS.md

KIND names the output's format: gregor-bench (gregor bench --json),
kafka-share-perf (ShareConsumerPerformance's CSV),
kafka-producer-perf (ProducerPerformance's final line), kafka-consumer-perf
(ConsumerPerformance's CSV), kafka-e2e (EndToEndLatency), tcpfile (the
probe's JSON), none (only the --set fields).

A record is one flat JSON object. Rates are in MiB/s (2^20 bytes, as both
generators count) and records/s; latencies in ms: lat_* for produce
acknowledgements, e2e_* from send to receipt by a consumer.
"""
import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
# Runs shorter than this (seconds per measured phase) mark RESULTS.md as a
# smoke run.
SMOKE_SECONDS = 10

MODES = {
    ("gregor", "durable"): "fsync before ack: log.flush.interval.messages=1, Gregor's default (group commit: concurrent appends share an fsync); "
                           "W6: every replica in the ISR has fsynced before acks=all is answered",
    ("gregor", "pagecache"): "page cache: ack once written to the OS, no fsync (log.flush.interval.messages=9223372036854775807, as Kafka's default)",
    ("kafka", "default"): "page cache: ack once written to the OS, flushing left to the OS (Kafka's default; W1-W5 run a single node, so no replica "
                          "holds a copy either; in W6 every replica in the ISR has it in its page cache)",
    ("kafka", "flush1"): "fsync before ack: topic config flush.messages=1 (the log is flushed in the append path, before the produce response; "
                         "W6: on the followers too, before they fetch on)",
}


def num(v):
    if v in ("", None):
        return None
    try:
        f = float(v)
    except ValueError:
        return v
    return int(f) if f.is_integer() and "." not in str(v) else f


def parse(kind, text):
    r = {}
    if kind in ("gregor-bench", "tcpfile"):
        start = text.find("{")
        if start < 0:
            raise ValueError("no JSON in the output")
        j = json.loads(text[start:])
        if kind == "tcpfile":
            return {"bytes": j["bytes"], "seconds": j["seconds"], "mib_s": j["mib_per_sec"],
                    "records_s": j["records_per_sec"], "records": j["bytes"] // 1024}
        side = j.get("produce") or j.get("consume")
        r.update(seconds=j.get("seconds"), records=side["records"], bytes=side["bytes"],
                 errors=side["errors"], records_s=side["records_per_sec"], mib_s=side["mib_per_sec"])
        lat = (j.get("produce") or {}).get("latency_ms")
        if lat:
            r.update(lat_mean=lat["mean"], lat_p50=lat["p50"], lat_p99=lat["p99"],
                     lat_p999=lat["p99_9"], lat_max=lat["max"])
        if j.get("mode") == "e2e":
            c = j["consume"]
            r.update(consumed=c["records"], consume_errors=c["errors"])
            lat = c.get("latency_ms")
            if lat:
                r.update(e2e_mean=lat["mean"], e2e_p50=lat["p50"], e2e_p99=lat["p99"],
                         e2e_p999=lat["p99_9"], e2e_max=lat["max"])
        t = j.get("transactions")
        if t:
            r.update(txn_records=t["records_per_transaction"], txn_committed=t["committed"], txn_failed=t["failed"],
                     txn_s=t["committed"] / j["seconds"] if j.get("seconds") else None)
            lat = t.get("commit_latency")
            if lat:
                r.update(commit_p50=lat["p50"], commit_p99=lat["p99"])
            if t["failed"]:
                r["error"] = f"{t['failed']} transactions failed"
        if r["errors"]:
            r["error"] = f"{r['errors']} errors"
        return r
    if kind == "kafka-producer-perf":
        m = re.search(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                      r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th", text)
        if not m:
            raise ValueError("no final summary line")
        n, rps, mbs, avg, mx, p50, p95, p99, p999 = m.groups()
        return dict(records=int(n), records_s=float(rps), mib_s=float(mbs), lat_mean=float(avg),
                    lat_max=float(mx), lat_p50=float(p50), lat_p95=float(p95), lat_p99=float(p99),
                    lat_p999=float(p999), seconds=int(n) / float(rps) if float(rps) else None)
    if kind == "kafka-consumer-perf":
        lines = [ln for ln in text.splitlines() if ln.count(",") >= 9]
        head = next((ln for ln in lines if ln.startswith("start.time")), None)
        data = [ln for ln in lines if not ln.startswith("start.time")]
        if not head or not data:
            raise ValueError("no CSV result line")
        row = dict(zip([h.strip() for h in head.split(",")], [v.strip() for v in data[-1].split(",")]))
        return dict(records=int(row["data.consumed.in.nMsg"]), mib_s=float(row["fetch.MB.sec"]),
                    records_s=float(row["fetch.nMsg.sec"]), seconds=float(row["fetch.time.ms"]) / 1000,
                    rebalance_ms=float(row["rebalance.time.ms"]))
    if kind == "kafka-share-perf":
        # ShareConsumerPerformance: a header line and a result line, CSV.
        lines = [ln for ln in text.splitlines() if ln.count(",") >= 6]
        head = next((ln for ln in lines if ln.startswith("start.time")), None)
        data = [ln for ln in lines if not ln.startswith("start.time")]
        if not head or not data:
            raise ValueError("no CSV result line")
        row = dict(zip([h.strip() for h in head.split(",")], [v.strip() for v in data[-1].split(",")]))
        n = int(row["data.consumed.in.nMsg"])
        return dict(records=n, mib_s=float(row["MB.sec"]), records_s=float(row["nMsg.sec"]),
                    seconds=n / float(row["nMsg.sec"]) if float(row["nMsg.sec"]) else None,
                    bytes=int(float(row["data.consumed.in.MB"]) * 2**20))
    if kind == "kafka-e2e":
        a = re.search(r"Avg latency: ([\d.]+) ms", text)
        p = re.search(r"Percentiles: 50th = (\d+), 99th = (\d+), 99\.9th = (\d+)", text)
        if not a or not p:
            raise ValueError("no latency lines")
        return dict(e2e_mean=float(a.group(1)), e2e_p50=float(p.group(1)), e2e_p99=float(p.group(2)),
                    e2e_p999=float(p.group(3)))
    if kind == "none":
        return {}
    raise ValueError(f"unknown kind {kind}")


def cmd_record(a):
    rec = {}
    for kv in a.set or []:
        k, _, v = kv.partition("=")
        rec[k] = num(v)
    text = ""
    if a.output:
        with open(a.output, errors="replace") as f:
            text = f.read()
    try:
        rec.update(parse(a.kind, text))
    except (ValueError, KeyError, TypeError, json.JSONDecodeError) as e:
        errtext = ""
        if a.output and os.path.exists(a.output + ".err"):
            with open(a.output + ".err", errors="replace") as f:
                errtext = f.read()
        tail = " ".join((text + errtext).strip().splitlines()[-3:])[:300]
        rec["error"] = f"{a.kind}: {e}; exit {a.rc}; {tail}"
    if a.rc and "error" not in rec:
        rec["error"] = rec.get("error") or f"exit status {a.rc}"
    with open(a.file, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")


def load(path):
    out = []
    for p in sorted(glob.glob(path)):
        with open(p) as f:
            out += [json.loads(ln) for ln in f if ln.strip()]
    return out


def cmd_last(a):
    recs = load(a.file)
    v = recs[-1].get(a.field) if recs else None
    if v is not None:
        print(int(v) if isinstance(v, float) and a.field in ("records", "records_s") else v)


def median(recs, field):
    vals = [r[field] for r in recs if isinstance(r.get(field), (int, float)) and "error" not in r]
    return statistics.median(vals) if vals else None


def select(recs, **kw):
    return [r for r in recs if all(r.get(k) == v for k, v in kw.items())]


def cmd_w3rate(a):
    recs = select(load(os.path.join(RESULTS, "W2-kafka.jsonl")), mode="default", phase="produce", tool=a.tool)
    m = median(recs, "records_s")
    if m:
        print(int(m / 2))


def cmd_w1bytes(_):
    recs = select(load(os.path.join(RESULTS, "W1-gregor.jsonl")), phase="produce")
    m = median(recs, "bytes") or (median(recs, "records") or 0) * 1024
    if m:
        print(int(m))


# ---- rendering -------------------------------------------------------------

def fmt(v, digits=1):
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.{digits}f}"
    return f"{v:.{digits + 1}f}" if abs(v) >= 0.1 or v == 0 else f"{v:.3f}"


def mib(kib):
    return kib / 1024 if isinstance(kib, (int, float)) else None


COLS = [  # header, field, transform
    ("MiB/s", "mib_s", None), ("records/s", "records_s", None),
    ("ack p50", "lat_p50", None), ("ack p99", "lat_p99", None), ("ack p99.9", "lat_p999", None), ("ack max", "lat_max", None),
    ("e2e p50", "e2e_p50", None), ("e2e p99", "e2e_p99", None), ("e2e p99.9", "e2e_p999", None), ("e2e max", "e2e_max", None),
    ("commits/s", "txn_s", None), ("commit p50", "commit_p50", None), ("commit p99", "commit_p99", None),
    ("broker CPU s", "cpu_s", None), ("CPU s/GiB", "cpu_per_gib", None),
    ("peak RSS MiB (sampled)", "rss_peak_kib", mib), ("VmHWM MiB", "vmhwm_kib", mib),
]

TOOL_NAMES = {"gregor-bench": "gregor bench", "kafka-perf": "Kafka perf tools", "tcpfile": "tcpfile"}


def wkey(r):
    """The workload a record is grouped under: its name, with -ssl (say)
    for a run over a security protocol other than plaintext, so that the
    TLS runs never mix with the plaintext ones."""
    sec = r.get("security") or "plaintext"
    if r.get("baseline") == "tls":
        # BENCH_TLS_BASELINE: plaintext runs taken as the TLS section's
        # baseline, outside the workload tables.
        return f"{r.get('workload')}-tlsbase"
    return r.get("workload") if sec == "plaintext" else f"{r.get('workload')}-{sec}"


def groups(recs):
    g = {}
    for r in recs:
        key = (wkey(r), r.get("phase"), r.get("target"), r.get("mode"), r.get("tool"))
        g.setdefault(key, []).append(r)
    return g


def enrich(recs):
    for r in recs:
        if isinstance(r.get("cpu_s"), (int, float)) and r.get("bytes"):
            r["cpu_per_gib"] = r["cpu_s"] / (r["bytes"] / 2**30)
        elif isinstance(r.get("cpu_s"), (int, float)) and r.get("records") and r.get("record_size"):
            r["cpu_per_gib"] = r["cpu_s"] / (r["records"] * r["record_size"] / 2**30)
    return recs


def table(rows_in, cols, extra=()):
    present = [c for c in cols if any(median(rs, c[1]) is not None for _, rs in rows_in)]
    head = ["broker", "mode", "tool", "phase", "runs"] + [h for h, _, _ in present] + [h for h, _ in extra]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (w, ph, t, m, tool), rs in rows_in:
        ok = [r for r in rs if "error" not in r]
        cells = [t, m, TOOL_NAMES.get(tool, tool), ph, f"{len(ok)}" + (f" (+{len(rs) - len(ok)} failed)" if len(ok) < len(rs) else "")]
        for _, f, tr in present:
            v = median(rs, f)
            cells.append(fmt(tr(v) if tr and v is not None else v))
        for _, fn in extra:
            cells.append(fn(rs))
        out.append("| " + " | ".join(cells) + " |")
    return out


WORKLOAD_TEXT = {
    "W1": "1 topic, 1 partition, 1 KiB records, acks=1, as fast as possible; then the records written are read back (consume).",
    "W2": "1 topic, 16 partitions, 1 KiB records, acks=all, as fast as possible.",
    "W3": "100 partitions, 1 KiB records, acks=all, at a fixed rate of half of Kafka's W2 default-mode median measured with the same load generator (each broker gets the same load from a tool): produce (ack) latency and end-to-end latency.",
    "W4": "16 partitions, 100-byte records, acks=all, as fast as possible: records per second.",
    "W5": "1 topic with 10,000 partitions, 1 KiB records, acks=all: a low-rate phase, then as fast as possible, then a clean restart timed from exec to ready.",
    "W7": "Transactional produce: 1 topic, 16 partitions, 1 KiB records, one gregor bench producer committing a transaction every "
          "100 records (phase produce-txn100) or every 10,000 (produce-txn10000), as fast as it can; commits/s and the commit latency "
          "(from the moment a transaction's records are all acknowledged to the end of its EndTxn) beside the usual figures. Only "
          "gregor bench: Kafka's ProducerPerformance ends transactions by time (--transaction-duration-ms), not by record count.",
    "W8": "Share groups (queues, KIP-932): 200,000 records of 1 KiB on a topic of 1 partition (loaded unmeasured with "
          "ProducerPerformance first), read by a share group of 8 consumers, every record acknowledged (accepted) on its own; the group "
          "starts at the earliest record (share.auto.offset.reset, a group config). gregor bench: `gregor bench share` (franz-go share "
          "consumers, 500 records per fetch); Kafka perf tools: `ShareConsumerPerformance --threads 8` (implicit acknowledgement: each "
          "record accepted at the next poll). Gregor writes the share state to `__share_group_state` acks=all with its durability mode; "
          "records/s are accepted records over the phase.",
    "W6": "Three brokers of each on this machine (three `gregor serve` processes with embedded etcd; a three-node Kafka KRaft cluster, "
          "combined broker+controller nodes): 1 topic, 16 partitions, replication factor 3, min.insync.replicas=2, 1 KiB records, acks=all, "
          "as fast as possible. An acknowledgement waits for every replica in the ISR; in Gregor's `durable` mode and Kafka's `flush1` "
          "every replica fsyncs the records before the leader counts them as replicated (Kafka's followers flush in their append path "
          "with flush.messages=1 as the leader does). Broker CPU seconds, CPU s/GiB (per GiB produced, each written by three "
          "replicas), peak RSS and VmHWM are **sums over the three broker processes** (Kafka: the three JVMs). The three brokers "
          "of a cluster and the load generator share the machine's 2 CPUs (Gregor's three and Kafka's three never run at the same "
          "time), beside other engineers' jobs: the figures say more about what a replicated byte costs each broker than about "
          "the speed of a real three-machine cluster. W6 may come from another session, even another machine, than W1-W5 "
          "(see Machine and settings): compare its rows with each other rather than with W2's. Its 5 s warm-up loads "
          "`bench-warmup`, created by the load on each cluster with one replica (both clusters' default.replication.factor).",
}


def size_text(v):
    """A byte count from a record, in MiB where it is a whole number of them."""
    if v is None:
        return "unknown"
    n = int(v)
    return f"{n >> 20} MiB" if n > 0 and n % (1 << 20) == 0 else str(n)


def render():
    recs = enrich(load(os.path.join(RESULTS, "*.jsonl")))
    envs = []
    for p in sorted(glob.glob(os.path.join(RESULTS, "env-*.json"))):
        with open(p) as f:
            envs.append(json.load(f))
    g = groups(recs)
    runs = [len([r for r in rs if "error" not in r]) for rs in g.values()]
    durs = {r.get("duration_s") for r in recs if r.get("duration_s")}
    smoke = not runs or min(runs) < 3 or any(d < SMOKE_SECONDS for d in durs)
    L = ["# Gregor vs Apache Kafka 4.4.0: side-by-side benchmark", ""]
    if smoke:
        L += ["> **SMOKE RUN: not a measurement.** Some results have fewer than 3 runs or runs shorter than %d s," % SMOKE_SECONDS,
              "> taken to check that every workload works end to end (possibly on a busy machine). Run `make bench`",
              "> on a quiet machine for real figures.", ""]
    L += ["Generated by `compat-tests/bench/report.py` from the raw per-run records in `results/` (`make bench`",
          "runs `compat-tests/bench/run.sh`). Each figure is the **median** over runs; each run had a fresh broker with",
          "a fresh data dir, one broker at a time (W6: one three-broker cluster at a time, its three brokers and the load",
          "generator sharing the machine's CPUs), on loopback, and got 5 s of unmeasured full-speed `gregor bench produce`",
          "load right before the measured phase (W1-W4 on a topic of their own, W5 on its topic after the low-rate phase),",
          "so that a JVM broker has compiled its hot paths.",
          "Rates in MiB/s (2^20 bytes) and records/s; latencies",
          "in ms. \"ack\" latency: produce send to acknowledgement; \"e2e\": send to receipt by a consumer.", ""]
    if envs:
        L += ["Machine and settings:", ""]
        for e in envs:
            # Sessions before env records named their workloads ran make bench's default set.
            sec = "" if e.get("security", "plaintext") == "plaintext" else f" over {e['security'].upper()}"
            if e.get("tls_baseline"):
                sec = " over PLAINTEXT, the TLS section's baseline"
            L.append(f"- {e.get('workloads') or 'W1 W2 W3 W4 W5'}{sec}: {e.get('nproc')} CPUs ({e.get('cpu')}), {e.get('mem_kib', 0) // 1048576} GiB RAM, Linux {e.get('kernel')}, "
                     f"data on {e.get('fs')}; {e.get('go')}, {e.get('java')}; Gregor {e.get('gregor_commit')}; "
                     f"Kafka heap -Xms/-Xmx {e.get('kafka_heap')}"
                     + (f" (W6: {e['kafka_cluster_heap']} per JVM)" if "W6" in str(e.get("workloads", "")) else "")
                     + f"; last session {e.get('session')}: {e.get('runs')} run(s) of "
                     f"{e.get('duration_s')} s, load average at start {e.get('loadavg_start')}.")
        # The values each Gregor broker resolved at start and why (its log),
        # as run.sh recorded them with every run; sessions before it did
        # left only whether free pages are reported, in the env record.
        gregor = [r for r in recs if r.get("target") == "gregor" and "pagecache_keep_bytes" in r]
        seen = sorted({(int(r["pagecache_keep_bytes"]), int(r.get("prefault_bytes", -1))) for r in gregor})
        reporting = {str(r["free_page_reporting"]).lower() for r in gregor if "free_page_reporting" in r} or \
            {str(e["free_page_reporting"]).lower() for e in envs if "free_page_reporting" in e}
        for rep in sorted(reporting):
            L.append("- The kernel " + ("reports free pages to the hypervisor (virtio balloon)" if rep == "true"
                                        else "does not report free pages to a hypervisor")
                     + "; Gregor's page-cache defaults follow from that. Kafka's page cache is the kernel's.")
        for keep, prefault in seen:
            L.append(f"- Gregor ran with `log.pagecache.keep.bytes` {size_text(keep)} and `log.prefault.bytes` "
                     f"{size_text(prefault)}, as it logged them at start"
                     + (f" (its page cache held to the newest {size_text(keep)} appended)." if int(keep) > 0 else "."))
        L.append("")
    L += ["## What an acknowledgement means", "", "| broker | mode | acknowledged when |", "|---|---|---|"]
    for (t, m), text in MODES.items():
        L.append(f"| {t} | {m} | {text} |")
    L += ["", "Equal durability pairs: Gregor `durable` with Kafka `flush1`, Gregor `pagecache` with Kafka `default`.", "",
          "## Load generators", "",
          "- **gregor bench** (`gregor bench produce|consume|e2e`, franz-go): one producer client, `--batch-max-bytes 1048576 --linger 5ms`, no compression, no keys.",
          "- **Kafka perf tools** (kafka-tools 4.4.0, Java 17, -Xmx512M as Kafka's scripts): `ProducerPerformance` with `batch.size=1048576 linger.ms=5 buffer.memory=134217728` and the workload's acks "
          "(run for the number of records the previous run of that workload and mode produced in the same time, so it lasts about as long); "
          "`ConsumerPerformance` (fetch figures, without the group join); `EndToEndLatency` (one record at a time, linger 0, integer ms, no max), run during W3's `ProducerPerformance` load on a second topic with the same partitions "
          "(with its default 10,000 records its p99.9 is the tenth slowest; W3's load lasts long enough for all of them, a run where it does not counts as failed).",
          "- Broker CPU seconds: utime+stime of the broker process over the phase (/proc/PID/stat); peak RSS: VmRSS sampled every 250 ms during the phase; VmHWM: the broker process's lifetime peak at the end of the phase (it includes start-up and topic creation).",
          ""]
    for w in ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"):
        rows = sorted(((k, v) for k, v in g.items() if k[0] == w and k[1] not in ("startup", "start")),
                      key=lambda kv: (kv[0][1] != "produce", kv[0][1], kv[0][2] != "gregor", kv[0][3], kv[0][4]))
        if not rows:
            continue
        L += [f"## {w}", "", WORKLOAD_TEXT[w], ""]
        sample = rows[0][1][0]
        rates = {}
        for _, rs in rows:
            for r in rs:
                if r.get("rate"):
                    rates.setdefault(r.get("tool"), set()).add(r.get("rate"))
        rate_text = "; ".join(f"{TOOL_NAMES.get(t, t)} at {', '.join(str(x) for x in sorted(v))} records/s"
                              for t, v in sorted(rates.items()))
        loads = sorted({(r.get("load_s"), r.get("e2e_records")) for _, rs in rows for r in rs if r.get("e2e_records")})
        load_text = "; ".join(f"Kafka perf tools: EndToEndLatency {n:,} records, beside ProducerPerformance's {s} s load" for s, n in loads)
        cluster_text = ""
        if sample.get("brokers"):
            cluster_text = (f"{sample.get('brokers')} brokers, replication factor {sample.get('replication_factor')}, "
                            f"min.insync.replicas {sample.get('min_insync_replicas')}, Kafka heap {sample.get('kafka_heap')} per JVM, ")
        L.append(f"Settings: {cluster_text}{sample.get('partitions')} partition(s), {sample.get('record_size')}-byte records, acks={sample.get('acks')}, "
                 f"batch {sample.get('batch_bytes')} bytes, linger {sample.get('linger_ms')} ms, {sample.get('duration_s')} s per phase, "
                 f"session {', '.join(sorted({str(r.get('session')) for _, rs in rows for r in rs}))}"
                 + (f"; {rate_text}" if rate_text else "") + (f"; {load_text}" if load_text else "") + ".")
        L.append("")
        extra = []
        if w == "W5":
            extra = [("topic creation s (to ListOffsets answered for all)", lambda rs: fmt(median(rs, "create_s")))]
        L += table(rows, COLS, extra)
        if w == "W6":
            L += [""] + ratios(g, w)
        if w == "W7":
            L += [""] + ratios(g, w, ("produce-txn100", "produce-txn10000"))
        if w == "W8":
            L += [""] + ratios(g, w, ("share",))
        if w == "W5":
            st = sorted((k, v) for k, v in g.items() if k[0] == w and k[1] == "startup")
            if st:
                L += ["", "Start-up with the 10,000-partition topic in place (clean restart, seconds from exec):", "",
                      "| broker | mode | after tool | runs | to Metadata with all partitions led | to ListOffsets answered for all | to /readyz | VmHWM MiB before restart |", "|---|---|---|---|---|---|---|---|"]
                for (_, _, t, m, tool), rs in st:
                    ok = [r for r in rs if "error" not in r]
                    L.append(f"| {t} | {m} | {TOOL_NAMES.get(tool, tool)} | {len(ok)} | {fmt(median(rs, 'startup_s'), 2)} | {fmt(median(rs, 'offsets_s'), 2)} | "
                             f"{fmt(median(rs, 'readyz_s'), 2) if t == 'gregor' else 'n/a'} | {fmt(mib(median(rs, 'vmhwm_kib')))} |")
        errs = [r for _, rs in g.items() for r in rs if r.get("workload") == w and "error" in r]
        if errs:
            L += ["", "Failed runs:", ""]
            for r in errs:
                L.append(f"- {r.get('target')} {r.get('mode')} {TOOL_NAMES.get(r.get('tool'), r.get('tool'))} run {r.get('run')} {r.get('phase')}: "
                         f"`{str(r['error']).replace('`', chr(39))[:300]}`")
        L.append("")
    L += tls(g, envs)
    probe = [(k, v) for k, v in g.items() if k[0] == "probe"]
    if probe:
        L += ["## Machine limit: TCP -> file probe", "",
              "`compat-tests/bench/tcpfile`: a Go program receives bytes over one loopback TCP connection and writes them to a file "
              "(1 MiB writes; `fsync`: fsync after every MiB), for W1's byte volume of 1 KiB records.", "",
              "| mode | runs | MiB/s | records/s (1 KiB) | GiB |", "|---|---|---|---|---|"]
        for (_, _, _, m, _), rs in sorted(probe):
            b = median(rs, "bytes")
            L.append(f"| {m} | {len([r for r in rs if 'error' not in r])} | {fmt(median(rs, 'mib_s'))} | {fmt(median(rs, 'records_s'))} | {fmt(b / 2**30 if b else None, 2)} |")
        L.append("")
    L += goals(g)
    return "\n".join(L).rstrip() + "\n"


# Gregor/Kafka pairs of modes each workload's ratio table shows: equal
# durability first, then each broker's default.
PAIRS = [("durable", "flush1", "equal durability: fsync before ack on every replica"),
         ("pagecache", "default", "equal durability: page cache on every replica"),
         ("durable", "default", "each broker's default: Gregor fsyncs, Kafka does not")]


def ratios(g, w, phases=("produce",)):
    """Gregor/Kafka ratios of median throughput and CPU s/GiB for w's produce phases."""
    L = ["Gregor / Kafka, ratios of medians (throughput: above 1 is Gregor faster; CPU s/GiB: below 1 is Gregor cheaper):", "",
         "| phase | Gregor mode | Kafka mode | pairing | tool | MiB/s Gregor | MiB/s Kafka | throughput ratio | CPU s/GiB Gregor | CPU s/GiB Kafka | CPU s/GiB ratio |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for ph in phases:
        for gm, km, what in PAIRS:
            for tool in ("gregor-bench", "kafka-perf"):
                gr, kr = g.get((w, ph, "gregor", gm, tool)), g.get((w, ph, "kafka", km, tool))
                if not gr or not kr:
                    continue
                gt, kt = median(gr, "mib_s"), median(kr, "mib_s")
                gc, kc = median(gr, "cpu_per_gib"), median(kr, "cpu_per_gib")
                rt = f"{gt / kt:.2f}" if gt and kt else "–"
                rc = f"{gc / kc:.2f}" if gc and kc else "–"
                L.append(f"| {ph} | {gm} | {km} | {what} | {TOOL_NAMES.get(tool, tool)} | {fmt(gt)} | {fmt(kt)} | {rt} | {fmt(gc)} | {fmt(kc)} | {rc} |")
    return L


def tls(g, envs):
    """The TLS section: W1 and W2 over SSL (BENCH_SECURITY=ssl), their
    Gregor/Kafka ratios, and what TLS costs each broker against its own
    plaintext records of the same workload, mode, tool and phase."""
    L = []
    for w in ("W1", "W2"):
        ws = f"{w}-ssl"
        rows = sorted(((k, v) for k, v in g.items() if k[0] == ws and k[1] not in ("startup", "start")),
                      key=lambda kv: (kv[0][1] != "produce", kv[0][1], kv[0][2] != "gregor", kv[0][3], kv[0][4]))
        if not rows:
            continue
        if not L:
            L += ["## TLS (W1 and W2 over SSL)", "",
                  "`BENCH_SECURITY=ssl`: the same workloads with the load generators connected to an SSL listener: TLS 1.3 "
                  "only (`ssl.enabled.protocols=TLSv1.3` on both sides), server authentication only (`ssl.client.auth=none`), "
                  "the same RSA-2048 certificate and CA (`compat-tests/lib/certs.sh`) for both brokers, given as a PEM key store "
                  "(`ssl.keystore.type=PEM`). gregor bench and Kafka's perf tools read `security.protocol=SSL` and a PEM trust "
                  "store from `--command-config`. Topic creation and the readiness checks go to a PLAINTEXT listener beside it; "
                  "the warm-up load goes over SSL. The Kafka JVM picks its own TLS 1.3 cipher suite, as Go does; neither is pinned. "
                  "Over TLS Kafka cannot send log segments to consumers with sendfile (zero copy): it reads and encrypts them in the JVM.", ""]
            for e in envs:
                if e.get("security") == "ssl":
                    L.append(f"Session {e.get('session')}: {e.get('runs')} run(s) of {e.get('duration_s')} s per phase, "
                             f"Gregor {e.get('gregor_commit')}, load average at start {e.get('loadavg_start')} "
                             f"({e.get('nproc')} CPUs, shared with other jobs).")
            L.append("")
        sessions = sorted({str(r.get("session")) for _, rs in rows for r in rs})
        # The baseline: plaintext runs made for it (BENCH_TLS_BASELINE) when
        # there are any, else the workload's own plaintext records.
        base = f"{w}-tlsbase" if any(k[0] == f"{w}-tlsbase" for k in g) else w
        plain_recs = [r for k, rs in g.items() if k[0] == base for r in rs]
        plain_sessions = sorted({str(r.get("session")) for r in plain_recs})
        plain_env = [e for e in envs if e.get("security", "plaintext") == "plaintext" and e.get("session") in plain_sessions]
        plain_text = "".join(f" (Linux {e.get('kernel')}, load average at start {e.get('loadavg_start')})" for e in plain_env)
        ssl_recs = [r for _, rs in rows for r in rs]
        load_ssl, load_plain = median(ssl_recs, "loadavg"), median(plain_recs, "loadavg")
        L += [f"### {w} over SSL", "", WORKLOAD_TEXT[w], "",
              f"Session {', '.join(sessions)}, {', '.join(str(d) for d in sorted({r.get('duration_s') for _, rs in rows for r in rs}, key=str))} s per phase."]
        if base == w:
            L[-1] += (f" The plaintext figures of the TLS cost table are {w}'s records above, from session {', '.join(plain_sessions)}{plain_text}: "
                      "another session on this shared machine, so the cost ratios carry both sessions' noise (machine load, kernel build); "
                      "ratios within about 10% of 1 say little.")
        else:
            L[-1] += (f" The plaintext figures of the TLS cost table come from runs made as its baseline (`BENCH_TLS_BASELINE=1`), "
                      f"session {', '.join(plain_sessions)}{plain_text}, with the same settings right after the SSL runs; "
                      f"{w}'s table above keeps its own plaintext records.")
        if load_ssl is not None and load_plain is not None:
            L[-1] += (f" Median 1-minute load average at the end of a measured phase: {load_ssl:.1f} over SSL, "
                      f"{load_plain:.1f} over plaintext (2 CPUs shared with other jobs); a busier machine slows either side.")
        L.append("")
        L += table(rows, COLS)
        phases = ("produce", "consume") if w == "W1" else ("produce",)
        L += [""] + ratios(g, ws, phases)
        L += ["", "TLS cost per broker: SSL / plaintext, ratios of medians, same broker, mode, tool and phase "
              "(throughput: below 1 is slower over TLS; CPU s/GiB: above 1 costs more CPU over TLS):", "",
              "| broker | mode | tool | phase | MiB/s plaintext | MiB/s SSL | throughput SSL/plaintext | CPU s/GiB plaintext | CPU s/GiB SSL | CPU s/GiB SSL/plaintext |",
              "|---|---|---|---|---|---|---|---|---|---|"]
        for (_, ph, t, m, tool), rs in rows:
            prs = g.get((base, ph, t, m, tool))
            st, sc = median(rs, "mib_s"), median(rs, "cpu_per_gib")
            pt, pc = (median(prs, "mib_s"), median(prs, "cpu_per_gib")) if prs else (None, None)
            rt = f"{st / pt:.2f}" if st and pt else "–"
            rc = f"{sc / pc:.2f}" if sc and pc else "–"
            L.append(f"| {t} | {m} | {TOOL_NAMES.get(tool, tool)} | {ph} | {fmt(pt)} | {fmt(st)} | {rt} | {fmt(pc)} | {fmt(sc)} | {rc} |")
        errs = [r for _, rs in rows for r in rs if "error" in r]
        if errs:
            L += ["", "Failed runs:", ""]
            for r in errs:
                L.append(f"- {r.get('target')} {r.get('mode')} {TOOL_NAMES.get(r.get('tool'), r.get('tool'))} run {r.get('run')} {r.get('phase')}: "
                         f"`{str(r['error']).replace('`', chr(39))[:300]}`")
        L.append("")
    return L


def goals(g):
    def m(w, ph, t, mode, tool, field):
        rs = g.get((w, ph, t, mode, tool))
        return median(rs, field) if rs else None

    def startup(t):
        rs = [r for k, v in g.items() if k[0] == "W5" and k[1] == "startup" and k[2] == t for r in v]
        return median(rs, "startup_s")

    def peak(t):
        rs = [r for k, v in g.items() if k[0] == "W5" and k[1] == "startup" and k[2] == t for r in v]
        return median(rs, "vmhwm_kib")

    rows = []

    def add(goal, what, a, b, op, target):
        if a is None or b is None or not b:
            rows.append((goal, what, fmt(a), fmt(b), "–", "no data"))
            return
        r = a / b
        ok = r >= target if op == ">=" else r <= target
        shown = f"{r:.2f}"
        if float(shown) == target and not ok:
            # A miss is not shown as the target (1.497 as 1.50 next to
            # "FAIL (>= 1.5)"): three decimals, cut toward the miss.
            cut = math.floor(r * 1000) if op == ">=" else math.ceil(r * 1000)
            shown = f"{cut / 1000:.3f}"
        rows.append((goal, what, fmt(a), fmt(b), shown, f"{'PASS' if ok else 'FAIL'} ({op} {target})"))

    for tool in ("gregor-bench", "kafka-perf"):
        tn = TOOL_NAMES[tool]
        for w in ("W1", "W2"):
            add(f"{w} throughput, equal durability (page cache)", f"MiB/s, Gregor pagecache / Kafka default, {tn}",
                m(w, "produce", "gregor", "pagecache", tool, "mib_s"), m(w, "produce", "kafka", "default", tool, "mib_s"), ">=", 1.5)
            add(f"{w} throughput, equal durability (fsync)", f"MiB/s, Gregor durable / Kafka flush1, {tn}",
                m(w, "produce", "gregor", "durable", tool, "mib_s"), m(w, "produce", "kafka", "flush1", tool, "mib_s"), ">=", 1.5)
            add(f"{w} Gregor durable default vs Kafka page-cache default", f"MiB/s, Gregor durable / Kafka default, {tn}",
                m(w, "produce", "gregor", "durable", tool, "mib_s"), m(w, "produce", "kafka", "default", tool, "mib_s"), ">=", 1.0)
        for gm, km in (("durable", "default"), ("pagecache", "default"), ("durable", "flush1")):
            for q, name in (("e2e_p99", "p99"), ("e2e_p999", "p99.9")):
                add(f"W3 e2e latency {name}", f"ms, Gregor {gm} / Kafka {km}, {tn}",
                    m("W3", "e2e", "gregor", gm, tool, q), m("W3", "e2e", "kafka", km, tool, q), "<=", 0.5)
        for gm, km in (("pagecache", "default"), ("durable", "flush1"), ("durable", "default")):
            add("W4 records/s", f"records/s, Gregor {gm} / Kafka {km}, {tn}",
                m("W4", "produce", "gregor", gm, tool, "records_s"), m("W4", "produce", "kafka", km, tool, "records_s"), ">=", 1.5)
        add("W5 throughput at 10,000 partitions vs Gregor's own 16", f"MiB/s, Gregor durable W5 / W2, {tn}",
            m("W5", "produce", "gregor", "durable", tool, "mib_s"), m("W2", "produce", "gregor", "durable", tool, "mib_s"), ">=", 0.8)
    add("W5 broker peak RSS", "VmHWM MiB over topic creation, both phases and the warm-up, Gregor / Kafka (both tools' runs)",
        mib(peak("gregor")), mib(peak("kafka")), "<=", 0.25)
    add("W5 start-up time", "s from exec to Metadata with all 10,000 partitions led, Gregor / Kafka", startup("gregor"), startup("kafka"), "<=", 0.2)
    for gm, pm in (("pagecache", "pagecache"), ("durable", "fsync")):
        add("W1 vs the TCP->file probe", f"MiB/s, Gregor {gm} W1 (gregor bench) / probe {pm}",
            m("W1", "produce", "gregor", gm, "gregor-bench", "mib_s"), m("probe", "probe", "probe", pm, "tcpfile", "mib_s"), ">=", 0.6)
    L = ["## Goals (issue 9)", "", "Ratios of medians; marked, not enforced.", "",
         "| goal | measure | Gregor | Kafka (or reference) | ratio | verdict |", "|---|---|---|---|---|---|"]
    L += ["| " + " | ".join(r) + " |" for r in rows]
    return L


def cmd_merge(a):
    """Replaces, in --into, the records of the modes and tools just run
    (--modes, --tools: space-separated) by those of --new; records of
    other modes and tools stay, so a rerun of one tool keeps the other's."""
    modes, tools = set(a.modes.split()), set(a.tools.split())
    kept = []
    if os.path.exists(a.into):
        with open(a.into) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    if r.get("mode") not in modes or r.get("tool") not in tools:
                        kept.append(line if line.endswith("\n") else line + "\n")
    with open(a.new) as f:
        new = [line for line in f if line.strip()]
    with open(a.into, "w") as f:
        f.writelines(kept + new)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--file", required=True)
    r.add_argument("--kind", required=True)
    r.add_argument("--output")
    r.add_argument("--rc", type=int, default=0)
    r.add_argument("--set", nargs="*")
    la = sub.add_parser("last")
    la.add_argument("--file", required=True)
    la.add_argument("--field", required=True)
    mg = sub.add_parser("merge")
    mg.add_argument("--into", required=True)
    mg.add_argument("--new", required=True)
    mg.add_argument("--modes", required=True)
    mg.add_argument("--tools", required=True)
    w3 = sub.add_parser("w3rate")
    w3.add_argument("--tool", default="gregor-bench")
    sub.add_parser("w1bytes")
    sub.add_parser("render")
    a = p.parse_args()
    if a.cmd == "record":
        cmd_record(a)
    elif a.cmd == "last":
        cmd_last(a)
    elif a.cmd == "merge":
        cmd_merge(a)
    elif a.cmd == "w3rate":
        cmd_w3rate(a)
    elif a.cmd == "w1bytes":
        cmd_w1bytes(a)
    else:
        with open(os.path.join(HERE, "RESULTS.md"), "w") as f:
            f.write(render())
        print(f"report.py: wrote {os.path.join(HERE, 'RESULTS.md')}", file=sys.stderr)


if __name__ == "__main__":
    main()
