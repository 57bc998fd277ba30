"""The python suite's scenarios for kafka-python (the pure-Python client).

Run by run.sh as `kafka_python_suite.py BOOTSTRAP`; see lab.py for the
harness and compat-tests/README.md for what each scenario name promises.
kafka-python 3.x enables idempotence by default with acks=all; the
produce-consume scenarios turn it off so that idempotent-producer is the one
scenario that depends on it.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Dict, List, Optional, Sequence

import kafka
import kafka.errors as Errors
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, KafkaAdminClient, OffsetSpec
from kafka.structs import OffsetAndMetadata

import lab
from lab import Context, Failure, Placed, Record, expect, wait_until

CLIENT = "kafka-python"

# Offsets are asked for in milliseconds throughout; one step's bound.
STEP_MS = int(lab.STEP_TIMEOUT * 1000)

CREATE_TIME = 0  # ConsumerRecord.timestamp_type of a producer-set timestamp


def make_records(count: int, seed: int):
    """lab.make_records without the null-valued header, which kafka-python's
    send() refuses ("All headers items must be (str, bytes) tuples")."""
    return lab.make_records(count, seed, null_header=False)


def version() -> str:
    return kafka.__version__


# ---------------------------------------------------------------------------
# Clients

# kafka-python's names for lab.security()'s settings.
SECURITY_KEYS = {
    "protocol": "security_protocol",
    "ca": "ssl_cafile",
    "cert": "ssl_certfile",
    "key": "ssl_keyfile",
    "mechanism": "sasl_mechanism",
    "user": "sasl_plain_username",
    "password": "sasl_plain_password",
}


def base_config(ctx: Context) -> dict:
    conf = {
        "bootstrap_servers": ctx.bootstrap.split(","),
        "client_id": "compat-python-" + ctx.scenario,
        "request_timeout_ms": 30_000,
    }
    conf.update(lab.security_config(SECURITY_KEYS))
    return conf


def admin_client(ctx: Context) -> KafkaAdminClient:
    return KafkaAdminClient(**base_config(ctx))


def create_topic(ctx: Context, admin: KafkaAdminClient, name: str, partitions: int = 3,
                 configs: Optional[Dict[str, str]] = None) -> None:
    """Creates a topic and waits until its metadata shows every partition led."""
    admin.create_topics({name: {"num_partitions": partitions, "replication_factor": 1,
                                "configs": configs or {}}}, timeout_ms=30_000)

    def ready():
        t = next((t for t in admin.describe_topics([name]) if t["name"] == name), None)
        return (t is not None and t["error_code"] == 0 and len(t["partitions"]) == partitions
                and all(p["error_code"] == 0 and p["leader_id"] >= 0 for p in t["partitions"]))
    wait_until("topic %s with %d led partitions in metadata" % (name, partitions), ready)
    ctx.log("created topic %s (%d partitions, configs %s)", name, partitions, configs)


def produce(ctx: Context, topic: str, records: Sequence[Record],
            partitions: Optional[Sequence[int]] = None, **conf) -> List[Placed]:
    """Produces records (to partitions[i] when given, else by key) with acks=all.

    Returns each record with the partition and offset the broker acknowledged,
    in produce order; fails on the first send error.
    """
    config = base_config(ctx)
    config.update({"acks": "all", "linger_ms": 10, "enable_idempotence": False,
                   "max_block_ms": STEP_MS})
    config.update(conf)
    producer = KafkaProducer(**config)
    try:
        return send(producer, topic, records, partitions)
    finally:
        producer.close(timeout=10)


def send(producer: KafkaProducer, topic: str, records: Sequence[Record],
         partitions: Optional[Sequence[int]] = None) -> List[Placed]:
    """Sends records with producer (to partitions[i] when given, else by
    key), flushes, and returns each with the partition and offset the broker
    acknowledged, in produce order; fails on the first send error."""
    futures = []
    for i, r in enumerate(records):
        futures.append(producer.send(
            topic, key=r.key, value=r.value, headers=list(r.headers), timestamp_ms=r.timestamp,
            partition=partitions[i] if partitions is not None else None))
    producer.flush(timeout=lab.STEP_TIMEOUT)
    placed = []
    for i, f in enumerate(futures):
        try:
            md = f.get(timeout=lab.STEP_TIMEOUT)
        except Errors.KafkaError as e:
            raise Failure("record %d not delivered: %s: %s" % (i, type(e).__name__, e))
        placed.append(Placed(md.partition, md.offset, records[i]))
    return placed


def to_placed(m) -> Placed:
    if m.timestamp_type != CREATE_TIME:
        raise Failure("partition %d offset %d: timestamp type %d, want CreateTime (0)"
                      % (m.partition, m.offset, m.timestamp_type))
    return Placed(m.partition, m.offset, Record(m.key, m.value, tuple(m.headers or ()), m.timestamp))


def consumer(ctx: Context, group: Optional[str], **conf) -> KafkaConsumer:
    config = base_config(ctx)
    config.update({"group_id": group, "enable_auto_commit": False, "auto_offset_reset": "earliest"})
    config.update(conf)
    return KafkaConsumer(**config)


def poll_until_ends(c: KafkaConsumer, ends: Dict[int, int], timeout: float = lab.STEP_TIMEOUT
                    ) -> Dict[int, List[Placed]]:
    """Polls until every partition in ends has been read up to its end offset."""
    got: Dict[int, List[Placed]] = {p: [] for p in ends}
    deadline = time.monotonic() + timeout

    def done() -> bool:
        return all(end == 0 or (got[p] and got[p][-1].offset + 1 >= end) for p, end in ends.items())

    while not done():
        if time.monotonic() > deadline:
            raise Failure("read timed out after %.0fs: reached %s of end offsets %s"
                          % (timeout, {p: (v[-1].offset + 1 if v else None) for p, v in got.items()}, ends))
        for tp, msgs in c.poll(timeout_ms=500, max_records=500).items():
            for m in msgs:
                got.setdefault(tp.partition, []).append(to_placed(m))
    return got


def read_assigned(ctx: Context, topic: str, starts: Dict[int, Optional[int]], ends: Dict[int, int],
                  c: Optional[KafkaConsumer] = None) -> Dict[int, List[Placed]]:
    """Assigns the partitions, seeks each to starts[p] (None: the beginning)
    and reads until every partition has reached its end offset."""
    own = c is None
    if c is None:
        c = consumer(ctx, None)
    try:
        tps = {p: TopicPartition(topic, p) for p in starts}
        c.assign(list(tps.values()))
        for p, off in starts.items():
            if off is None:
                c.seek_to_beginning(tps[p])
            else:
                c.seek(tps[p], off)
        return poll_until_ends(c, ends)
    finally:
        if own:
            c.close()


# ---------------------------------------------------------------------------
# Scenarios

def produce_consume(codec: str):
    def scenario(ctx: Context) -> str:
        admin = admin_client(ctx)
        topic = ctx.name()
        create_topic(ctx, admin, topic)
        records = make_records(300, seed=1 + lab.CODECS.index(codec))
        produced = produce(ctx, topic, records, compression_type=None if codec == "none" else codec)
        expected = lab.check_produced_dense(produced)
        expect(len(expected) == 3, "records went to %d partitions, want all 3", len(expected))
        got = read_assigned(ctx, topic, {p: None for p in range(3)},
                            {p: len(expected[p]) for p in range(3)})
        lab.compare(expected, got)
        return "%d records (%s per partition), %s, read back equal" % (
            len(records), lab.counts(expected), codec)
    return scenario


def idempotent_producer(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    records = make_records(1000, seed=7)
    # Explicit opt-in: kafka-python then raises instead of silently falling
    # back when the configuration (or the broker) cannot give idempotence.
    # Small batches and several in flight exercise the sequence numbers
    # across many requests per partition.
    produced = produce(ctx, topic, records, enable_idempotence=True, acks="all",
                       max_in_flight_requests_per_connection=5, linger_ms=2, batch_size=8192)
    expected = lab.check_produced_dense(produced)
    got = read_assigned(ctx, topic, {p: None for p in expected}, {p: len(v) for p, v in expected.items()})
    lab.compare(expected, got)
    c = consumer(ctx, None)
    try:
        tps = [TopicPartition(topic, p) for p in expected]
        begin, end = c.beginning_offsets(tps, timeout_ms=STEP_MS), c.end_offsets(tps, timeout_ms=STEP_MS)
        for tp in tps:
            n = len(expected[tp.partition])
            expect((begin[tp], end[tp]) == (0, n), "partition %d offsets [%d, %d), want [0, %d)",
                   tp.partition, begin[tp], end[tp], n)
    finally:
        c.close()
    return "%d records once each (%s per partition), offsets dense" % (len(records), lab.counts(expected))


def list_offsets(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    per = 40
    base = lab.now_ms() - 600_000
    # Partition p's record i has timestamp base + 10*i + p, except record 25,
    # which is far later than all others: the max-timestamp lookup must find
    # it, not the last record, and a lookup between later records must land
    # on it too (the earliest offset whose timestamp is >= the target).
    records, parts = [], []
    for p in range(3):
        for i, r in enumerate(make_records(per, seed=100 + p)):
            ts = base + 500_000 + p if i == 25 else base + 10 * i + p
            records.append(Record(r.key, r.value, r.headers, ts))
            parts.append(p)
    lab.check_produced_dense(produce(ctx, topic, records, partitions=parts))

    def ts(p: int, i: int) -> int:
        return base + 10 * i + p

    tps = [TopicPartition(topic, p) for p in range(3)]
    c = consumer(ctx, None)
    try:
        begin = c.beginning_offsets(tps, timeout_ms=STEP_MS)
        end = c.end_offsets(tps, timeout_ms=STEP_MS)
        for tp in tps:
            expect(begin[tp] == 0, "beginning_offsets partition %d: %s, want 0", tp.partition, begin[tp])
            expect(end[tp] == per, "end_offsets partition %d: %s, want %d", tp.partition, end[tp], per)
        # (target timestamp of partition p, expected offset or None, why)
        cases = [
            (lambda p: ts(p, 7), 7, "exact timestamp of offset 7"),
            (lambda p: ts(p, 7) + 5, 8, "between offsets 7 and 8"),
            (lambda p: base - 60_000, 0, "before every record"),
            (lambda p: ts(p, 30) + 5, 25, "after offset 30, below offset 25's later timestamp"),
            (lambda p: base + 600_000, None, "after every record"),
        ]
        for target, want, why in cases:
            answers = c.offsets_for_times({tp: target(tp.partition) for tp in tps}, timeout_ms=STEP_MS)
            for tp in tps:
                a = answers.get(tp)
                got = None if a is None else a.offset
                expect(got == want, "offsets_for_times partition %d ts %d (%s): %s, want offset %s",
                       tp.partition, target(tp.partition), why, a, want)
                if want is not None:
                    want_ts = base + 500_000 + tp.partition if want == 25 else ts(tp.partition, want)
                    expect(a.timestamp == want_ts, "offsets_for_times partition %d (%s): timestamp %d, want %d",
                           tp.partition, why, a.timestamp, want_ts)
    finally:
        c.close()

    # The admin client's ListOffsets, with the max-timestamp spec only it offers.
    kinds = [
        ("EARLIEST", OffsetSpec.EARLIEST, lambda p: 0, None),
        ("LATEST", OffsetSpec.LATEST, lambda p: per, None),
        ("MAX_TIMESTAMP", OffsetSpec.MAX_TIMESTAMP, lambda p: 25, lambda p: base + 500_000 + p),
    ]
    for kind, spec, want, want_ts in kinds:
        answers = admin.list_partition_offsets({tp: spec for tp in tps}, timeout_ms=STEP_MS)
        for tp in tps:
            a = answers.get(tp)
            expect(a is not None and a.offset == want(tp.partition),
                   "list_partition_offsets %s partition %d: %s, want offset %d", kind, tp.partition, a, want(tp.partition))
            if want_ts is not None:
                expect(a.timestamp == want_ts(tp.partition), "list_partition_offsets %s partition %d: timestamp %d, want %d",
                       kind, tp.partition, a.timestamp, want_ts(tp.partition))
    return ("beginning/end_offsets, %d offsets_for_times lookups, list_partition_offsets "
            "earliest/latest/max_timestamp on 3 partitions agree" % (3 * len(cases)))


def consume_from_offset(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    per = 100
    records = make_records(3 * per, seed=11)
    produced = produce(ctx, topic, records, partitions=[i % 3 for i in range(len(records))])
    expected = lab.check_produced_dense(produced)
    # An offset in the middle, the first (explicitly, not "beginning") and
    # the last of each partition.
    starts = {0: 37, 1: 0, 2: per - 1}
    c = consumer(ctx, None)
    try:
        got = read_assigned(ctx, topic, dict(starts), {p: per for p in range(3)}, c)
        lab.compare({p: v[starts[p]:] for p, v in expected.items()}, got, "assign at offset:")
        # Then seek an assigned partition back and read from there again.
        c.seek(TopicPartition(topic, 0), 5)
        again = poll_until_ends(c, {0: per})
        lab.compare({0: expected[0][5:]}, {0: again.get(0, [])}, "after seek to 5:")
        extra = {p: v for p, v in again.items() if p != 0 and v}
        expect(not extra, "after seek on partition 0, also read partitions %s", sorted(extra))
    finally:
        c.close()
    return "assigned at 37/0/99 read %s records, seek to 5 read %d, all equal" % (
        lab.counts(got), per - 5)


def group_commit_resume(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic, group = ctx.name(), ctx.name("group")
    create_topic(ctx, admin, topic)
    per = 60
    records = make_records(3 * per, seed=13)
    produced = produce(ctx, topic, records, partitions=[i % 3 for i in range(len(records))])
    expected = lab.check_produced_dense(produced)
    mid = {0: 20, 1: 35, 2: 50}
    tps = {p: TopicPartition(topic, p) for p in mid}

    first = consumer(ctx, group)
    try:
        first.subscribe([topic])
        got = poll_until_ends(first, mid)
        # The first member read from the start; it may have read past mid.
        for p, v in got.items():
            lab.compare({p: expected[p][:len(v)]}, {p: v}, "first member:")
        first.commit(offsets={tps[p]: OffsetAndMetadata(off, "", -1) for p, off in mid.items()},
                     timeout_ms=STEP_MS)
        back = {p: first.committed(tp, timeout_ms=STEP_MS) for p, tp in tps.items()}
        expect(back == mid, "committed() after commit: %s, want %s", back, mid)
    finally:
        first.close()

    second = consumer(ctx, group)
    try:
        second.subscribe([topic])
        rest = poll_until_ends(second, {p: per for p in range(3)})
    finally:
        second.close()
    lab.compare({p: expected[p][mid[p]:] for p in range(3)}, rest, "second member:")
    return "first member committed %s; second resumed there and read %s records" % (
        "/".join(str(mid[p]) for p in range(3)), lab.counts(rest))


def group_rebalance(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic, group = ctx.name(), ctx.name("group")
    create_topic(ctx, admin, topic, partitions=4)

    class Member(lab.GroupMember):
        def open(self):
            c = consumer(ctx, group, client_id="compat-python-rebalance-" + self.tag)
            c.subscribe([topic])
            return c

        def poll(self, c):
            batch = c.poll(timeout_ms=200, max_records=200)
            return (frozenset(tp.partition for tp in c.assignment()),
                    [to_placed(m) for msgs in batch.values() for m in msgs])

    return lab.group_rebalance(
        [Member("a"), Member("b")], make_records(400, seed=17),
        lambda records, partitions: produce(ctx, topic, records, partitions=partitions))


def admin_topics(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic, partitions=2, configs={"retention.ms": "4321000"})

    try:
        admin.create_topics({topic: {"num_partitions": 2, "replication_factor": 1}}, timeout_ms=30_000)
        raise Failure("creating %s a second time succeeded, want TopicAlreadyExistsError" % topic)
    except Errors.TopicAlreadyExistsError:
        pass

    listed = admin.list_topics()
    expect(topic in listed, "list_topics: %s not among %d topics", topic, len(listed))

    def describe() -> dict:
        found = [t for t in admin.describe_topics([topic]) if t["name"] == topic]
        expect(len(found) == 1, "describe_topics: %d entries for %s", len(found), topic)
        expect(found[0]["error_code"] == 0, "describe_topics: error code %d", found[0]["error_code"])
        return found[0]
    desc = describe()
    parts = sorted(desc["partitions"], key=lambda p: p["partition_index"])
    expect([p["partition_index"] for p in parts] == [0, 1],
           "describe_topics: partitions %s, want [0, 1]", [p["partition_index"] for p in parts])
    for p in parts:
        expect(p["leader_id"] >= 0 and len(p["replica_nodes"]) == 1 and len(p["isr_nodes"]) == 1,
               "describe_topics partition %d: leader %s, replicas %s, isr %s; want a leader, 1 replica in sync",
               p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])

    configs = admin.describe_configs([ConfigResource("TOPIC", topic)], config_filter="all")
    retention = configs.get("topic", {}).get(topic, {}).get("retention.ms")
    expect(retention is not None and retention["value"] == "4321000",
           "retention.ms after create with 4321000: %s", retention)

    admin.create_partitions({topic: 4}, timeout_ms=30_000)
    wait_until("describe_topics to show 4 partitions", lambda: len(describe()["partitions"]) == 4)
    # A new partition takes records.
    placed = produce(ctx, topic, make_records(1, seed=19), partitions=[3])
    expect(placed[0].partition == 3 and placed[0].offset == 0,
           "produce to new partition 3: landed at %d/%d, want 3/0", placed[0].partition, placed[0].offset)

    admin.delete_topics([topic], timeout_ms=30_000)
    wait_until("%s to leave list_topics" % topic, lambda: topic not in admin.list_topics())
    return "created with retention.ms, duplicate refused, listed, described, 2->4 partitions, deleted"


def admin_configs(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    resource = lambda configs=None: ConfigResource("TOPIC", topic, configs)  # noqa: E731

    def describe() -> dict:
        out = admin.describe_configs([resource()], config_filter="all")
        entries = out.get("topic", {}).get(topic)
        expect(entries is not None, "describe_configs: no entry for topic %s in %s", topic, list(out))
        return entries

    def retention() -> dict:
        return describe()["retention.ms"]

    before = describe()
    wanted = ["cleanup.policy", "retention.ms", "segment.bytes", "max.message.bytes",
              "min.insync.replicas", "compression.type"]
    missing = [k for k in wanted if k not in before]
    expect(not missing, "describe_configs lacks %s (has %d entries)", missing, len(before))
    original = before["retention.ms"]
    expect(original["config_source"] != "DYNAMIC_TOPIC_CONFIG",
           "retention.ms of a new topic: source %s, want a default", original["config_source"])
    expect(before["cleanup.policy"]["value"] == "delete",
           "cleanup.policy of a new topic: %s, want delete", before["cleanup.policy"]["value"])

    def check(result: dict, what: str) -> None:
        status = result.get("topic", {}).get(topic)
        expect(status == "OK", "%s: %s", what, status)

    def reads_back(value: str):
        return lambda: (lambda e: e["value"] == value and e)(retention())

    # IncrementalAlterConfigs SET (kafka-python picks it when the broker has it).
    check(admin.alter_configs([resource({"retention.ms": "7200000"})], incremental=True),
          "incremental alter_configs SET retention.ms")
    e = wait_until("retention.ms to read back 7200000", reads_back("7200000"))
    expect(e["config_source"] == "DYNAMIC_TOPIC_CONFIG",
           "retention.ms after SET: source %s, want DYNAMIC_TOPIC_CONFIG", e["config_source"])
    # The legacy AlterConfigs, which replaces the topic's whole override set.
    check(admin.alter_configs([resource({"retention.ms": "3600000"})], incremental=False),
          "legacy alter_configs retention.ms")
    wait_until("retention.ms to read back 3600000", reads_back("3600000"))
    # IncrementalAlterConfigs DELETE: back to the default.
    check(admin.reset_configs([resource(["retention.ms"])], incremental=True),
          "reset_configs (incremental DELETE) retention.ms")
    reset = wait_until("retention.ms to read back its default %s" % original["value"],
                       reads_back(original["value"]))
    expect(reset["config_source"] != "DYNAMIC_TOPIC_CONFIG",
           "retention.ms after DELETE: source %s, want a default", reset["config_source"])
    return "retention.ms %s (%s) -> incremental SET 7200000 -> legacy SET 3600000 -> DELETE -> %s (%s)" % (
        original["value"], original["config_source"], reset["value"], reset["config_source"])


def admin_groups(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic, group = ctx.name(), ctx.name("group")
    create_topic(ctx, admin, topic)
    per = 10
    records = make_records(3 * per, seed=23)
    produce(ctx, topic, records, partitions=[i % 3 for i in range(len(records))])
    commits = {0: 3, 1: 5, 2: 7}

    def listed() -> Optional[dict]:
        return next((g for g in admin.list_groups() if g["group_id"] == group), None)

    def describe() -> dict:
        d = admin.describe_groups([group]).get(group)
        expect(d is not None, "describe_groups: no entry for %s", group)
        expect(d["error"] is None, "describe_groups %s: %s", group, d["error"])
        return d

    member = consumer(ctx, group, client_id="compat-python-admin-groups")
    closed = False
    try:
        member.subscribe([topic])
        poll_until_ends(member, {p: per for p in range(3)})
        member.commit(offsets={TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                               for p, o in commits.items()}, timeout_ms=STEP_MS)

        g = wait_until("list_groups to show %s" % group, listed)
        expect(g.get("protocol_type") == "consumer", "list_groups: %s protocol type %r, want consumer",
               group, g.get("protocol_type"))
        expect(g.get("group_state") == "Stable", "list_groups: %s state %r, want Stable",
               group, g.get("group_state"))

        d = describe()
        expect(d["group_state"] == "Stable", "describe_groups: state %r, want Stable", d["group_state"])
        expect(d["protocol_type"] == "consumer", "describe_groups: protocol type %r", d["protocol_type"])
        expect(bool(d["protocol_data"]), "describe_groups: no assignor (protocol data) named")
        expect(len(d["members"]) == 1, "describe_groups: %d members, want 1", len(d["members"]))
        m = d["members"][0]
        expect(m["client_id"] == "compat-python-admin-groups", "describe_groups: member client id %r",
               m["client_id"])
        # describe_groups decodes the member's assignment (the consumer
        # protocol's bytes) into a dict.
        assignment = m["member_assignment"]
        parts = sorted((t["topic"], p) for t in assignment.get("assigned_partitions", [])
                       for p in t["partitions"]) if isinstance(assignment, dict) else None
        expect(parts == [(topic, p) for p in range(3)], "describe_groups: member assignment %s, want %s 0-2",
               assignment, topic)

        offsets = admin.list_group_offsets(group).get(group, {})
        have = {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic}
        expect(have == commits, "list_group_offsets: %s, want %s", have, commits)

        # A group with a member cannot be deleted.
        res = admin.delete_groups([group])
        expect(res.get(group) == "NonEmptyGroupError",
               "delete_groups with a member: %s, want NonEmptyGroupError", res)

        member.close()
        closed = True
        empty = wait_until("the group to be Empty after its member left",
                           lambda: (lambda d: d["group_state"] == "Empty" and d)(describe()))
        expect(not empty["members"], "describe after leave: %d members", len(empty["members"]))
    finally:
        if not closed:
            member.close()

    res = admin.delete_groups([group])
    expect(res.get(group) == "OK", "delete_groups: %s", res)
    wait_until("%s to leave list_groups" % group, lambda: listed() is None)
    return "listed Stable, described (1 member, 3 partitions), offsets %s, delete refused while active, deleted when Empty" % (
        "/".join(str(commits[p]) for p in range(3)))


# ---------------------------------------------------------------------------
# Transactions

def txn_producer(ctx: Context, txn_id: str) -> KafkaProducer:
    """A transactional producer, its transactions initialized (InitProducerId)."""
    config = base_config(ctx)
    config.update({"transactional_id": txn_id, "enable_idempotence": True, "acks": "all",
                   "linger_ms": 10, "max_block_ms": STEP_MS, "transaction_timeout_ms": 60_000})
    producer = KafkaProducer(**config)
    try:
        producer.init_transactions()
    except Errors.KafkaError as e:
        producer.close(timeout=10)
        raise Failure("init_transactions (FindCoordinator, InitProducerId) for transactional_id %s: %s: %s"
                      % (txn_id, type(e).__name__, e))
    return producer


def ends_after(placed: Sequence[Placed]) -> Dict[int, int]:
    """Per partition, the offset after the last of the placed records."""
    ends: Dict[int, int] = {}
    for x in placed:
        ends[x.partition] = max(ends.get(x.partition, 0), x.offset + 1)
    return ends


def read_isolated(ctx: Context, topic: str, isolation: str, ends: Dict[int, int]) -> Dict[int, List[Placed]]:
    c = consumer(ctx, None, isolation_level=isolation)
    try:
        return read_assigned(ctx, topic, {p: None for p in ends}, ends, c)
    finally:
        c.close()


def txn_commit_read_committed(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    records = make_records(150, seed=61)
    producer = txn_producer(ctx, ctx.name("txn"))
    try:
        producer.begin_transaction()
        expected = lab.check_produced_dense(send(producer, topic, records, [i % 3 for i in range(len(records))]))
        producer.commit_transaction()
    finally:
        producer.close(timeout=10)
    got = read_isolated(ctx, topic, "read_committed", {p: len(v) for p, v in expected.items()})
    lab.compare(expected, got, "read_committed:")
    return "%d records (%s per partition) in one transaction, read exactly by read_committed" % (
        len(records), lab.counts(expected))


def txn_abort_invisible(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    base = lab.now_ms() - 600_000
    parts = [i % 3 for i in range(60)]
    producer = txn_producer(ctx, ctx.name("txn"))
    try:
        producer.begin_transaction()
        first = send(producer, topic, lab.make_records(60, 62, base, null_header=False), parts)
        producer.abort_transaction()
        producer.begin_transaction()
        second = send(producer, topic, lab.make_records(60, 63, base + 60, null_header=False), parts)
        producer.commit_transaction()
    finally:
        producer.close(timeout=10)
    ends = ends_after(second)
    got = read_isolated(ctx, topic, "read_committed", ends)
    lab.compare(lab.by_partition(second), got, "read_committed:")
    got_all = read_isolated(ctx, topic, "read_uncommitted", ends)
    lab.compare(lab.by_partition(list(first) + list(second)), got_all, "read_uncommitted:")
    return "aborted 60, committed 60: read_committed read the committed %s, read_uncommitted all %s" % (
        lab.counts(got), lab.counts(got_all))


def transform(placed: Placed) -> Record:
    """The consume-transform-produce scenario's transform: the value prefixed
    with t: (a null value stays null), a header naming the input record."""
    r = placed.record
    value = None if r.value is None else b"t:" + r.value
    return Record(r.key, value, r.headers + (("from", b"%d/%d" % (placed.partition, placed.offset)),),
                  r.timestamp)


def txn_consume_transform_produce(ctx: Context) -> str:
    admin = admin_client(ctx)
    source, sink, group = ctx.name("in"), ctx.name("out"), ctx.name("group")
    create_topic(ctx, admin, source)
    create_topic(ctx, admin, sink)
    per_run = 60
    output: List[Placed] = []
    for run in (1, 2):
        start, end = (run - 1) * per_run // 3, run * per_run // 3
        batch = lab.make_records(per_run, 63 + run, lab.now_ms() - 600_000, null_header=False)
        lab.check_produced_dense(produce(ctx, source, batch, partitions=[i % 3 for i in range(per_run)]),
                                 start=start)
        member = consumer(ctx, group, client_id="compat-python-ctp-%d" % run)
        producer = txn_producer(ctx, ctx.name("txn"))
        try:
            member.subscribe([source])
            read = poll_until_ends(member, {p: end for p in range(3)})
            for p, v in read.items():
                expect(v and v[0].offset == start, "run %d: the member read partition %d from offset %s, want %d "
                       "(where the previous transaction committed)", run, p, v[0].offset if v else None, start)
            producer.begin_transaction()
            placed = send(producer, sink, [transform(x) for p in range(3) for x in read[p]],
                          [p for p in range(3) for _ in read[p]])
            producer.send_offsets_to_transaction(
                {TopicPartition(source, p): OffsetAndMetadata(end, "", -1) for p in range(3)},
                member.group_metadata())
            producer.commit_transaction()
            output += placed
        finally:
            member.close()
            producer.close(timeout=10)

        def committed_offsets():
            offsets = admin.list_group_offsets(group).get(group, {})
            return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == source}
        wait_until("run %d: the group's committed offsets to be %d per partition" % (run, end),
                   lambda: committed_offsets() == {p: end for p in range(3)})
    got = read_isolated(ctx, sink, "read_committed", ends_after(output))
    lab.compare(lab.by_partition(output), got, "output (read_committed):")
    return "2 runs of %d inputs, each transformed with its offsets in one transaction; committed 20 then 40 " \
        "per partition; output %s holds each input once" % (per_run, lab.counts(got))


def txn_fencing(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic, txn_id = ctx.name(), ctx.name("txn")
    create_topic(ctx, admin, topic)
    base = lab.now_ms() - 600_000
    parts = [i % 3 for i in range(30)]
    a = txn_producer(ctx, txn_id)
    a.begin_transaction()
    send(a, topic, lab.make_records(30, 66, base, null_header=False), parts)
    b = txn_producer(ctx, txn_id)
    try:
        b.begin_transaction()
        from_b = send(b, topic, lab.make_records(30, 67, base + 30, null_header=False), parts)
        b.commit_transaction()
    finally:
        b.close(timeout=10)
    try:
        a.commit_transaction()
        raise Failure("producer A committed after producer B initialized with its transactional_id; want fenced")
    except (Errors.ProducerFencedError, Errors.InvalidProducerEpochError) as e:
        fenced = type(e).__name__
    except Errors.KafkaError as e:
        raise Failure("producer A's commit after B took over: %s: %s, want ProducerFencedError" % (type(e).__name__, e))
    finally:
        a.close(timeout=10)
    got = read_isolated(ctx, topic, "read_committed", ends_after(from_b))
    lab.compare(lab.by_partition(from_b), got, "read_committed:")
    return "A fenced by B's init_transactions (commit failed with %s); read_committed read B's %s only" % (
        fenced, lab.counts(got))


SCENARIOS = [("produce-consume-" + c, produce_consume(c)) for c in lab.CODECS] + [
    ("idempotent-producer", idempotent_producer),
    ("list-offsets", list_offsets),
    ("consume-from-offset", consume_from_offset),
    ("group-commit-resume", group_commit_resume),
    ("group-rebalance", group_rebalance),
    ("admin-topics", admin_topics),
    ("admin-configs", admin_configs),
    ("admin-groups", admin_groups),
    ("txn-commit-read-committed", txn_commit_read_committed),
    ("txn-abort-invisible", txn_abort_invisible),
    ("txn-consume-transform-produce", txn_consume_transform_produce),
    ("txn-fencing", txn_fencing),
]

if __name__ == "__main__":
    # kafka-python logs through logging; warnings and up go to the scenario's
    # log, everything with COMPAT_DEBUG set.
    logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        level=logging.DEBUG if os.environ.get("COMPAT_DEBUG") else logging.WARNING)
    raise SystemExit(lab.main(CLIENT, "kp", version, SCENARIOS))
