package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.util.concurrent.DefaultThreadFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Renders the Prometheus scrape on a thread of its own ({@value #THREAD_NAME}), one render at a
 * time, every answer read after its request came.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Why a thread.</b> A render ({@code PrometheusMeterRegistry.scrape()}) takes about 1 ms,
 *       the cost of some 50 forwarded requests; on a traffic event loop it stalled every connection
 *       of the loop, and a client looping on the scrape stalled them without pause.
 *   <li><b>Singleflight.</b> At most one render runs. A scrape that comes while none runs starts
 *       one; scrapes that come while one runs wait for the next, which starts as the running one
 *       ends, and all of them share it. However many scrape, one render runs and one waits.
 *   <li><b>Never stale.</b> A scrape never gets the render that was running when it came: that one
 *       may have read a counter before the exchanges the scraper just completed. So every answer
 *       counts every exchange that completed before its scrape came (a test reads a counter, runs
 *       an exchange, reads it again). The one reuse is {@link #renderedWithin}, for a {@code HEAD}'s
 *       length ({@link LocalEndpoints#SCRAPE_REUSE}).
 * </ul>
 *
 * <p>Concurrency: {@link #next} on any thread. Its futures complete on the render thread (or on
 * the caller's, when the renderer is closed): a caller on an event loop hops back to it before it
 * touches its connection. {@link #pending} and {@link #running} are guarded by {@link #lock}, which
 * is never held across a render.
 */
final class ScrapeRenderer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ScrapeRenderer.class);

    /** The render thread's name (a prefix: Netty's thread factory numbers it). */
    static final String THREAD_NAME = "spector-scrape";

    private final Supplier<String> render;
    /**
     * One daemon thread, made at the first scrape. Its queue holds one task at most: {@link #next}
     * submits only while {@link #running} is false, which the task sets as its last act.
     */
    private final ThreadPoolExecutor executor;

    private final Object lock = new Object();
    /** The render the scrapes that came since the running one began wait for; null when none came. Guarded by lock. */
    private @Nullable CompletableFuture<byte[]> pending;
    /** Whether the render thread has renders to take (from a pending render until none is left). Guarded by lock. */
    private boolean running;

    /** The last render, for {@link #renderedWithin}. */
    private volatile @Nullable Rendered last;

    private final LongAdder scrapes = new LongAdder();
    private final LongAdder renders = new LongAdder();

    /** A render's text and when it began ({@link System#nanoTime}). */
    private static final class Rendered {
        final byte[] text;
        final long beganNanos;

        Rendered(byte[] text, long beganNanos) {
            this.text = text;
            this.beganNanos = beganNanos;
        }
    }

    /** A renderer of {@code render}'s text (the registry's scrape), in UTF-8. */
    ScrapeRenderer(Supplier<String> render) {
        this.render = requireNonNull(render, "render");
        this.executor = new ThreadPoolExecutor(
                1,
                1,
                0,
                TimeUnit.MILLISECONDS,
                new ArrayBlockingQueue<>(1),
                new DefaultThreadFactory(THREAD_NAME, true));
    }

    /**
     * Returns a future of the first render that begins after this call, shared with every scrape
     * that waits for it. It fails with what the render threw, or with a {@link
     * RejectedExecutionException} once the renderer is closed; it has no deadline of its own (the
     * caller's to set, on its copy). Completing it affects no other scrape.
     */
    CompletableFuture<byte[]> next() {
        synchronized (lock) {
            scrapes.increment(); // under the lock: a test that saw it knows the scrape joined
            CompletableFuture<byte[]> f = pending;
            if (f == null) {
                f = new CompletableFuture<>();
                pending = f;
                if (!running) {
                    running = true;
                    try {
                        executor.execute(this::renderPending);
                    } catch (RejectedExecutionException e) {
                        running = false;
                        pending = null;
                        f.completeExceptionally(e);
                    }
                }
            }
            return f.copy();
        }
    }

    /** Takes pending renders until none is left; on the render thread. */
    private void renderPending() {
        while (true) {
            CompletableFuture<byte[]> f;
            synchronized (lock) {
                f = pending;
                pending = null; // a scrape from here on waits for the render after this one
                if (f == null) {
                    running = false;
                    return;
                }
            }
            renders.increment();
            long began = System.nanoTime();
            try {
                byte[] text = render.get().getBytes(StandardCharsets.UTF_8);
                last = new Rendered(text, began);
                f.complete(text);
            } catch (Throwable t) { // an Error too: the thread must go on taking renders
                log.warn("the scrape failed to render: {}", t.toString(), t);
                f.completeExceptionally(t);
            }
        }
    }

    /** Returns the text of the last render if it began within {@code age}, else null. */
    byte @Nullable [] renderedWithin(Duration age) {
        Rendered r = last;
        return r != null && System.nanoTime() - r.beganNanos < age.toNanos() ? r.text : null;
    }

    /** Returns how many scrapes asked for a render ({@link #next}; tests). */
    long scrapes() {
        return scrapes.sum();
    }

    /** Returns how many renders ran (tests). */
    long renders() {
        return renders.sum();
    }

    /** Lets the renders already asked for run, then stops the thread; a later {@link #next} fails. */
    @Override
    public void close() {
        executor.shutdown();
    }
}
