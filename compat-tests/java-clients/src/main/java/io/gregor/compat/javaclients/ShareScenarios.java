package io.gregor.compat.javaclients;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import io.gregor.compat.javaclients.Records.Sent;

/**
 * Scenarios of share groups (KIP-932, queues): KafkaShareConsumer members
 * of one share group share the records of a partition, each acquired by one
 * member at a time and acknowledged one by one (share.acknowledgement.mode
 * explicit). The group starts from the earliest record: its
 * share.auto.offset.reset is set to earliest as a GROUP config first, as a
 * share group is meant to be set up.
 *
 * Identity of a record: its offset in the one-partition topic.
 */
final class ShareScenarios {
    private ShareScenarios() {
    }

    /** A share consumer of group, explicit acknowledgement. */
    static KafkaShareConsumer<byte[], byte[]> member(Lab lab, String group, String clientSuffix) {
        Map<String, Object> conf = new HashMap<>();
        conf.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, lab.bootstrap);
        conf.put(ConsumerConfig.CLIENT_ID_CONFIG, lab.name(clientSuffix));
        conf.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        conf.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        conf.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000);
        conf.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Lab.STEP_TIMEOUT.toMillis());
        conf.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        conf.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        return new KafkaShareConsumer<>(conf);
    }

    /** Sets group configs, as kafka-configs --entity-type groups --alter does. */
    static void setGroupConfigs(Lab lab, Admin admin, String group, Map<String, String> configs) throws Exception {
        lab.step("set group configs " + configs + " of " + group);
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        List<AlterConfigOp> ops = new ArrayList<>();
        for (Map.Entry<String, String> e : configs.entrySet()) {
            ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()), AlterConfigOp.OpType.SET));
        }
        Lab.get(admin.incrementalAlterConfigs(Map.of(res, ops)).all());
    }

    /**
     * One member polling in its own thread: it accepts every record it gets
     * (or what decide says for it), commits its acknowledgements after each
     * poll, and keeps the offsets it accepted and the delivery counts it saw.
     */
    private static final class Member implements Runnable {
        interface Decide {
            AcknowledgeType of(ConsumerRecord<byte[], byte[]> r);
        }

        private final Lab lab;
        private final String group;
        private final String topic;
        final String name;
        private final Decide decide;
        final ConcurrentLinkedQueue<Long> accepted = new ConcurrentLinkedQueue<>();
        final Map<Long, Short> deliveryCounts = new ConcurrentHashMap<>();
        volatile Throwable error;
        volatile boolean stop;
        private final Thread thread;

        Member(Lab lab, String group, String topic, String name, Decide decide) {
            this.lab = lab;
            this.group = group;
            this.topic = topic;
            this.name = name;
            this.decide = decide;
            this.thread = new Thread(this, lab.scenario + "-" + name);
            this.thread.setDaemon(true);
        }

        void start() {
            thread.start();
        }

        @Override
        public void run() {
            try (KafkaShareConsumer<byte[], byte[]> c = member(lab, group, name)) {
                c.subscribe(List.of(topic));
                while (!stop) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                        r.deliveryCount().ifPresent(n -> deliveryCounts.merge(r.offset(), n, (a, b) -> (short) Math.max(a, b)));
                        AcknowledgeType t = decide.of(r);
                        c.acknowledge(r, t);
                        if (t == AcknowledgeType.ACCEPT) {
                            accepted.add(r.offset());
                        }
                    }
                    c.commitSync(Lab.STEP_TIMEOUT);
                }
            } catch (Throwable t) {
                error = t;
            }
        }

        void stopAndJoin() throws InterruptedException {
            stop = true;
            thread.join(Lab.STEP_TIMEOUT.toMillis());
            ScenarioFailure.check(!thread.isAlive(), "member %s did not close within %d s", name,
                    Lab.STEP_TIMEOUT.toSeconds());
            checkAlive();
        }

        void checkAlive() {
            if (error != null) {
                throw new ScenarioFailure("member " + name + " failed: " + Main.describe(error));
            }
        }
    }

    /** Offsets accepted by all members, with how many times each was. */
    private static Map<Long, Integer> acceptedCounts(Collection<Member> members) {
        Map<Long, Integer> out = new TreeMap<>();
        for (Member m : members) {
            for (long off : m.accepted) {
                out.merge(off, 1, Integer::sum);
            }
        }
        return out;
    }

    /** Checks that offsets 0..n-1 were accepted exactly once each. */
    private static void checkAcceptedOnce(Map<Long, Integer> counts, int n) {
        List<Long> twice = new ArrayList<>();
        for (Map.Entry<Long, Integer> e : counts.entrySet()) {
            if (e.getValue() != 1) {
                twice.add(e.getKey());
            }
        }
        ScenarioFailure.check(twice.isEmpty(), "%d records accepted more than once, first %s", twice.size(),
                twice.subList(0, Math.min(5, twice.size())));
        for (long off = 0; off < n; off++) {
            ScenarioFailure.check(counts.containsKey(off), "record at offset %d never accepted (%d of %d)", off,
                    counts.size(), n);
        }
        ScenarioFailure.check(counts.size() == n, "%d offsets accepted, %d produced", counts.size(), n);
    }

    /** The group's offset info on the partition (listShareGroupOffsets), null when the group has none. */
    private static SharePartitionOffsetInfo offsetInfo(Admin admin, String group, TopicPartition tp) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> offsets = Lab.get(admin
                .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(List.of(tp))))
                .partitionsToOffsetInfo(group));
        return offsets.get(tp);
    }

    /**
     * share-group-three-members: 3000 records on one partition, three share
     * consumers of one group on it: every record is accepted exactly once
     * over the three; describeShareGroups shows the three members, each
     * assigned the partition, and listShareGroupOffsets a lag of 0 once all
     * are accepted.
     */
    static String threeMembers(Lab lab) throws Exception {
        final int n = 3000;
        String topic = lab.name("");
        String group = lab.name("group");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = lab.admin(); KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
            lab.createTopic(admin, topic, 1, Map.of());
            lab.step("produce " + n + " records");
            List<Sent> sent = Records.generate(n, 1, Records.baseTimestamp(), 93);
            Records.produce(producer, topic, sent);
            setGroupConfigs(lab, admin, group, Map.of("share.auto.offset.reset", "earliest"));
            long start = -1;
            List<Member> members = new ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                members.add(new Member(lab, group, topic, "member-" + i, r -> AcknowledgeType.ACCEPT));
            }
            try {
                lab.step("three members consume");
                members.forEach(Member::start);
                Lab.waitFor("the three members to accept " + n + " records", () -> {
                    members.forEach(Member::checkAlive);
                    return acceptedCounts(members).size() >= n;
                });
                lab.step("describeShareGroups with the three members");
                Lab.waitFor("describeShareGroups: Stable, three members each assigned " + tp, () -> {
                    ShareGroupDescription d = Lab.get(admin.describeShareGroups(List.of(group)).describedGroups()
                            .get(group));
                    if (d.groupState() != GroupState.STABLE || d.members().size() != 3) {
                        return false;
                    }
                    return d.members().stream()
                            .allMatch(m -> m.assignment().topicPartitions().equals(Set.of(tp)));
                });
                lab.step("listShareGroupOffsets");
                // The start offset may stay below the end while the records
                // after it are all acknowledged; the lag says none is left.
                Lab.waitFor("listShareGroupOffsets with lag 0", () -> {
                    SharePartitionOffsetInfo info = offsetInfo(admin, group, tp);
                    return info != null && info.lag().isPresent() && info.lag().get() == 0 && info.startOffset() >= 0
                            && info.startOffset() <= n;
                });
                start = offsetInfo(admin, group, tp).startOffset();
            } finally {
                for (Member m : members) {
                    m.stop = true;
                }
                for (Member m : members) {
                    m.stopAndJoin();
                }
            }
            checkAcceptedOnce(acceptedCounts(members), n);
            StringBuilder per = new StringBuilder();
            for (Member m : members) {
                per.append(per.length() == 0 ? "" : ", ").append(m.name).append(' ').append(m.accepted.size());
            }
            return n + " records accepted once each (" + per + "); lag 0, start offset " + start;
        }
    }

    /**
     * share-group-release-redelivery: one member releases every tenth record
     * the first time it gets it; those come back with delivery count 2 and
     * are accepted then; every record is accepted exactly once.
     */
    static String releaseRedelivery(Lab lab) throws Exception {
        final int n = 200;
        String topic = lab.name("");
        String group = lab.name("group");
        try (Admin admin = lab.admin(); KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
            lab.createTopic(admin, topic, 1, Map.of());
            Records.produce(producer, topic, Records.generate(n, 1, Records.baseTimestamp(), 94));
            setGroupConfigs(lab, admin, group, Map.of("share.auto.offset.reset", "earliest"));
            Set<Long> released = ConcurrentHashMap.newKeySet();
            Member m = new Member(lab, group, topic, "member", r -> {
                if (r.offset() % 10 == 0 && released.add(r.offset())) {
                    return AcknowledgeType.RELEASE;
                }
                return AcknowledgeType.ACCEPT;
            });
            try {
                lab.step("consume, releasing every tenth record once");
                m.start();
                Lab.waitFor("the member to accept " + n + " records", () -> {
                    m.checkAlive();
                    return acceptedCounts(List.of(m)).size() >= n;
                });
            } finally {
                m.stopAndJoin();
            }
            checkAcceptedOnce(acceptedCounts(List.of(m)), n);
            ScenarioFailure.checkEqual("records released", n / 10, released.size());
            for (long off : released) {
                Short count = m.deliveryCounts.get(off);
                ScenarioFailure.check(count != null && count == 2,
                        "released record at offset %d came back with delivery count %s, expected 2", off, count);
            }
            return n + " records accepted once; " + released.size() + " released ones delivered again with count 2";
        }
    }

    /**
     * share-group-lock-timeout: a member in a child JVM acquires records and
     * then stalls (SIGSTOP: its connection stays open, it acknowledges
     * nothing); with the group's share.record.lock.duration.ms at 15 s,
     * another member gets those records once their lock expired, each with
     * delivery count 2, and accepts them: none lost, none accepted twice.
     */
    static String lockTimeout(Lab lab) throws Exception {
        return heldByLostMember(lab, true);
    }

    /**
     * share-group-member-killed: the same with the child killed
     * (destroyForcibly) instead: its records are delivered again to another
     * member with delivery count 2, at the latest when their lock expires.
     */
    static String memberKilled(Lab lab) throws Exception {
        return heldByLostMember(lab, false);
    }

    private static String heldByLostMember(Lab lab, boolean stall) throws Exception {
        final int n = 100;
        final long lockMs = 15_000;
        String topic = lab.name("");
        String group = lab.name("group");
        try (Admin admin = lab.admin(); KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
            lab.createTopic(admin, topic, 1, Map.of());
            Records.produce(producer, topic, Records.generate(n, 1, Records.baseTimestamp(), 95));
            setGroupConfigs(lab, admin, group,
                    Map.of("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", String.valueOf(lockMs)));
            lab.step("a member in a child JVM acquires records");
            String java = ProcessHandle.current().info().command().orElse("java");
            Process child = new ProcessBuilder(java, "-Xmx128m", "-cp", System.getProperty("java.class.path"),
                    ShareChild.class.getName(), lab.bootstrap, group, topic, lab.name("child"))
                    .redirectErrorStream(true).start();
            AtomicInteger acquired = new AtomicInteger(-1);
            Thread reader = new Thread(() -> {
                try (BufferedReader br = new BufferedReader(
                        new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = br.readLine()) != null;) {
                        if (line.startsWith("acquired ")) {
                            acquired.set(Integer.parseInt(line.substring("acquired ".length()).trim()));
                        }
                    }
                } catch (Exception e) {
                    // the child was killed
                }
            });
            reader.setDaemon(true);
            reader.start();
            long lostAt;
            Member m = new Member(lab, group, topic, "member", r -> AcknowledgeType.ACCEPT);
            try {
                Lab.waitFor("the child member to acquire records", () -> {
                    ScenarioFailure.check(child.isAlive() || acquired.get() > 0, "the child member exited with %s",
                            child.isAlive() ? "" : String.valueOf(child.exitValue()));
                    return acquired.get() > 0;
                });
                if (stall) {
                    lab.step("stall the child (" + acquired.get() + " records acquired); another member takes them");
                    Process stop = new ProcessBuilder("kill", "-STOP", String.valueOf(child.pid())).inheritIO().start();
                    ScenarioFailure.check(stop.waitFor() == 0, "kill -STOP %d failed", child.pid());
                } else {
                    lab.step("kill the child (" + acquired.get() + " records acquired); another member takes them");
                    child.destroyForcibly();
                    child.waitFor();
                }
                lostAt = System.nanoTime();
                m.start();
                Lab.waitFor("the other member to accept " + n + " records", () -> {
                    m.checkAlive();
                    return acceptedCounts(List.of(m)).size() >= n;
                });
            } finally {
                child.destroyForcibly();
                child.waitFor();
                m.stopAndJoin();
            }
            long tookMs = (System.nanoTime() - lostAt) / 1_000_000;
            checkAcceptedOnce(acceptedCounts(List.of(m)), n);
            for (long off = 0; off < acquired.get(); off++) {
                Short count = m.deliveryCounts.get(off);
                ScenarioFailure.check(count != null && count == 2,
                        "record at offset %d, held by the lost member, came with delivery count %s, expected 2", off,
                        count);
            }
            if (stall) {
                // The stalled member's records wait for their lock to expire.
                ScenarioFailure.check(tookMs >= lockMs - 3_000, "records of the stalled member delivered again after"
                        + " %d ms, before their %d ms lock could expire", tookMs, lockMs);
            }
            return acquired.get() + " records held by a " + (stall ? "stalled" : "killed")
                    + " member delivered again with count 2 after " + tookMs + " ms; " + n + " accepted once";
        }
    }
}
