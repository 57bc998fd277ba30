package io.gregor.compat.streams;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * Input text for the word counts: lines of words drawn from a small
 * vocabulary with a seeded generator, so a run is reproducible, together
 * with the true count of every word, which the scenarios hold the app's
 * output against.
 */
final class Corpus {
    private static final String[] VOCABULARY = {
        "kafka", "gregor", "stream", "table", "topic", "partition", "offset", "record",
        "broker", "leader", "replica", "commit", "window", "join", "state", "changelog",
    };

    /** Lines of 1 to 8 words separated by single spaces. */
    static List<String> lines(long seed, int count) {
        Random random = new Random(seed);
        List<String> lines = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int words = 1 + random.nextInt(8);
            StringBuilder line = new StringBuilder();
            for (int w = 0; w < words; w++) {
                if (w > 0) {
                    line.append(' ');
                }
                line.append(VOCABULARY[random.nextInt(VOCABULARY.length)]);
            }
            lines.add(line.toString());
        }
        return lines;
    }

    /** Adds the words of {@code lines} to {@code counts} (word to count). */
    static void count(List<String> lines, Map<String, Long> counts) {
        for (String line : lines) {
            for (String word : line.split(" ")) {
                counts.merge(word, 1L, Long::sum);
            }
        }
    }

    static Map<String, Long> counts(List<String> lines) {
        Map<String, Long> counts = new TreeMap<>();
        count(lines, counts);
        return counts;
    }

    static long words(Map<String, Long> counts) {
        return counts.values().stream().mapToLong(Long::longValue).sum();
    }

    private Corpus() {}
}
