package io.gregor.compat.streams;

/**
 * A scenario's check did not hold. The message is the result line's detail:
 * one line saying what was expected and what came back.
 */
final class ScenarioFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ScenarioFailure(String detail) {
        super(detail);
    }
}
