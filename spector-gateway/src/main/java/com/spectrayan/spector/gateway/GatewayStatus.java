package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.UpstreamHttpTransport;
import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.cluster.routing.RedisRouting;
import com.spectrayan.spector.cluster.routing.RoutingMetrics;
import com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntSupplier;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * {@code GET /gateway/v1/status} (auth required): what an operator asks first. The ring (members,
 * epoch, and its source: {@code config} or {@code redis}, the published ring), the routing cache per level, Redis, the connected workers with their active relays, and
 * whether the gateway is draining. {@code bin/spector status --gateway URL} prints it. Never shows
 * a secret: the Redis URI may hold a password, so only its state is reported.
 */
final class GatewayStatus {
    static final String PATH = "/gateway/v1/status";

    private final String cellId;
    private final WaterfallRoutingResolver resolver;
    private final @Nullable RedisRouting redis;
    private final UpstreamHttpTransport transport;
    private final RelayRoute relays;
    private final Drain drain;
    private final IntSupplier clientConnections;
    private final Predicate<String> ownerDown;

    GatewayStatus(
            String cellId,
            WaterfallRoutingResolver resolver,
            @Nullable RedisRouting redis,
            UpstreamHttpTransport transport,
            RelayRoute relays,
            Drain drain,
            IntSupplier clientConnections,
            Predicate<String> ownerDown) {
        this.cellId = cellId;
        this.resolver = resolver;
        this.redis = redis;
        this.transport = transport;
        this.relays = relays;
        this.drain = drain;
        this.clientConnections = clientConnections;
        this.ownerDown = ownerDown;
    }

    FullHttpResponse answer() {
        return Responses.jsonOf(HttpResponseStatus.OK, snapshot());
    }

    /** The status as plain maps and lists, in a stable order. */
    Map<String, Object> snapshot() {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("cell", cellId);
        body.put("draining", drain.isDraining());
        body.put("clientConnections", clientConnections.getAsInt());
        body.put("exchangesInFlight", drain.inFlight());
        body.put("ownerConnections", transport.openConnections());
        body.put("ownerStreams", transport.openStreams());

        CellRing ring = resolver.ownership().snapshot(); // one snapshot: epoch, source and members agree
        List<Map<String, Object>> memberRows = new ArrayList<>();
        for (String id : ring.ketama().members()) {
            URI url = ring.url(id);
            memberRows.add(Responses.object(
                    "id", id, "url", url == null ? "" : url.toString(), "state", ownerDown.test(id) ? "down" : "up"));
        }
        body.put(
                "ring",
                Responses.object("epoch", ring.epoch(), "source", ring.source().label(), "members", memberRows));

        RoutingMetrics m = resolver.metrics();
        RedisRouting r = redis;
        Map<String, Object> routing = new LinkedHashMap<>();
        routing.put(
                "l1",
                Responses.object(
                        "entries", resolver.l1Size(), "hits", m.l1Hits(), "bypassed", resolver.isL1Bypassed()));
        routing.put("l2", Responses.object("enabled", r != null, "hits", m.l2Hits(), "errors", m.redisErrors()));
        routing.put("l3", Responses.object("hits", m.l3Hits()));
        routing.put(
                "invalidations",
                Responses.object("received", m.invalidationsReceived(), "published", m.invalidationsPublished()));
        routing.put("misdirected", m.misdirected());
        routing.put("fillsDropped", m.fillsDropped());
        routing.put("l1Clears", m.l1Clears());
        body.put("routing", routing);

        body.put(
                "redis",
                r == null
                        ? Responses.object("enabled", false)
                        : Responses.object(
                                "enabled", true, "connected", r.isConnected(), "subscribed", r.isSubscribed()));

        List<Map<String, Object>> workers = relays.workerRows();
        int active = 0;
        for (Map<String, Object> w : workers) {
            if (w.get("activeRelays") instanceof Integer n) {
                active += n;
            }
        }
        body.put("workers", workers);
        body.put("activeRelays", active);
        return body;
    }
}
