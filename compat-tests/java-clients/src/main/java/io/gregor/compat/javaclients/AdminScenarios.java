package io.gregor.compat.javaclients;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import io.gregor.compat.javaclients.Records.Sent;

/** Scenarios of the Admin client: topics, configs, cluster. */
final class AdminScenarios {
    private AdminScenarios() {
    }

    /**
     * admin-topics: createTopics with 3 partitions and retention.ms (the
     * result reports both; a second create fails with TopicExists),
     * listTopics shows it, describeTopics gives 3 led partitions of one
     * replica and a topic id, createPartitions grows it to 5 (and the new
     * partition 4 takes a record), deleteTopics removes it from listTopics
     * and describeTopics.
     */
    static String topics(Lab lab) throws Exception {
        String topic = lab.name("");
        try (Admin admin = lab.admin()) {
            lab.step("createTopics");
            CreateTopicsResult created = admin.createTopics(
                    List.of(new NewTopic(topic, 3, (short) 1).configs(Map.of("retention.ms", "3600000"))));
            Lab.get(created.all());
            ScenarioFailure.checkEqual("createTopics result partitions", 3, Lab.get(created.numPartitions(topic)));
            ScenarioFailure.checkEqual("createTopics result replication factor", 1,
                    Lab.get(created.replicationFactor(topic)));
            lab.waitForTopic(admin, topic, 3);

            lab.step("createTopics of an existing topic");
            try {
                Lab.get(admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all());
                throw new ScenarioFailure("creating " + topic + " a second time succeeded, expected TopicExistsException");
            } catch (ExecutionException e) {
                ScenarioFailure.check(e.getCause() instanceof TopicExistsException,
                        "creating %s a second time: %s, expected TopicExistsException", topic,
                        Main.describe(e.getCause()));
            }

            lab.step("listTopics");
            Set<String> names = Lab.get(admin.listTopics().names());
            ScenarioFailure.check(names.contains(topic), "listTopics (%d topics) does not show %s", names.size(),
                    topic);

            lab.step("describeTopics");
            TopicDescription d = describeTopic(admin, topic);
            ScenarioFailure.checkEqual("described name", topic, d.name());
            ScenarioFailure.check(!d.isInternal(), "%s described as internal", topic);
            ScenarioFailure.check(d.topicId() != null && !d.topicId().equals(Uuid.ZERO_UUID),
                    "%s described with topic id %s", topic, d.topicId());
            checkPartitions(d, 3);

            lab.step("describeConfigs of the created topic");
            ConfigEntry retention = topicConfig(admin, topic).get("retention.ms");
            ScenarioFailure.check(retention != null && "3600000".equals(retention.value())
                    && retention.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
                    "retention.ms given at creation described as %s, expected 3600000 from DYNAMIC_TOPIC_CONFIG",
                    retention);

            lab.step("createPartitions 3 -> 5");
            Lab.get(admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all());
            lab.waitForTopic(admin, topic, 5);
            TopicDescription grown = describeTopic(admin, topic);
            checkPartitions(grown, 5);
            ScenarioFailure.checkEqual("topic id after createPartitions", d.topicId(), grown.topicId());

            lab.step("produce to and read from the new partition 4");
            Sent g = Records.generate(1, 1, Records.baseTimestamp(), 71).get(0);
            List<Sent> sent = List.of(new Sent(4, g.key, g.value, g.headers, g.timestamp));
            try (KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
                Records.produce(producer, topic, sent);
            }
            try (KafkaConsumer<byte[], byte[]> consumer = lab.consumer("consumer")) {
                TopicPartition tp4 = new TopicPartition(topic, 4);
                consumer.assign(List.of(tp4));
                consumer.seekToBeginning(List.of(tp4));
                Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = Records.readUntil(consumer, topic,
                        Map.of(4, 1L));
                Records.checkSame(topic, 4, sent, got.get(4));
            }

            lab.step("deleteTopics");
            Lab.get(admin.deleteTopics(List.of(topic)).all());
            Lab.waitFor("listTopics to stop showing " + topic,
                    () -> !Lab.get(admin.listTopics().names()).contains(topic));
            try {
                TopicDescription after = describeTopic(admin, topic);
                throw new ScenarioFailure("describeTopics of deleted " + topic + " answered " + after.partitions().size()
                        + " partitions, expected UnknownTopicOrPartitionException");
            } catch (ExecutionException e) {
                ScenarioFailure.check(e.getCause() instanceof UnknownTopicOrPartitionException,
                        "describeTopics of deleted %s: %s, expected UnknownTopicOrPartitionException", topic,
                        Main.describe(e.getCause()));
            }
        }
        return "created (3 partitions, retention.ms), listed, described, grown to 5, deleted";
    }

    private static TopicDescription describeTopic(Admin admin, String topic) throws Exception {
        return Lab.get(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
    }

    /** Partitions 0..n-1, each led by its one replica, which is in sync. */
    private static void checkPartitions(TopicDescription d, int n) {
        ScenarioFailure.checkEqual(d.name() + " partition count", n, d.partitions().size());
        for (int i = 0; i < n; i++) {
            TopicPartitionInfo p = d.partitions().get(i);
            String what = d.name() + " partition " + i;
            ScenarioFailure.checkEqual(what + " index", i, p.partition());
            ScenarioFailure.check(p.leader() != null && !p.leader().isEmpty(), "%s has no leader", what);
            ScenarioFailure.check(p.replicas().size() == 1 && p.replicas().get(0).id() == p.leader().id(),
                    "%s: replicas %s, expected the leader %s alone", what, p.replicas(), p.leader());
            ScenarioFailure.check(p.isr().size() == 1 && p.isr().get(0).id() == p.leader().id(),
                    "%s: isr %s, expected the leader %s alone", what, p.isr(), p.leader());
        }
    }

    /** The topic's configs by name, as describeConfigs gives them. */
    private static Map<String, ConfigEntry> topicConfig(Admin admin, String topic) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config c = Lab.get(admin.describeConfigs(List.of(res)).all()).get(res);
        ScenarioFailure.check(c != null, "describeConfigs gave nothing for topic %s", topic);
        Map<String, ConfigEntry> out = new java.util.HashMap<>();
        for (ConfigEntry e : c.entries()) {
            out.put(e.name(), e);
        }
        return out;
    }

    /**
     * admin-configs: a topic created with retention.ms describes it as
     * DYNAMIC_TOPIC_CONFIG and cleanup.policy as the default "delete";
     * incrementalAlterConfigs SET retention.bytes and DELETE retention.ms
     * read back as set and as no longer the topic's own; an invalid value is
     * refused with InvalidConfiguration and changes nothing.
     */
    static String configs(Lab lab) throws Exception {
        String topic = lab.name("");
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, 3, Map.of("retention.ms", "86400000"));

            lab.step("describeConfigs");
            Map<String, ConfigEntry> c = topicConfig(admin, topic);
            ConfigEntry retention = c.get("retention.ms");
            ScenarioFailure.check(retention != null && "86400000".equals(retention.value())
                    && retention.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG && !retention.isDefault(),
                    "retention.ms described as %s, expected 86400000 from DYNAMIC_TOPIC_CONFIG", retention);
            ConfigEntry cleanup = c.get("cleanup.policy");
            ScenarioFailure.check(cleanup != null && "delete".equals(cleanup.value())
                    && cleanup.source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG && cleanup.isDefault(),
                    "cleanup.policy described as %s, expected the default delete from DEFAULT_CONFIG", cleanup);

            lab.step("incrementalAlterConfigs SET retention.bytes, DELETE retention.ms");
            Collection<AlterConfigOp> ops = List.of(
                    new AlterConfigOp(new ConfigEntry("retention.bytes", "1048576"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE));
            Lab.get(admin.incrementalAlterConfigs(Map.of(res, ops)).all());
            Lab.waitFor("describeConfigs to show retention.bytes=1048576 set and retention.ms no longer set", () -> {
                Map<String, ConfigEntry> now = topicConfig(admin, topic);
                return isTopicOwn(now.get("retention.bytes"), "1048576") && !isTopicOwn(now.get("retention.ms"), null);
            });
            ConfigEntry back = topicConfig(admin, topic).get("retention.ms");
            ScenarioFailure.check(back != null && !"86400000".equals(back.value())
                    && (back.source() == ConfigEntry.ConfigSource.DEFAULT_CONFIG
                            || back.source() == ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG),
                    "retention.ms after DELETE described as %s, expected a default from DEFAULT_CONFIG or "
                            + "STATIC_BROKER_CONFIG", back);

            lab.step("incrementalAlterConfigs with an invalid value");
            Collection<AlterConfigOp> bad = List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "forever"), AlterConfigOp.OpType.SET));
            try {
                Lab.get(admin.incrementalAlterConfigs(Map.of(res, bad)).all());
                throw new ScenarioFailure("SET retention.ms=forever succeeded, expected InvalidConfigurationException");
            } catch (ExecutionException e) {
                ScenarioFailure.check(e.getCause() instanceof InvalidConfigurationException,
                        "SET retention.ms=forever: %s, expected InvalidConfigurationException",
                        Main.describe(e.getCause()));
            }
            Map<String, ConfigEntry> after = topicConfig(admin, topic);
            ScenarioFailure.check(isTopicOwn(after.get("retention.bytes"), "1048576")
                    && !isTopicOwn(after.get("retention.ms"), null),
                    "after the refused change: retention.bytes %s, retention.ms %s", after.get("retention.bytes"),
                    after.get("retention.ms"));
        }
        return "retention.ms dynamic and cleanup.policy default described; SET and DELETE read back; "
                + "invalid value refused";
    }

    /** Whether e is set on the topic itself (with value want, unless want is null). */
    private static boolean isTopicOwn(ConfigEntry e, String want) {
        return e != null && e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG
                && (want == null || want.equals(e.value()));
    }

    /**
     * describe-cluster: a cluster id, at least one node (one of them on the
     * bootstrap port), and a controller that is one of the nodes; a second
     * call gives the same cluster id.
     */
    static String describeCluster(Lab lab) throws Exception {
        try (Admin admin = lab.admin()) {
            lab.step("describeCluster");
            DescribeClusterResult r = admin.describeCluster();
            String clusterId = Lab.get(r.clusterId());
            Collection<Node> nodes = Lab.get(r.nodes());
            Node controller = Lab.get(r.controller());
            ScenarioFailure.check(clusterId != null && !clusterId.isEmpty(), "cluster id %s", clusterId);
            ScenarioFailure.check(!nodes.isEmpty(), "describeCluster gave no nodes");
            int port = Integer.parseInt(lab.bootstrap.substring(lab.bootstrap.lastIndexOf(':') + 1));
            ScenarioFailure.check(nodes.stream().anyMatch(n -> n.port() == port),
                    "no node on the bootstrap port %d: %s", port, nodes);
            ScenarioFailure.check(controller != null && !controller.isEmpty(), "controller %s", controller);
            ScenarioFailure.check(nodes.stream().anyMatch(n -> n.id() == controller.id()),
                    "controller %s is not one of the nodes %s", controller, nodes);
            lab.step("describeCluster again");
            String again = Lab.get(admin.describeCluster().clusterId());
            ScenarioFailure.checkEqual("cluster id on a second call", clusterId, again);
            return String.format("cluster %s, %d node(s), controller %d", clusterId, nodes.size(), controller.id());
        }
    }
}
