package com.spectrayan.spector.gateway;

import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The routes the gateway answers itself (DESIGN.md section 4): {@code /actuator/health} (and its
 * {@code liveness} and {@code readiness} groups), {@code /actuator/prometheus}, {@code **}{@code
 * /health}, {@code /api/v1/health/**}, CORS preflights, and the uplink routes (404 until the relay
 * lands).
 */
final class LocalEndpoints {
    private static final String PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    /**
     * How long a rendered scrape answers a {@code HEAD} again (its length): a client pipelining
     * {@code HEAD}s, each rendered in full and its body then dropped, so that the connection's
     * write limit never stopped it, kept the admin thread, or a traffic loop on the client port,
     * rendering without pause (found by a review). A {@code GET} always renders (its body is what
     * a scraper wants fresh, and its bytes meet the write limit).
     */
    static final Duration SCRAPE_REUSE = Duration.ofSeconds(1);

    /** The last rendered scrape; any thread (a benign race renders twice). */
    private volatile @Nullable Scrape lastScrape;

    /** A rendered scrape and when it was rendered. */
    private static final class Scrape {
        final byte[] bytes;
        final long renderedNanos;

        Scrape(byte[] bytes, long renderedNanos) {
            this.bytes = bytes;
            this.renderedNanos = renderedNanos;
        }
    }

    /** Scrapes rendered (tests). */
    private final java.util.concurrent.atomic.LongAdder renders = new java.util.concurrent.atomic.LongAdder();

    private final Health health;
    private final GatewayMetrics metrics;
    private final Cors cors;

    LocalEndpoints(Health health, GatewayMetrics metrics, Cors cors) {
        this.health = health;
        this.metrics = metrics;
        this.cors = cors;
    }

    /** Returns the local answer for a request, or null when it is forwarded. */
    @Nullable
    FullHttpResponse answer(HttpMethod method, String path, HttpHeaders headers) {
        FullHttpResponse actuator = switch (path) {
            case "/actuator/health" -> health.full();
            case "/actuator/health/liveness" -> health.liveness();
            case "/actuator/health/readiness" -> health.readiness();
            case "/actuator/prometheus" ->
                Responses.full(HttpResponseStatus.OK, PROMETHEUS_TYPE, scrape(HttpMethod.HEAD.equals(method)));
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

    /** Returns the scrape: for a {@code HEAD}, one rendered within {@link #SCRAPE_REUSE} if there is one. */
    private byte[] scrape(boolean head) {
        long now = System.nanoTime();
        Scrape s = lastScrape;
        if (!head || s == null || now - s.renderedNanos >= SCRAPE_REUSE.toNanos()) {
            s = new Scrape(metrics.scrape().getBytes(StandardCharsets.UTF_8), now);
            lastScrape = s;
            renders.increment();
        }
        return s.bytes;
    }

    /** Returns how many scrapes were rendered (tests). */
    long renders() {
        return renders.sum();
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
            case "/actuator/health",
                    "/actuator/health/liveness",
                    "/actuator/health/readiness",
                    "/actuator/prometheus" -> true;
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
