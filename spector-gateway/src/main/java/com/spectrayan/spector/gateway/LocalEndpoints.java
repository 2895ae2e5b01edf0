package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.channel.Channel;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The routes the gateway answers itself (DESIGN.md section 4): {@code /actuator/health} (and its
 * {@code liveness} and {@code readiness} groups), {@code /actuator/prometheus}, {@code **}{@code
 * /health}, {@code /api/v1/health/**}, CORS preflights, and the uplink routes (404 until the relay
 * lands).
 *
 * <p>The scrape is answered later, off the caller's loop ({@link #scrape}, {@link
 * ScrapeRenderer}); every other route at once ({@link #answer}).
 */
final class LocalEndpoints {
    private static final Logger log = LoggerFactory.getLogger(LocalEndpoints.class);

    /** The scrape's path. */
    static final String PROMETHEUS = "/actuator/prometheus";

    private static final String PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    /**
     * How long a rendered scrape answers a {@code HEAD} again (its length): a client pipelining
     * {@code HEAD}s, each rendered in full and its body then dropped, so that the connection's
     * write limit never stopped it, kept the admin thread, or a traffic loop on the client port,
     * rendering without pause (found by a review). A {@code GET} always waits for a render that
     * begins after it came (its body is what a scraper wants fresh, and its bytes meet the write
     * limit).
     */
    static final Duration SCRAPE_REUSE = Duration.ofSeconds(1);

    /**
     * How long a scrape waits for its render before it is answered 503: a render takes about a
     * millisecond, so one past this is stuck (a meter's function that blocks), and the scraper
     * learns it rather than holding its connection for ever.
     */
    static final Duration SCRAPE_DEADLINE = Duration.ofSeconds(10);

    private final Health health;
    private final Cors cors;
    /** The one renderer of both ports' scrapes. */
    private final ScrapeRenderer renderer;

    LocalEndpoints(Health health, GatewayMetrics metrics, Cors cors) {
        this.health = health;
        this.cors = cors;
        this.renderer = new ScrapeRenderer(metrics::scrape);
    }

    /**
     * Returns the local answer for a request, or null when it is forwarded; never the scrape's
     * ({@link #PROMETHEUS}: {@link #scrape}).
     */
    @Nullable
    FullHttpResponse answer(HttpMethod method, String path, HttpHeaders headers) {
        FullHttpResponse actuator = switch (path) {
            case "/actuator/health" -> health.full();
            case "/actuator/health/liveness" -> health.liveness();
            case "/actuator/health/readiness" -> health.readiness();
            default -> null;
        };
        if (actuator != null) {
            return actuator;
        }
        if (isHealth(path)) {
            return health.full();
        }
        if (path.startsWith("/api/v1/") || path.startsWith(RelayRoute.PREFIX)) {
            return cors.preflight(method, headers); // a page reaches a worker as it reaches an owner
        }
        return null;
    }

    /**
     * Answers a scrape of {@code ch}'s request: {@code answer} takes the response, on {@code ch}'s
     * event loop, unless the connection closed while it waited (then nothing is made, nothing is
     * to release), always in a task of its own. The text is a render that began after this call
     * ({@link ScrapeRenderer#next}); a {@code HEAD} takes one that began within {@link
     * #SCRAPE_REUSE} if there is one. A render that failed answers 500, one not done within {@link
     * #SCRAPE_DEADLINE} 503, each a problem+json naming {@code requestId}.
     */
    void scrape(Channel ch, boolean head, @Nullable String requestId, Consumer<FullHttpResponse> answer) {
        byte[] recent = head ? renderer.renderedWithin(SCRAPE_REUSE) : null;
        CompletableFuture<byte[]> text = recent != null
                ? CompletableFuture.completedFuture(recent)
                : renderer.next().orTimeout(SCRAPE_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
        // Always a task of its own, even when ready now: the caller's read ends first, and an
        // answer never runs inside another's (AdminListener answers what waited behind it).
        text.whenComplete((bytes, failure) -> {
            try {
                ch.eventLoop().execute(() -> {
                    if (ch.isActive()) {
                        answer.accept(scrapeAnswer(bytes, failure, requestId));
                    }
                });
            } catch (RejectedExecutionException e) {
                log.debug("scrape for {} dropped: its event loop stopped", ch.remoteAddress());
            }
        });
    }

    /** Returns the answer to a scrape: its {@code text}, else a problem for its {@code failure}. */
    static FullHttpResponse scrapeAnswer(
            byte @Nullable [] text, @Nullable Throwable failure, @Nullable String requestId) {
        if (text != null) {
            return Responses.full(HttpResponseStatus.OK, PROMETHEUS_TYPE, text);
        }
        Throwable cause =
                failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        if (cause instanceof TimeoutException) {
            return Responses.problem(
                    SpectorException.of(
                            ErrorCode.INTERNAL,
                            "the scrape did not render within " + SCRAPE_DEADLINE.toMillis() + " ms"),
                    PROMETHEUS,
                    requestId,
                    HttpResponseStatus.SERVICE_UNAVAILABLE);
        }
        return Responses.problem(
                SpectorException.of(ErrorCode.INTERNAL, "the scrape failed to render"), // the WARN line says why
                PROMETHEUS,
                requestId);
    }

    /** Returns how many scrapes asked for a render (tests). */
    long scrapes() {
        return renderer.scrapes();
    }

    /** Returns how many scrapes were rendered (tests). */
    long renders() {
        return renderer.renders();
    }

    /** Stops the scrape's render thread once the renders asked for ran (the gateway's stop). */
    void close() {
        renderer.close();
    }

    /**
     * Answers whether {@code path} is one of the gateway's own read-only resources (health and the
     * scrape), which answer {@code GET} and {@code HEAD} only: any other method is a 405 with
     * {@code Allow}, as on the admin port (RFC 9110 §15.5.6), never the resource.
     */
    boolean readOnly(String path) {
        return isActuator(path) || isHealth(path);
    }

    /**
     * Answers whether {@code path} is one of the actuator's four routes, which {@link #answer}
     * serves and the admin port serves alone ({@link AdminListener}).
     */
    static boolean isActuator(String path) {
        return switch (path) {
            case "/actuator/health", "/actuator/health/liveness", "/actuator/health/readiness", PROMETHEUS -> true;
            default -> false;
        };
    }

    /** The health paths {@link #answer} serves besides the actuator's (the same test, kept in one place). */
    private static boolean isHealth(String path) {
        return path.startsWith("/api/v1/health/") || path.equals("/api/v1/health") || path.endsWith("/health");
    }

    /** Returns the metrics name of a local route. */
    String routeName(String path) {
        if (path.startsWith("/actuator/prometheus")) {
            return "prometheus";
        }
        if (path.endsWith("/health") || path.contains("/health/")) {
            return "health";
        }
        if (path.startsWith("/api/v1/") || path.startsWith(RelayRoute.PREFIX)) {
            return "cors-preflight";
        }
        return "not-found";
    }
}
