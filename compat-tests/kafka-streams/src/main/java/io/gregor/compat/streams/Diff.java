package io.gregor.compat.streams;

import java.util.Map;
import java.util.TreeSet;

/** One-line descriptions of how what was read differs from what was expected. */
final class Diff {
    private static final int SHOWN = 4;

    private Diff() {}

    /** E.g. "3 of 16 keys differ: kafka expected 41 got 40, join expected 7 got none, ...". */
    static String counts(Map<String, Long> expected, Map<String, Long> actual) {
        return differences(expected, actual);
    }

    /** Like {@link #counts}, for keys mapped to lines of text. */
    static String lines(Map<String, String> expected, Map<String, String> actual) {
        return differences(expected, actual);
    }

    private static <V> String differences(Map<String, V> expected, Map<String, V> actual) {
        TreeSet<String> keys = new TreeSet<>(expected.keySet());
        keys.addAll(actual.keySet());
        StringBuilder sb = new StringBuilder();
        int differ = 0;
        for (String key : keys) {
            V want = expected.get(key);
            V got = actual.get(key);
            if (want == null ? got == null : want.equals(got)) {
                continue;
            }
            if (differ < SHOWN) {
                sb.append(differ == 0 ? "" : ", ").append(key)
                        .append(" expected ").append(want == null ? "none" : want)
                        .append(" got ").append(got == null ? "none" : got);
            } else if (differ == SHOWN) {
                sb.append(", ...");
            }
            differ++;
        }
        if (differ == 0) {
            return "all " + keys.size() + " keys as expected";
        }
        return differ + " of " + keys.size() + " keys differ: " + sb;
    }
}
