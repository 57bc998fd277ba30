#!/usr/bin/env python3
"""Helpers for run.sh: test data, Kafka's key partitioning, comparisons and
a look at the codecs of the batches stored on disk.

Subcommands (all print to stdout; errors, and only errors, exit non-zero):

  lines PREFIX FIRST COUNT
      COUNT lines "PREFIX-key-i<TAB>PREFIX-value-i" for i from FIRST.

  partition NPARTS OUTPREFIX < lines
      Splits "key<TAB>value" lines by the partition Kafka's default
      partitioner gives the key (murmur2, as the Java producer and
      librdkafka's murmur2_random do) into OUTPREFIX<p> files, in input
      order, and prints one "p count" line per partition.

  same-order EXPECTED ACTUAL
  same-set EXPECTED ACTUAL
      Compares two files of lines exactly (same-order) or as sorted
      multisets (same-set). On a difference it prints what differs and
      exits 1.

  describe-offsets FILE GROUP TOPIC SPEC...
      Checks the offsets table that kafka-consumer-groups --describe
      --group GROUP printed to FILE (columns found by their header names:
      GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...). There is
      one SPEC per partition of TOPIC, in partition order, "CURRENT/END":
      the row of that partition must show CURRENT-OFFSET CURRENT ("-" for
      no committed offset), LOG-END-OFFSET END and LAG END-CURRENT ("-"
      when nothing is committed), and no other partition may be listed.
      SPEC "none" says the partition has no row (a group without members
      is described by its committed offsets only).
      Prints "p:current/end" for each partition, or what differs (exit 1).

  codecs DIR...
      Prints the compression codecs of the record batches in the .log
      segments of the given partition directories, as "codec count" lines.
      The segment format is Kafka's (RecordBatch v2 back to back): a batch's
      attributes are the int16 at byte 21, whose low 3 bits are the codec.

  lab-records STYLE PREFIX COUNT NPARTS OUT
      Test records for a produce-consume scenario of the lab (run.sh
      BOOTSTRAP), as bytes: keyed, with headers (one with an empty value,
      one null), values with control characters and multi-byte UTF-8 (kcat
      also gets NUL, tab and bytes that are not UTF-8), every tenth a
      null value. STYLE says which tool produces and consumes them:
        console  ConsoleProducer input "h1:v1,h2:v2<TAB>key<TAB>value" with
                 null.marker <NULL>; per-record headers; one empty value in
                 ten as well.
        kcat     kcat -P -K<TAB> -Z input "key<TAB>value" (an empty value is
                 sent as null); the same headers on every record, as kcat -H
                 arguments in OUT.hargs (one per line).
      Writes OUT.in (the producer's input), OUT.want ("p<TAB>record" in
      produce order, the record as the consumer below prints it) and prints
      one "p count" line per partition (Kafka's murmur2 partitioner).

  lab-verify STYLE OUT GOT T0 T1
      Checks what a consumer printed (GOT) against OUT.want. The consumer's
      format is fixed per STYLE:
        console  ConsoleConsumer with print.timestamp, print.partition,
                 print.offset, print.headers, print.key and null.literal
                 (null): "CreateTime:ts<TAB>Partition:p<TAB>Offset:o<TAB>record"
        kcat     kcat -f '%p\t%o\t%T\t%h\t%k\t%S\t%s\n'
      Each partition must hold its records in produce order at offsets 0, 1,
      2, ... (dense), every timestamp a CreateTime within [T0, T1] (ms, the
      produce run's wall-clock window), and nothing else may be there.
      GOT may list the partitions one after another or interleaved.
      Prints a one-line summary, or the first difference (exit 1).
"""

import collections
import os
import sys

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def murmur2(data: bytes) -> int:
    """Kafka's org.apache.kafka.common.utils.Utils.murmur2, as unsigned 32 bits."""
    length = len(data)
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = length & ~3
    rem = length % 4
    if rem >= 3:
        h ^= data[tail + 2] << 16
    if rem >= 2:
        h ^= data[tail + 1] << 8
    if rem >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def partition_for(key: bytes, nparts: int) -> int:
    """Utils.toPositive(Utils.murmur2(key)) % numPartitions."""
    return (murmur2(key) & 0x7FFFFFFF) % nparts


def read_lines(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().splitlines()


def show(line):
    return repr(line) if line is not None else "(nothing)"


def cmd_lines(prefix, first, count):
    first, count = int(first), int(count)
    out = sys.stdout
    for i in range(first, first + count):
        out.write(f"{prefix}-key-{i}\t{prefix}-value-{i}\n")


def cmd_partition(nparts, outprefix):
    nparts = int(nparts)
    files = [open(f"{outprefix}{p}", "w", encoding="utf-8") for p in range(nparts)]
    counts = [0] * nparts
    for line in sys.stdin.read().splitlines():
        key = line.split("\t", 1)[0].encode("utf-8")
        p = partition_for(key, nparts)
        files[p].write(line + "\n")
        counts[p] += 1
    for f in files:
        f.close()
    for p, c in enumerate(counts):
        print(p, c)


def cmd_same_order(expected_path, actual_path):
    exp, act = read_lines(expected_path), read_lines(actual_path)
    if exp == act:
        return 0
    msgs = [f"expected {len(exp)} lines ({expected_path}), got {len(act)} ({actual_path})"]
    for i in range(max(len(exp), len(act))):
        e = exp[i] if i < len(exp) else None
        a = act[i] if i < len(act) else None
        if e != a:
            msgs.append(f"first difference at line {i + 1}: expected {show(e)}, got {show(a)}")
            break
    set_msg = multiset_diff(exp, act)
    msgs.append(set_msg if set_msg else "same lines, different order")
    print("; ".join(msgs))
    return 1


def multiset_diff(exp, act):
    ce, ca = collections.Counter(exp), collections.Counter(act)
    missing = ce - ca
    extra = ca - ce
    if not missing and not extra:
        return ""
    parts = []
    if missing:
        parts.append(f"{sum(missing.values())} missing (e.g. {show(sorted(missing)[0])})")
    if extra:
        dup = sum(1 for k in extra if k in ce)
        parts.append(f"{sum(extra.values())} unexpected (e.g. {show(sorted(extra)[0])}; {dup} of them duplicates of expected lines)")
    return ", ".join(parts)


def cmd_same_set(expected_path, actual_path):
    exp, act = read_lines(expected_path), read_lines(actual_path)
    diff = multiset_diff(exp, act)
    if not diff:
        return 0
    print(f"expected {len(exp)} lines ({expected_path}), got {len(act)} ({actual_path}): {diff}")
    return 1


def describe_rows(path, group, topic):
    """The rows of GROUP and TOPIC in the offsets table of a --describe
    output, as {partition: {column: value}}, or None when there is no table."""
    header = None
    rows = {}
    for line in read_lines(path):
        fields = line.split()
        if not fields:
            continue
        if "CURRENT-OFFSET" in fields and "LOG-END-OFFSET" in fields:
            header = fields
            continue
        if header is None or fields[0] != group or len(fields) < len(header) - 3:
            continue
        row = dict(zip(header, fields))
        if row.get("TOPIC") != topic:
            continue
        rows[row.get("PARTITION")] = row
    return rows if header is not None else None


def cmd_describe_offsets(path, group, topic, *specs):
    rows = describe_rows(path, group, topic)
    if rows is None:
        print(f"no offsets table (no header with CURRENT-OFFSET and LOG-END-OFFSET) in {path}")
        return 1
    problems, shown = [], []
    for p, spec in enumerate(specs):
        if spec == "none":
            row = rows.pop(str(p), None)
            if row is not None:
                problems.append(f"partition {p}: a row with CURRENT-OFFSET {row.get('CURRENT-OFFSET')}, expected none")
            shown.append(f"{p}:none")
            continue
        want_cur, want_end = spec.split("/")
        want_lag = "-" if want_cur == "-" else str(int(want_end) - int(want_cur))
        row = rows.pop(str(p), None)
        if row is None:
            problems.append(f"partition {p}: no row")
            continue
        got = (row.get("CURRENT-OFFSET"), row.get("LOG-END-OFFSET"), row.get("LAG"))
        shown.append(f"{p}:{got[0]}/{got[1]}")
        if got != (want_cur, want_end, want_lag):
            problems.append(
                f"partition {p}: CURRENT-OFFSET {got[0]}, LOG-END-OFFSET {got[1]}, LAG {got[2]};"
                f" expected {want_cur}, {want_end}, {want_lag}"
            )
    for p in sorted(rows):
        problems.append(f"unexpected row for partition {p}")
    if problems:
        print(f"group {group} topic {topic}: " + "; ".join(problems))
        return 1
    print(" ".join(shown))
    return 0


def cmd_codecs(*dirs):
    counts = collections.Counter()
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if not name.endswith(".log"):
                continue
            with open(os.path.join(d, name), "rb") as f:
                data = f.read()
            pos = 0
            while pos + 23 <= len(data):
                batch_len = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
                if batch_len <= 0:
                    break
                attrs = int.from_bytes(data[pos + 21 : pos + 23], "big")
                counts[CODECS.get(attrs & 7, f"codec{attrs & 7}")] += 1
                pos += 12 + batch_len
    for codec in sorted(counts):
        print(codec, counts[codec])


# --- lab records -------------------------------------------------------------

# What the console producer turns into null (reader property null.marker) and
# how the console consumer prints a null (formatter property null.literal).
# They differ, so that a null the broker turned into the marker's bytes, or
# into an empty value, shows up as a difference.
CONSOLE_NULL_MARKER = b"<NULL>"
CONSOLE_NULL_LITERAL = b"(null)"

# kcat sets the same headers on every record it produces (-H name=value;
# -H name alone gives a null value, which kcat's %h prints as NULL).
KCAT_HEADERS = [(b"lab", "kcat-é".encode()), (b"empty", b""), (b"nul", None)]


def lab_record(style, prefix, i):
    """Record i of a lab data set: (key, value, headers), bytes or None."""
    key = f"{prefix}-key-{i}".encode()
    if i % 10 == 3:
        value = None
    elif style == "console" and i % 10 == 7:
        value = b""
    elif style == "console":
        # The console producer reads its input as UTF-8 text, and tab and
        # newline separate fields and records.
        value = f"v{i}-\x01\x1f\x7f é✓𝄞 ".encode() + b"x" * (i % 50)
    else:
        # kcat sends the bytes after the first tab as they are.
        value = f"v{i}-".encode() + bytes([0, 1, 9, 0x7F, 0x80, 0xFE, 0xFF]) + "é".encode() + b"x" * (i % 50)
    if style == "kcat":
        headers = KCAT_HEADERS
    elif i % 3 == 0:
        headers = [(b"seq", str(i).encode()), (b"empty", b""), (b"nul", None)]
    elif i % 3 == 1:
        headers = [(b"seq", str(i).encode())]
    else:
        headers = [(b"seq", str(i).encode()), (b"utf", "é✓".encode())]
    return key, value, headers


def lab_input(style, key, value, headers):
    """The producer's input line for a record."""
    if style == "console":
        hs = b",".join(k + b":" + (CONSOLE_NULL_MARKER if v is None else v) for k, v in headers)
        return hs + b"\t" + key + b"\t" + (CONSOLE_NULL_MARKER if value is None else value)
    return key + b"\t" + (value or b"")


def lab_printed(style, key, value, headers):
    """The record as the lab-verify consumer format prints it, after the
    partition, offset and timestamp fields."""
    if style == "console":
        hs = b",".join(k + b":" + (CONSOLE_NULL_LITERAL if v is None else v) for k, v in headers)
        return hs + b"\t" + key + b"\t" + (CONSOLE_NULL_LITERAL if value is None else value)
    hs = b",".join(k + b"=" + (b"NULL" if v is None else v) for k, v in headers)
    size = b"-1" if value is None else str(len(value)).encode()
    return hs + b"\t" + key + b"\t" + size + b"\t" + (value or b"")


def cmd_lab_records(style, prefix, count, nparts, out):
    if style not in ("console", "kcat"):
        print(f"unknown style {style!r}", file=sys.stderr)
        return 2
    count, nparts = int(count), int(nparts)
    counts = [0] * nparts
    with open(out + ".in", "wb") as fin, open(out + ".want", "wb") as fwant:
        for i in range(count):
            key, value, headers = lab_record(style, prefix, i)
            p = partition_for(key, nparts)
            counts[p] += 1
            fin.write(lab_input(style, key, value, headers) + b"\n")
            fwant.write(str(p).encode() + b"\t" + lab_printed(style, key, value, headers) + b"\n")
    if style == "kcat":
        with open(out + ".hargs", "wb") as f:
            for k, v in KCAT_HEADERS:
                f.write(k + (b"" if v is None else b"=" + v) + b"\n")
    for p, c in enumerate(counts):
        print(p, c)
    return 0


def brief(b, limit=100):
    """A short printable form of a byte string, for one-line reasons."""
    r = repr(b)
    return r if len(r) <= limit else r[:limit] + "...'"


def parse_lab_line(style, line):
    """(partition, offset, timestamp, printed record) of a consumer line, or
    a string saying why it cannot be parsed."""
    try:
        if style == "console":
            ts, part, off, rest = line.split(b"\t", 3)
            if not ts.startswith(b"CreateTime:"):
                return f"timestamp field {brief(ts)} is not CreateTime:<ms>"
            if not part.startswith(b"Partition:") or not off.startswith(b"Offset:"):
                return "no Partition:/Offset: fields"
            return int(part[10:]), int(off[7:]), int(ts[11:]), rest
        part, off, ts, rest = line.split(b"\t", 3)
        return int(part), int(off), int(ts), rest
    except ValueError:
        return "fields missing or not numbers"


def cmd_lab_verify(style, out, got_path, t0, t1):
    t0, t1 = int(t0), int(t1)
    want = collections.defaultdict(list)
    with open(out + ".want", "rb") as f:
        for line in f.read().split(b"\n")[:-1]:
            p, rest = line.split(b"\t", 1)
            want[int(p)].append(rest)
    with open(got_path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    got = collections.defaultdict(list)
    for n, line in enumerate(lines, 1):
        parsed = parse_lab_line(style, line)
        if isinstance(parsed, str):
            print(f"line {n} of {got_path}: {parsed}: {brief(line)}")
            return 1
        p, off, ts, rest = parsed
        if not t0 <= ts <= t1:
            print(f"partition {p} offset {off}: timestamp {ts} outside the produce run [{t0}, {t1}]")
            return 1
        got[p].append((off, rest))
    total = sum(len(v) for v in want.values())
    problems = []
    for p in sorted(set(want) | set(got)):
        w, g = want.get(p, []), got.get(p, [])
        for i, (off, _) in enumerate(g):
            if off != i:
                problems.append(f"partition {p}: record {i + 1} read at offset {off}, expected offset {i} (offsets dense from 0)")
                break
        else:
            if [r for _, r in g] != w:
                why = f"partition {p}: expected {len(w)} records, read {len(g)}"
                for i in range(max(len(w), len(g))):
                    e = w[i] if i < len(w) else None
                    a = g[i][1] if i < len(g) else None
                    if e != a:
                        why += f"; first difference at offset {i}: expected {brief(e) if e is not None else '(nothing)'}, read {brief(a) if a is not None else '(nothing)'}"
                        break
                problems.append(why)
    if problems:
        print("; ".join(problems) + f" ({total} records written in all, {len(lines)} read)")
        return 1
    per = ", ".join(f"p{p}: {len(want[p])}" for p in sorted(want))
    print(f"{total} records ({per}) read back at dense offsets, keys, values, headers equal, timestamps within the produce run")
    return 0


def main(argv):
    cmds = {
        "lines": cmd_lines,
        "partition": cmd_partition,
        "same-order": cmd_same_order,
        "same-set": cmd_same_set,
        "describe-offsets": cmd_describe_offsets,
        "codecs": cmd_codecs,
        "lab-records": cmd_lab_records,
        "lab-verify": cmd_lab_verify,
    }
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    return cmds[argv[1]](*argv[2:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
