package io.gregor.compat.javaclients;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;

/**
 * The records scenarios write, and the checks that what a consumer read is
 * exactly what was written: same keys, values, headers and CreateTime
 * timestamps, per partition in produce order, at dense offsets.
 */
final class Records {
    private Records() {
    }

    /** One record as the scenario sent it, and the offset the broker acknowledged it at. */
    static final class Sent {
        final int partition;
        final byte[] key;
        final byte[] value;
        final List<Header> headers;
        final long timestamp;
        long offset = -1;

        Sent(int partition, byte[] key, byte[] value, List<Header> headers, long timestamp) {
            this.partition = partition;
            this.key = key;
            this.value = value;
            this.headers = headers;
            this.timestamp = timestamp;
        }
    }

    /**
     * count records spread round-robin over partitions, the same for the same
     * seed. Values mix compressible text with random bytes (so codecs have
     * work to do and non-UTF-8 bytes must survive); every 50th record has a
     * null value (a tombstone) and the next an empty one. Headers: a binary
     * sequence number, an empty value, random bytes, and on every 7th record
     * a key given twice (order must be kept). Timestamps are CreateTime,
     * baseTimestamp plus the record's index, so each is distinct.
     */
    static List<Sent> generate(int count, int partitions, long baseTimestamp, long seed) {
        Random rnd = new Random(seed);
        List<Sent> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int partition = i % partitions;
            byte[] key = ("key-" + seed + "-" + i).getBytes(StandardCharsets.UTF_8);
            byte[] value;
            if (i % 50 == 7) {
                value = null;
            } else if (i % 50 == 8) {
                value = new byte[0];
            } else {
                byte[] text = ("value " + i + " of seed " + seed + "; ").repeat(1 + rnd.nextInt(8))
                        .getBytes(StandardCharsets.UTF_8);
                byte[] noise = new byte[rnd.nextInt(64)];
                rnd.nextBytes(noise);
                value = ByteBuffer.allocate(text.length + noise.length).put(text).put(noise).array();
            }
            List<Header> headers = new ArrayList<>();
            headers.add(new RecordHeader("seq", ByteBuffer.allocate(4).putInt(i).array()));
            headers.add(new RecordHeader("empty", new byte[0]));
            byte[] bin = new byte[1 + rnd.nextInt(16)];
            rnd.nextBytes(bin);
            headers.add(new RecordHeader("bin", bin));
            if (i % 7 == 0) {
                headers.add(new RecordHeader("twice", "first".getBytes(StandardCharsets.UTF_8)));
                headers.add(new RecordHeader("twice", "second".getBytes(StandardCharsets.UTF_8)));
            }
            out.add(new Sent(partition, key, value, headers, baseTimestamp + i));
        }
        return out;
    }

    /** A CreateTime base an hour in the past: inside any retention, and clearly not the broker's clock. */
    static long baseTimestamp() {
        return (System.currentTimeMillis() - 3_600_000L) / 1000 * 1000;
    }

    /**
     * Sends every record to its partition, flushes, and records the offset
     * each was acknowledged at. Fails if the producer put a record elsewhere
     * or reported another timestamp than the CreateTime it was given.
     */
    static void produce(KafkaProducer<byte[], byte[]> producer, String topic, List<Sent> records) throws Exception {
        List<Future<RecordMetadata>> acks = new ArrayList<>(records.size());
        for (Sent r : records) {
            ProducerRecord<byte[], byte[]> pr = new ProducerRecord<>(topic, r.partition, r.timestamp, r.key, r.value,
                    new RecordHeaders(r.headers));
            acks.add(producer.send(pr));
        }
        producer.flush();
        for (int i = 0; i < records.size(); i++) {
            Sent r = records.get(i);
            RecordMetadata md;
            try {
                md = acks.get(i).get(Lab.STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                throw new ScenarioFailure("record " + i + " not acknowledged within " + Lab.STEP_TIMEOUT.toSeconds()
                        + " s");
            }
            ScenarioFailure.check(md.partition() == r.partition, "record %d acknowledged on partition %d, sent to %d",
                    i, md.partition(), r.partition);
            ScenarioFailure.check(md.timestamp() == r.timestamp,
                    "record %d acknowledged with timestamp %d, sent with CreateTime %d", i, md.timestamp(), r.timestamp);
            r.offset = md.offset();
        }
    }

    /** The records sent to one partition, in send order. */
    static List<Sent> ofPartition(List<Sent> records, int partition) {
        List<Sent> out = new ArrayList<>();
        for (Sent r : records) {
            if (r.partition == partition) {
                out.add(r);
            }
        }
        return out;
    }

    /**
     * Checks that the broker acknowledged the records of one partition at
     * dense offsets from first on, in send order.
     */
    static void checkAckedDense(String topic, int partition, List<Sent> sent, long first) {
        for (int i = 0; i < sent.size(); i++) {
            long want = first + i;
            ScenarioFailure.check(sent.get(i).offset == want,
                    "%s-%d: record %d sent was acknowledged at offset %d, expected %d (dense from %d)",
                    topic, partition, i, sent.get(i).offset, want, first);
        }
    }

    /**
     * Polls until the consumer is assigned every partition of ends and its
     * position on each has reached the end offset, returning what it read
     * per partition in the order read. Records of partitions not in ends are
     * kept too, so a stray one shows in the comparison. Works for assign()
     * and for a group member that gets all the partitions.
     */
    static Map<Integer, List<ConsumerRecord<byte[], byte[]>>> readUntil(KafkaConsumer<byte[], byte[]> consumer,
            String topic, Map<Integer, Long> ends) throws Exception {
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = new HashMap<>();
        for (int p : ends.keySet()) {
            got.put(p, new ArrayList<>());
        }
        long deadline = System.nanoTime() + Lab.STEP_TIMEOUT.toNanos();
        while (true) {
            ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(200));
            for (ConsumerRecord<byte[], byte[]> rec : batch) {
                got.computeIfAbsent(rec.partition(), k -> new ArrayList<>()).add(rec);
            }
            boolean done = true;
            StringBuilder where = new StringBuilder();
            for (Map.Entry<Integer, Long> e : ends.entrySet()) {
                TopicPartition tp = new TopicPartition(topic, e.getKey());
                if (!consumer.assignment().contains(tp)) {
                    where.append(String.format(" p%d not assigned;", e.getKey()));
                    done = false;
                    continue;
                }
                long pos = consumer.position(tp);
                where.append(String.format(" p%d at %d/%d;", e.getKey(), pos, e.getValue()));
                if (pos < e.getValue()) {
                    done = false;
                }
            }
            if (done) {
                return got;
            }
            if (System.nanoTime() > deadline) {
                throw new ScenarioFailure("consumer did not reach the end of " + topic + " within "
                        + Lab.STEP_TIMEOUT.toSeconds() + " s:" + where);
            }
        }
    }

    /**
     * Checks that got is exactly want, record by record: offset (the one the
     * producer was acknowledged, and dense), key, value, headers in order,
     * CreateTime timestamp.
     */
    static void checkSame(String topic, int partition, List<Sent> want, List<ConsumerRecord<byte[], byte[]>> got) {
        String where = topic + "-" + partition;
        int n = Math.min(want.size(), got.size());
        for (int i = 0; i < n; i++) {
            Sent w = want.get(i);
            ConsumerRecord<byte[], byte[]> g = got.get(i);
            String at = String.format("%s record %d (offset %d)", where, i, w.offset);
            ScenarioFailure.check(g.offset() == w.offset, "%s: read offset %d", at, g.offset());
            if (i > 0) {
                long prev = got.get(i - 1).offset();
                ScenarioFailure.check(g.offset() == prev + 1, "%s: offsets not dense: %d follows %d", at,
                        g.offset(), prev);
            }
            ScenarioFailure.check(Arrays.equals(g.key(), w.key), "%s: key %s, expected %s", at, show(g.key()),
                    show(w.key));
            ScenarioFailure.check(Arrays.equals(g.value(), w.value), "%s: value %s, expected %s", at,
                    show(g.value()), show(w.value));
            ScenarioFailure.check(g.timestampType() == TimestampType.CREATE_TIME && g.timestamp() == w.timestamp,
                    "%s: timestamp %s %d, expected CreateTime %d", at, g.timestampType(), g.timestamp(), w.timestamp);
            Header[] gh = g.headers().toArray();
            ScenarioFailure.check(gh.length == w.headers.size(), "%s: %d headers %s, expected %d %s", at,
                    gh.length, showHeaders(Arrays.asList(gh)), w.headers.size(), showHeaders(w.headers));
            for (int h = 0; h < gh.length; h++) {
                Header wh = w.headers.get(h);
                ScenarioFailure.check(gh[h].key().equals(wh.key()) && Arrays.equals(gh[h].value(), wh.value()),
                        "%s: headers %s, expected %s", at, showHeaders(Arrays.asList(gh)), showHeaders(w.headers));
            }
        }
        if (got.size() > want.size()) {
            ConsumerRecord<byte[], byte[]> extra = got.get(want.size());
            throw new ScenarioFailure(String.format("%s: read %d records, expected %d; first extra at offset %d key %s",
                    where, got.size(), want.size(), extra.offset(), show(extra.key())));
        }
        if (got.size() < want.size()) {
            throw new ScenarioFailure(String.format("%s: read %d records, expected %d; first missing at offset %d",
                    where, got.size(), want.size(), want.get(got.size()).offset));
        }
    }

    /** Bytes for a failure message: null, or the length and the first bytes in hex. */
    static String show(byte[] b) {
        if (b == null) {
            return "null";
        }
        StringBuilder sb = new StringBuilder(b.length + "B:");
        for (int i = 0; i < Math.min(b.length, 12); i++) {
            sb.append(String.format("%02x", b[i]));
        }
        return b.length > 12 ? sb.append("..").toString() : sb.toString();
    }

    static String showHeaders(List<Header> hs) {
        StringBuilder sb = new StringBuilder("[");
        for (Header h : hs) {
            sb.append(sb.length() > 1 ? " " : "").append(h.key()).append('=').append(show(h.value()));
        }
        return sb.append(']').toString();
    }
}
