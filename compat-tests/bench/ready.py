#!/usr/bin/env python3
"""Waits until a Kafka-protocol broker serves a topic, and says how long it took.

    ready.py HOST:PORT[,HOST:PORT...] [--brokers N] [--topic NAME --partitions N [--isr N] [--offsets]]
             [--since EPOCH] [--timeout S]

Polls every 50 ms with a raw Metadata v4 request (stdlib only, so it measures
the broker and not a client's start-up). Ready means: the request is
answered with at least one broker and, with --topic, the topic has N
partitions, each with no error and a leader; with --offsets, also a
ListOffsets v1 request for the latest offset of every partition is answered
with no error (both brokers report partitions as led in Metadata a while
before they can serve them). For a cluster, give every broker's address:
Metadata is asked of the first, ListOffsets of each in turn until every
partition has been answered without error by one of them (its leader);
--brokers N also waits for N brokers in Metadata and --isr N for N replicas
in every partition's ISR. Prints the seconds from --since
(a time.time() value; default: when this script started) to the first ready
answer. Exits 1 on timeout.

Metadata v4 is the oldest version Kafka 4.x still serves (KIP-896).
"""
import argparse
import socket
import struct
import sys
import time


def metadata(host, port, topic, timeout=2.0):
    """Returns {broker_count, partitions: {index: (error, leader)}} or raises."""
    body = b""
    if topic is None:
        body += struct.pack(">i", -1)
    else:
        t = topic.encode()
        body += struct.pack(">ih", 1, len(t)) + t
    body += b"\x00"  # allow_auto_topic_creation = false
    client = b"bench-ready"
    header = struct.pack(">hhih", 3, 4, 1, len(client)) + client
    req = header + body
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(req)) + req)
        size = struct.unpack(">i", recv_exact(s, 4))[0]
        data = recv_exact(s, size)
    r = Reader(data)
    r.i32()  # correlation id
    r.i32()  # throttle_time_ms
    brokers = r.i32()
    for _ in range(brokers):
        r.i32(); r.string(); r.i32(); r.string()
    r.string()  # cluster_id
    r.i32()  # controller_id
    parts = {}
    for _ in range(r.i32()):
        terr = r.i16(); name = r.string(); r.i8()
        for _ in range(r.i32()):
            perr = r.i16(); idx = r.i32(); leader = r.i32()
            r.skip(4 * r.i32())
            isr = r.i32()
            r.skip(4 * isr)
            if name == topic:
                parts[idx] = (perr or terr, leader, isr)
    return brokers, parts


def offsets_ok(host, port, topic, n, timeout=10.0):
    """The set of partitions 0..n-1 of topic for which ListOffsets v1 (latest) succeeds."""
    t = topic.encode()
    body = struct.pack(">i", -1) + struct.pack(">ih", 1, len(t)) + t + struct.pack(">i", n)
    body += b"".join(struct.pack(">iq", i, -1) for i in range(n))
    client = b"bench-ready"
    req = struct.pack(">hhih", 2, 1, 2, len(client)) + client + body
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(req)) + req)
        data = recv_exact(s, struct.unpack(">i", recv_exact(s, 4))[0])
    r = Reader(data)
    r.i32()  # correlation id
    good = set()
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            idx = r.i32(); err = r.i16(); r.skip(16)
            if err == 0:
                good.add(idx)
    return good


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


class Reader:
    def __init__(self, data):
        self.d, self.o = data, 0

    def take(self, fmt, n):
        v = struct.unpack_from(fmt, self.d, self.o)[0]
        self.o += n
        return v

    def i8(self): return self.take(">b", 1)
    def i16(self): return self.take(">h", 2)
    def i32(self): return self.take(">i", 4)
    def skip(self, n): self.o += n

    def string(self):
        n = self.i16()
        if n < 0:
            return None
        v = self.d[self.o:self.o + n].decode()
        self.o += n
        return v


def main():
    p = argparse.ArgumentParser()
    p.add_argument("addr")
    p.add_argument("--topic")
    p.add_argument("--partitions", type=int, default=0)
    p.add_argument("--offsets", action="store_true")
    p.add_argument("--brokers", type=int, default=1)
    p.add_argument("--isr", type=int, default=0)
    p.add_argument("--since", type=float, default=time.time())
    p.add_argument("--timeout", type=float, default=300)
    a = p.parse_args()
    addrs = [(h, int(pt)) for h, pt in (x.rsplit(":", 1) for x in a.addr.split(","))]
    host, port = addrs[0]
    deadline = time.time() + a.timeout
    last = "no answer"
    while time.time() < deadline:
        try:
            brokers, parts = metadata(host, port, a.topic)
            ok = [i for i, (err, leader, isr) in parts.items() if err == 0 and leader >= 0 and isr >= a.isr]
            ready = brokers >= a.brokers and (a.topic is None or len(ok) >= a.partitions)
            if ready and a.offsets:
                good = set()
                for h, pt in addrs:
                    good |= offsets_ok(h, pt, a.topic, a.partitions)
                ready = len(good) == a.partitions
                last = f"ListOffsets answered without error for {len(good)}/{a.partitions} partitions"
            elif not ready:
                last = f"{brokers} broker(s), {len(ok)}/{a.partitions} partitions ready"
            if ready:
                print(f"{time.time() - a.since:.3f}")
                return 0
        except (OSError, struct.error, UnicodeDecodeError) as e:
            last = repr(e)
        time.sleep(0.05)
    print(f"ready.py: {a.addr} not ready within {a.timeout}s: {last}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
