package com.spectrayan.spector.gateway.config;

import java.util.List;

/**
 * The gateway's settings were refused: one or more keys have a bad value, a required key is
 * missing, or keys contradict each other.
 *
 * <p>The message holds every problem found, one per line, each as {@code key: value (expected:
 * ...)}, so an operator fixes them all in one go. Secret values are never shown.
 */
public final class SettingsException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The first line of the message, before the problems. */
    static final String HEADLINE = "the gateway settings are refused:";

    @SuppressWarnings("serial") // an immutable List.copyOf of strings
    private final List<String> problems;

    SettingsException(List<String> problems) {
        super(HEADLINE + "\n" + String.join("\n", problems), null, false, false);
        if (problems.isEmpty()) {
            throw new IllegalArgumentException("problems: [] (expected: at least one problem)");
        }
        this.problems = List.copyOf(problems);
    }

    /** Returns the problems, each {@code key: value (expected: ...)}, in the order keys are documented. */
    public List<String> problems() {
        return problems;
    }
}
