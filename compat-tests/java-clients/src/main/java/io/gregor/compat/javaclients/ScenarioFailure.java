package io.gregor.compat.javaclients;

/**
 * A check that did not hold: what was expected and what came back. Main
 * reports its message as the scenario's one-line reason, without the
 * exception class, since the message already says everything.
 */
final class ScenarioFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ScenarioFailure(String message) {
        super(message);
    }

    /** Throws when cond is false; the message is built only then. */
    static void check(boolean cond, String format, Object... args) {
        if (!cond) {
            throw new ScenarioFailure(String.format(format, args));
        }
    }

    /** Throws "what: expected X, got Y" unless the two are equal. */
    static void checkEqual(String what, Object expected, Object got) {
        if (!java.util.Objects.equals(expected, got)) {
            throw new ScenarioFailure(what + ": expected " + expected + ", got " + got);
        }
    }
}
