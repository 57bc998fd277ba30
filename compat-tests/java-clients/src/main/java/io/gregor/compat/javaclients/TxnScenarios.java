package io.gregor.compat.javaclients;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.header.internals.RecordHeader;

import io.gregor.compat.javaclients.Records.Sent;

/**
 * Scenarios of transactions: a transactional producer (InitProducerId with
 * a transactional.id, AddPartitionsToTxn, EndTxn), read_committed and
 * read_uncommitted consumers, offsets committed inside a transaction
 * (AddOffsetsToTxn, TxnOffsetCommit), and fencing of a producer by a newer
 * one with the same transactional.id.
 *
 * Every blocking call is bounded by Lab.STEP_TIMEOUT: the producer's
 * max.block.ms (initTransactions, commitTransaction, abortTransaction and
 * sendOffsetsToTransaction wait at most that long) and the consumers'
 * default.api.timeout.ms.
 */
final class TxnScenarios {
    private TxnScenarios() {
    }

    private static final int PARTITIONS = 3;

    /** A transactional producer under the scenario's own transactional.id. */
    private static KafkaProducer<byte[], byte[]> txnProducer(Lab lab, String clientSuffix, String txnId) {
        return lab.producer(clientSuffix, Map.of(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId,
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 60_000));
    }

    /** A consumer with no group and the given isolation level, for assign() and seek(). */
    private static KafkaConsumer<byte[], byte[]> isolatedConsumer(Lab lab, String clientSuffix, String isolation) {
        return lab.consumer(clientSuffix, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation));
    }

    /** Reads every partition of topic from the start until each position reaches its end in ends. */
    private static Map<Integer, List<ConsumerRecord<byte[], byte[]>>> readAll(KafkaConsumer<byte[], byte[]> c,
            String topic, Map<Integer, Long> ends) throws Exception {
        List<TopicPartition> tps = partitions(topic);
        c.assign(tps);
        c.seekToBeginning(tps);
        return Records.readUntil(c, topic, ends);
    }

    /**
     * txn-commit-read-committed: 300 records over 3 partitions in one
     * transaction. While it is open, a read_committed consumer's end offsets
     * (the last stable offset) stay at 0 though the records are written; after
     * the commit it reads exactly the 300, at the offsets they were
     * acknowledged at, and the end offset is one past them (the commit marker).
     */
    static String commitReadCommitted(Lab lab) throws Exception {
        String topic = lab.name("");
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, PARTITIONS, Map.of());
        }
        List<Sent> sent = Records.generate(300, PARTITIONS, Records.baseTimestamp(), 61);
        Map<Integer, Long> ends = new HashMap<>();
        Map<TopicPartition, Long> zeros = new HashMap<>();
        Map<TopicPartition, Long> written = new HashMap<>();
        Map<TopicPartition, Long> withMarker = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            long n = Records.ofPartition(sent, p).size();
            ends.put(p, n);
            zeros.put(new TopicPartition(topic, p), 0L);
            written.put(new TopicPartition(topic, p), n);
            withMarker.put(new TopicPartition(topic, p), n + 1);
        }
        try (KafkaProducer<byte[], byte[]> producer = txnProducer(lab, "producer", lab.name("txn"));
                KafkaConsumer<byte[], byte[]> committed = isolatedConsumer(lab, "committed", "read_committed");
                KafkaConsumer<byte[], byte[]> uncommitted = isolatedConsumer(lab, "uncommitted", "read_uncommitted")) {
            lab.step("initTransactions");
            producer.initTransactions();
            producer.beginTransaction();
            lab.step("produce " + sent.size() + " records in the transaction");
            Records.produce(producer, topic, sent);
            for (int p = 0; p < PARTITIONS; p++) {
                Records.checkAckedDense(topic, p, Records.ofPartition(sent, p), 0);
            }
            lab.step("end offsets while the transaction is open");
            List<TopicPartition> tps = partitions(topic);
            ScenarioFailure.checkEqual("read_uncommitted end offsets (high watermark) of the open transaction",
                    written, uncommitted.endOffsets(tps));
            ScenarioFailure.checkEqual("read_committed end offsets (last stable offset) of the open transaction",
                    zeros, committed.endOffsets(tps));
            lab.step("commitTransaction");
            producer.commitTransaction();
            lab.step("read_committed consumer reads the topic");
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = readAll(committed, topic, ends);
            for (int p = 0; p < PARTITIONS; p++) {
                Records.checkSame(topic, p, Records.ofPartition(sent, p), got.get(p));
            }
            lab.step("end offsets after the commit");
            ScenarioFailure.checkEqual("read_committed end offsets after the commit (records and marker)",
                    withMarker, committed.endOffsets(tps));
        }
        return String.format("%d records over %d partitions committed in one transaction; hidden from read_committed "
                + "while open, then read exactly; end offsets %d/%d/%d with the marker", sent.size(), PARTITIONS,
                ends.get(0) + 1, ends.get(1) + 1, ends.get(2) + 1);
    }

    /**
     * txn-abort-invisible: a transaction of 90 records is aborted, then one of
     * 90 more committed, by one producer. A read_committed consumer reads
     * exactly the committed 90; a read_uncommitted one reads all 180 (the
     * aborted ones first), at the offsets they were acknowledged at.
     */
    static String abortInvisible(Lab lab) throws Exception {
        String topic = lab.name("");
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, PARTITIONS, Map.of());
        }
        long base = Records.baseTimestamp();
        List<Sent> aborted = Records.generate(90, PARTITIONS, base, 62);
        List<Sent> committed = Records.generate(90, PARTITIONS, base + aborted.size(), 63);
        try (KafkaProducer<byte[], byte[]> producer = txnProducer(lab, "producer", lab.name("txn"))) {
            lab.step("initTransactions");
            producer.initTransactions();
            lab.step("produce " + aborted.size() + " records in a transaction, then abort it");
            producer.beginTransaction();
            Records.produce(producer, topic, aborted);
            producer.abortTransaction();
            lab.step("produce " + committed.size() + " records in a transaction, then commit it");
            producer.beginTransaction();
            Records.produce(producer, topic, committed);
            producer.commitTransaction();
        }
        Map<Integer, Long> ends = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            List<Sent> mine = Records.ofPartition(committed, p);
            ends.put(p, mine.get(mine.size() - 1).offset + 1);
        }
        lab.step("read_committed consumer reads the topic");
        try (KafkaConsumer<byte[], byte[]> c = isolatedConsumer(lab, "committed", "read_committed")) {
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = readAll(c, topic, ends);
            for (int p = 0; p < PARTITIONS; p++) {
                Records.checkSame(topic, p, Records.ofPartition(committed, p), got.get(p));
            }
        }
        lab.step("read_uncommitted consumer reads the topic");
        int both = 0;
        try (KafkaConsumer<byte[], byte[]> c = isolatedConsumer(lab, "uncommitted", "read_uncommitted")) {
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = readAll(c, topic, ends);
            for (int p = 0; p < PARTITIONS; p++) {
                List<Sent> first = Records.ofPartition(aborted, p);
                List<ConsumerRecord<byte[], byte[]>> recs = got.get(p);
                // The aborted records come first; the abort marker between the
                // two transactions takes an offset, so they are compared apart.
                int split = Math.min(first.size(), recs.size());
                Records.checkSame(topic, p, first, recs.subList(0, split));
                Records.checkSame(topic, p, Records.ofPartition(committed, p), recs.subList(split, recs.size()));
                both += recs.size();
            }
        }
        return String.format("aborted %d, committed %d: read_committed read the %d committed, read_uncommitted all %d",
                aborted.size(), committed.size(), committed.size(), both);
    }

    /**
     * txn-consume-transform-produce: 60 input records (20 per partition); a
     * group member reads them, and in one transaction writes each transformed
     * (value prefixed, its input partition and offset in a header) to the
     * same partition of the output topic and commits its consumed offsets
     * with sendOffsetsToTransaction. The group's committed offsets are then 20
     * per partition. 60 more records are written; a second member of the
     * group resumes at 20, does the same, and the committed offsets become 40.
     * A read_committed consumer of the output finds each input record
     * transformed exactly once, in input order.
     */
    static String consumeTransformProduce(Lab lab) throws Exception {
        String input = lab.name("in");
        String output = lab.name("out");
        String group = lab.name("group");
        String txnId = lab.name("txn");
        final int perRun = 60;
        final int perPartition = perRun / PARTITIONS;
        List<Sent> all = new ArrayList<>();
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, input, PARTITIONS, Map.of());
            lab.createTopic(admin, output, PARTITIONS, Map.of());
            for (int run = 1; run <= 2; run++) {
                lab.step("produce input batch " + run);
                List<Sent> batch = Records.generate(perRun, PARTITIONS, Records.baseTimestamp() + all.size(), 63 + run);
                try (KafkaProducer<byte[], byte[]> plain = lab.producer("input-" + run, Map.of())) {
                    Records.produce(plain, input, batch);
                }
                all.addAll(batch);
                lab.step("run " + run + ": a group member transforms the batch in one transaction");
                long from = (long) (run - 1) * perPartition;
                transformOnce(lab, input, output, group, txnId, run, from, from + perPartition);
                lab.step("run " + run + ": the group's committed offsets");
                Map<TopicPartition, Long> want = new HashMap<>();
                for (int p = 0; p < PARTITIONS; p++) {
                    want.put(new TopicPartition(input, p), from + perPartition);
                }
                Lab.waitFor("the committed offsets of " + group + " to be " + want, () -> {
                    Map<TopicPartition, OffsetAndMetadata> got =
                            Lab.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
                    Map<TopicPartition, Long> offsets = new HashMap<>();
                    got.forEach((tp, om) -> offsets.put(tp, om == null ? null : om.offset()));
                    return offsets.equals(want);
                });
            }
        }
        lab.step("read_committed consumer reads the output");
        Map<Integer, Long> ends = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            // The first run's commit marker sits between the two runs' records.
            ends.put(p, (long) Records.ofPartition(all, p).size() + 1);
        }
        try (KafkaConsumer<byte[], byte[]> c = isolatedConsumer(lab, "output", "read_committed")) {
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = readAll(c, output, ends);
            for (int p = 0; p < PARTITIONS; p++) {
                List<Sent> in = Records.ofPartition(all, p);
                List<ConsumerRecord<byte[], byte[]>> out = got.get(p);
                ScenarioFailure.check(out.size() == in.size(), "%s-%d: %d records, expected %d (one per input record)",
                        output, p, out.size(), in.size());
                for (int i = 0; i < in.size(); i++) {
                    Sent w = in.get(i);
                    ConsumerRecord<byte[], byte[]> g = out.get(i);
                    String from = new String(g.headers().lastHeader("from") == null ? new byte[0]
                            : g.headers().lastHeader("from").value(), StandardCharsets.UTF_8);
                    String wantFrom = p + "/" + w.offset;
                    ScenarioFailure.check(from.equals(wantFrom),
                            "%s-%d record %d (offset %d): transformed from %s, expected from %s (each input once, "
                                    + "in order)", output, p, i, g.offset(), from, wantFrom);
                    ScenarioFailure.check(java.util.Arrays.equals(g.key(), w.key)
                            && java.util.Arrays.equals(g.value(), transform(w.value)),
                            "%s-%d offset %d: key %s value %s, expected the transform of input %s: key %s value %s",
                            output, p, g.offset(), Records.show(g.key()), Records.show(g.value()), wantFrom,
                            Records.show(w.key), Records.show(transform(w.value)));
                }
            }
        }
        return String.format("2 runs of %d records, each in one transaction with its offsets; committed 20 then 40 "
                + "per partition; output holds each of the %d inputs once", perRun, all.size());
    }

    /** The transform of the scenario: the value prefixed with "t:" (a null value stays null). */
    private static byte[] transform(byte[] value) {
        if (value == null) {
            return null;
        }
        byte[] out = new byte[value.length + 2];
        out[0] = 't';
        out[1] = ':';
        System.arraycopy(value, 0, out, 2, value.length);
        return out;
    }

    /**
     * One run of the transform: a new member of group reads input until it
     * has read offset end-1 of every partition, checking that it starts at
     * from (where the previous run's transaction committed), and writes the
     * transform of every record in [from, end) and the offsets end in one
     * transaction.
     */
    private static void transformOnce(Lab lab, String input, String output, String group, String txnId, int run,
            long from, long end) throws Exception {
        try (KafkaConsumer<byte[], byte[]> consumer = lab.groupConsumer(group, "member-" + run);
                KafkaProducer<byte[], byte[]> producer = txnProducer(lab, "producer-" + run, txnId)) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            Map<Integer, Long> next = new HashMap<>();
            List<ConsumerRecord<byte[], byte[]>> read = new ArrayList<>();
            long deadline = System.nanoTime() + Lab.STEP_TIMEOUT.toNanos();
            while (next.size() < PARTITIONS || next.values().stream().anyMatch(n -> n < end)) {
                ScenarioFailure.check(System.nanoTime() < deadline,
                        "run %d: the member did not read up to offset %d of every partition within %d s (read up to %s)",
                        run, end, Lab.STEP_TIMEOUT.toSeconds(), next);
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    Long want = next.getOrDefault(r.partition(), from);
                    ScenarioFailure.check(r.offset() == want,
                            "run %d: the member read %s-%d at offset %d, expected %d (the group's committed offset "
                                    + "was %d)", run, input, r.partition(), r.offset(), want, from);
                    next.put(r.partition(), r.offset() + 1);
                    read.add(r);
                }
            }
            producer.beginTransaction();
            for (ConsumerRecord<byte[], byte[]> r : read) {
                ProducerRecord<byte[], byte[]> out = new ProducerRecord<>(output, r.partition(), r.timestamp(),
                        r.key(), transform(r.value()));
                out.headers().add(new RecordHeader("from",
                        (r.partition() + "/" + r.offset()).getBytes(StandardCharsets.UTF_8)));
                producer.send(out);
            }
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                offsets.put(new TopicPartition(input, p), new OffsetAndMetadata(end));
            }
            producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
            producer.commitTransaction();
        }
    }

    /**
     * txn-fencing: producer A opens a transaction and writes 30 records;
     * producer B initializes with the same transactional.id, which fences A
     * and aborts its transaction, then commits 30 records of its own. A's
     * commit must fail with ProducerFencedException (InvalidProducerEpoch
     * accepted too, the error of a newer protocol); a read_committed consumer
     * reads B's records only.
     */
    static String fencing(Lab lab) throws Exception {
        String topic = lab.name("");
        String txnId = lab.name("txn");
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, PARTITIONS, Map.of());
        }
        long base = Records.baseTimestamp();
        List<Sent> fromA = Records.generate(30, PARTITIONS, base, 66);
        List<Sent> fromB = Records.generate(30, PARTITIONS, base + fromA.size(), 67);
        String fencedBy;
        try (KafkaProducer<byte[], byte[]> a = txnProducer(lab, "producer-a", txnId)) {
            lab.step("producer A: initTransactions, produce in an open transaction");
            a.initTransactions();
            a.beginTransaction();
            Records.produce(a, topic, fromA);
            try (KafkaProducer<byte[], byte[]> b = txnProducer(lab, "producer-b", txnId)) {
                lab.step("producer B: initTransactions with the same transactional.id");
                b.initTransactions();
                lab.step("producer B: commit a transaction");
                b.beginTransaction();
                Records.produce(b, topic, fromB);
                b.commitTransaction();
            }
            lab.step("producer A: commitTransaction after B took over");
            try {
                a.commitTransaction();
                throw new ScenarioFailure("producer A committed after producer B initialized with its "
                        + "transactional.id; expected ProducerFencedException");
            } catch (ProducerFencedException | InvalidProducerEpochException e) {
                fencedBy = e.getClass().getSimpleName();
            } catch (ScenarioFailure e) {
                throw e;
            } catch (Exception e) {
                Throwable root = e;
                while (root.getCause() != null && !(root instanceof ProducerFencedException)
                        && !(root instanceof InvalidProducerEpochException)) {
                    root = root.getCause();
                }
                if (!(root instanceof ProducerFencedException) && !(root instanceof InvalidProducerEpochException)) {
                    throw new ScenarioFailure("producer A's commit after B took over: " + Main.describe(e)
                            + ", expected ProducerFencedException");
                }
                fencedBy = root.getClass().getSimpleName() + " (in " + e.getClass().getSimpleName() + ")";
            }
            a.close(Duration.ofSeconds(10));
        }
        Map<Integer, Long> ends = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            List<Sent> mine = Records.ofPartition(fromB, p);
            ends.put(p, mine.get(mine.size() - 1).offset + 1);
        }
        lab.step("read_committed consumer reads the topic");
        try (KafkaConsumer<byte[], byte[]> c = isolatedConsumer(lab, "committed", "read_committed")) {
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = readAll(c, topic, ends);
            for (int p = 0; p < PARTITIONS; p++) {
                Records.checkSame(topic, p, Records.ofPartition(fromB, p), got.get(p));
            }
        }
        return String.format("A fenced by B's initTransactions: A's commit failed with %s; read_committed read B's %d "
                + "records only", fencedBy, fromB.size());
    }

    private static List<TopicPartition> partitions(String topic) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        return tps;
    }
}
