package io.gregor.compat.javaclients;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;

import io.gregor.compat.javaclients.Records.Sent;

/** Scenarios of the data path: produce, fetch, offsets. */
final class DataScenarios {
    private DataScenarios() {
    }

    private static final int PARTITIONS = 3;

    /**
     * produce-consume-CODEC: 600 records (binary values, a tombstone, empty
     * values and header values, repeated header keys) with compression.type
     * CODEC and acks=all, read back from the beginning of each partition with
     * assign() and seekToBeginning(). The producer is Lab's, without
     * idempotence, so that the scenario tests the codec alone; a linger of
     * 20 ms puts many records in each compressed batch.
     */
    static String produceConsume(Lab lab, String codec) throws Exception {
        String topic = lab.name("");
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, PARTITIONS, Map.of());
        }
        List<Sent> sent = Records.generate(600, PARTITIONS, Records.baseTimestamp(), codec.hashCode());
        lab.step("produce " + sent.size() + " records with compression.type=" + codec);
        Map<String, Object> conf = Map.of(
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                ProducerConfig.LINGER_MS_CONFIG, 20);
        try (KafkaProducer<byte[], byte[]> producer = lab.producer("producer", conf)) {
            Records.produce(producer, topic, sent);
        }
        readBackAll(lab, topic, sent);
        return String.format("%d records over %d partitions (%s), read back identical at dense offsets",
                sent.size(), PARTITIONS, codec);
    }

    /**
     * idempotent-producer: 1500 records with enable.idempotence=true,
     * acks=all and up to 5 requests in flight, in small batches so that
     * several are in flight per partition at once; then a second producer
     * (a new producer id) appends 300 more. Every record must land once, in
     * send order, at dense offsets.
     */
    static String idempotentProducer(Lab lab) throws Exception {
        String topic = lab.name("");
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, PARTITIONS, Map.of());
        }
        Map<String, Object> conf = Map.of(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5,
                ProducerConfig.BATCH_SIZE_CONFIG, 1024,
                ProducerConfig.LINGER_MS_CONFIG, 0);
        long base = Records.baseTimestamp();
        List<Sent> first = Records.generate(1500, PARTITIONS, base, 11);
        List<Sent> second = Records.generate(300, PARTITIONS, base + first.size(), 12);
        lab.step("produce " + first.size() + " records with the first idempotent producer");
        try (KafkaProducer<byte[], byte[]> producer = lab.producer("producer-1", conf)) {
            Records.produce(producer, topic, first);
        }
        lab.step("produce " + second.size() + " records with a second idempotent producer");
        try (KafkaProducer<byte[], byte[]> producer = lab.producer("producer-2", conf)) {
            Records.produce(producer, topic, second);
        }
        List<Sent> all = new ArrayList<>(first);
        all.addAll(second);
        readBackAll(lab, topic, all);
        return String.format("%d + %d records from two idempotent producers, each once, in order, dense offsets",
                first.size(), second.size());
    }

    /**
     * Checks the acknowledged offsets are dense from 0, then reads every
     * partition from the beginning and compares with what was sent.
     */
    private static void readBackAll(Lab lab, String topic, List<Sent> sent) throws Exception {
        Map<Integer, Long> ends = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            List<Sent> mine = Records.ofPartition(sent, p);
            Records.checkAckedDense(topic, p, mine, 0);
            ends.put(p, (long) mine.size());
        }
        lab.step("consume " + topic + " from the beginning");
        try (KafkaConsumer<byte[], byte[]> consumer = lab.consumer("consumer")) {
            List<TopicPartition> tps = partitions(topic, PARTITIONS);
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = Records.readUntil(consumer, topic, ends);
            ScenarioFailure.check(got.size() == PARTITIONS, "read records of partitions %s, assigned 0..%d",
                    got.keySet(), PARTITIONS - 1);
            for (int p = 0; p < PARTITIONS; p++) {
                Records.checkSame(topic, p, Records.ofPartition(sent, p), got.get(p));
            }
        }
    }

    /**
     * list-offsets: 40 records per partition with CreateTime timestamps
     * base+p, base+p+3, ... Admin.listOffsets earliest, latest and
     * forTimestamp (exact, between two records, before the first, after the
     * last) must give the offsets those timestamps imply, and the consumer's
     * beginningOffsets, endOffsets and offsetsForTimes must agree.
     */
    static String listOffsets(Lab lab) throws Exception {
        String topic = lab.name("");
        List<TopicPartition> tps = partitions(topic, PARTITIONS);
        List<Sent> sent = Records.generate(120, PARTITIONS, Records.baseTimestamp(), 21);
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, PARTITIONS, Map.of());
            lab.step("produce");
            try (KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
                Records.produce(producer, topic, sent);
            }
            try (KafkaConsumer<byte[], byte[]> consumer = lab.consumer("consumer")) {
                lab.step("earliest");
                Map<TopicPartition, Long> earliest = new HashMap<>();
                Map<TopicPartition, Long> latest = new HashMap<>();
                for (int p = 0; p < PARTITIONS; p++) {
                    earliest.put(tps.get(p), 0L);
                    latest.put(tps.get(p), (long) Records.ofPartition(sent, p).size());
                }
                checkAdmin(admin, "earliest", tps, OffsetSpec.earliest(), earliest);
                ScenarioFailure.checkEqual("consumer.beginningOffsets", earliest, consumer.beginningOffsets(tps));
                lab.step("latest");
                checkAdmin(admin, "latest", tps, OffsetSpec.latest(), latest);
                ScenarioFailure.checkEqual("consumer.endOffsets", latest, consumer.endOffsets(tps));

                // Lookups by timestamp; each partition asks about a different record k.
                for (String kind : List.of("exact", "between", "before-first", "after-last")) {
                    lab.step("forTimestamp " + kind);
                    Map<TopicPartition, Lookup> lookups = new HashMap<>();
                    for (int p = 0; p < PARTITIONS; p++) {
                        List<Sent> mine = Records.ofPartition(sent, p);
                        Sent k = mine.get(5 + 11 * p);
                        Sent first = mine.get(0);
                        Sent last = mine.get(mine.size() - 1);
                        lookups.put(tps.get(p), switch (kind) {
                            case "exact" -> new Lookup(k.timestamp, k.offset, k.timestamp);
                            // Timestamps on a partition are 3 ms apart: ts-1 falls after the previous record.
                            case "between" -> new Lookup(k.timestamp - 1, k.offset, k.timestamp);
                            case "before-first" -> new Lookup(first.timestamp - 60_000, 0, first.timestamp);
                            // No record at or after the timestamp: the broker answers offset and timestamp -1.
                            default -> new Lookup(last.timestamp + 1, -1, -1);
                        });
                    }
                    Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
                    Map<TopicPartition, Long> query = new HashMap<>();
                    lookups.forEach((tp, l) -> {
                        specs.put(tp, OffsetSpec.forTimestamp(l.query));
                        query.put(tp, l.query);
                    });
                    Map<TopicPartition, ListOffsetsResultInfo> res = Lab.get(admin.listOffsets(specs).all());
                    Map<TopicPartition, OffsetAndTimestamp> byConsumer = consumer.offsetsForTimes(query);
                    for (TopicPartition tp : tps) {
                        Lookup want = lookups.get(tp);
                        ListOffsetsResultInfo info = res.get(tp);
                        String what = "admin forTimestamp " + kind + " (" + want.query + ") on " + tp;
                        ScenarioFailure.check(info != null, "%s: no answer", what);
                        ScenarioFailure.checkEqual(what + " offset", want.offset, info.offset());
                        ScenarioFailure.checkEqual(what + " timestamp", want.timestamp, info.timestamp());
                        OffsetAndTimestamp ot = byConsumer.get(tp);
                        String cwhat = "consumer.offsetsForTimes " + kind + " (" + want.query + ") on " + tp;
                        if (want.offset < 0) {
                            ScenarioFailure.check(ot == null, "%s: expected null (no such record), got %s", cwhat, ot);
                        } else {
                            ScenarioFailure.check(ot != null, "%s: null, expected offset %d", cwhat, want.offset);
                            ScenarioFailure.checkEqual(cwhat + " offset", want.offset, ot.offset());
                            ScenarioFailure.checkEqual(cwhat + " timestamp", want.timestamp, ot.timestamp());
                        }
                    }
                }
            }
        }
        return "earliest, latest, 4 kinds of forTimestamp on 3 partitions agree (admin and consumer)";
    }

    /** A lookup by timestamp and the offset and timestamp of the record it must find. */
    private record Lookup(long query, long offset, long timestamp) {
    }

    /** Admin.listOffsets with one spec for all partitions must give the offsets want. */
    private static void checkAdmin(Admin admin, String what, List<TopicPartition> tps, OffsetSpec spec,
            Map<TopicPartition, Long> want) throws Exception {
        Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
        for (TopicPartition tp : tps) {
            specs.put(tp, spec);
        }
        Map<TopicPartition, ListOffsetsResultInfo> res = Lab.get(admin.listOffsets(specs).all());
        for (TopicPartition tp : tps) {
            ListOffsetsResultInfo info = res.get(tp);
            ScenarioFailure.check(info != null, "admin listOffsets %s on %s: no answer", what, tp);
            ScenarioFailure.checkEqual("admin listOffsets " + what + " on " + tp, want.get(tp), info.offset());
        }
    }

    /**
     * consume-from-offset: 60 records per partition; a consumer assigned to
     * partition 1 alone and seek()ed to 37 (inside a batch), then back to 5,
     * then to 59, reads from exactly there to the end, and nothing of the
     * other partitions.
     */
    static String consumeFromOffset(Lab lab) throws Exception {
        String topic = lab.name("");
        List<Sent> sent = Records.generate(180, PARTITIONS, Records.baseTimestamp(), 31);
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, PARTITIONS, Map.of());
        }
        lab.step("produce");
        try (KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
            Records.produce(producer, topic, sent);
        }
        List<Sent> mine = Records.ofPartition(sent, 1);
        Records.checkAckedDense(topic, 1, mine, 0);
        TopicPartition tp = new TopicPartition(topic, 1);
        StringBuilder summary = new StringBuilder("read partition 1 of 3 from offsets");
        try (KafkaConsumer<byte[], byte[]> consumer = lab.consumer("consumer")) {
            consumer.assign(List.of(tp));
            for (int from : new int[] {37, 5, 59}) {
                lab.step("seek to " + from + " and read to the end");
                consumer.seek(tp, from);
                ScenarioFailure.checkEqual("position after seek(" + from + ")", (long) from, consumer.position(tp));
                Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got =
                        Records.readUntil(consumer, topic, Map.of(1, (long) mine.size()));
                ScenarioFailure.check(got.keySet().equals(java.util.Set.of(1)),
                        "assigned partition 1 alone, read records of partitions %s", got.keySet());
                List<ConsumerRecord<byte[], byte[]>> recs = got.get(1);
                ScenarioFailure.check(!recs.isEmpty() && recs.get(0).offset() == from,
                        "after seek(%d) the first record read has offset %s", from,
                        recs.isEmpty() ? "none" : recs.get(0).offset());
                Records.checkSame(topic, 1, mine.subList(from, mine.size()), recs);
                summary.append(String.format(" %d (%d records)", from, recs.size()));
            }
        }
        return summary.append(", each identical to what was sent").toString();
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        return tps;
    }
}
