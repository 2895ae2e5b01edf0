package com.spectrayan.spector.testkit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test when Netty's leak detector (PARANOID in tests) reports a buffer that was never
 * released, as Netty's own {@code LeakPresenceExtension} does. Leaks are recorded by a detector
 * factory installed before the first buffer class loads, and checked after each test once a few
 * garbage collections have had the chance to find them.
 *
 * <p>Registered for every test of a module that has the kit on its test classpath, through JUnit's
 * extension auto-detection ({@code META-INF/services}, enabled in the parent pom), so the factory
 * is in place before any test touches a buffer.
 */
public final class NettyLeakExtension implements AfterEachCallback {
    /** Collections (each followed by a tracked allocation that polls the detector) after a test. */
    static final int GC_ROUNDS = 3;

    private static final List<String> LEAKS = new CopyOnWriteArrayList<>();

    static {
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new RecordingFactory());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        List<String> leaks = collectLeaks();
        if (!leaks.isEmpty()) {
            throw new AssertionError(
                    "Netty buffers never released (" + leaks.size() + "):\n" + String.join("\n", leaks));
        }
    }

    /** Runs the collector and the detector, and returns (and forgets) the leaks reported so far. */
    public static List<String> collectLeaks() {
        for (int i = 0; i < GC_ROUNDS; i++) {
            System.gc();
            // A tracked allocation makes the detector poll its queue of collected, unreleased buffers.
            ByteBuf probe = ByteBufAllocator.DEFAULT.buffer(1);
            probe.release();
        }
        List<String> found = new ArrayList<>(LEAKS);
        LEAKS.removeAll(found);
        return found;
    }

    /** Makes detectors that record what they report. */
    private static final class RecordingFactory extends ResourceLeakDetectorFactory {
        // The abstract method Netty still requires is deprecated in favour of the two-argument one.
        @SuppressWarnings("deprecation")
        @Override
        public <T> ResourceLeakDetector<T> newResourceLeakDetector(
                Class<T> resource, int samplingInterval, long maxActive) {
            return newResourceLeakDetector(resource, samplingInterval);
        }

        @Override
        public <T> ResourceLeakDetector<T> newResourceLeakDetector(Class<T> resource, int samplingInterval) {
            return new ResourceLeakDetector<>(resource, samplingInterval) {
                @Override
                protected void reportTracedLeak(String resourceType, String records) {
                    LEAKS.add(resourceType + ":" + records);
                    super.reportTracedLeak(resourceType, records);
                }

                @Override
                protected void reportUntracedLeak(String resourceType) {
                    LEAKS.add(resourceType);
                    super.reportUntracedLeak(resourceType);
                }
            };
        }
    }
}
