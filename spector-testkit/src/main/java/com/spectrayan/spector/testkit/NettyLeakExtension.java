package com.spectrayan.spector.testkit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import io.netty.util.ResourceLeakDetectorFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
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
 *
 * <p>The collections are the check's cost (three full collections of the test JVM's heap: about
 * 0.17 s a test in CI, whatever the test did), so a test that made no tracked buffer is not
 * collected after: nothing it made can have leaked. The detector counts the buffers it tracks
 * (every one, at PARANOID). A buffer an earlier test made and a later one drops unreleased is
 * still found: by the next test that makes a buffer, or at the end of the class, which always
 * collects.
 */
public final class NettyLeakExtension implements AfterEachCallback, AfterAllCallback {
    /** Collections (each followed by a tracked allocation that polls the detector) after a test. */
    static final int GC_ROUNDS = 3;

    private static final List<String> LEAKS = new CopyOnWriteArrayList<>();

    /** Buffers the detectors tracked since the JVM started. */
    private static final AtomicLong TRACKED = new AtomicLong();

    /** {@link #TRACKED} when the last collection ended. */
    private static final AtomicLong TRACKED_AT_COLLECTION = new AtomicLong(-1);

    /** Calls of {@link #collectLeaks} so far. */
    private static final AtomicLong COLLECTIONS = new AtomicLong();

    static {
        ResourceLeakDetectorFactory.setResourceLeakDetectorFactory(new RecordingFactory());
    }

    @Override
    public void afterEach(ExtensionContext context) {
        checkIfBuffersMade();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        check();
    }

    /** The check after a test: only when a buffer was tracked since the last collection. */
    static void checkIfBuffersMade() {
        if (TRACKED.get() != TRACKED_AT_COLLECTION.get()) {
            check();
        }
    }

    /** Collects and fails on what the detector reported. */
    static void check() {
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
        TRACKED_AT_COLLECTION.set(TRACKED.get());
        COLLECTIONS.incrementAndGet();
        List<String> found = new ArrayList<>(LEAKS);
        LEAKS.removeAll(found);
        return found;
    }

    /** Buffers the detectors have tracked so far (each counted as Netty starts tracking it). */
    static long tracked() {
        return TRACKED.get();
    }

    /** Calls of {@link #collectLeaks} so far. */
    static long collections() {
        return COLLECTIONS.get();
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
                protected @Nullable Object getInitialHint(String resourceType) {
                    TRACKED.incrementAndGet(); // Netty asks once per buffer it starts tracking
                    return super.getInitialHint(resourceType);
                }

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
