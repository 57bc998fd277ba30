package io.gregor.compat.streams;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads a topic of String keys and Long values (counts) from its start with
 * a plain consumer assigned to every partition (no group), keeping the
 * latest value of each key. The apps write a key's updates to one partition
 * in order, so the latest read is the latest written.
 */
final class OutputReader implements AutoCloseable {
    private static final Duration POLL = Duration.ofMillis(100);

    private final String topic;
    private final KafkaConsumer<String, Long> consumer;
    private final List<TopicPartition> partitions = new ArrayList<>();
    private final Map<String, Long> latest = new TreeMap<>();
    /** Every value read per key, in the order read. */
    private final Map<String, List<Long>> history = new TreeMap<>();
    private long records;

    OutputReader(String bootstrap, String topic, int partitionCount) {
        this(bootstrap, topic, partitionCount, "read_uncommitted");
    }

    /**
     * @param isolation the consumer's isolation.level: read_committed to
     *     read an exactly-once app's output as its downstream would
     */
    OutputReader(String bootstrap, String topic, int partitionCount, String isolation) {
        this.topic = topic;
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, topic + "-reader");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        consumer = new KafkaConsumer<>(props, new StringDeserializer(), new LongDeserializer());
        for (int p = 0; p < partitionCount; p++) {
            partitions.add(new TopicPartition(topic, p));
        }
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
    }

    /** Reads what one poll returns. */
    void poll() {
        for (ConsumerRecord<String, Long> record : consumer.poll(POLL)) {
            if (record.key() == null || record.value() == null) {
                throw new ScenarioFailure(topic + " has a record with a null key or value at " + record.partition()
                        + "/" + record.offset());
            }
            latest.put(record.key(), record.value());
            history.computeIfAbsent(record.key(), k -> new ArrayList<>()).add(record.value());
            records++;
        }
    }

    /** Reads up to the end offsets the broker reports now. */
    void readToEnd() throws Exception {
        Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Poll.STEP);
        Poll.until("reading " + topic + " to its end offsets " + end, Poll.STEP, () -> {
            for (TopicPartition tp : partitions) {
                if (consumer.position(tp, Poll.STEP) < end.get(tp)) {
                    poll();
                    return false;
                }
            }
            return true;
        }, this::positions);
    }

    /** Polls until the latest value of every key equals {@code expected}. */
    void awaitLatest(Map<String, Long> expected, StreamsApp... apps) throws Exception {
        Poll.until("the counts in " + topic, Poll.STEP, () -> {
            for (StreamsApp app : apps) {
                app.checkAlive();
            }
            poll();
            return latest.equals(expected);
        }, () -> Diff.counts(expected, latest));
    }

    /** After {@link #readToEnd}: fails unless the latest values are exactly {@code expected}. */
    void checkLatest(Map<String, Long> expected) {
        if (!latest.equals(expected)) {
            throw new ScenarioFailure("after the app closed, " + topic + " read to its end: " + Diff.counts(expected, latest));
        }
    }

    Map<String, Long> latest() {
        return latest;
    }

    /** Every value read per key, in the order read (a key's updates sit on one partition, in order). */
    Map<String, List<Long>> history() {
        return history;
    }

    /** The end offsets of the topic's partitions, as this reader's isolation level sees them. */
    Map<TopicPartition, Long> endOffsets() {
        return consumer.endOffsets(partitions, Poll.STEP);
    }

    long records() {
        return records;
    }

    private String positions() {
        StringBuilder sb = new StringBuilder("positions");
        for (TopicPartition tp : partitions) {
            sb.append(' ').append(tp.partition()).append('=').append(consumer.position(tp, Poll.STEP));
        }
        return sb.toString();
    }

    @Override
    public void close() {
        consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(10)));
    }
}
