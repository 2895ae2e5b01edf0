package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.OwnershipResolver;
import com.spectrayan.spector.cluster.routing.RedisRouting;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The gateway's health in Spring Boot Actuator's JSON shape. Liveness is the process; readiness is
 * a non-empty ring (and not draining). Redis is reported as a component, but its loss only
 * degrades routing (L3 answers), so it never takes readiness down.
 */
final class Health {
    private final OwnershipResolver ring;
    private final @Nullable RedisRouting redis;
    private final BooleanSupplier draining;

    Health(OwnershipResolver ring, @Nullable RedisRouting redis, BooleanSupplier draining) {
        this.ring = ring;
        this.redis = redis;
        this.draining = draining;
    }

    boolean isReady() {
        return !ring.ring().isEmpty() && !draining.getAsBoolean();
    }

    FullHttpResponse full() {
        Map<String, Object> components = new LinkedHashMap<>();
        KetamaRing r = ring.ring();
        components.put(
                "ring",
                Map.of(
                        "status",
                        r.isEmpty() ? "DOWN" : "UP",
                        "details",
                        Map.of("members", r.members().size(), "epoch", r.epoch())));
        RedisRouting rr = redis;
        if (rr != null) {
            boolean up = rr.isConnected() && rr.isSubscribed();
            components.put(
                    "redis",
                    Responses.object(
                            "status",
                            up ? "UP" : "DOWN",
                            "details",
                            Responses.object(
                                    "connected", rr.isConnected(),
                                    "subscribed", rr.isSubscribed(),
                                    "impact", "routing answers from the ring; L1 bypassed while unsubscribed")));
        }
        components.put("liveness", Map.of("status", "UP"));
        components.put("readiness", Map.of("status", isReady() ? "UP" : "OUT_OF_SERVICE"));
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("status", isReady() ? "UP" : "DOWN");
        body.put("components", components);
        body.put("groups", List.of("liveness", "readiness"));
        return respond(isReady() ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE, body);
    }

    FullHttpResponse liveness() {
        return respond(HttpResponseStatus.OK, Map.of("status", "UP"));
    }

    FullHttpResponse readiness() {
        boolean ready = isReady();
        return respond(
                ready ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE,
                Map.of("status", ready ? "UP" : "OUT_OF_SERVICE"));
    }

    private static FullHttpResponse respond(HttpResponseStatus status, Map<String, Object> body) {
        return Responses.jsonOf(status, "application/vnd.spring-boot.actuator.v3+json", body);
    }
}
