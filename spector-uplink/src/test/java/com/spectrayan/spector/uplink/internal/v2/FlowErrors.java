package com.spectrayan.spector.uplink.internal.v2;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;

/** Assertions on the {@link FlowControlException} a call throws: its code, its level and its stream. */
final class FlowErrors {
    private FlowErrors() {}

    /** Asserts that {@code call} throws a stream-level {@code kind} error naming {@code streamId}. */
    static void assertStreamError(ThrowingCallable call, FlowControlException.Kind kind, int streamId) {
        assertFlowError(call, kind, false, streamId);
    }

    /** Asserts that {@code call} throws a connection-level {@code kind} error naming {@code streamId} (0: the connection). */
    static void assertConnectionError(ThrowingCallable call, FlowControlException.Kind kind, int streamId) {
        assertFlowError(call, kind, true, streamId);
    }

    private static void assertFlowError(
            ThrowingCallable call, FlowControlException.Kind kind, boolean connectionLevel, int streamId) {
        assertThatThrownBy(call)
                .isInstanceOfSatisfying(
                        FlowControlException.class,
                        e -> assertThat(List.of(e.kind(), e.connectionLevel(), e.streamId()))
                                .as("kind, connection level, stream id")
                                .containsExactly(kind, connectionLevel, streamId));
    }
}
