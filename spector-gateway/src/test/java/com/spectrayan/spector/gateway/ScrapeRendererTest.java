package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

final class ScrapeRendererTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    /** Renders before a hold; the text of each render is its number. */
    private final AtomicInteger rendered = new AtomicInteger();

    private final CountDownLatch entered = new CountDownLatch(1);
    private final CountDownLatch release = new CountDownLatch(1);
    private volatile boolean holdNext;
    private volatile boolean failNext;
    private volatile String thread = "";

    private final ScrapeRenderer renderer = new ScrapeRenderer(this::render);

    @AfterEach
    void close() {
        release.countDown();
        renderer.close();
    }

    private String render() {
        thread = Thread.currentThread().getName();
        int n = rendered.incrementAndGet();
        if (holdNext) {
            holdNext = false;
            entered.countDown();
            try {
                var unused = release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (failNext) {
            failNext = false;
            throw new IllegalStateException("render " + n + " failed");
        }
        return Integer.toString(n);
    }

    private static String text(CompletableFuture<byte[]> f) throws Exception {
        return new String(f.get(WAIT.toSeconds(), TimeUnit.SECONDS), StandardCharsets.UTF_8);
    }

    private CompletableFuture<byte[]> heldRender() throws InterruptedException {
        holdNext = true;
        CompletableFuture<byte[]> running = renderer.next();
        assertThat(entered.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        return running;
    }

    @Test
    void next_rendersOnItsOwnThread() throws Exception {
        assertThat(text(renderer.next())).isEqualTo("1");
        assertThat(thread).startsWith(ScrapeRenderer.THREAD_NAME + "-");
    }

    @Test
    void next_whileARenderRuns_getsTheRenderAfterIt() throws Exception {
        CompletableFuture<byte[]> running = heldRender();
        CompletableFuture<byte[]> later = renderer.next();
        release.countDown();
        assertThat(text(running)).isEqualTo("1");
        assertThat(text(later))
                .as("never the render that was running when it came")
                .isEqualTo("2");
    }

    @Test
    void next_manyWhileARenderRuns_shareOneRender() throws Exception {
        CompletableFuture<byte[]> running = heldRender();
        List<CompletableFuture<byte[]>> waiting = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            waiting.add(renderer.next());
        }
        release.countDown();
        assertThat(text(running)).isEqualTo("1");
        for (CompletableFuture<byte[]> f : waiting) {
            assertThat(text(f)).isEqualTo("2");
        }
        assertThat(renderer.renders()).isEqualTo(2);
        assertThat(renderer.scrapes()).isEqualTo(101);
    }

    @Test
    void next_oneWaiterTimesOut_theOthersGetTheRender() throws Exception {
        CompletableFuture<byte[]> running = heldRender();
        CompletableFuture<byte[]> impatient = renderer.next().orTimeout(1, TimeUnit.MILLISECONDS);
        CompletableFuture<byte[]> patient = renderer.next();
        assertThatThrownBy(() -> impatient.get(WAIT.toSeconds(), TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class);
        release.countDown();
        assertThat(text(running)).isEqualTo("1");
        assertThat(text(patient)).isEqualTo("2");
    }

    @Test
    void next_renderThrows_failsThatRenderOnly() throws Exception {
        failNext = true;
        CompletableFuture<byte[]> failed = renderer.next();
        assertThatThrownBy(() -> failed.get(WAIT.toSeconds(), TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .hasRootCauseMessage("render 1 failed");
        assertThat(text(renderer.next())).isEqualTo("2");
    }

    @Test
    void renderedWithin_oldRender_isNull() throws Exception {
        assertThat(renderer.renderedWithin(Duration.ofMinutes(1))).isNull();
        text(renderer.next());
        assertThat(renderer.renderedWithin(Duration.ofMinutes(1)))
                .asString(StandardCharsets.UTF_8)
                .isEqualTo("1");
        assertThat(renderer.renderedWithin(Duration.ZERO)).isNull();
    }

    @Test
    void next_afterClose_fails() {
        renderer.close();
        assertThatThrownBy(() -> renderer.next().get(WAIT.toSeconds(), TimeUnit.SECONDS))
                .hasCauseInstanceOf(RejectedExecutionException.class);
    }
}
