package io.gregor.compat.streams;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;

/**
 * The suite's scenarios. Each creates its own topics and application.id
 * under the run's prefix, so that one scenario's failure leaves the others
 * untouched, and returns the detail of its pass line or throws.
 */
final class Scenarios {
    /** Partitions of the input and output topics (and so of the tasks per sub-topology). */
    private static final int PARTITIONS = 3;

    private Scenarios() {}

    /** A word-count app running on its own topics, its input partly produced. */
    private record WordCount(String appId, String input, String output, StreamsApp app, OutputReader out,
                             List<String> lines, Map<String, Long> expected) {
        String repartition() {
            return Topologies.repartitionTopic(appId, Topologies.WORDS_REPARTITION);
        }

        String changelog() {
            return Topologies.changelogTopic(appId, Topologies.COUNTS_STORE);
        }

        String summary() {
            return lines.size() + " lines, " + Corpus.words(expected) + " words, " + expected.size()
                    + " distinct: last counts exact in " + out.records() + " output records";
        }
    }

    /**
     * Creates {@code <name>-input} and {@code <name>-output}, produces half
     * the lines, starts the word-count app (application.id {@code <name>}),
     * waits for RUNNING, produces the other half, and waits until the
     * output's latest count of every word is the true count. The first
     * half is read as a backlog, the second as it arrives.
     */
    private static WordCount startWordCount(Lab lab, String name, int lineCount, long seed) throws Exception {
        String appId = lab.name(name);
        String input = appId + "-input";
        String output = appId + "-output";
        lab.createTopics(PARTITIONS, input, output);
        List<String> lines = Corpus.lines(seed, lineCount);
        int half = lineCount / 2;
        lab.produceLines(input, lines.subList(0, half), 0);
        StreamsApp app = lab.startApp("app", appId, lab.stateDir(appId), Topologies.wordCount(input, output));
        app.awaitRunning();
        lab.produceLines(input, lines.subList(half, lineCount), half);
        Map<String, Long> expected = Corpus.counts(lines);
        OutputReader out = lab.reader(output, PARTITIONS);
        out.awaitLatest(expected, app);
        return new WordCount(appId, input, output, app, out, lines, expected);
    }

    /** streams-wordcount: groupBy through a repartition topic, count, output; counts exact. */
    static String wordCount(Lab lab) throws Exception {
        WordCount wc = startWordCount(lab, "wordcount", 600, 11);
        wc.app().close();
        wc.out().readToEnd();
        wc.out().checkLatest(wc.expected());
        return wc.summary();
    }

    /**
     * streams-internal-topics: the app created its repartition and changelog
     * topics with the input's partition count and the configs Streams asks
     * for, and the changelog holds the final counts.
     */
    static String internalTopics(Lab lab) throws Exception {
        WordCount wc = startWordCount(lab, "internal", 200, 21);
        wc.app().close();
        String repartition = wc.repartition();
        String changelog = wc.changelog();

        Set<String> names = lab.topicNames();
        if (!names.contains(repartition) || !names.contains(changelog)) {
            Set<String> ofApp = names.stream().filter(n -> n.startsWith(wc.appId()))
                    .collect(Collectors.toCollection(TreeSet::new));
            throw new ScenarioFailure("expected " + repartition + " and " + changelog + " in ListTopics; topics of the app: " + ofApp);
        }
        for (TopicDescription d : lab.describeTopics(List.of(repartition, changelog)).values()) {
            if (d.partitions().size() != PARTITIONS) {
                throw new ScenarioFailure(d.name() + ": expected " + PARTITIONS + " partitions, DescribeTopics says " + d.partitions().size());
            }
        }
        expectConfig(lab, changelog, "cleanup.policy", "compact");
        expectConfig(lab, repartition, "cleanup.policy", "delete");
        // Streams deletes consumed repartition records itself (DeleteRecords),
        // so it creates the topic with no time retention.
        expectConfig(lab, repartition, "retention.ms", "-1");

        OutputReader log = lab.reader(changelog, PARTITIONS);
        log.readToEnd();
        if (!log.latest().equals(wc.expected())) {
            throw new ScenarioFailure(changelog + " does not hold the final counts: " + Diff.counts(wc.expected(), log.latest()));
        }
        String app = wc.appId() + "-";
        return repartition.replace(app, "") + " (cleanup.policy=delete, retention.ms=-1) and " + changelog.replace(app, "")
                + " (cleanup.policy=compact) with " + PARTITIONS + " partitions; changelog holds the "
                + wc.expected().size() + " final counts in " + log.records() + " records";
    }

    /**
     * streams-commit: while the app runs (commit.interval.ms 100), the
     * group named by its application.id comes to have committed offsets
     * equal to the end offsets of the input and repartition topics, and
     * keeps them after the app closes.
     */
    static String commit(Lab lab) throws Exception {
        WordCount wc = startWordCount(lab, "commit", 300, 31);
        Map<TopicPartition, Long> end = lab.endOffsets(List.of(wc.input(), wc.repartition()));
        Poll.until("committed offsets of group " + wc.appId() + " to equal the end offsets " + end, Poll.STEP, () -> {
            wc.app().checkAlive();
            return lab.committed(wc.appId()).equals(end);
        }, () -> "committed " + lab.committed(wc.appId()));
        wc.app().close();
        Map<TopicPartition, Long> after = lab.committed(wc.appId());
        if (!after.equals(end)) {
            throw new ScenarioFailure("after the app closed: expected committed " + end + ", OffsetFetch says " + after);
        }
        return "committed = end offsets on " + end.size() + " partitions: " + brief(end, wc.appId());
    }

    /**
     * streams-repartition-purge: with repartition.purge.interval.ms 0 the
     * app deletes the repartition records it has committed (DeleteRecords)
     * after each commit; the repartition topic's log start offsets move up,
     * never past the group's committed offsets, and the counts stay exact.
     */
    static String repartitionPurge(Lab lab) throws Exception {
        String appId = lab.name("purge");
        String input = appId + "-input";
        String output = appId + "-output";
        String repartition = Topologies.repartitionTopic(appId, Topologies.WORDS_REPARTITION);
        lab.createTopics(PARTITIONS, input, output);
        StreamsApp app = lab.startApp("app", appId, lab.stateDir(appId), Topologies.wordCount(input, output),
                Map.of(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 0));
        OutputReader out = lab.reader(output, PARTITIONS);
        // Two batches, the second produced once the first is counted (and so
        // committed): the commits that follow it purge offsets above zero.
        List<String> first = Corpus.lines(81, 150);
        lab.produceLines(input, first, 0);
        Map<String, Long> expected = Corpus.counts(first);
        out.awaitLatest(expected, app);
        List<String> second = Corpus.lines(82, 150);
        lab.produceLines(input, second, first.size());
        Corpus.count(second, expected);
        out.awaitLatest(expected, app);

        List<String> topics = List.of(repartition);
        Poll.until("DeleteRecords from the app to move the start offsets of " + repartition + " above 0", Poll.STEP, () -> {
            app.checkAlive();
            return lab.startOffsets(topics).values().stream().mapToLong(Long::longValue).sum() > 0;
        }, () -> "start offsets " + lab.startOffsets(topics) + ", end offsets " + lab.endOffsets(topics));
        app.close();
        Map<TopicPartition, Long> start = lab.startOffsets(topics);
        Map<TopicPartition, Long> end = lab.endOffsets(topics);
        Map<TopicPartition, Long> committed = lab.committed(appId);
        for (Map.Entry<TopicPartition, Long> e : start.entrySet()) {
            Long c = committed.get(e.getKey());
            if (c == null || e.getValue() > c || c > end.get(e.getKey())) {
                throw new ScenarioFailure("expected start <= committed <= end on " + e.getKey() + ": start offsets " + start
                        + ", committed " + committed + ", end offsets " + end);
            }
        }
        out.readToEnd();
        out.checkLatest(expected);
        return "repartition start offsets " + brief(start, appId) + " (committed " + brief(filter(committed, repartition), appId)
                + ", end " + brief(end, appId) + "); counts over " + (first.size() + second.size()) + " lines exact";
    }

    /**
     * streams-restart-restore: the app counts a first batch and closes; its
     * local state dir is deleted; a new instance of the same application
     * restores the counts from the changelog and counts on from there over
     * a second batch, exactly.
     */
    static String restartRestore(Lab lab) throws Exception {
        String appId = lab.name("restart");
        String input = appId + "-input";
        String output = appId + "-output";
        lab.createTopics(PARTITIONS, input, output);
        Path stateDir = lab.stateDir(appId);
        OutputReader out = lab.reader(output, PARTITIONS);

        List<String> first = Corpus.lines(41, 200);
        lab.produceLines(input, first, 0);
        StreamsApp run1 = lab.startApp("first run", appId, stateDir, Topologies.wordCount(input, output));
        Map<String, Long> expected = Corpus.counts(first);
        out.awaitLatest(expected, run1);
        run1.close();

        Path appState = stateDir.resolve(appId);
        if (!Files.isDirectory(appState)) {
            throw new ScenarioFailure("the first run left no state dir at " + appState);
        }
        deleteTree(appState);

        StreamsApp run2 = lab.startApp("second run", appId, stateDir, Topologies.wordCount(input, output));
        run2.awaitRunning();
        List<String> second = Corpus.lines(42, 200);
        lab.produceLines(input, second, first.size());
        Corpus.count(second, expected);
        out.awaitLatest(expected, run2);
        long restored = run2.restoredRecords();
        // The changelog holds at least one record per word of the first batch.
        int atLeast = Corpus.counts(first).size();
        if (restored < atLeast) {
            throw new ScenarioFailure("the second run restored " + restored + " records from " + run2.restoredPartitions()
                    + ", expected at least " + atLeast + " (one per word counted by the first run)");
        }
        run2.close();
        out.readToEnd();
        out.checkLatest(expected);
        return "restored " + restored + " changelog records into an empty state dir; counts over "
                + (first.size() + second.size()) + " lines exact in " + out.records() + " output records";
    }

    /**
     * streams-two-instances: two instances of one application (state dirs
     * of their own) split the tasks between them, both RUNNING with active
     * tasks, none twice, none missing; the counts of the lines produced
     * after that are exact.
     */
    static String twoInstances(Lab lab) throws Exception {
        final int partitions = 4;
        String appId = lab.name("two");
        String input = appId + "-input";
        String output = appId + "-output";
        lab.createTopics(partitions, input, output);
        StreamsApp a = lab.startApp("instance a", appId, lab.stateDir(appId + "-a"), Topologies.wordCount(input, output));
        StreamsApp b = lab.startApp("instance b", appId, lab.stateDir(appId + "-b"), Topologies.wordCount(input, output));

        // Sub-topology 0 reads the input, 1 the repartition topic, which has
        // the input's partition count.
        Set<TaskId> all = new TreeSet<>();
        for (int p = 0; p < partitions; p++) {
            all.add(new TaskId(0, p));
            all.add(new TaskId(1, p));
        }
        Poll.until("both instances RUNNING with the tasks " + all + " split between them", Poll.STEP, () -> {
            if (!a.isRunning() || !b.isRunning()) {
                return false;
            }
            Set<TaskId> ta = a.activeTasks();
            Set<TaskId> tb = b.activeTasks();
            Set<TaskId> union = new TreeSet<>(ta);
            union.addAll(tb);
            return !ta.isEmpty() && !tb.isEmpty() && union.size() == ta.size() + tb.size() && union.equals(all);
        }, () -> a.describe() + "; " + b.describe());
        String split = "a " + a.activeTasks() + " b " + b.activeTasks();

        List<String> lines = Corpus.lines(51, 400);
        lab.produceLines(input, lines, 0);
        Map<String, Long> expected = Corpus.counts(lines);
        OutputReader out = lab.reader(output, partitions);
        out.awaitLatest(expected, a, b);
        a.close();
        b.close();
        out.readToEnd();
        out.checkLatest(expected);
        return "tasks split " + split + "; " + lines.size() + " lines, " + expected.size()
                + " distinct words: last counts exact in " + out.records() + " output records";
    }

    /**
     * streams-windowed-count: counts per word and one-minute tumbling
     * window by the records' producer timestamps, over three windows; the
     * windowed store's changelog is compact,delete.
     */
    static String windowedCount(Lab lab) throws Exception {
        String appId = lab.name("windowed");
        String input = appId + "-input";
        String output = appId + "-output";
        lab.createTopics(PARTITIONS, input, output);

        long window = Topologies.WINDOW.toMillis();
        // Three windows ending half an hour ago: well inside the day of grace
        // and of retention, and clear of the wall clock.
        long base = (System.currentTimeMillis() / window - 30) * window;
        List<String> lines = Corpus.lines(61, 300);
        List<ProducerRecord<String, String>> records = new ArrayList<>();
        Map<String, Long> expected = new TreeMap<>();
        Random random = new Random(62);
        for (int i = 0; i < lines.size(); i++) {
            long start = base + (i % 3) * window;
            long timestamp = start + random.nextInt((int) window);
            records.add(new ProducerRecord<>(input, null, timestamp, "line-" + i, lines.get(i)));
            for (String word : lines.get(i).split(" ")) {
                expected.merge(word + "@" + start, 1L, Long::sum);
            }
        }
        lab.produce(records);

        StreamsApp app = lab.startApp("app", appId, lab.stateDir(appId), Topologies.windowedWordCount(input, output));
        OutputReader out = lab.reader(output, PARTITIONS);
        out.awaitLatest(expected, app);
        app.close();
        out.readToEnd();
        out.checkLatest(expected);

        String changelog = Topologies.changelogTopic(appId, Topologies.WINDOW_COUNTS_STORE);
        String policy = lab.topicConfig(changelog, "cleanup.policy");
        Set<String> policies = policy == null ? Set.of() : Stream.of(policy.split(",")).map(String::trim).collect(Collectors.toSet());
        if (!policies.equals(Set.of("compact", "delete"))) {
            throw new ScenarioFailure(changelog + ": expected cleanup.policy compact,delete, DescribeConfigs says " + policy);
        }
        return lines.size() + " lines over 3 windows: " + expected.size() + " (word, window) counts exact in "
                + out.records() + " output records; changelog cleanup.policy=" + policy;
    }

    /**
     * streams-table-join: a stream of clicks joined with a table of user
     * regions (co-partitioned, the table's records older), counted per
     * region; clicks of users the table lacks are dropped.
     */
    static String tableJoin(Lab lab) throws Exception {
        String appId = lab.name("join");
        String clicks = appId + "-clicks";
        String users = appId + "-users";
        String output = appId + "-output";
        lab.createTopics(PARTITIONS, clicks, users, output);

        String[] regions = {"north", "south", "east", "west"};
        int knownUsers = 36;
        int allUsers = 40;
        long t0 = System.currentTimeMillis() - 60_000;
        List<ProducerRecord<String, String>> table = new ArrayList<>();
        for (int u = 0; u < knownUsers; u++) {
            table.add(new ProducerRecord<>(users, null, t0, "user-" + u, regions[u % regions.length]));
        }
        List<ProducerRecord<String, String>> stream = new ArrayList<>();
        Map<String, Long> expected = new TreeMap<>();
        Random random = new Random(71);
        int dropped = 0;
        for (int i = 0; i < 400; i++) {
            int u = random.nextInt(allUsers);
            stream.add(new ProducerRecord<>(clicks, null, t0 + 1_000 + i, "user-" + u, "click-" + i));
            if (u < knownUsers) {
                expected.merge(regions[u % regions.length], 1L, Long::sum);
            } else {
                dropped++;
            }
        }
        lab.produce(table);
        lab.produce(stream);

        StreamsApp app = lab.startApp("app", appId, lab.stateDir(appId), Topologies.clicksPerRegion(clicks, users, output));
        OutputReader out = lab.reader(output, PARTITIONS);
        out.awaitLatest(expected, app);
        app.close();
        out.readToEnd();
        out.checkLatest(expected);
        return stream.size() + " clicks joined with " + knownUsers + " users (" + dropped + " of unknown users dropped): "
                + expected + " exact in " + out.records() + " output records";
    }

    /**
     * streams-eos-wordcount: the word count with
     * processing.guarantee=exactly_once_v2 and no record cache, so that every
     * word read sends one update downstream. Half the lines are a backlog,
     * half arrive while the app runs. The input reads back exactly as
     * produced; a read_committed reader of the output sees, for every word,
     * the counts 1, 2, ..., n each once (no update lost or repeated) ending at
     * the true count; the output holds transaction markers (its end offsets
     * exceed the records read); and the group's committed offsets, written
     * inside the app's transactions, equal the input's end offsets.
     */
    static String eosWordCount(Lab lab) throws Exception {
        String appId = lab.name("eos");
        String input = appId + "-input";
        String output = appId + "-output";
        lab.createTopics(PARTITIONS, input, output);
        List<String> lines = Corpus.lines(91, 300);
        int half = lines.size() / 2;
        lab.produceLines(input, lines.subList(0, half), 0);
        StreamsApp app = lab.startApp("app", appId, lab.stateDir(appId), Topologies.wordCount(input, output),
                Map.of(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2,
                        StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L));
        app.awaitRunning();
        lab.produceLines(input, lines.subList(half, lines.size()), half);
        Map<String, Long> expected = Corpus.counts(lines);
        OutputReader out = lab.reader(output, PARTITIONS, "read_committed");
        out.awaitLatest(expected, app);
        app.close();

        Map<String, String> inputRead = lab.readLines(input, PARTITIONS);
        Map<String, String> inputWant = new TreeMap<>();
        for (int i = 0; i < lines.size(); i++) {
            inputWant.put("line-" + i, lines.get(i));
        }
        if (!inputRead.equals(inputWant)) {
            throw new ScenarioFailure(input + " read back " + inputRead.size() + " lines, expected the "
                    + inputWant.size() + " produced: " + Diff.lines(inputWant, inputRead));
        }

        out.readToEnd();
        out.checkLatest(expected);
        for (Map.Entry<String, Long> e : expected.entrySet()) {
            List<Long> seen = out.history().get(e.getKey());
            List<Long> want = new ArrayList<>();
            for (long c = 1; c <= e.getValue(); c++) {
                want.add(c);
            }
            if (!want.equals(seen)) {
                throw new ScenarioFailure("updates of \"" + e.getKey() + "\" in " + output + " (read_committed): "
                        + seen + ", expected each count from 1 to " + e.getValue() + " once");
            }
        }
        long ends = out.endOffsets().values().stream().mapToLong(Long::longValue).sum();
        if (ends <= out.records()) {
            throw new ScenarioFailure(output + ": end offsets sum to " + ends + " for " + out.records()
                    + " records read; an exactly-once app's transactions leave markers, expected more");
        }
        Map<TopicPartition, Long> inputEnds = lab.endOffsets(List.of(input));
        Map<TopicPartition, Long> committed = filter(lab.committed(appId), input);
        if (!committed.equals(inputEnds)) {
            throw new ScenarioFailure("group " + appId + " committed " + committed + " on " + input
                    + ", expected its end offsets " + inputEnds);
        }
        return lines.size() + " input lines read back exactly; " + Corpus.words(expected) + " words, "
                + expected.size() + " distinct: every count 1..n once in " + out.records()
                + " read_committed records (end offsets " + ends + " with markers); committed = input end offsets";
    }

    private static void expectConfig(Lab lab, String topic, String key, String want) throws Exception {
        String got = lab.topicConfig(topic, key);
        if (!want.equals(got)) {
            throw new ScenarioFailure(topic + ": expected " + key + "=" + want + ", DescribeConfigs says " + got);
        }
    }

    private static Map<TopicPartition, Long> filter(Map<TopicPartition, Long> offsets, String topic) {
        Map<TopicPartition, Long> of = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        offsets.forEach((tp, offset) -> {
            if (tp.topic().equals(topic)) {
                of.put(tp, offset);
            }
        });
        return of;
    }

    /** Offsets as "input-0=85 input-1=110 ...", topic names without the application.id. */
    private static String brief(Map<TopicPartition, Long> offsets, String appId) {
        return offsets.entrySet().stream()
                .map(e -> e.getKey().toString().replace(appId + "-", "") + "=" + e.getValue())
                .collect(Collectors.joining(" ", "[", "]"));
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
        if (Files.exists(root)) {
            throw new ScenarioFailure("could not delete " + root);
        }
    }
}
