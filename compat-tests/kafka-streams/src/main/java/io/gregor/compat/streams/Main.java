package io.gregor.compat.streams;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.common.utils.internals.AppInfoParser;

/**
 * The kafka-streams suite's driver.
 *
 * <pre>
 * java -cp ... io.gregor.compat.streams.Main BOOTSTRAP RESULTS_FILE [SCENARIO...]
 * </pre>
 *
 * Runs the named scenarios (all of them when none is named) one after the
 * other against the broker at BOOTSTRAP, and appends one result line per
 * scenario to RESULTS_FILE as soon as it ends, so that lines written before
 * a crash survive it. COMPAT_PREFIX starts every topic and application.id;
 * state dirs go under COMPAT_WORK. Exits 0 when it ran, whatever the results.
 */
public final class Main {
    static final String CLIENT = "kafka-streams";
    /** A whole scenario, app start-up and shutdown included. */
    private static final long SCENARIO_TIMEOUT_S = 120;
    private static final int MAX_DETAIL = 600;

    /** A scenario body: returns the detail of its pass line, or throws. */
    interface Scenario {
        String run(Lab lab) throws Exception;
    }

    private static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();

    static {
        SCENARIOS.put("streams-wordcount", Scenarios::wordCount);
        SCENARIOS.put("streams-internal-topics", Scenarios::internalTopics);
        SCENARIOS.put("streams-commit", Scenarios::commit);
        SCENARIOS.put("streams-repartition-purge", Scenarios::repartitionPurge);
        SCENARIOS.put("streams-restart-restore", Scenarios::restartRestore);
        SCENARIOS.put("streams-two-instances", Scenarios::twoInstances);
        SCENARIOS.put("streams-windowed-count", Scenarios::windowedCount);
        SCENARIOS.put("streams-table-join", Scenarios::tableJoin);
        SCENARIOS.put("streams-eos-wordcount", Scenarios::eosWordCount);
    }

    private Main() {}

    public static void main(String[] args) throws IOException {
        if (args.length == 1 && args[0].equals("--list")) {
            SCENARIOS.keySet().forEach(System.out::println);
            return;
        }
        if (args.length < 2) {
            System.err.println("usage: Main BOOTSTRAP RESULTS_FILE [SCENARIO...] | Main --list");
            System.exit(2);
        }
        String bootstrap = args[0];
        Path results = Path.of(args[1]);
        List<String> names = args.length > 2 ? List.of(args).subList(2, args.length) : new ArrayList<>(SCENARIOS.keySet());
        String prefix = requireEnv("COMPAT_PREFIX");
        Path work = Path.of(requireEnv("COMPAT_WORK"));
        // The version Kafka's clients log at start-up ("Kafka version: ..."),
        // read from the kafka-clients jar; kafka-streams is released with it.
        String version = AppInfoParser.getVersion();

        for (String name : names) {
            long start = System.nanoTime();
            String status;
            String detail;
            Scenario scenario = SCENARIOS.get(name);
            if (scenario == null) {
                status = "fail";
                detail = "no such scenario in this suite";
            } else {
                try {
                    detail = run(scenario, name, bootstrap, prefix, work);
                    status = "pass";
                } catch (Throwable e) {
                    status = "fail";
                    detail = describe(e);
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            String line = String.join("\t", CLIENT, version, name, status,
                    String.format(Locale.ROOT, "%.1f", seconds), oneLine(detail));
            Files.writeString(results, line + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            System.out.println(line);
        }
        // A scenario that timed out may have left a stuck client thread.
        System.exit(0);
    }

    /**
     * Runs one scenario on a thread of its own, bounded by
     * SCENARIO_TIMEOUT_S. On timeout the thread is interrupted, which ends
     * its waits and closes what it opened.
     */
    private static String run(Scenario scenario, String name, String bootstrap, String prefix, Path work) throws Throwable {
        ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
        try {
            Future<String> result = executor.submit(() -> {
                try (Lab lab = new Lab(bootstrap, prefix, work)) {
                    return scenario.run(lab);
                }
            });
            try {
                return result.get(SCENARIO_TIMEOUT_S, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                result.cancel(true);
                throw new ScenarioFailure("scenario did not finish within " + SCENARIO_TIMEOUT_S + " s");
            } catch (ExecutionException e) {
                throw e.getCause();
            }
        } finally {
            executor.shutdownNow();
        }
    }

    /**
     * A failure as one line: a {@link ScenarioFailure}'s own message, or an
     * exception's class and message followed by its causes'.
     */
    static String describe(Throwable e) {
        if (e instanceof ScenarioFailure) {
            return e.getMessage();
        }
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            // The futures' wrappers only repeat their cause.
            if ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
                continue;
            }
            if (t instanceof ScenarioFailure) {
                sb.append(sb.length() == 0 ? "" : " <- ").append(t.getMessage());
                break;
            }
            sb.append(sb.length() == 0 ? "" : " <- ").append(t.getClass().getSimpleName());
            if (t.getMessage() != null) {
                sb.append(": ").append(t.getMessage());
            }
        }
        return sb.toString();
    }

    private static String oneLine(String s) {
        String flat = (s == null ? "" : s).replaceAll("\\s+", " ").trim();
        return flat.length() <= MAX_DETAIL ? flat : flat.substring(0, MAX_DETAIL - 3) + "...";
    }

    private static String requireEnv(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            System.err.println(name + " is not set");
            System.exit(2);
        }
        return value;
    }
}
