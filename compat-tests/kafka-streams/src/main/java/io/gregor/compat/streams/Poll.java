package io.gregor.compat.streams;

import java.time.Duration;
import java.util.concurrent.Callable;

/**
 * Bounded waits. A scenario never sleeps and hopes: it polls a condition
 * until it holds or the deadline passes, and then fails saying what it was
 * waiting for and what it saw last.
 */
final class Poll {
    /** How long one step of a scenario may wait for the broker or the app. */
    static final Duration STEP = Duration.ofSeconds(60);

    private static final long INTERVAL_MS = 100;

    /** A condition that may call the broker, and so may throw. */
    interface Condition {
        boolean holds() throws Exception;
    }

    private Poll() {}

    /**
     * Polls {@code condition} until it holds. On timeout throws a
     * {@link ScenarioFailure} naming {@code what} and the last state that
     * {@code lastSeen} describes. An exception thrown by the condition
     * (a {@link ScenarioFailure} from an app that died, say) ends the wait
     * at once.
     */
    static void until(String what, Duration timeout, Condition condition, Callable<String> lastSeen) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.holds()) {
            if (System.nanoTime() - deadline > 0) {
                String seen;
                try {
                    seen = lastSeen.call();
                } catch (Exception e) {
                    seen = "(could not tell: " + Main.describe(e) + ")";
                }
                throw new ScenarioFailure("timed out after " + timeout.toSeconds() + " s waiting for " + what
                        + "; last seen: " + seen);
            }
            Thread.sleep(INTERVAL_MS);
        }
    }
}
