package com.spectrayan.spector.testkit;

import io.netty.util.ResourceLeakDetector;
import java.util.List;

/**
 * The leak checks a jqwik property class runs around its tries (jqwik runs no JUnit extension, so
 * the kit's {@link NettyLeakExtension} is called by hand): PARANOID before, no leak after.
 */
public final class PropertyLeaks {
    private PropertyLeaks() {}

    /** Installs the recording detector (earlier leaks are not the properties') and requires PARANOID. */
    public static void paranoid() {
        NettyLeakExtension.collectLeaks();
        if (ResourceLeakDetector.getLevel() != ResourceLeakDetector.Level.PARANOID) {
            throw new IllegalStateException("leak detection is " + ResourceLeakDetector.getLevel()
                    + " (expected: PARANOID, -Dio.netty.leakDetection.level=PARANOID as the parent pom sets)");
        }
    }

    /** Fails with {@code check} (the property's numbered check) when a buffer was never released. */
    public static void noLeak(String check) {
        List<String> leaks = NettyLeakExtension.collectLeaks();
        if (!leaks.isEmpty()) {
            throw new AssertionError(
                    check + ": Netty buffers never released (" + leaks.size() + "):\n" + String.join("\n", leaks));
        }
    }
}
