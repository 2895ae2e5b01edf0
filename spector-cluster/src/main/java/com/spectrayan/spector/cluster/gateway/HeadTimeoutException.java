package com.spectrayan.spector.cluster.gateway;

/**
 * An owner sent no response head within {@link ForwarderSpec#ownerTimeout()} of the end of the
 * request: the cause an attempt fails with when its head timer fires (mapped to 504 by {@link
 * ForwardProblems}). An expected failure: no stack trace.
 */
final class HeadTimeoutException extends Exception {
    private static final long serialVersionUID = 1L;

    HeadTimeoutException(String owner) {
        super("owner " + owner + " sent no response head in time", null, false, false);
    }
}
