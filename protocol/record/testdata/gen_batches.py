#!/usr/bin/env python3
"""Write golden RecordBatch v2 files for protocol/record's tests.

The batches come from an implementation independent of ours: kafka-python's
kafka.record.default_records.DefaultRecordBatchBuilder, with the codec
libraries it uses (python-snappy, lz4, zstandard; gzip from the standard
library). Each NAME.bin holds the bytes of a record set (one batch, or several
back to back for records-multi.bin); NAME.json beside it lists what a reader
must find in it: every batch's header fields and every record's offset,
timestamp, key, value and headers. Keys, values and header keys and values
are base64 strings, or null for a null key, value or header value.

How to regenerate (from the repository root; the venv stays outside the repo):

    python3 -m venv /tmp/kpy
    /tmp/kpy/bin/pip install kafka-python==3.0.12 python-snappy==0.7.3 \
        lz4==4.4.5 zstandard==0.25.0
    /tmp/kpy/bin/python protocol/record/testdata/gen_batches.py

then run `go test ./protocol/record/`. With the versions above the output is
byte for byte the same as the files checked in: time.time is pinned below so
that gzip's header carries a fixed mtime. Other library versions may compress
differently; the records the JSON lists stay the same.

Notes on what kafka-python writes:
  * snappy is framed the xerial (snappy-java) way: a 16-byte header
    (0x82 "SNAPPY" 0, version 1, compatible version 1) then blocks of at most
    32 KiB of input, each an int32 big-endian length and a raw snappy block.
  * lz4 is the LZ4 frame format with independent 64 KiB blocks and the
    content size in the frame header, no content checksum.
  * zstd is a single frame from zstandard's one-shot compress, with the content
    size in its header.
  * The builder falls back to an uncompressed batch when compression does not
    shrink the records, so the records here are compressible; the script checks
    that every batch carries the codec asked for.
  * The builder always writes base offset 0 and leader epoch 0, as a producer
    does. records-multi.bin has its base offsets and leader epochs patched, as a
    broker patches them on append; both lie outside the CRC.
"""

import base64
import json
import os
import struct
import sys
import time

# Pin the clock before anything compresses: gzip writes time.time() into its
# header, and the files should not change each time they are regenerated.
time.time = lambda: 1700000000.0

from kafka.record.default_records import (  # noqa: E402
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
)

OUT = os.path.dirname(os.path.abspath(__file__))

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

BASE_TS = 1700000000000  # 2023-11-14T22:13:20Z, in ms


def b64(b):
    return None if b is None else base64.b64encode(bytes(b)).decode("ascii")


def build(codec, records, producer_id=-1, producer_epoch=-1, base_sequence=-1,
          transactional=False):
    """Build one batch; records are (timestamp, key, value, headers) tuples
    with headers a list of (str key, bytes-or-None value). Returns the batch
    bytes and the expected records (offset deltas dense from 0)."""
    b = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=base_sequence, batch_size=16 << 20)
    for i, (ts, key, value, headers) in enumerate(records):
        if b.append(i, ts, key, value, headers) is None:
            sys.exit("record %d did not fit the batch" % i)
    data = bytes(b.build())
    attrs = struct.unpack_from(">h", data, 21)[0]
    if attrs & 7 != codec:
        sys.exit("kafka-python wrote codec %d for %s: records not compressible enough"
                 % (attrs & 7, CODEC_NAMES[codec]))
    return data


def patch(data, base_offset, leader_epoch):
    """Set the base offset and leader epoch as a broker does on append."""
    data = bytearray(data)
    struct.pack_into(">q", data, 0, base_offset)
    struct.pack_into(">i", data, 12, leader_epoch)
    return bytes(data)


def describe(data):
    """Decode one batch with kafka-python's reader and describe it for the JSON.
    Reading back through kafka-python checks the CRC and the codec framing."""
    batch = DefaultRecordBatch(data)
    if not batch.validate_crc():
        sys.exit("kafka-python rejects the CRC of its own batch")
    (base_offset, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts,
     pid, pepoch, bseq, count) = DefaultRecordBatch.HEADER_STRUCT.unpack_from(data)
    recs = []
    for r in batch:
        recs.append({
            "offset": r.offset,
            "timestamp": r.timestamp,
            "key": b64(r.key),
            "value": b64(r.value),
            "headers": [{"key": b64(k.encode("utf-8")), "value": b64(v)}
                        for k, v in r.headers],
        })
    if len(recs) != count:
        sys.exit("kafka-python read %d records of %d" % (len(recs), count))
    return {
        "size": len(data),
        "baseOffset": base_offset,
        "batchLength": length,
        "partitionLeaderEpoch": epoch,
        "magic": magic,
        "crc": crc,
        "attributes": attrs,
        "codec": CODEC_NAMES[attrs & 7],
        "transactional": bool(attrs & 0x10),
        "lastOffsetDelta": last_delta,
        "baseTimestamp": base_ts,
        "maxTimestamp": max_ts,
        "producerId": pid,
        "producerEpoch": pepoch,
        "baseSequence": bseq,
        "recordCount": count,
        "records": recs,
    }


def write(name, description, batches):
    data = b"".join(batches)
    with open(os.path.join(OUT, name + ".bin"), "wb") as f:
        f.write(data)
    doc = {
        "generator": "kafka-python DefaultRecordBatchBuilder (testdata/gen_batches.py)",
        "description": description,
        "batches": [describe(b) for b in batches],
    }
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print("%-28s %6d bytes, %d batch(es)" % (name + ".bin", len(data), len(batches)))


def corpus():
    """20 compressible records. Record 3 is older than record 0 (a negative
    timestamp delta) and record 11 holds the max timestamp, not the last one."""
    recs = []
    for i in range(20):
        ts = BASE_TS + 7 * i
        if i == 3:
            ts = BASE_TS - 1000
        if i == 11:
            ts = BASE_TS + 50000
        key = b"key-%03d" % i
        value = b"value %d: " % i + b"the quick brown fox jumps over the lazy dog " * 3
        recs.append((ts, key, value, []))
    return recs


def large(n):
    """n records of 1 KiB compressible values: 66 of them make 66 KiB of
    records, three xerial snappy blocks (32 KiB of input each) and two 64 KiB
    lz4 blocks."""
    recs = []
    for i in range(n):
        value = (b"%04d|" % i + bytes(range(32, 127)) * 11)[:1024]
        recs.append((BASE_TS + i, b"k%d" % i, value, []))
    return recs


def main():
    for codec in (NONE, GZIP, SNAPPY, LZ4, ZSTD):
        name = CODEC_NAMES[codec]
        write("batch-" + name,
              "20 records, codec %s; record 3 has a negative timestamp delta, "
              "record 11 the max timestamp" % name,
              [build(codec, corpus())])

    write("batch-snappy-large", "66 records of 1 KiB, snappy: three xerial blocks",
          [build(SNAPPY, large(66))])
    write("batch-lz4-large", "66 records of 1 KiB, lz4: two frame blocks",
          [build(LZ4, large(66))])

    idem = [(BASE_TS + i, b"idem-%d" % i, b"payload %d" % i, []) for i in range(3)]
    write("batch-idempotent", "idempotent producer: id 4242, epoch 3, base sequence 17",
          [build(NONE, idem, producer_id=4242, producer_epoch=3, base_sequence=17)])

    txn = [(BASE_TS + i, b"txn-%d" % i, b"transactional value " * 4, []) for i in range(4)]
    write("batch-transactional",
          "transactional producer: id 4243, epoch 1, base sequence 0, codec zstd",
          [build(ZSTD, txn, producer_id=4243, producer_epoch=1, base_sequence=0,
                 transactional=True)])

    hdrs = [
        (BASE_TS, b"h0", b"no headers", []),
        (BASE_TS + 1, b"h1", b"one header", [("trace-id", b"0af7651916cd43dd")]),
        (BASE_TS + 2, b"h2", b"odd headers", [
            ("empty", b""),
            ("null", None),
            ("\u00fcn\u00efcode", b"\x00\xff\x7f"),
            ("dup", b"1"),
            ("dup", b"2"),
        ]),
        (BASE_TS + 3, None, None, [("only-header", b"x")]),
    ]
    write("batch-headers", "record headers: none, one, several with empty, null, "
          "non-ASCII and repeated keys; a null key and value with a header",
          [build(NONE, hdrs)])

    nulls = [
        (BASE_TS, None, b"null key", []),
        (BASE_TS + 1, b"tombstone", None, []),
        (BASE_TS + 2, b"", b"", []),
        (BASE_TS + 3, None, None, []),
        (BASE_TS + 4, b"empty value", b"", []),
        (BASE_TS + 5, b"", b"empty key", []),
    ]
    write("batch-nulls", "null keys (records 0 and 3), tombstones (records 1 and 3), "
          "empty keys (2 and 5) and empty values (2 and 4)",
          [build(NONE, nulls)])

    rep = b"multi-batch record set value " * 4
    b0 = build(NONE, [(BASE_TS + i, b"m%d" % i, rep, []) for i in range(3)])
    b1 = build(GZIP, [(BASE_TS + 10 + i, b"m%d" % (3 + i), rep, []) for i in range(4)])
    b2 = build(SNAPPY, [(BASE_TS + 20 + i, None, rep, []) for i in range(2)])
    write("records-multi",
          "three batches back to back as in a log segment (none, gzip, snappy), "
          "base offsets patched to 100, 103, 107 and leader epochs to 5, 5, 6",
          [patch(b0, 100, 5), patch(b1, 103, 5), patch(b2, 107, 6)])


if __name__ == "__main__":
    main()
