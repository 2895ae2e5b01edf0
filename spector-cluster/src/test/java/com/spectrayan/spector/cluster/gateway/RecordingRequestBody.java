package com.spectrayan.spector.cluster.gateway;

import java.util.ArrayList;
import java.util.List;

/**
 * A client body that delivers nothing and records what the forwarder asks of it ({@code start},
 * {@code pause}, {@code resume}, {@code discard}), in order. Confined to the test's thread.
 */
final class RecordingRequestBody implements RequestBody {
    final List<String> calls = new ArrayList<>();

    @Override
    public void start(Consumer consumer) {
        calls.add("start");
    }

    @Override
    public void pause() {
        calls.add("pause");
    }

    @Override
    public void resume() {
        calls.add("resume");
    }

    @Override
    public void discard() {
        calls.add("discard");
    }
}
