"""The python suite's scenarios for confluent-kafka (librdkafka).

Run by run.sh as `confluent_suite.py BOOTSTRAP`; see lab.py for the harness
and compat-tests/README.md for what each scenario name promises.
"""

from __future__ import annotations

import os
import time
from typing import Dict, List, Optional, Sequence

import confluent_kafka
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME, Consumer, ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType,
    IsolationLevel, KafkaError, KafkaException, Producer, TopicCollection, TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
    NewPartitions, NewTopic, OffsetSpec, ResourceType,
)

import lab
from lab import Context, Failure, Placed, Record, expect, wait_until

CLIENT = "confluent-kafka"


def version() -> str:
    # version() is a plain string in 2.x, libversion() a (string, int) pair.
    v = confluent_kafka.version()
    lib = confluent_kafka.libversion()
    return "%s (librdkafka %s)" % (v[0] if isinstance(v, tuple) else v,
                                   lib[0] if isinstance(lib, tuple) else lib)


# ---------------------------------------------------------------------------
# Clients

# librdkafka's names for lab.security()'s settings.
SECURITY_KEYS = {
    "protocol": "security.protocol",
    "ca": "ssl.ca.location",
    "cert": "ssl.certificate.location",
    "key": "ssl.key.location",
    "mechanism": "sasl.mechanisms",
    "user": "sasl.username",
    "password": "sasl.password",
}


def base_config(ctx: Context) -> dict:
    conf = {
        "bootstrap.servers": ctx.bootstrap,
        "client.id": "compat-python-" + ctx.scenario,
        # librdkafka logs to stderr, which is the scenario's log file.
        "error_cb": _error_cb,
    }
    # COMPAT_DEBUG=protocol,broker (librdkafka debug contexts) for diagnosis.
    if os.environ.get("COMPAT_DEBUG"):
        conf["debug"] = os.environ["COMPAT_DEBUG"]
    conf.update(lab.security_config(SECURITY_KEYS))
    return conf


# Fatal errors (an idempotent producer that lost its producer id, say) are
# recorded here and fail the scenario; the others are only logged, since
# librdkafka reports transient ones (a connection refused and retried) too.
_fatal_errors: List[str] = []


def _error_cb(err: KafkaError) -> None:
    print("librdkafka error: %s" % err, flush=True)
    if err.fatal():
        _fatal_errors.append(str(err))


def check_no_fatal() -> None:
    expect(not _fatal_errors, "fatal client error: %s", "; ".join(_fatal_errors))


def admin_client(ctx: Context) -> AdminClient:
    return AdminClient(base_config(ctx))


def future_result(fut, what: str):
    """The result of an admin future, bounded; a KafkaException names the error."""
    try:
        return fut.result(timeout=lab.STEP_TIMEOUT)
    except KafkaException as e:
        raise Failure("%s: %s" % (what, e.args[0] if e.args else e))
    except TimeoutError:
        raise Failure("%s: no answer within %.0fs" % (what, lab.STEP_TIMEOUT))


def create_topic(ctx: Context, admin: AdminClient, name: str, partitions: int = 3,
                 config: Optional[Dict[str, str]] = None) -> None:
    """Creates a topic and waits until its metadata shows every partition led."""
    fs = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                       config=config or {})],
                             operation_timeout=30, request_timeout=lab.STEP_TIMEOUT)
    future_result(fs[name], "create topic %s" % name)

    def ready():
        md = admin.list_topics(topic=name, timeout=10).topics.get(name)
        return (md is not None and md.error is None and len(md.partitions) == partitions
                and all(p.leader >= 0 for p in md.partitions.values()))
    wait_until("topic %s with %d led partitions in metadata" % (name, partitions), ready)
    ctx.log("created topic %s (%d partitions, config %s)", name, partitions, config)


def produce(ctx: Context, topic: str, records: Sequence[Record],
            partitions: Optional[Sequence[int]] = None, **conf) -> List[Placed]:
    """Produces records (to partitions[i] when given, else by key) with acks=all.

    Returns each record with the partition and offset its delivery report
    gave, in produce order; fails on any delivery error.
    """
    config = base_config(ctx)
    config.update({"acks": "all", "linger.ms": 10, "enable.idempotence": False})
    config.update(conf)
    return send(Producer(config), topic, records, partitions)


def send(producer: Producer, topic: str, records: Sequence[Record],
         partitions: Optional[Sequence[int]] = None) -> List[Placed]:
    """Produces records with producer (to partitions[i] when given, else by
    key), flushes, and returns each record with the partition and offset its
    delivery report gave, in produce order; fails on any delivery error.
    """
    reports: List[Optional[Placed]] = [None] * len(records)
    errors: List[str] = []

    def on_delivery(i: int):
        def cb(err, msg):
            if err is not None:
                errors.append("record %d: %s" % (i, err))
            else:
                reports[i] = Placed(msg.partition(), msg.offset(), records[i])
        return cb

    for i, r in enumerate(records):
        kwargs = {}
        if partitions is not None:
            kwargs["partition"] = partitions[i]
        while True:
            try:
                producer.produce(topic, key=r.key, value=r.value, headers=list(r.headers),
                                 timestamp=r.timestamp, on_delivery=on_delivery(i), **kwargs)
                break
            except BufferError:  # local queue full: serve delivery reports, retry
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(lab.STEP_TIMEOUT)
    check_no_fatal()
    expect(not errors, "delivery failed (%d records): %s", len(errors), errors[0] if errors else "")
    expect(left == 0, "%d of %d records not delivered within %.0fs", left, len(records), lab.STEP_TIMEOUT)
    missing = [i for i, p in enumerate(reports) if p is None]
    expect(not missing, "no delivery report for %d records (first %s)", len(missing), missing[:1])
    return list(reports)  # type: ignore[arg-type]


def to_record(msg) -> Record:
    ts_type, ts = msg.timestamp()
    if ts_type != TIMESTAMP_CREATE_TIME:
        raise Failure("partition %d offset %d: timestamp type %d, want CreateTime (%d)"
                      % (msg.partition(), msg.offset(), ts_type, TIMESTAMP_CREATE_TIME))
    return Record(msg.key(), msg.value(), tuple(msg.headers() or ()), ts)


def consumer(ctx: Context, group: str, **conf) -> Consumer:
    config = base_config(ctx)
    config.update({"group.id": group, "enable.auto.commit": False,
                   "auto.offset.reset": "earliest"})
    config.update(conf)
    return Consumer(config)


def read_assigned(ctx: Context, topic: str, starts: Dict[int, int], ends: Dict[int, int],
                  c: Optional[Consumer] = None) -> Dict[int, List[Placed]]:
    """Assigns the partitions at starts (offsets, or OFFSET_BEGINNING) and reads
    until every partition has reached its end offset.

    The assign-only consumer still needs a group.id (librdkafka insists); it
    never commits, so the group stays empty.
    """
    own = c is None
    if c is None:
        c = consumer(ctx, ctx.name("reader"))
    try:
        c.assign([TopicPartition(topic, p, off) for p, off in starts.items()])
        return poll_until_ends(c, ends)
    finally:
        if own:
            c.close()


def poll_until_ends(c: Consumer, ends: Dict[int, int], timeout: float = lab.STEP_TIMEOUT
                    ) -> Dict[int, List[Placed]]:
    got: Dict[int, List[Placed]] = {p: [] for p in ends}
    deadline = time.monotonic() + timeout

    def done() -> bool:
        return all((got[p][-1].offset + 1 if got[p] else -1) >= end or end == 0
                   for p, end in ends.items())

    while not done():
        if time.monotonic() > deadline:
            raise Failure("read timed out after %.0fs: reached %s of end offsets %s"
                          % (timeout, {p: (v[-1].offset + 1 if v else None) for p, v in got.items()}, ends))
        for msg in c.consume(num_messages=500, timeout=0.5):
            if msg.error():
                raise Failure("consume error: %s" % msg.error())
            got.setdefault(msg.partition(), []).append(Placed(msg.partition(), msg.offset(), to_record(msg)))
    check_no_fatal()
    return got


# ---------------------------------------------------------------------------
# Scenarios

def produce_consume(codec: str):
    def scenario(ctx: Context) -> str:
        admin = admin_client(ctx)
        topic = ctx.name()
        create_topic(ctx, admin, topic)
        records = lab.make_records(300, seed=1 + lab.CODECS.index(codec))
        produced = produce(ctx, topic, records, **{"compression.type": codec})
        expected = lab.check_produced_dense(produced)
        expect(len(expected) == 3, "records went to %d partitions, want all 3", len(expected))
        got = read_assigned(ctx, topic, {p: confluent_kafka.OFFSET_BEGINNING for p in range(3)},
                            {p: len(expected[p]) for p in range(3)})
        lab.compare(expected, got)
        return "%d records (%s per partition), %s, read back equal" % (
            len(records), lab.counts(expected), codec)
    return scenario


def idempotent_producer(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    records = lab.make_records(1000, seed=7)
    # Small batches and several in flight, so that the producer id and
    # sequence numbers are exercised across many requests per partition.
    produced = produce(ctx, topic, records, **{
        "enable.idempotence": True, "acks": "all", "max.in.flight.requests.per.connection": 5,
        "linger.ms": 2, "batch.num.messages": 50})
    expected = lab.check_produced_dense(produced)
    got = read_assigned(ctx, topic, {p: confluent_kafka.OFFSET_BEGINNING for p in expected},
                        {p: len(v) for p, v in expected.items()})
    lab.compare(expected, got)
    c = consumer(ctx, ctx.name("reader"))
    try:
        for p, v in expected.items():
            marks = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
            expect(marks == (0, len(v)), "partition %d watermarks %s, want (0, %d)", p, marks, len(v))
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
        for i, r in enumerate(lab.make_records(per, seed=100 + p)):
            ts = base + 500_000 + p if i == 25 else base + 10 * i + p
            records.append(Record(r.key, r.value, r.headers, ts))
            parts.append(p)
    produced = produce(ctx, topic, records, partitions=parts)
    lab.check_produced_dense(produced)

    def ts(p: int, i: int) -> int:
        return base + 10 * i + p

    c = consumer(ctx, ctx.name("reader"))
    try:
        for p in range(3):
            marks = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)
            expect(marks == (0, per), "get_watermark_offsets partition %d: %s, want (0, %d)", p, marks, per)
        # offsets_for_times, one lookup per partition and call (a partition
        # named twice in one request is not a question brokers answer):
        # (target timestamp of partition p, expected offset, why).
        cases = [
            (lambda p: ts(p, 7), 7, "exact timestamp of offset 7"),
            (lambda p: ts(p, 7) + 5, 8, "between offsets 7 and 8"),
            (lambda p: base - 60_000, 0, "before every record"),
            (lambda p: ts(p, 30) + 5, 25, "after offset 30, below offset 25's later timestamp"),
            (lambda p: base + 600_000, confluent_kafka.OFFSET_END, "after every record"),
        ]
        for target, want, why in cases:
            asked = [TopicPartition(topic, p, target(p)) for p in range(3)]
            answers = c.offsets_for_times(asked, timeout=30)
            for q, a in zip(asked, answers):
                expect(a.error is None and a.partition == q.partition and a.offset == want,
                       "offsets_for_times partition %d ts %d (%s): offset %d error %s, want %d",
                       q.partition, q.offset, why, a.offset, a.error, want)
    finally:
        c.close()

    # AdminClient.list_offsets takes one spec per partition, so one call per
    # kind: (kind, spec of partition p, expected offset, expected timestamp
    # or None where the answer carries none).
    kinds = [
        ("earliest", lambda p: OffsetSpec.earliest(), lambda p: 0, None),
        ("latest", lambda p: OffsetSpec.latest(), lambda p: per, None),
        ("for_timestamp", lambda p: OffsetSpec.for_timestamp(ts(p, 20)), lambda p: 20, lambda p: ts(p, 20)),
        ("max_timestamp", lambda p: OffsetSpec.max_timestamp(), lambda p: 25, lambda p: base + 500_000 + p),
    ]
    for kind, spec, want, want_ts in kinds:
        fs = admin.list_offsets({TopicPartition(topic, p): spec(p) for p in range(3)},
                                request_timeout=lab.STEP_TIMEOUT)
        for tp, fut in fs.items():
            p = tp.partition
            info = future_result(fut, "list_offsets %s partition %d" % (kind, p))
            expect(info.offset == want(p), "list_offsets %s partition %d: offset %d, want %d",
                   kind, p, info.offset, want(p))
            if want_ts is not None:
                expect(info.timestamp == want_ts(p), "list_offsets %s partition %d: timestamp %d, want %d",
                       kind, p, info.timestamp, want_ts(p))
    return ("watermarks, %d offsets_for_times lookups, list_offsets earliest/latest/"
            "for_timestamp/max_timestamp on 3 partitions agree" % (3 * len(cases)))


def consume_from_offset(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    per = 100
    records = lab.make_records(3 * per, seed=11)
    parts = [i % 3 for i in range(len(records))]
    produced = produce(ctx, topic, records, partitions=parts)
    expected = lab.check_produced_dense(produced)
    # An offset in the middle, the first (explicitly, not "beginning") and
    # the last of each partition.
    starts = {0: 37, 1: 0, 2: per - 1}
    c = consumer(ctx, ctx.name("reader"))
    try:
        got = read_assigned(ctx, topic, starts, {p: per for p in range(3)}, c)
        lab.compare({p: v[starts[p]:] for p, v in expected.items()}, got, "assign at offset:")
        # Then seek an assigned partition back and read from there again.
        c.seek(TopicPartition(topic, 0, 5))
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
    records = lab.make_records(3 * per, seed=13)
    produced = produce(ctx, topic, records, partitions=[i % 3 for i in range(len(records))])
    expected = lab.check_produced_dense(produced)
    mid = {0: 20, 1: 35, 2: 50}

    first = consumer(ctx, group)
    try:
        first.subscribe([topic])
        got = poll_until_ends(first, mid)
        # The first member read from the start; it may have read past mid.
        for p, v in got.items():
            lab.compare({p: expected[p][:len(v)]}, {p: v}, "first member:")
        committed = first.commit(offsets=[TopicPartition(topic, p, off) for p, off in mid.items()],
                                 asynchronous=False)
        bad = [tp for tp in committed if tp.error is not None]
        expect(not bad, "commit: %s", [(tp.partition, str(tp.error)) for tp in bad])
        back = first.committed([TopicPartition(topic, p) for p in mid], timeout=30)
        expect({tp.partition: tp.offset for tp in back} == mid,
               "committed() after commit: %s, want %s", {tp.partition: tp.offset for tp in back}, mid)
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
            c = consumer(ctx, group, **{"client.id": "compat-python-rebalance-" + self.tag})
            c.subscribe([topic])
            return c

        def poll(self, c):
            msgs = c.consume(num_messages=200, timeout=0.2)
            for m in msgs:
                if m.error():
                    raise KafkaException(m.error())
            return (frozenset(tp.partition for tp in c.assignment()),
                    [Placed(m.partition(), m.offset(), to_record(m)) for m in msgs])

    return lab.group_rebalance(
        [Member("a"), Member("b")], lab.make_records(400, seed=17),
        lambda records, partitions: produce(ctx, topic, records, partitions=partitions))


def admin_topics(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic, partitions=2, config={"retention.ms": "4321000"})

    fs = admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)],
                             request_timeout=lab.STEP_TIMEOUT)
    try:
        fs[topic].result(timeout=lab.STEP_TIMEOUT)
        raise Failure("creating %s a second time succeeded, want TOPIC_ALREADY_EXISTS" % topic)
    except KafkaException as e:
        code = e.args[0].code()
        expect(code == KafkaError.TOPIC_ALREADY_EXISTS,
               "creating an existing topic: %s, want TOPIC_ALREADY_EXISTS", e.args[0])

    listed = admin.list_topics(timeout=30).topics
    expect(topic in listed, "list_topics: %s not among %d topics", topic, len(listed))

    def describe():
        return future_result(admin.describe_topics(TopicCollection([topic]),
                                                   request_timeout=lab.STEP_TIMEOUT)[topic],
                             "describe_topics %s" % topic)
    desc = describe()
    expect(desc.name == topic, "describe_topics: name %s, want %s", desc.name, topic)
    expect(sorted(p.id for p in desc.partitions) == [0, 1],
           "describe_topics: partitions %s, want [0, 1]", [p.id for p in desc.partitions])
    for p in desc.partitions:
        expect(p.leader is not None and len(p.replicas) == 1 and len(p.isr) == 1,
               "describe_topics partition %d: leader %s, replicas %s, isr %s; want a leader, 1 replica in sync",
               p.id, p.leader, p.replicas, p.isr)

    res = ConfigResource(ResourceType.TOPIC, topic)
    configs = future_result(admin.describe_configs([res], request_timeout=lab.STEP_TIMEOUT)[res],
                            "describe_configs %s" % topic)
    retention = configs.get("retention.ms")
    expect(retention is not None and retention.value == "4321000",
           "retention.ms after create with 4321000: %s", retention and retention.value)

    fs = admin.create_partitions([NewPartitions(topic, 4)], request_timeout=lab.STEP_TIMEOUT)
    future_result(fs[topic], "create_partitions %s to 4" % topic)
    wait_until("describe_topics to show 4 partitions", lambda: len(describe().partitions) == 4)
    # A new partition takes records.
    placed = produce(ctx, topic, lab.make_records(1, seed=19), partitions=[3])
    expect(placed[0].partition == 3 and placed[0].offset == 0,
           "produce to new partition 3: landed at %d/%d, want 3/0", placed[0].partition, placed[0].offset)

    fs = admin.delete_topics([topic], operation_timeout=30, request_timeout=lab.STEP_TIMEOUT)
    future_result(fs[topic], "delete_topics %s" % topic)
    wait_until("%s to leave list_topics" % topic,
               lambda: topic not in admin.list_topics(timeout=10).topics)
    return "created with retention.ms, duplicate refused, listed, described, 2->4 partitions, deleted"


def admin_configs(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    res = ConfigResource(ResourceType.TOPIC, topic)

    def describe() -> dict:
        return future_result(admin.describe_configs([res], request_timeout=lab.STEP_TIMEOUT)[res],
                             "describe_configs %s" % topic)

    before = describe()
    wanted = ["cleanup.policy", "retention.ms", "segment.bytes", "max.message.bytes",
              "min.insync.replicas", "compression.type"]
    missing = [k for k in wanted if k not in before]
    expect(not missing, "describe_configs lacks %s (has %d entries)", missing, len(before))
    original = before["retention.ms"]
    expect(not _is_topic_override(original),
           "retention.ms of a new topic: source %s, want a default", _source(original))
    expect(before["cleanup.policy"].value == "delete",
           "cleanup.policy of a new topic: %s, want delete", before["cleanup.policy"].value)

    def alter(op, value):
        entry = ConfigEntry("retention.ms", value, incremental_operation=op)
        fs = admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, topic,
                                                             incremental_configs=[entry])],
                                             request_timeout=lab.STEP_TIMEOUT)
        for f in fs.values():
            future_result(f, "incremental_alter_configs %s retention.ms" % op.name)

    alter(AlterConfigOpType.SET, "7200000")
    # The change may take a moment to reach the broker that answers describes.
    after = wait_until("retention.ms to read back 7200000",
                       lambda: (lambda e: e.value == "7200000" and e)(describe()["retention.ms"]))
    expect(_is_topic_override(after), "retention.ms after SET: source %s, want DYNAMIC_TOPIC_CONFIG",
           _source(after))
    alter(AlterConfigOpType.DELETE, None)
    reset = wait_until("retention.ms to read back its default %s" % original.value,
                       lambda: (lambda e: e.value == original.value and e)(describe()["retention.ms"]))
    expect(not _is_topic_override(reset), "retention.ms after DELETE: source %s, want a default",
           _source(reset))
    return "retention.ms %s (%s) -> SET 7200000 (topic override) -> DELETE -> %s (%s)" % (
        original.value, _source(original), reset.value, _source(reset))


def _is_topic_override(entry) -> bool:
    return entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def _source(entry) -> str:
    try:
        return ConfigSource(entry.source).name
    except ValueError:
        return str(entry.source)


def admin_groups(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic, group = ctx.name(), ctx.name("group")
    create_topic(ctx, admin, topic)
    per = 10
    records = lab.make_records(3 * per, seed=23)
    produce(ctx, topic, records, partitions=[i % 3 for i in range(len(records))])
    commits = {0: 3, 1: 5, 2: 7}

    member = consumer(ctx, group, **{"client.id": "compat-python-admin-groups"})
    closed = False
    try:
        member.subscribe([topic])
        poll_until_ends(member, {p: per for p in range(3)})
        done = member.commit(offsets=[TopicPartition(topic, p, o) for p, o in commits.items()],
                             asynchronous=False)
        bad = [tp for tp in done if tp.error is not None]
        expect(not bad, "commit: %s", [(tp.partition, str(tp.error)) for tp in bad])

        def listed():
            r = future_result(admin.list_consumer_groups(request_timeout=lab.STEP_TIMEOUT),
                              "list_consumer_groups")
            return next((g for g in r.valid if g.group_id == group), None)
        g = wait_until("list_consumer_groups to show %s" % group, listed)
        expect(g.state == ConsumerGroupState.STABLE and not g.is_simple_consumer_group,
               "list_consumer_groups: %s state %s simple %s, want STABLE, not simple",
               group, g.state, g.is_simple_consumer_group)

        def describe():
            return future_result(admin.describe_consumer_groups([group], request_timeout=lab.STEP_TIMEOUT)[group],
                                 "describe_consumer_groups %s" % group)
        d = describe()
        expect(d.state == ConsumerGroupState.STABLE, "describe: state %s, want STABLE", d.state)
        expect(len(d.members) == 1, "describe: %d members, want 1", len(d.members))
        m = d.members[0]
        parts = sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
        expect(parts == [(topic, p) for p in range(3)], "describe: member assignment %s, want %s 0-2",
               parts, topic)
        expect(m.client_id == "compat-python-admin-groups", "describe: member client id %r", m.client_id)
        expect(bool(d.partition_assignor), "describe: no partition assignor")
        expect(d.coordinator is not None and d.coordinator.id >= 0, "describe: coordinator %s", d.coordinator)

        offs = future_result(admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=lab.STEP_TIMEOUT)[group],
            "list_consumer_group_offsets %s" % group)
        have = {tp.partition: tp.offset for tp in offs.topic_partitions if tp.topic == topic}
        expect(have == commits, "list_consumer_group_offsets: %s, want %s", have, commits)

        # A group with a member cannot be deleted.
        fs = admin.delete_consumer_groups([group], request_timeout=lab.STEP_TIMEOUT)
        try:
            fs[group].result(timeout=lab.STEP_TIMEOUT)
            raise Failure("delete_consumer_groups of a group with a member succeeded, want NON_EMPTY_GROUP")
        except KafkaException as e:
            expect(e.args[0].code() == KafkaError.NON_EMPTY_GROUP,
                   "delete_consumer_groups with a member: %s, want NON_EMPTY_GROUP", e.args[0])

        member.close()
        closed = True
        empty = wait_until("the group to be EMPTY after its member left",
                           lambda: (lambda d: d.state == ConsumerGroupState.EMPTY and d)(describe()))
        expect(not empty.members, "describe after leave: %d members", len(empty.members))
    finally:
        if not closed:
            member.close()

    fs = admin.delete_consumer_groups([group], request_timeout=lab.STEP_TIMEOUT)
    future_result(fs[group], "delete_consumer_groups %s" % group)
    wait_until("%s to leave list_consumer_groups" % group, lambda: listed() is None)
    return "listed STABLE, described (1 member, 3 partitions), offsets %s, delete refused while active, deleted when EMPTY" % (
        "/".join(str(commits[p]) for p in range(3)))


# ---------------------------------------------------------------------------
# The consumer group protocol of KIP-848

def consumer_protocol_group(ctx: Context) -> str:
    """consumer-protocol-group: two members with group.protocol=consumer
    (ConsumerGroupHeartbeat; the broker assigns the partitions) join one
    group on a 6-partition topic and are given 3 each (uniform), none twice;
    describe_consumer_groups shows a group of type CONSUMER, STABLE, with
    those members and assignments, and list_consumer_groups filtered by type
    CONSUMER lists it. 300 records are produced only then: each member reads
    exactly those of its own partitions. Member a commits its positions and
    leaves; b is given all 6 and reads the next 300, on a's partitions from
    a's commits. b commits and leaves (the group is EMPTY, its offsets at 100
    per partition); a new member resumes exactly there and reads the 120
    records produced since.

    Against a broker without the protocol librdkafka does not report an
    error: it marks the coordinator dead and looks it up again, forever
    (logged at debug level only). So the scenario first asks each broker
    for its ApiVersions and fails at once without ConsumerGroupHeartbeat."""
    for addr, keys in lab.api_versions(ctx.bootstrap).items():
        expect(68 in keys, "broker %s does not serve ConsumerGroupHeartbeat (API key 68) in ApiVersions; "
               "librdkafka would retry the group's coordinator forever", addr)
    admin = admin_client(ctx)
    topic, group = ctx.name(), ctx.name("group")
    create_topic(ctx, admin, topic, partitions=6)
    all6 = frozenset(range(6))

    class Member(lab.GroupMember):
        def __init__(self, tag: str):
            super().__init__(tag)
            self.commit_on_stop = False
            self.committed: Dict[int, int] = {}
            self.member_id = ""

        def open(self):
            c = consumer(ctx, group, **{"group.protocol": "consumer",
                                        "client.id": "compat-python-cp-" + self.tag})
            c.subscribe([topic])
            return c

        def poll(self, c):
            msgs = c.consume(num_messages=200, timeout=0.2)
            for m in msgs:
                if m.error():
                    raise KafkaException(m.error())
            check_no_fatal()
            self.member_id = c.memberid() or ""
            return (frozenset(tp.partition for tp in c.assignment()),
                    [Placed(m.partition(), m.offset(), to_record(m)) for m in msgs])

        def finish(self, c):
            if not self.commit_on_stop:
                return
            done = c.commit(offsets=c.position(c.assignment()), asynchronous=False)
            bad = [tp for tp in done if tp.error is not None]
            expect(not bad, "commit: %s", [(tp.partition, str(tp.error)) for tp in bad])
            self.committed = {tp.partition: tp.offset for tp in done}

    def leave(m: Member) -> None:
        m.commit_on_stop = True
        m.stop.set()
        m.join(timeout=lab.STEP_TIMEOUT)
        expect(not m.is_alive(), "member %s did not close within %.0fs", m.tag, lab.STEP_TIMEOUT)
        m.state()  # raises the member's error, if any

    def describe():
        return future_result(admin.describe_consumer_groups([group], request_timeout=lab.STEP_TIMEOUT)[group],
                             "describe_consumer_groups %s" % group)

    def described(d) -> str:
        return "type %s state %s assignor %r members %s" % (
            d.type, d.state, d.partition_assignor,
            sorted((m.client_id, sorted(tp.partition for tp in m.assignment.topic_partitions)) for m in d.members))

    def wait_described(what: str, cond):
        last = []

        def check():
            d = describe()
            last[:] = [d]
            return cond(d) and d
        try:
            return wait_until("describe_consumer_groups to show %s %s" % (group, what), check)
        except Failure as e:
            raise Failure("%s; last described %s" % (e, described(last[0]) if last else "nothing"))

    def assignments(d) -> Dict[str, frozenset]:
        return {m.member_id: frozenset(tp.partition for tp in m.assignment.topic_partitions) for m in d.members}

    a, b = Member("a"), Member("b")
    try:
        for m in (a, b):
            m.start()

        def split():
            (pa, _), (pb, _) = a.state(), b.state()
            return pa and pb and not (pa & pb) and (pa | pb) == all6 and (pa, pb)
        pa, pb = wait_until("the broker to split the 6 partitions between both members", split)
        # Kafka's default server-side assignor, uniform, balances the partitions.
        expect(len(pa) == 3 and len(pb) == 3, "assignment %s / %s, want 3 partitions each", sorted(pa), sorted(pb))

        d = wait_described("STABLE with a holding %s and b %s" % (sorted(pa), sorted(pb)),
                           lambda d: d.state == ConsumerGroupState.STABLE
                           and assignments(d) == {a.member_id: pa, b.member_id: pb})
        expect(d.type == ConsumerGroupType.CONSUMER, "describe: type %s, want CONSUMER", d.type)
        expect(d.partition_assignor == "uniform", "describe: assignor %r, want 'uniform'", d.partition_assignor)
        for m in d.members:
            target = m.target_assignment and sorted(tp.partition for tp in m.target_assignment.topic_partitions)
            expect(target == sorted(tp.partition for tp in m.assignment.topic_partitions),
                   "describe: member %s target assignment %s, assignment %s", m.client_id, target,
                   sorted(tp.partition for tp in m.assignment.topic_partitions))
        listed = future_result(admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER},
                                                          request_timeout=lab.STEP_TIMEOUT),
                               "list_consumer_groups types={CONSUMER}")
        mine = [g for g in listed.valid if g.group_id == group]
        expect(len(mine) == 1 and mine[0].type == ConsumerGroupType.CONSUMER,
               "list_consumer_groups types={CONSUMER}: %s, want %s of type CONSUMER",
               [(g.group_id, str(g.type)) for g in mine], group)

        first = lab.check_produced_dense(produce(ctx, topic, lab.make_records(300, seed=31),
                                             partitions=[i % 6 for i in range(300)]))

        def read_by(n: int, *members):
            def enough():
                return sum(len(m.state()[1]) for m in members) >= n
            try:
                wait_until("%d records read" % n, enough)
            except Failure as e:
                raise Failure("%s; read %s" % (e, [len(m.state()[1]) for m in members]))
        read_by(300, a, b)
        (na, ra), (nb, rb) = a.state(), b.state()
        expect((na, nb) == (pa, pb), "assignment changed while reading: %s / %s became %s / %s",
               sorted(pa), sorted(pb), sorted(na), sorted(nb))
        for tag, recs, mine_ in (("a", ra, pa), ("b", rb, pb)):
            others = sorted({r.partition for r in recs} - mine_)
            expect(not others, "member %s read partitions %s it was not assigned (%s)", tag, others, sorted(mine_))
        lab.compare(first, lab.by_partition(ra + rb), "first 300:")

        leave(a)
        expect(a.committed == {p: 50 for p in pa}, "member a committed %s, want 50 on %s", a.committed, sorted(pa))
        wait_until("member b to hold all 6 partitions after a left", lambda: b.state()[0] == all6)
        before_b = len(rb)
        second = lab.check_produced_dense(produce(ctx, topic, lab.make_records(300, seed=32),
                                              partitions=[i % 6 for i in range(300)]), start=50)
        read_by(before_b + 300, b)
        want_b = {p: (first[p] if p in pb else []) + second[p] for p in all6}
        lab.compare(want_b, lab.by_partition(b.state()[1]), "member b after a left:")

        leave(b)
        expect(b.committed == {p: 100 for p in all6}, "member b committed %s, want 100 on each", b.committed)
        wait_described("EMPTY with no members after b left",
                       lambda d: d.state == ConsumerGroupState.EMPTY and not d.members)
        offs = future_result(admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=lab.STEP_TIMEOUT)[group],
            "list_consumer_group_offsets %s" % group)
        have = {tp.partition: tp.offset for tp in offs.topic_partitions if tp.topic == topic}
        expect(have == {p: 100 for p in all6}, "list_consumer_group_offsets: %s, want 100 on each", have)
    finally:
        for m in (a, b):
            m.stop.set()
        for m in (a, b):
            m.join(timeout=30)

    third = lab.check_produced_dense(produce(ctx, topic, lab.make_records(120, seed=33),
                                         partitions=[i % 6 for i in range(120)]), start=100)
    c = consumer(ctx, group, **{"group.protocol": "consumer", "client.id": "compat-python-cp-c"})
    try:
        c.subscribe([topic])
        rest = poll_until_ends(c, {p: 120 for p in all6})
    finally:
        c.close()
    lab.compare(third, rest, "member c (resuming at 100):")
    return ("type CONSUMER, assignor uniform: split %s / %s, 300 read once each; a committed and left, "
            "b got all 6 and read the next 300 from the commits; b committed 100 each and left (EMPTY); "
            "c resumed there and read %s" % (sorted(pa), sorted(pb), lab.counts(rest)))


# ---------------------------------------------------------------------------
# Transactions

def txn_producer(ctx: Context, txn_id: str) -> Producer:
    """A transactional producer, its transactions initialized (InitProducerId)."""
    config = base_config(ctx)
    config.update({"transactional.id": txn_id, "enable.idempotence": True, "acks": "all",
                   "linger.ms": 10, "transaction.timeout.ms": 60000})
    producer = Producer(config)
    try:
        producer.init_transactions(lab.STEP_TIMEOUT)
    except KafkaException as e:
        raise Failure("init_transactions (FindCoordinator, InitProducerId) for transactional.id %s: %s"
                      % (txn_id, e.args[0] if e.args else e))
    return producer


def isolated(ctx: Context, isolation: str) -> Consumer:
    """An assign-only consumer with the given isolation.level."""
    return consumer(ctx, ctx.name("reader-" + isolation), **{"isolation.level": isolation})


def ends_after(placed: Sequence[Placed]) -> Dict[int, int]:
    """Per partition, the offset after the last of the placed records."""
    ends: Dict[int, int] = {}
    for x in placed:
        ends[x.partition] = max(ends.get(x.partition, 0), x.offset + 1)
    return ends


def read_isolated(ctx: Context, topic: str, isolation: str, ends: Dict[int, int]) -> Dict[int, List[Placed]]:
    c = isolated(ctx, isolation)
    try:
        return read_assigned(ctx, topic, {p: confluent_kafka.OFFSET_BEGINNING for p in ends}, ends, c)
    finally:
        c.close()


def latest_offsets(admin: AdminClient, topic: str, isolation: IsolationLevel) -> Dict[int, int]:
    fs = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(3)},
                            isolation_level=isolation, request_timeout=lab.STEP_TIMEOUT)
    return {tp.partition: future_result(f, "list_offsets latest %s" % isolation.name).offset
            for tp, f in fs.items()}


def txn_commit_read_committed(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    records = lab.make_records(150, seed=61)
    parts = [i % 3 for i in range(len(records))]
    producer = txn_producer(ctx, ctx.name("txn"))
    producer.begin_transaction()
    expected = lab.check_produced_dense(send(producer, topic, records, parts))
    written = {p: len(v) for p, v in expected.items()}
    # While the transaction is open its records are written (the high
    # watermark is past them) but not stable (the last stable offset is not).
    open_hw = latest_offsets(admin, topic, IsolationLevel.READ_UNCOMMITTED)
    open_lso = latest_offsets(admin, topic, IsolationLevel.READ_COMMITTED)
    expect(open_hw == written, "open transaction: read_uncommitted latest offsets %s, want %s", open_hw, written)
    expect(open_lso == {p: 0 for p in range(3)},
           "open transaction: read_committed latest offsets %s, want 0 (nothing stable yet)", open_lso)
    producer.commit_transaction(lab.STEP_TIMEOUT)
    check_no_fatal()
    got = read_isolated(ctx, topic, "read_committed", written)
    lab.compare(expected, got, "read_committed:")
    after = latest_offsets(admin, topic, IsolationLevel.READ_COMMITTED)
    want_after = {p: n + 1 for p, n in written.items()}
    expect(after == want_after, "after the commit: read_committed latest offsets %s, want %s (records and marker)",
           after, want_after)
    return "%d records (%s per partition) in one transaction: not stable while open, read exactly after commit" % (
        len(records), lab.counts(expected))


def txn_abort_invisible(ctx: Context) -> str:
    admin = admin_client(ctx)
    topic = ctx.name()
    create_topic(ctx, admin, topic)
    base = lab.now_ms() - 600_000
    aborted = lab.make_records(60, seed=62, base_ts=base)
    committed = lab.make_records(60, seed=63, base_ts=base + 60)
    parts = [i % 3 for i in range(60)]
    producer = txn_producer(ctx, ctx.name("txn"))
    producer.begin_transaction()
    first = send(producer, topic, aborted, parts)
    producer.abort_transaction(lab.STEP_TIMEOUT)
    producer.begin_transaction()
    second = send(producer, topic, committed, parts)
    producer.commit_transaction(lab.STEP_TIMEOUT)
    check_no_fatal()
    ends = ends_after(second)
    want_committed = lab.by_partition(second)
    got = read_isolated(ctx, topic, "read_committed", ends)
    lab.compare(want_committed, got, "read_committed:")
    want_all = lab.by_partition(list(first) + list(second))
    got_all = read_isolated(ctx, topic, "read_uncommitted", ends)
    lab.compare(want_all, got_all, "read_uncommitted:")
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
    inputs = 0
    for run in (1, 2):
        batch = lab.make_records(per_run, seed=63 + run, base_ts=lab.now_ms() - 600_000 + inputs)
        lab.check_produced_dense(produce(ctx, source, batch, partitions=[i % 3 for i in range(per_run)]),
                                 start=(run - 1) * per_run // 3)
        inputs += per_run
        start, end = (run - 1) * per_run // 3, run * per_run // 3
        member = consumer(ctx, group, **{"client.id": "compat-python-ctp-%d" % run})
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
            producer.send_offsets_to_transaction([TopicPartition(source, p, end) for p in range(3)],
                                                 member.consumer_group_metadata(), lab.STEP_TIMEOUT)
            producer.commit_transaction(lab.STEP_TIMEOUT)
            check_no_fatal()
            output += placed
        finally:
            member.close()
            # Before the next run's producer takes over the transactional.id.
            producer.close()

        def committed_offsets():
            offs = future_result(admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=lab.STEP_TIMEOUT)[group],
                "list_consumer_group_offsets %s" % group)
            return {tp.partition: tp.offset for tp in offs.topic_partitions if tp.topic == source}
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
    send(a, topic, lab.make_records(30, seed=66, base_ts=base), parts)
    b = txn_producer(ctx, txn_id)
    b.begin_transaction()
    from_b = send(b, topic, lab.make_records(30, seed=67, base_ts=base + 30), parts)
    b.commit_transaction(lab.STEP_TIMEOUT)
    try:
        a.commit_transaction(lab.STEP_TIMEOUT)
        raise Failure("producer A committed after producer B initialized with its transactional.id; want fenced")
    except KafkaException as e:
        err = e.args[0]
        fenced = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
        expect(err.code() in fenced, "producer A's commit after B took over: %s, want _FENCED, PRODUCER_FENCED "
               "or INVALID_PRODUCER_EPOCH", err)
    # A's fencing is the fatal error this scenario expects; any other fails it.
    others = [f for f in _fatal_errors if "fenced" not in f.lower() and "epoch" not in f.lower()]
    expect(not others, "fatal client error besides the fencing: %s", "; ".join(others))
    _fatal_errors.clear()
    got = read_isolated(ctx, topic, "read_committed", ends_after(from_b))
    lab.compare(lab.by_partition(from_b), got, "read_committed:")
    return "A fenced by B's init_transactions (commit failed with %s); read_committed read B's %s only" % (
        err.name(), lab.counts(got))


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
    ("consumer-protocol-group", consumer_protocol_group),
]

if __name__ == "__main__":
    raise SystemExit(lab.main(CLIENT, "ck", version, SCENARIOS))
