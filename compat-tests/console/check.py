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


def main(argv):
    cmds = {
        "lines": cmd_lines,
        "partition": cmd_partition,
        "same-order": cmd_same_order,
        "same-set": cmd_same_set,
        "describe-offsets": cmd_describe_offsets,
        "codecs": cmd_codecs,
    }
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    return cmds[argv[1]](*argv[2:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
