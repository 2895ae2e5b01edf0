package com.spectrayan.spector.uplink.testing;

import com.spectrayan.spector.uplink.internal.gateway.RelayHooks;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import java.util.function.Consumer;

/** {@link RelayHooks} made of three callbacks, for the tests that call the worker client directly. */
public final class TestHooks {
    private TestHooks() {}

    /** Returns hooks that hand each head, chunk and invalid push to its callback. */
    public static RelayHooks of(Consumer<RelayHead> heads, Consumer<RelayChunk> chunks, Consumer<Throwable> invalid) {
        return new RelayHooks() {
            @Override
            public void onRelayHead(RelayHead head) {
                heads.accept(head);
            }

            @Override
            public void onRelayChunk(RelayChunk chunk) {
                chunks.accept(chunk);
            }

            @Override
            public void onRelayInvalid(Throwable problem) {
                invalid.accept(problem);
            }
        };
    }
}
