package io.gregor.compat.streams;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.Topology;

/**
 * What one scenario works with: the broker's address, names under the
 * run's prefix, an AdminClient, and the clients and apps the scenario
 * opened, closed in reverse order when the scenario ends however it ends.
 */
final class Lab implements AutoCloseable {
    final String bootstrap;
    private final String prefix;
    private final Path work;
    private final Admin admin;
    /** How to close each client and app the scenario opened, newest first. */
    private final Deque<Runnable> opened = new ArrayDeque<>();

    Lab(String bootstrap, String prefix, Path work) {
        this.bootstrap = bootstrap;
        this.prefix = prefix;
        this.work = work;
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Poll.STEP.toMillis());
        admin = Admin.create(props);
        // Admin.close() with no timeout waits for pending calls forever.
        opened.push(() -> admin.close(Duration.ofSeconds(10)));
    }

    /** A topic, group or application.id under the run's prefix. */
    String name(String suffix) {
        return prefix + "-" + suffix;
    }

    /** A fresh state.dir for one Streams instance, under the work dir. */
    Path stateDir(String instance) throws Exception {
        return Files.createDirectories(work.resolve("state").resolve(instance));
    }

    /** Creates the topics with {@code partitions} partitions, replication factor 1. */
    void createTopics(int partitions, String... names) throws Exception {
        List<NewTopic> topics = new ArrayList<>();
        for (String name : names) {
            topics.add(new NewTopic(name, partitions, (short) 1));
        }
        call("CreateTopics " + List.of(names), () -> admin.createTopics(topics).all().get(Poll.STEP.toSeconds(), TimeUnit.SECONDS));
    }

    /** Produces lines with keys line-0, line-1, ... with acks=all. */
    void produceLines(String topic, List<String> lines, int firstKey) throws Exception {
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            records.add(new ProducerRecord<>(topic, "line-" + (firstKey + i), lines.get(i)));
        }
        produce(records);
    }

    /** Produces the records with acks=all and waits until each is acknowledged. */
    void produce(List<ProducerRecord<String, String>> records) throws Exception {
        call("producing " + records.size() + " records to " + records.get(0).topic(), () -> {
            produceNow(records);
            return null;
        });
    }

    private void produceNow(List<ProducerRecord<String, String>> records) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Poll.STEP.toMillis());
        KafkaProducer<String, String> producer = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
        try {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (ProducerRecord<String, String> record : records) {
                acks.add(producer.send(record));
            }
            producer.flush();
            for (Future<RecordMetadata> ack : acks) {
                ack.get(Poll.STEP.toSeconds(), TimeUnit.SECONDS);
            }
        } finally {
            // close() with no timeout would wait as long as a send is pending.
            producer.close(Duration.ofSeconds(10));
        }
    }

    /** Creates and starts a Streams instance, closed with the lab. */
    StreamsApp startApp(String label, String applicationId, Path stateDir, Topology topology) {
        return startApp(label, applicationId, stateDir, topology, Map.of());
    }

    /** Like {@link #startApp(String, String, Path, Topology)}, with configs of the scenario's own. */
    StreamsApp startApp(String label, String applicationId, Path stateDir, Topology topology,
                        Map<String, Object> overrides) {
        StreamsApp app = new StreamsApp(label, bootstrap, applicationId, stateDir, topology, overrides);
        opened.push(app::close);
        app.start();
        return app;
    }

    /** A reader of a counts topic from its start, closed with the lab. */
    OutputReader reader(String topic, int partitions) {
        return reader(topic, partitions, "read_uncommitted");
    }

    /** A reader of a counts topic from its start with the given isolation.level, closed with the lab. */
    OutputReader reader(String topic, int partitions, String isolation) {
        OutputReader reader = new OutputReader(bootstrap, topic, partitions, isolation);
        opened.push(reader::close);
        return reader;
    }

    /**
     * Reads a topic of String keys and values from its start to its end
     * offsets (read_committed) and returns key to value; a key read twice
     * fails, so that a duplicate does not hide in the map.
     */
    Map<String, String> readLines(String topic, int partitionCount) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, topic + "-lines");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        Map<String, String> lines = new TreeMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
                new StringDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < partitionCount; p++) {
                partitions.add(new TopicPartition(topic, p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Poll.STEP);
            Poll.until("reading " + topic + " to its end offsets " + end, Poll.STEP, () -> {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    if (lines.put(r.key(), r.value()) != null) {
                        throw new ScenarioFailure(topic + ": key " + r.key() + " read twice (again at "
                                + r.partition() + "/" + r.offset() + ")");
                    }
                }
                for (TopicPartition tp : partitions) {
                    if (consumer.position(tp, Poll.STEP) < end.get(tp)) {
                        return false;
                    }
                }
                return true;
            }, () -> lines.size() + " lines read");
        }
        return lines;
    }

    /** Latest offsets of every partition of the topics, by ListOffsets. */
    Map<TopicPartition, Long> endOffsets(Collection<String> topics) throws Exception {
        return call("end offsets of " + topics, () -> offsets(topics, OffsetSpec.latest()));
    }

    /** Log start offsets of every partition of the topics, by ListOffsets. */
    Map<TopicPartition, Long> startOffsets(Collection<String> topics) throws Exception {
        return call("start offsets of " + topics, () -> offsets(topics, OffsetSpec.earliest()));
    }

    private Map<TopicPartition, Long> offsets(Collection<String> topics, OffsetSpec spec) throws Exception {
        Map<String, TopicDescription> described = admin.describeTopics(topics).allTopicNames()
                .get(Poll.STEP.toSeconds(), TimeUnit.SECONDS);
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        described.values().forEach(d -> d.partitions().forEach(
                p -> request.put(new TopicPartition(d.name(), p.partition()), spec)));
        Map<TopicPartition, Long> offsets = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        admin.listOffsets(request).all().get(Poll.STEP.toSeconds(), TimeUnit.SECONDS)
                .forEach((tp, info) -> offsets.put(tp, info.offset()));
        return offsets;
    }

    /** The group's committed offsets, by OffsetFetch. */
    Map<TopicPartition, Long> committed(String group) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = call("ListConsumerGroupOffsets " + group,
                () -> admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                        .get(Poll.STEP.toSeconds(), TimeUnit.SECONDS));
        Map<TopicPartition, Long> committed = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        offsets.forEach((tp, om) -> {
            if (om != null) {
                committed.put(tp, om.offset());
            }
        });
        return committed;
    }

    /** Names of all topics, internal ones included. */
    Set<String> topicNames() throws Exception {
        return call("ListTopics", () -> admin.listTopics(new ListTopicsOptions().listInternal(true)).names()
                .get(Poll.STEP.toSeconds(), TimeUnit.SECONDS));
    }

    Map<String, TopicDescription> describeTopics(Collection<String> topics) throws Exception {
        return call("DescribeTopics " + topics,
                () -> admin.describeTopics(topics).allTopicNames().get(Poll.STEP.toSeconds(), TimeUnit.SECONDS));
    }

    /** The value of one config of a topic, as DescribeConfigs reports it (null if absent). */
    String topicConfig(String topic, String key) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config config = call("DescribeConfigs " + topic, () -> admin.describeConfigs(List.of(resource)).all()
                .get(Poll.STEP.toSeconds(), TimeUnit.SECONDS).get(resource));
        ConfigEntry entry = config.get(key);
        return entry == null ? null : entry.value();
    }

    /**
     * Runs one call to the broker, turning its failure into a
     * {@link ScenarioFailure} that names the call.
     */
    private static <T> T call(String what, Callable<T> body) throws Exception {
        try {
            return body.call();
        } catch (ScenarioFailure | InterruptedException e) {
            throw e;
        } catch (Exception e) {
            throw new ScenarioFailure(what + ": " + Main.describe(e));
        }
    }

    /**
     * Closes what the scenario opened, newest first. Every close is tried;
     * the first failure is thrown after all were tried.
     */
    @Override
    public void close() {
        RuntimeException first = null;
        while (!opened.isEmpty()) {
            try {
                opened.pop().run();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
