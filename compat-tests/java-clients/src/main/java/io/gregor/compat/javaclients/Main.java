package io.gregor.compat.javaclients;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.common.utils.internals.AppInfoParser;

/**
 * The java-clients suite: runs each scenario against the broker named by
 * the first argument and appends one result line per scenario to
 * $COMPAT_RESULTS (see compat-tests/README.md for the format).
 *
 * Usage: Main BOOTSTRAP [SCENARIO...]   (no scenarios named: all of them)
 *
 * Each scenario runs in a thread of its own with a time limit, so that a
 * client stuck on a broker that does not answer costs one failed line, not
 * the run. The exit status is 0 whenever the scenarios ran, whatever their
 * results; 2 on a usage error.
 */
public final class Main {
    static final String CLIENT = "java-clients";

    /** Limit of one scenario, steps and clean-up included. */
    static final long SCENARIO_TIMEOUT_SECONDS = 120;

    /** A scenario returns a one-line summary when every check held and throws otherwise. */
    interface Scenario {
        String run(Lab lab) throws Exception;
    }

    private Main() {
    }

    /**
     * The scenarios in the order they run: data paths first, then groups, then admin, then transactions, then
     * the consumer group protocol of KIP-848, then share groups (KIP-932).
     */
    static Map<String, Scenario> scenarios() {
        Map<String, Scenario> s = new LinkedHashMap<>();
        for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
            s.put("produce-consume-" + codec, lab -> DataScenarios.produceConsume(lab, codec));
        }
        s.put("idempotent-producer", DataScenarios::idempotentProducer);
        s.put("list-offsets", DataScenarios::listOffsets);
        s.put("consume-from-offset", DataScenarios::consumeFromOffset);
        s.put("group-commit-resume", GroupScenarios::commitResume);
        s.put("group-rebalance", GroupScenarios::rebalance);
        s.put("admin-topics", AdminScenarios::topics);
        s.put("admin-configs", AdminScenarios::configs);
        s.put("admin-groups", GroupScenarios::adminGroups);
        s.put("describe-cluster", AdminScenarios::describeCluster);
        s.put("txn-commit-read-committed", TxnScenarios::commitReadCommitted);
        s.put("txn-abort-invisible", TxnScenarios::abortInvisible);
        s.put("txn-consume-transform-produce", TxnScenarios::consumeTransformProduce);
        s.put("txn-fencing", TxnScenarios::fencing);
        s.put("consumer-protocol-group", ConsumerProtocolScenarios::group);
        s.put("consumer-protocol-regex", ConsumerProtocolScenarios::regex);
        s.put("consumer-protocol-migration", ConsumerProtocolScenarios::migration);
        s.put("share-group-three-members", ShareScenarios::threeMembers);
        s.put("share-group-release-redelivery", ShareScenarios::releaseRedelivery);
        s.put("share-group-lock-timeout", ShareScenarios::lockTimeout);
        s.put("share-group-member-killed", ShareScenarios::memberKilled);
        return s;
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 1) {
            System.err.println("usage: Main BOOTSTRAP [SCENARIO...]");
            System.exit(2);
        }
        String bootstrap = args[0];
        Map<String, Scenario> all = scenarios();
        List<String> names = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            if (!all.containsKey(args[i])) {
                System.err.println("unknown scenario " + args[i] + "; known: " + String.join(" ", all.keySet()));
                System.exit(2);
            }
            names.add(args[i]);
        }
        if (names.isEmpty()) {
            names.addAll(all.keySet());
        }
        String prefix = System.getenv().getOrDefault("COMPAT_PREFIX", "manual-" + System.currentTimeMillis() / 1000);
        String resultsEnv = System.getenv("COMPAT_RESULTS");
        Path results = resultsEnv == null || resultsEnv.isEmpty() ? null : Path.of(resultsEnv);
        // The version the clients send the broker in ApiVersions (client.software.version).
        String version = AppInfoParser.getVersion();

        int passed = 0;
        int failed = 0;
        int skipped = 0;
        for (String name : names) {
            Lab lab = new Lab(bootstrap, prefix, name);
            long start = System.nanoTime();
            String[] outcome = Security.covers(name)
                    ? runOne(lab, all.get(name))
                    : new String[] {"skip", "not run over " + Security.mode() + " (produce/consume/group scenarios only)"};
            double seconds = (System.nanoTime() - start) / 1e9;
            String line = String.join("\t", CLIENT, version, name, outcome[0], String.format("%.1f", seconds),
                    oneLine(outcome[1]));
            System.out.println(line);
            System.out.flush();
            if (results != null) {
                // Appended line by line, so that a run cut short keeps what it found.
                Files.writeString(results, line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
            }
            if (outcome[0].equals("pass")) {
                passed++;
            } else if (outcome[0].equals("skip")) {
                skipped++;
            } else {
                failed++;
            }
        }
        System.out.println(CLIENT + ": " + passed + " passed, " + failed + " failed, " + skipped + " skipped");
        // A client thread of a timed-out scenario may still be alive; it must not keep the JVM up.
        System.exit(0);
    }

    /** Runs one scenario in its own thread; returns {status, detail}. */
    private static String[] runOne(Lab lab, Scenario scenario) {
        FutureTask<String> task = new FutureTask<>(() -> scenario.run(lab));
        Thread t = new Thread(task, "scenario-" + lab.scenario);
        t.setDaemon(true);
        t.start();
        try {
            return new String[] {"pass", task.get(SCENARIO_TIMEOUT_SECONDS, TimeUnit.SECONDS)};
        } catch (TimeoutException e) {
            String step = lab.step();
            t.interrupt();
            try {
                // Give the interrupted scenario a moment to close its clients before the next one starts.
                t.join(10_000);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
            }
            return new String[] {"fail", "timed out after " + SCENARIO_TIMEOUT_SECONDS + " s in step '" + step + "'"};
        } catch (ExecutionException e) {
            return new String[] {"fail", lab.step() + ": " + describe(e.getCause())};
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new String[] {"fail", "interrupted in step '" + lab.step() + "'"};
        }
    }

    /**
     * An exception as one line: a ScenarioFailure's message as it is; any
     * other exception by its class and message, with its root cause when that
     * says something more (Kafka wraps broker errors in ExecutionException and
     * KafkaException).
     */
    static String describe(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
            e = e.getCause();
        }
        if (e instanceof ScenarioFailure) {
            return e.getMessage();
        }
        String s = e.getClass().getSimpleName() + ": " + e.getMessage();
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        if (root != e && (e.getMessage() == null || !e.getMessage().contains(String.valueOf(root.getMessage())))) {
            s += " (caused by " + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
        }
        return s;
    }

    private static String oneLine(String s) {
        return s == null ? "" : s.replaceAll("[\\t\\r\\n]+", " ").trim();
    }
}
