package io.gregor.compat.javaclients;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * What one scenario works with: the broker's address, names under the run's
 * prefix, clients configured alike, and helpers that wait for a condition
 * with a deadline instead of sleeping.
 *
 * Every blocking client call is bounded by STEP_TIMEOUT, so that a broker
 * that never answers turns into a failure with a reason, well before Main's
 * per-scenario limit has to interrupt the scenario.
 */
final class Lab {
    /** Bound of one step: one admin call, one produce-and-flush, one read to the end. */
    static final Duration STEP_TIMEOUT = Duration.ofSeconds(60);

    /** How often waitFor asks again. */
    private static final Duration POLL_INTERVAL = Duration.ofMillis(100);

    final String bootstrap;
    final String scenario;
    private final String prefix;

    /** What the scenario is doing now; Main names it when the scenario fails or hangs. */
    private volatile String step = "setup";

    Lab(String bootstrap, String prefix, String scenario) {
        this.bootstrap = bootstrap;
        this.prefix = prefix;
        this.scenario = scenario;
    }

    void step(String what) {
        step = what;
    }

    String step() {
        return step;
    }

    /** A topic, group or client name that is this scenario's alone: prefix, suite, scenario, suffix. */
    String name(String suffix) {
        String base = prefix + "-java-" + scenario;
        return suffix.isEmpty() ? base : base + "-" + suffix;
    }

    Admin admin() {
        Map<String, Object> conf = new HashMap<>();
        conf.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        conf.put(AdminClientConfig.CLIENT_ID_CONFIG, name("admin"));
        conf.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000);
        conf.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) STEP_TIMEOUT.toMillis());
        Security.apply(conf);
        return Admin.create(conf);
    }

    /**
     * A producer with acks=all and bounded blocking. Idempotence, on by
     * default in the client, is off here so that only idempotent-producer
     * depends on InitProducerId and producer sequences; one request in
     * flight then keeps the send order across retries.
     */
    KafkaProducer<byte[], byte[]> producer(String clientSuffix, Map<String, Object> overrides) {
        Map<String, Object> conf = new HashMap<>();
        conf.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        conf.put(ProducerConfig.CLIENT_ID_CONFIG, name(clientSuffix));
        conf.put(ProducerConfig.ACKS_CONFIG, "all");
        conf.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        conf.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        conf.put(ProducerConfig.LINGER_MS_CONFIG, 10);
        conf.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000);
        conf.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) STEP_TIMEOUT.toMillis());
        conf.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, STEP_TIMEOUT.toMillis());
        conf.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        conf.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        Security.apply(conf);
        conf.putAll(overrides);
        return new KafkaProducer<>(conf);
    }

    /** A consumer with no group, for assign() and seek(). */
    KafkaConsumer<byte[], byte[]> consumer(String clientSuffix) {
        return consumer(clientSuffix, Map.of());
    }

    /** A consumer with no group and configs of the scenario's own (an isolation.level, say). */
    KafkaConsumer<byte[], byte[]> consumer(String clientSuffix, Map<String, Object> overrides) {
        Map<String, Object> conf = consumerConfig(clientSuffix);
        conf.putAll(overrides);
        return new KafkaConsumer<>(conf);
    }

    /**
     * A member of group groupId that speaks the classic group protocol
     * (JoinGroup/SyncGroup/Heartbeat), named explicitly so that a change of
     * the client's default does not change what the scenario tests. Offsets
     * are committed only by the scenario itself.
     */
    KafkaConsumer<byte[], byte[]> groupConsumer(String groupId, String clientSuffix) {
        return groupConsumer(groupId, clientSuffix, Map.of());
    }

    /** A classic member with configs of the scenario's own (a partition.assignment.strategy, say). */
    KafkaConsumer<byte[], byte[]> groupConsumer(String groupId, String clientSuffix, Map<String, Object> overrides) {
        Map<String, Object> conf = consumerConfig(clientSuffix);
        conf.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        conf.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        conf.putAll(overrides);
        return new KafkaConsumer<>(conf);
    }

    /**
     * A member of group groupId that speaks the consumer group protocol of
     * KIP-848 (group.protocol=consumer: ConsumerGroupHeartbeat, the broker
     * assigns the partitions). The classic protocol's settings
     * (partition.assignment.strategy, session and heartbeat timeouts) are
     * left out, as the client refuses them with this protocol. Offsets are
     * committed only by the scenario itself.
     */
    KafkaConsumer<byte[], byte[]> consumerProtocolMember(String groupId, String clientSuffix) {
        Map<String, Object> conf = consumerConfig(clientSuffix);
        conf.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        conf.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        return new KafkaConsumer<>(conf);
    }

    private Map<String, Object> consumerConfig(String clientSuffix) {
        Map<String, Object> conf = new HashMap<>();
        conf.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        conf.put(ConsumerConfig.CLIENT_ID_CONFIG, name(clientSuffix));
        conf.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        conf.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        conf.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000);
        conf.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) STEP_TIMEOUT.toMillis());
        conf.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        conf.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        Security.apply(conf);
        return conf;
    }

    /**
     * The future's value, waiting at most STEP_TIMEOUT. A broker error comes
     * out as the ExecutionException (Main and the scenarios look at its
     * cause); no answer at all as a failure that says so.
     */
    static <T> T get(KafkaFuture<T> future) throws Exception {
        try {
            return future.get(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new ScenarioFailure("no answer within " + STEP_TIMEOUT.toSeconds() + " s");
        }
    }

    /**
     * Creates a topic with replication factor 1 and waits until the broker's
     * metadata shows every partition with a leader, so that the producer and
     * consumer that follow find it.
     */
    void createTopic(Admin admin, String topic, int partitions, Map<String, String> configs) throws Exception {
        step("create topic " + topic);
        NewTopic nt = new NewTopic(topic, partitions, (short) 1).configs(configs);
        get(admin.createTopics(List.of(nt)).all());
        waitForTopic(admin, topic, partitions);
    }

    void waitForTopic(Admin admin, String topic, int partitions) throws Exception {
        step("wait for topic " + topic + " with " + partitions + " partitions");
        waitFor("topic " + topic + " with " + partitions + " partitions, each with a leader", () -> {
            TopicDescription d = get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
            if (d.partitions().size() != partitions) {
                return false;
            }
            for (TopicPartitionInfo p : d.partitions()) {
                if (p.leader() == null || p.leader().isEmpty()) {
                    return false;
                }
            }
            return true;
        });
    }

    /**
     * A condition waitFor asks again until it holds. An exception counts as
     * "not yet", except a ScenarioFailure, which ends the wait at once.
     */
    interface Condition {
        boolean holds() throws Exception;
    }

    /**
     * Asks cond every POLL_INTERVAL until it holds or STEP_TIMEOUT passes;
     * then fails, naming what it waited for and the last exception seen.
     */
    static void waitFor(String what, Condition cond) throws Exception {
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        Exception last = null;
        while (true) {
            try {
                if (cond.holds()) {
                    return;
                }
                last = null;
            } catch (InterruptedException | ScenarioFailure e) {
                throw e;
            } catch (Exception e) {
                last = e;
            }
            if (System.nanoTime() > deadline) {
                String why = last == null ? "" : " (last error: " + Main.describe(last) + ")";
                throw new ScenarioFailure("waited " + STEP_TIMEOUT.toSeconds() + " s for " + what + why);
            }
            Thread.sleep(POLL_INTERVAL.toMillis());
        }
    }
}
