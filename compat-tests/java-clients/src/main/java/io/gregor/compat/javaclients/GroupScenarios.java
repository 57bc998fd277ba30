package io.gregor.compat.javaclients;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;

import io.gregor.compat.javaclients.Records.Sent;

/**
 * Scenarios of consumer groups, all with the classic protocol
 * (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, OffsetCommit/OffsetFetch).
 */
final class GroupScenarios {
    private GroupScenarios() {
    }

    /**
     * group-commit-resume: a member reads all 90 records of each of 3
     * partitions, commits a different mid offset per partition (with
     * metadata) and leaves; a second member of the group must start exactly
     * at those offsets and read the rest, nothing lost or repeated.
     */
    static String commitResume(Lab lab) throws Exception {
        final int partitions = 3;
        String topic = lab.name("");
        String group = lab.name("group");
        List<Sent> sent = Records.generate(270, partitions, Records.baseTimestamp(), 41);
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, partitions, Map.of());
        }
        lab.step("produce");
        try (KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
            Records.produce(producer, topic, sent);
        }
        Map<Integer, Long> ends = new HashMap<>();
        Map<TopicPartition, OffsetAndMetadata> mids = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            ends.put(p, (long) Records.ofPartition(sent, p).size());
            mids.put(new TopicPartition(topic, p), new OffsetAndMetadata(40 + 5 * p, "java-clients mid " + p));
        }

        lab.step("first member joins and reads everything");
        try (KafkaConsumer<byte[], byte[]> first = lab.groupConsumer(group, "member-1")) {
            first.subscribe(List.of(topic));
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = Records.readUntil(first, topic, ends);
            for (int p = 0; p < partitions; p++) {
                Records.checkSame(topic, p, Records.ofPartition(sent, p), got.get(p));
            }
            lab.step("first member commits mid offsets");
            first.commitSync(mids, Lab.STEP_TIMEOUT);
            ScenarioFailure.checkEqual("committed() after commitSync", mids, first.committed(mids.keySet()));
            lab.step("first member leaves");
        }

        lab.step("second member joins and resumes");
        int resumed = 0;
        try (KafkaConsumer<byte[], byte[]> second = lab.groupConsumer(group, "member-2")) {
            second.subscribe(List.of(topic));
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> got = Records.readUntil(second, topic, ends);
            for (int p = 0; p < partitions; p++) {
                int mid = (int) mids.get(new TopicPartition(topic, p)).offset();
                List<Sent> mine = Records.ofPartition(sent, p);
                List<ConsumerRecord<byte[], byte[]>> recs = got.get(p);
                ScenarioFailure.check(!recs.isEmpty() && recs.get(0).offset() == mid,
                        "%s-%d: the second member started at offset %s, the commit was %d", topic, p,
                        recs.isEmpty() ? "none" : recs.get(0).offset(), mid);
                Records.checkSame(topic, p, mine.subList(mid, mine.size()), recs);
                resumed += recs.size();
            }
            lab.step("second member commits its position");
            second.commitSync(Lab.STEP_TIMEOUT);
            Map<TopicPartition, OffsetAndMetadata> committed = second.committed(mids.keySet());
            for (int p = 0; p < partitions; p++) {
                TopicPartition tp = new TopicPartition(topic, p);
                OffsetAndMetadata om = committed.get(tp);
                ScenarioFailure.check(om != null && om.offset() == ends.get(p),
                        "%s: committed %s after the second member's commitSync, expected offset %d", tp, om,
                        ends.get(p));
            }
        }
        return String.format("committed 40/45/50 of 90 per partition; the second member read the remaining %d exactly",
                resumed);
    }

    /**
     * One group member run by its own thread, as KafkaConsumer wants: it
     * polls until told to stop and keeps what it read and what it was
     * assigned last, for the scenario thread to look at.
     */
    private static final class Member implements Runnable {
        private final Lab lab;
        private final String group;
        private final String topic;
        final String name;
        final ConcurrentLinkedQueue<ConsumerRecord<byte[], byte[]>> records = new ConcurrentLinkedQueue<>();
        volatile Set<TopicPartition> assignment = Set.of();
        volatile Throwable error;
        volatile boolean stop;
        private final Thread thread;

        Member(Lab lab, String group, String topic, String name) {
            this.lab = lab;
            this.group = group;
            this.topic = topic;
            this.name = name;
            this.thread = new Thread(this, lab.scenario + "-" + name);
            this.thread.setDaemon(true);
        }

        void start() {
            thread.start();
        }

        @Override
        public void run() {
            try (KafkaConsumer<byte[], byte[]> c = lab.groupConsumer(group, name)) {
                c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                        Set<TopicPartition> left = new HashSet<>(assignment);
                        left.removeAll(revoked);
                        assignment = Set.copyOf(left);
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                        assignment = Set.copyOf(c.assignment());
                    }
                });
                while (!stop) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                        records.add(r);
                    }
                }
            } catch (Throwable t) {
                error = t;
            }
        }

        /** Stops polling and waits for the member to leave the group. */
        void stopAndJoin() throws InterruptedException {
            stop = true;
            thread.join(Lab.STEP_TIMEOUT.toMillis());
            ScenarioFailure.check(!thread.isAlive(), "member %s did not close within %d s", name,
                    Lab.STEP_TIMEOUT.toSeconds());
        }

        void checkAlive() {
            if (error != null) {
                throw new ScenarioFailure("member " + name + " failed: " + Main.describe(error));
            }
        }
    }

    /**
     * group-rebalance: a member joins a 4-partition topic alone and gets all
     * 4; a second member joins, each polling in its own thread, and the group
     * rebalances to 2 + 2 with no overlap. Only then are 400 records
     * produced: each member must read exactly the records of its own
     * partitions, so that together they read every record once.
     */
    static String rebalance(Lab lab) throws Exception {
        final int partitions = 4;
        String topic = lab.name("");
        String group = lab.name("group");
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, partitions, Map.of());
        }
        Set<TopicPartition> all = new HashSet<>(DataScenarios.partitions(topic, partitions));
        Member m1 = new Member(lab, group, topic, "member-1");
        Member m2 = new Member(lab, group, topic, "member-2");
        try {
            lab.step("member-1 joins alone");
            m1.start();
            Lab.waitFor("member-1 to be assigned all 4 partitions", () -> {
                m1.checkAlive();
                return m1.assignment.equals(all);
            });
            lab.step("member-2 joins: rebalance");
            m2.start();
            Lab.waitFor("the group to split 4 partitions between both members", () -> {
                m1.checkAlive();
                m2.checkAlive();
                Set<TopicPartition> a1 = m1.assignment;
                Set<TopicPartition> a2 = m2.assignment;
                Set<TopicPartition> union = new HashSet<>(a1);
                union.addAll(a2);
                return !a1.isEmpty() && !a2.isEmpty() && union.size() == a1.size() + a2.size() && union.equals(all);
            });
            Set<TopicPartition> a1 = m1.assignment;
            Set<TopicPartition> a2 = m2.assignment;
            // The range assignor (the first of the client's defaults both members offer) gives 2 each.
            ScenarioFailure.check(a1.size() == 2 && a2.size() == 2, "assignment %s / %s, expected 2 partitions each",
                    a1, a2);

            lab.step("produce while both members poll");
            List<Sent> sent = Records.generate(400, partitions, Records.baseTimestamp(), 51);
            try (KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
                Records.produce(producer, topic, sent);
            }
            lab.step("both members read their partitions");
            Lab.waitFor("the two members to read " + sent.size() + " records", () -> {
                m1.checkAlive();
                m2.checkAlive();
                return m1.records.size() + m2.records.size() >= sent.size();
            });
            ScenarioFailure.check(m1.assignment.equals(a1) && m2.assignment.equals(a2),
                    "assignment changed while reading: %s / %s became %s / %s", a1, a2, m1.assignment, m2.assignment);
            lab.step("members leave");
            m1.stopAndJoin();
            m2.stopAndJoin();
            m1.checkAlive();
            m2.checkAlive();

            for (int p = 0; p < partitions; p++) {
                TopicPartition tp = new TopicPartition(topic, p);
                Member owner = a1.contains(tp) ? m1 : m2;
                Member other = owner == m1 ? m2 : m1;
                List<ConsumerRecord<byte[], byte[]>> theirs = ofPartition(other.records, p);
                ScenarioFailure.check(theirs.isEmpty(), "%s read %d records of %s, which was assigned to %s",
                        other.name, theirs.size(), tp, owner.name);
                Records.checkSame(topic, p, Records.ofPartition(sent, p), ofPartition(owner.records, p));
            }
            return String.format("split %s / %s; %d + %d records, each once, in order", names(a1), names(a2),
                    m1.records.size(), m2.records.size());
        } finally {
            m1.stop = true;
            m2.stop = true;
        }
    }

    private static List<ConsumerRecord<byte[], byte[]>> ofPartition(
            Collection<ConsumerRecord<byte[], byte[]>> recs, int partition) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : recs) {
            if (r.partition() == partition) {
                out.add(r);
            }
        }
        return out;
    }

    private static String names(Set<TopicPartition> tps) {
        List<Integer> ps = new ArrayList<>();
        for (TopicPartition tp : tps) {
            ps.add(tp.partition());
        }
        ps.sort(null);
        return "p" + ps;
    }

    /**
     * admin-groups: while a member that read and committed is in the group,
     * listGroups shows it (classic, Stable), describeConsumerGroups shows the
     * member and its assignment, listConsumerGroupOffsets the commits, and
     * deleteConsumerGroups refuses (GroupNotEmpty). After the member leaves
     * the group is Empty with its offsets kept; then it can be deleted and is
     * gone.
     */
    static String adminGroups(Lab lab) throws Exception {
        final int partitions = 3;
        String topic = lab.name("");
        String group = lab.name("group");
        String clientId = lab.name("member");
        List<Sent> sent = Records.generate(30, partitions, Records.baseTimestamp(), 61);
        Set<TopicPartition> all = new HashSet<>(DataScenarios.partitions(topic, partitions));
        Map<TopicPartition, Long> wantOffsets = new HashMap<>();
        Map<Integer, Long> ends = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            ends.put(p, (long) Records.ofPartition(sent, p).size());
            wantOffsets.put(new TopicPartition(topic, p), ends.get(p));
        }
        try (Admin admin = lab.admin()) {
            lab.createTopic(admin, topic, partitions, Map.of());
            lab.step("produce");
            try (KafkaProducer<byte[], byte[]> producer = lab.producer("producer", Map.of())) {
                Records.produce(producer, topic, sent);
            }
            KafkaConsumer<byte[], byte[]> member = lab.groupConsumer(group, "member");
            try {
                lab.step("member joins, reads and commits");
                member.subscribe(List.of(topic));
                Records.readUntil(member, topic, ends);
                member.commitSync(Lab.STEP_TIMEOUT);

                lab.step("listGroups while the member is in the group");
                Lab.waitFor("listGroups to show " + group + " as Stable", () -> {
                    GroupListing l = findListing(admin, group);
                    return l != null && l.groupState().equals(java.util.Optional.of(GroupState.STABLE));
                });
                GroupListing listing = findListing(admin, group);
                ScenarioFailure.checkEqual("listGroups type of " + group, java.util.Optional.of(GroupType.CLASSIC),
                        listing.type());
                ScenarioFailure.checkEqual("listGroups protocol type of " + group, "consumer", listing.protocol());

                lab.step("describeConsumerGroups while the member is in the group");
                ConsumerGroupDescription d = describe(admin, group);
                ScenarioFailure.checkEqual("described state", GroupState.STABLE, d.groupState());
                ScenarioFailure.checkEqual("described type", GroupType.CLASSIC, d.type());
                ScenarioFailure.checkEqual("described partition assignor", "range", d.partitionAssignor());
                ScenarioFailure.check(d.coordinator() != null && !d.coordinator().isEmpty(),
                        "described coordinator: %s", d.coordinator());
                ScenarioFailure.checkEqual("described member count", 1, d.members().size());
                MemberDescription md = d.members().iterator().next();
                ScenarioFailure.checkEqual("described member client id", clientId, md.clientId());
                ScenarioFailure.check(!md.consumerId().isEmpty(), "described member has an empty member id");
                ScenarioFailure.checkEqual("described member assignment", all, md.assignment().topicPartitions());

                lab.step("listConsumerGroupOffsets while the member is in the group");
                checkOffsets(admin, group, wantOffsets);

                lab.step("deleteConsumerGroups while the member is in the group");
                try {
                    Lab.get(admin.deleteConsumerGroups(List.of(group)).all());
                    throw new ScenarioFailure("deleteConsumerGroups of a group with an active member succeeded, "
                            + "expected GroupNotEmptyException");
                } catch (ExecutionException e) {
                    ScenarioFailure.check(e.getCause() instanceof GroupNotEmptyException,
                            "deleteConsumerGroups of a group with an active member: %s, expected GroupNotEmptyException",
                            Main.describe(e.getCause()));
                }
                lab.step("member leaves");
            } finally {
                member.close(CloseOptions.timeout(Duration.ofSeconds(30)));
            }

            lab.step("describe after the member left");
            Lab.waitFor("group " + group + " to be Empty with no members", () -> {
                ConsumerGroupDescription e = describe(admin, group);
                return e.groupState() == GroupState.EMPTY && e.members().isEmpty();
            });
            checkOffsets(admin, group, wantOffsets);

            lab.step("deleteConsumerGroups after the member left");
            Lab.get(admin.deleteConsumerGroups(List.of(group)).all());
            lab.step("the deleted group is gone");
            ScenarioFailure.check(findListing(admin, group) == null, "listGroups still shows %s after deletion",
                    group);
            try {
                ConsumerGroupDescription gone = describe(admin, group);
                ScenarioFailure.checkEqual("described state after deletion", GroupState.DEAD, gone.groupState());
            } catch (ExecutionException e) {
                // Both answers mean "no such group"; which one depends on the describe API the client picked.
                ScenarioFailure.check(e.getCause() instanceof GroupIdNotFoundException,
                        "describe after deletion: %s, expected state Dead or GroupIdNotFoundException",
                        Main.describe(e.getCause()));
            }
        }
        return "listed Stable classic, described 1 member with 3 partitions, offsets 10/10/10, "
                + "delete refused while active, Empty after leave, deleted";
    }

    private static GroupListing findListing(Admin admin, String group) throws Exception {
        for (GroupListing l : Lab.get(admin.listGroups(ListGroupsOptions.forConsumerGroups()).all())) {
            if (l.groupId().equals(group)) {
                return l;
            }
        }
        return null;
    }

    private static ConsumerGroupDescription describe(Admin admin, String group) throws Exception {
        return Lab.get(admin.describeConsumerGroups(List.of(group)).describedGroups().get(group));
    }

    private static void checkOffsets(Admin admin, String group, Map<TopicPartition, Long> want) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> got =
                Lab.get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
        Map<TopicPartition, Long> offsets = new HashMap<>();
        got.forEach((tp, om) -> offsets.put(tp, om == null ? null : om.offset()));
        ScenarioFailure.checkEqual("listConsumerGroupOffsets of " + group, want, offsets);
    }
}
