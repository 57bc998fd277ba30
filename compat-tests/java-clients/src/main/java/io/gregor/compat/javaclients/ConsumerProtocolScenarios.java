package io.gregor.compat.javaclients;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

import io.gregor.compat.javaclients.Records.Sent;

/**
 * Scenarios of the consumer group protocol of KIP-848
 * (group.protocol=consumer): members heartbeat with ConsumerGroupHeartbeat
 * and the broker's group coordinator computes the assignment (Kafka's
 * default server-side assignor is "uniform"); Admin describes the group
 * with ConsumerGroupDescribe; offsets go through OffsetCommit and
 * OffsetFetch under the member's epoch.
 *
 * A broker that does not serve ConsumerGroupHeartbeat makes the member's
 * poll throw UnsupportedVersionException; the member threads keep the error
 * and every wait checks them, so the scenario fails with that reason at
 * once instead of waiting out a step.
 */
final class ConsumerProtocolScenarios {
    private ConsumerProtocolScenarios() {
    }

    /** How a member subscribes: to topics by name, or to a SubscriptionPattern. */
    private interface Subscription {
        void subscribe(KafkaConsumer<byte[], byte[]> c);
    }

    /**
     * One member of a consumer protocol group, polling in its own thread as
     * KafkaConsumer wants. It keeps what it read, its assignment after the
     * last poll and its member id; when stopped with commitOnStop it commits
     * its position on every partition it holds (and keeps what it
     * committed) before it closes, which leaves the group.
     */
    private static final class Member implements Runnable {
        private final Lab lab;
        private final String group;
        private final Subscription subscription;
        final String name;
        final ConcurrentLinkedQueue<ConsumerRecord<byte[], byte[]>> records = new ConcurrentLinkedQueue<>();
        volatile Set<TopicPartition> assignment = Set.of();
        volatile String memberId = "";
        volatile Map<TopicPartition, OffsetAndMetadata> committed = Map.of();
        volatile Throwable error;
        volatile boolean commitOnStop;
        volatile boolean stop;
        private final Thread thread;
        /** A member of the classic protocol (cooperative-sticky) instead. */
        private final boolean classic;

        Member(Lab lab, String group, String name, Subscription subscription) {
            this(lab, group, name, subscription, false);
        }

        Member(Lab lab, String group, String name, Subscription subscription, boolean classic) {
            this.lab = lab;
            this.group = group;
            this.name = name;
            this.subscription = subscription;
            this.classic = classic;
            this.thread = new Thread(this, lab.scenario + "-" + name);
            this.thread.setDaemon(true);
        }

        void start() {
            thread.start();
        }

        @Override
        public void run() {
            try (KafkaConsumer<byte[], byte[]> c = classic
                    ? lab.groupConsumer(group, name, Map.of(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                            CooperativeStickyAssignor.class.getName()))
                    : lab.consumerProtocolMember(group, name)) {
                subscription.subscribe(c);
                while (!stop) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                        records.add(r);
                    }
                    assignment = Set.copyOf(c.assignment());
                    memberId = c.groupMetadata().memberId();
                }
                if (commitOnStop) {
                    Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
                    for (TopicPartition tp : c.assignment()) {
                        positions.put(tp, new OffsetAndMetadata(c.position(tp, Lab.STEP_TIMEOUT)));
                    }
                    c.commitSync(positions, Lab.STEP_TIMEOUT);
                    committed = Map.copyOf(positions);
                }
            } catch (Throwable t) {
                error = t;
            }
        }

        /** Stops polling and waits for the member to commit (if asked) and leave the group. */
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

        /** What the member read of one partition, in the order read. */
        List<ConsumerRecord<byte[], byte[]>> read(TopicPartition tp) {
            List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> r : records) {
                if (r.topic().equals(tp.topic()) && r.partition() == tp.partition()) {
                    out.add(r);
                }
            }
            return out;
        }
    }

    /**
     * consumer-protocol-group: two members with group.protocol=consumer join
     * one group on a 6-partition topic; the broker gives each 3 (uniform),
     * none twice, and describeConsumerGroups and listGroups show a group of
     * type consumer, Stable, with those two members and assignments. 300
     * records are produced only then: each member reads exactly those of its
     * own partitions. member-1 commits its positions and leaves; member-2 is
     * given all 6 partitions and reads the next 300 records, on member-1's
     * partitions from member-1's commits (nothing read twice). member-2
     * commits and leaves (the group is Empty, its offsets listed at 100 per
     * partition); a new member of the group resumes exactly there and reads
     * the 120 records produced since.
     */
    static String group(Lab lab) throws Exception {
        final int partitions = 6;
        String topic = lab.name("");
        String group = lab.name("group");
        Set<TopicPartition> all = new HashSet<>(DataScenarios.partitions(topic, partitions));
        try (Admin admin = lab.admin(); KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
            lab.createTopic(admin, topic, partitions, Map.of());
            Member m1 = new Member(lab, group, "member-1", c -> c.subscribe(List.of(topic)));
            Member m2 = new Member(lab, group, "member-2", c -> c.subscribe(List.of(topic)));
            try {
                lab.step("member-1 and member-2 join");
                m1.start();
                m2.start();
                Lab.waitFor("the broker to split the 6 partitions between both members", () -> {
                    m1.checkAlive();
                    m2.checkAlive();
                    Set<TopicPartition> a1 = m1.assignment;
                    Set<TopicPartition> a2 = m2.assignment;
                    Set<TopicPartition> union = new HashSet<>(a1);
                    union.addAll(a2);
                    return !a1.isEmpty() && !a2.isEmpty() && union.size() == a1.size() + a2.size()
                            && union.equals(all);
                });
                Set<TopicPartition> a1 = m1.assignment;
                Set<TopicPartition> a2 = m2.assignment;
                // Kafka's default server-side assignor, uniform, balances the partitions.
                ScenarioFailure.check(a1.size() == 3 && a2.size() == 3,
                        "assignment %s / %s, expected 3 partitions each", names(a1), names(a2));

                lab.step("describeConsumerGroups and listGroups with both members");
                ConsumerGroupDescription d = waitForDescription(admin, group,
                        "Stable with member-1 holding " + names(a1) + " and member-2 " + names(a2),
                        e -> e.groupState() == GroupState.STABLE
                                && assignments(e).equals(Map.of(m1.memberId, a1, m2.memberId, a2)));
                ScenarioFailure.checkEqual("described type", GroupType.CONSUMER, d.type());
                ScenarioFailure.checkEqual("described partition assignor", "uniform", d.partitionAssignor());
                ScenarioFailure.check(d.groupEpoch().isPresent() && d.targetAssignmentEpoch().isPresent(),
                        "described group epoch %s, target assignment epoch %s: expected both (ConsumerGroupDescribe)",
                        d.groupEpoch(), d.targetAssignmentEpoch());
                for (MemberDescription md : d.members()) {
                    ScenarioFailure.checkEqual("described target assignment of " + md.consumerId(),
                            Optional.of(md.assignment().topicPartitions()),
                            md.targetAssignment().map(t -> t.topicPartitions()));
                }
                GroupListing listing = findListing(admin, group);
                ScenarioFailure.check(listing != null, "listGroups does not show %s", group);
                ScenarioFailure.checkEqual("listGroups type of " + group, Optional.of(GroupType.CONSUMER),
                        listing.type());

                lab.step("produce 300 records while both members poll");
                List<Sent> first = Records.generate(300, partitions, Records.baseTimestamp(), 71);
                Records.produce(producer, topic, first);
                lab.step("both members read their partitions");
                Lab.waitFor("the two members to read " + first.size() + " records", () -> {
                    m1.checkAlive();
                    m2.checkAlive();
                    return m1.records.size() + m2.records.size() >= first.size();
                });
                ScenarioFailure.check(m1.assignment.equals(a1) && m2.assignment.equals(a2),
                        "assignment changed while reading: %s / %s became %s / %s", names(a1), names(a2),
                        names(m1.assignment), names(m2.assignment));
                for (TopicPartition tp : all) {
                    Member owner = a1.contains(tp) ? m1 : m2;
                    Member other = owner == m1 ? m2 : m1;
                    ScenarioFailure.check(other.read(tp).isEmpty(), "%s read %d records of %s, which was assigned to %s",
                            other.name, other.read(tp).size(), tp, owner.name);
                    Records.checkSame(topic, tp.partition(), Records.ofPartition(first, tp.partition()),
                            owner.read(tp));
                }
                int readByM1 = m1.records.size();
                int readByM2 = m2.records.size();

                lab.step("member-1 commits and leaves");
                m1.commitOnStop = true;
                m1.stopAndJoin();
                Map<TopicPartition, OffsetAndMetadata> want1 = new HashMap<>();
                for (TopicPartition tp : a1) {
                    want1.put(tp, new OffsetAndMetadata(50));
                }
                ScenarioFailure.checkEqual("member-1's commit", want1, m1.committed);
                lab.step("member-2 is given all 6 partitions");
                Lab.waitFor("member-2 to hold all 6 partitions after member-1 left", () -> {
                    m2.checkAlive();
                    return m2.assignment.equals(all);
                });
                waitForDescription(admin, group, "Stable with member-2 alone holding all 6 partitions",
                        e -> e.groupState() == GroupState.STABLE
                                && assignments(e).equals(Map.of(m2.memberId, all)));

                lab.step("produce 300 more records; member-2 reads them");
                List<Sent> second = Records.generate(300, partitions, Records.baseTimestamp(), 72);
                Records.produce(producer, topic, second);
                Lab.waitFor("member-2 to read " + (readByM2 + second.size()) + " records", () -> {
                    m2.checkAlive();
                    return m2.records.size() >= readByM2 + second.size();
                });
                for (TopicPartition tp : all) {
                    // On its own partitions member-2 read both batches; on
                    // member-1's it started at member-1's commit.
                    List<Sent> want = new ArrayList<>();
                    if (a2.contains(tp)) {
                        want.addAll(Records.ofPartition(first, tp.partition()));
                    }
                    want.addAll(Records.ofPartition(second, tp.partition()));
                    Records.checkSame(topic, tp.partition(), want, m2.read(tp));
                }

                lab.step("member-2 commits and leaves");
                m2.commitOnStop = true;
                m2.stopAndJoin();
                Map<TopicPartition, OffsetAndMetadata> want2 = new HashMap<>();
                Map<TopicPartition, Long> wantOffsets = new HashMap<>();
                for (TopicPartition tp : all) {
                    want2.put(tp, new OffsetAndMetadata(100));
                    wantOffsets.put(tp, 100L);
                }
                ScenarioFailure.checkEqual("member-2's commit", want2, m2.committed);
                waitForDescription(admin, group, "Empty with no members after member-2 left",
                        e -> e.groupState() == GroupState.EMPTY && e.members().isEmpty());
                Map<TopicPartition, Long> listed = new HashMap<>();
                Lab.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata())
                        .forEach((tp, om) -> listed.put(tp, om == null ? null : om.offset()));
                ScenarioFailure.checkEqual("listConsumerGroupOffsets of " + group, wantOffsets, listed);

                lab.step("produce 120 more records; member-3 joins and resumes");
                List<Sent> third = Records.generate(120, partitions, Records.baseTimestamp(), 73);
                Records.produce(producer, topic, third);
                Map<Integer, Long> ends = new HashMap<>();
                for (int p = 0; p < partitions; p++) {
                    ends.put(p, 120L);
                }
                try (KafkaConsumer<byte[], byte[]> m3 = lab.consumerProtocolMember(group, "member-3")) {
                    m3.subscribe(List.of(topic));
                    Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = Records.readUntil(m3, topic, ends);
                    for (int p = 0; p < partitions; p++) {
                        List<ConsumerRecord<byte[], byte[]>> recs = got.get(p);
                        ScenarioFailure.check(!recs.isEmpty() && recs.get(0).offset() == 100,
                                "%s-%d: member-3 started at offset %s, the commit was 100", topic, p,
                                recs.isEmpty() ? "none" : recs.get(0).offset());
                        Records.checkSame(topic, p, Records.ofPartition(third, p), recs);
                    }
                    lab.step("member-3 leaves");
                }
                return String.format("group type consumer, assignor uniform: split %s / %s, read %d + %d once each; "
                        + "member-1 committed and left, member-2 got all 6 and read the next 300 from the commits; "
                        + "member-2 committed 100 per partition and left (Empty); member-3 resumed there and read 120",
                        names(a1), names(a2), readByM1, readByM2);
            } finally {
                m1.stop = true;
                m2.stop = true;
            }
        }
    }

    /**
     * consumer-protocol-migration: online migration between the protocols
     * (group.consumer.migration.policy=bidirectional, Kafka's default). A
     * classic member (cooperative-sticky) forms the group alone and holds
     * the 6 partitions: describeConsumerGroups shows a classic group. A
     * member with group.protocol=consumer joins: the group becomes a
     * consumer group with both, the classic member keeps half and gives up
     * the rest, described as not upgraded, the other as upgraded. 300
     * records produced then are each read once, by their partition's owner.
     * The consumer-protocol member commits and leaves: the group is classic
     * again, the classic member takes all 6 partitions and reads the next
     * 300 records, on the other's partitions from its commits.
     */
    static String migration(Lab lab) throws Exception {
        final int partitions = 6;
        String topic = lab.name("");
        String group = lab.name("group");
        Set<TopicPartition> all = new HashSet<>(DataScenarios.partitions(topic, partitions));
        try (Admin admin = lab.admin(); KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
            lab.createTopic(admin, topic, partitions, Map.of());
            Member c = new Member(lab, group, "classic", x -> x.subscribe(List.of(topic)), true);
            Member n = new Member(lab, group, "consumer", x -> x.subscribe(List.of(topic)));
            try {
                lab.step("the classic member forms the group");
                c.start();
                Lab.waitFor("the classic member to hold all 6 partitions", () -> {
                    c.checkAlive();
                    return c.assignment.equals(all);
                });
                ConsumerGroupDescription d = waitForDescription(admin, group, "Stable with the classic member",
                        e -> e.groupState() == GroupState.STABLE && e.members().size() == 1);
                ScenarioFailure.checkEqual("type of the classic group", GroupType.CLASSIC, d.type());

                lab.step("a member with group.protocol=consumer joins: the group is upgraded");
                n.start();
                Lab.waitFor("the two members to split the 6 partitions", () -> {
                    c.checkAlive();
                    n.checkAlive();
                    Set<TopicPartition> union = new HashSet<>(c.assignment);
                    union.addAll(n.assignment);
                    return !c.assignment.isEmpty() && !n.assignment.isEmpty()
                            && union.size() == c.assignment.size() + n.assignment.size() && union.equals(all);
                });
                Set<TopicPartition> ac = c.assignment;
                Set<TopicPartition> an = n.assignment;
                ScenarioFailure.check(ac.size() == 3 && an.size() == 3, "assignment %s / %s, expected 3 partitions each",
                        names(ac), names(an));
                d = waitForDescription(admin, group, "Stable with the classic member holding " + names(ac)
                        + " and the consumer member " + names(an),
                        e -> e.groupState() == GroupState.STABLE
                                && assignments(e).equals(Map.of(c.memberId, ac, n.memberId, an)));
                ScenarioFailure.checkEqual("type of the upgraded group", GroupType.CONSUMER, d.type());
                for (MemberDescription md : d.members()) {
                    boolean isClassic = md.consumerId().equals(c.memberId);
                    ScenarioFailure.checkEqual("upgraded() of the " + (isClassic ? "classic" : "consumer") + " member",
                            Optional.of(!isClassic), md.upgraded());
                }

                lab.step("produce 300 records; each is read once, by its partition's owner");
                List<Sent> first = Records.generate(300, partitions, Records.baseTimestamp(), 91);
                Records.produce(producer, topic, first);
                Lab.waitFor("the two members to read " + first.size() + " records", () -> {
                    c.checkAlive();
                    n.checkAlive();
                    return c.records.size() + n.records.size() >= first.size();
                });
                for (TopicPartition tp : all) {
                    Member owner = ac.contains(tp) ? c : n;
                    Member other = owner == c ? n : c;
                    ScenarioFailure.check(other.read(tp).isEmpty(), "%s read %d records of %s, which was assigned to %s",
                            other.name, other.read(tp).size(), tp, owner.name);
                    Records.checkSame(topic, tp.partition(), Records.ofPartition(first, tp.partition()), owner.read(tp));
                }
                int readByC = c.records.size();

                lab.step("the consumer member commits and leaves: the group is classic again");
                n.commitOnStop = true;
                n.stopAndJoin();
                Lab.waitFor("the classic member to hold all 6 partitions again", () -> {
                    c.checkAlive();
                    return c.assignment.equals(all);
                });
                d = waitForDescription(admin, group, "Stable with the classic member alone holding all 6 partitions",
                        e -> e.groupState() == GroupState.STABLE && assignments(e).equals(Map.of(c.memberId, all)));
                ScenarioFailure.checkEqual("type of the downgraded group", GroupType.CLASSIC, d.type());

                lab.step("produce 300 more records; the classic member reads them");
                List<Sent> second = Records.generate(300, partitions, Records.baseTimestamp(), 92);
                Records.produce(producer, topic, second);
                Lab.waitFor("the classic member to read " + (readByC + second.size()) + " records", () -> {
                    c.checkAlive();
                    return c.records.size() >= readByC + second.size();
                });
                for (TopicPartition tp : all) {
                    List<Sent> want = new ArrayList<>();
                    if (ac.contains(tp)) {
                        want.addAll(Records.ofPartition(first, tp.partition()));
                    }
                    want.addAll(Records.ofPartition(second, tp.partition()));
                    Records.checkSame(topic, tp.partition(), want, c.read(tp));
                }
                return String.format("classic group of one member; upgraded when a consumer-protocol member joined "
                        + "(split %s / %s, upgraded() false / true), 300 records read once each; downgraded when it "
                        + "left: the classic member took all 6 and read the next 300, on the other's partitions from "
                        + "its commits", names(ac), names(an));
            } finally {
                c.stop = true;
                n.stop = true;
            }
        }
    }

    /**
     * consumer-protocol-regex: a member subscribes with a SubscriptionPattern
     * (the broker resolves the RE2J regex, KIP-848) matching the topics
     * named ...-re-*. One matching topic and one that does not match exist
     * at first: the member is given the matching one's 2 partitions and
     * reads its records. A second matching topic created then is picked up
     * (the member ends up with 4 partitions) and read too; nothing of the
     * topic that does not match is read. Kafka 4.4 resolves a group's
     * regexes again after a topic change at most every 10 s
     * (GroupMetadataManager.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS), and the
     * member learns its new assignment at its next heartbeat (5 s): the
     * pick-up takes 10 to 20 s there, well within the step's bound.
     */
    static String regex(Lab lab) throws Exception {
        String topicA = lab.name("re-a");
        String topicB = lab.name("re-b");
        String other = lab.name("other");
        String group = lab.name("group");
        String regex = lab.name("re-") + ".*";
        try (Admin admin = lab.admin(); KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
            lab.createTopic(admin, topicA, 2, Map.of());
            lab.createTopic(admin, other, 1, Map.of());
            lab.step("produce to " + topicA + " and " + other);
            List<Sent> sentA = Records.generate(40, 2, Records.baseTimestamp(), 81);
            Records.produce(producer, topicA, sentA);
            Records.produce(producer, other, Records.generate(20, 1, Records.baseTimestamp(), 82));

            Member m = new Member(lab, group, "member", c -> c.subscribe(new SubscriptionPattern(regex)));
            try {
                lab.step("member subscribes to " + regex);
                m.start();
                Set<TopicPartition> wantA = new HashSet<>(DataScenarios.partitions(topicA, 2));
                Lab.waitFor("the member to hold " + topicA + "'s 2 partitions and read its 40 records", () -> {
                    m.checkAlive();
                    return m.assignment.equals(wantA) && m.records.size() >= sentA.size();
                });
                ConsumerGroupDescription d = waitForDescription(admin, group, "Stable with one member",
                        e -> e.groupState() == GroupState.STABLE && e.members().size() == 1);
                ScenarioFailure.checkEqual("described type", GroupType.CONSUMER, d.type());

                lab.step("create " + topicB + ", which matches too, and produce to it");
                long created = System.nanoTime();
                lab.createTopic(admin, topicB, 2, Map.of());
                List<Sent> sentB = Records.generate(40, 2, Records.baseTimestamp(), 83);
                Records.produce(producer, topicB, sentB);
                Set<TopicPartition> wantAB = new HashSet<>(wantA);
                wantAB.addAll(DataScenarios.partitions(topicB, 2));
                lab.step("the member picks up " + topicB);
                Lab.waitFor("the member to hold the 4 partitions of both matching topics and read "
                        + (sentA.size() + sentB.size()) + " records", () -> {
                            m.checkAlive();
                            return m.assignment.equals(wantAB) && m.records.size() >= sentA.size() + sentB.size();
                        });
                long pickedUp = (System.nanoTime() - created) / 1_000_000_000L;
                m.stopAndJoin();

                for (int p = 0; p < 2; p++) {
                    Records.checkSame(topicA, p, Records.ofPartition(sentA, p), m.read(new TopicPartition(topicA, p)));
                    Records.checkSame(topicB, p, Records.ofPartition(sentB, p), m.read(new TopicPartition(topicB, p)));
                }
                List<ConsumerRecord<byte[], byte[]>> stray = m.read(new TopicPartition(other, 0));
                ScenarioFailure.check(stray.isEmpty() && m.records.size() == sentA.size() + sentB.size(),
                        "the member read %d records, %d of them of %s, which %s does not match",
                        m.records.size(), stray.size(), other, regex);
                return String.format("SubscriptionPattern <prefix>-re-.*: given re-a's 2 partitions, then re-b's 2 "
                        + "(%d s after it was created); read 40 + 40 records exactly, none of the topic that does not "
                        + "match; group type consumer", pickedUp);
            } finally {
                m.stop = true;
            }
        }
    }

    /** A condition on a group description. */
    private interface DescriptionCondition {
        boolean holds(ConsumerGroupDescription d);
    }

    /**
     * Describes group until cond holds, bounded by STEP_TIMEOUT; fails with
     * the last description (or error) seen.
     */
    private static ConsumerGroupDescription waitForDescription(Admin admin, String group, String what,
            DescriptionCondition cond) throws Exception {
        ConsumerGroupDescription[] last = new ConsumerGroupDescription[1];
        try {
            Lab.waitFor("describeConsumerGroups to show " + group + " " + what, () -> {
                last[0] = Lab.get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group));
                return cond.holds(last[0]);
            });
        } catch (ScenarioFailure e) {
            throw last[0] == null ? e : new ScenarioFailure(e.getMessage() + "; last described " + show(last[0]));
        }
        return last[0];
    }

    /** A described group's members: member id to assigned partitions. */
    private static Map<String, Set<TopicPartition>> assignments(ConsumerGroupDescription d) {
        Map<String, Set<TopicPartition>> out = new HashMap<>();
        for (MemberDescription md : d.members()) {
            out.put(md.consumerId(), md.assignment().topicPartitions());
        }
        return out;
    }

    private static String show(ConsumerGroupDescription d) {
        Map<String, String> members = new TreeMap<>();
        for (MemberDescription md : d.members()) {
            members.put(md.clientId(), names(md.assignment().topicPartitions()));
        }
        return String.format("type %s state %s assignor %s members %s", d.type(), d.groupState(),
                d.partitionAssignor(), members);
    }

    private static GroupListing findListing(Admin admin, String group) throws Exception {
        for (GroupListing l : Lab.get(admin.listGroups(ListGroupsOptions.forConsumerGroups()).all())) {
            if (l.groupId().equals(group)) {
                return l;
            }
        }
        return null;
    }

    /** Partitions for a message: p[0, 1, 2] for one topic, topic-p otherwise. */
    private static String names(Collection<TopicPartition> tps) {
        Set<String> topics = new HashSet<>();
        List<Integer> ps = new ArrayList<>();
        for (TopicPartition tp : tps) {
            topics.add(tp.topic());
            ps.add(tp.partition());
        }
        if (topics.size() > 1) {
            List<String> each = new ArrayList<>();
            for (TopicPartition tp : tps) {
                each.add(tp.toString());
            }
            each.sort(null);
            return each.toString();
        }
        ps.sort(null);
        return "p" + ps;
    }
}
