package com.spectrayan.spector.owner;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.cluster.routing.RedisRouting;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RouteInvalidation;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.ProblemJson;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin API on the node's port. Who may call it:
 *
 * <ul>
 *   <li>a node without an admin token ({@link OwnerSpec#adminToken()}, the default): loopback
 *       callers only; any other address is {@code 403 FORBIDDEN}, reason {@code admin-not-loopback};
 *   <li>a node with one: every caller that sends {@code Authorization: Bearer <token>}, from any
 *       address; a caller without it, loopback included, is {@code 401 UNAUTHENTICATED}, reason
 *       {@code admin-token}, with {@code WWW-Authenticate: Bearer realm="spector-admin"} (RFC 6750
 *       §3; with {@code error="invalid_token"} for a wrong token, §3.1).
 * </ul>
 *
 * Each refused call is logged once at WARN with its address and reason, never a token. {@code
 * /health} and {@code /api/v1} are not admin routes and ask for neither. The routes:
 *
 * <ul>
 *   <li>{@code POST /admin/ownership} {@code {"tenant", "namespace", "owner", "epoch"?, "fence"?}}
 *       sets this node's view of a key (epoch defaults to the key's current epoch + 1, fence to
 *       the epoch), saved to the node's {@link OwnershipFile} first (a failed save is a 500 and
 *       changes nothing); with Redis, stores it in L2 and publishes an invalidation before answering;
 *   <li>{@code GET /admin/ownership?tenant=&namespace=}: this node's view of a key ({@code owner,
 *       epoch, fence}), the node it is handing the key to, if any ({@code handingTo}), and the
 *       key's writes running now ({@code writesRunning});
 *   <li>{@code POST /admin/move} {@code {"tenant"?, "namespace", "to", "toUrl"}}: hands a key this
 *       node owns to another owner ({@link NamespaceMove}); answers when the move is over, with
 *       its hand-off time ({@code handoffMs});
 *   <li>{@code POST /admin/import}: the move's copy, at most {@link OwnerLimits#IMPORT_BYTES};
 *       stores a key's objects and idempotency records, then this node takes the key;
 *   <li>{@code GET /admin/requests}: this node's last {@code /api/v1} requests, oldest first;
 *   <li>{@code GET /admin/stats}: counters (command executions, streams, subscribers) and the
 *       ring the node decides on (epoch, source, members).
 * </ul>
 */
final class AdminEndpoints {
    private static final Logger log = LoggerFactory.getLogger(AdminEndpoints.class);

    /** The {@code reason} of a 403 to a non-loopback caller of a node without an admin token. */
    static final String NOT_LOOPBACK = "admin-not-loopback";

    /** The {@code reason} of a 401 to a caller without the node's admin token. */
    static final String TOKEN_REASON = "admin-token";

    private AdminEndpoints() {}

    /**
     * Returns the sink of an admin request; a caller the node does not admit is answered here
     * (401) and its body drained.
     *
     * @throws SpectorException FORBIDDEN from a non-loopback address of a node without an admin
     *     token, NOT_FOUND for an unknown route
     */
    static BodySink open(Exchange ex) {
        SocketAddress remote = ex.ctx.channel().remoteAddress();
        AdminToken token = ex.node.adminToken;
        if (token == null) {
            if (!isLoopback(remote)) {
                log.warn("{}: admin call {} from {} refused: {}", ex.node.nodeId, ex, remote, NOT_LOOPBACK);
                throw SpectorException.of(
                        ErrorCode.FORBIDDEN,
                        "the admin API answers loopback callers only",
                        Map.of("reason", NOT_LOOPBACK));
            }
        } else {
            AdminToken.Verdict verdict = token.check(ex.headers.getAll(HttpHeaderNames.AUTHORIZATION));
            if (verdict != AdminToken.Verdict.ACCEPTED) {
                boolean missing = verdict == AdminToken.Verdict.MISSING;
                log.warn(
                        "{}: admin call {} from {} refused: {} ({})",
                        ex.node.nodeId,
                        ex,
                        remote,
                        TOKEN_REASON,
                        missing ? "no bearer token" : "not the admin token");
                SpectorException refusal = SpectorException.of(
                        ErrorCode.UNAUTHENTICATED,
                        "the admin API needs the cell's admin token: Authorization: Bearer <token>",
                        Map.of("reason", TOKEN_REASON));
                ex.respond(
                        HttpResponseStatus.UNAUTHORIZED,
                        Problem.CONTENT_TYPE,
                        ProblemJson.toBytes(refusal.toProblem(ex.path)),
                        Map.of(
                                HttpHeaderNames.WWW_AUTHENTICATE.toString(),
                                missing ? AdminToken.CHALLENGE : AdminToken.CHALLENGE_INVALID,
                                HttpHeaderNames.CACHE_CONTROL.toString(),
                                "no-store"));
                return Sinks.drain(ex);
            }
        }
        return switch (ex.method + " " + ex.path) {
            case "POST /admin/ownership" -> Sinks.collect(ex, body -> ownership(ex, body));
            case "GET /admin/ownership" -> Sinks.atEnd(() -> view(ex));
            case "POST /admin/move" -> Sinks.collect(ex, body -> NamespaceMove.move(ex, body));
            case "POST /admin/import" ->
                Sinks.collect(ex, OwnerLimits.IMPORT_BYTES, body -> NamespaceMove.importNamespace(ex, body));
            case "GET /admin/requests" -> Sinks.atEnd(() -> ex.respondJson(HttpResponseStatus.OK, rows(ex.node)));
            case "GET /admin/stats" -> Sinks.atEnd(() -> ex.respondJson(HttpResponseStatus.OK, stats(ex.node)));
            default -> throw OwnerHandler.noRoute(ex);
        };
    }

    static boolean isLoopback(@Nullable SocketAddress address) {
        return address instanceof InetSocketAddress inet
                && inet.getAddress() != null
                && inet.getAddress().isLoopbackAddress();
    }

    private static void ownership(Exchange ex, byte[] body) throws IOException {
        OwnerNode node = ex.node;
        JsonNode json = Json.object(body);
        String tenant = optionalText(json, "tenant");
        String namespace = optionalText(json, "namespace");
        if (namespace == null) {
            throw SpectorException.badRequest("namespace", "missing (expected: a routing name)");
        }
        String owner = optionalText(json, "owner");
        if (owner == null) {
            throw SpectorException.badRequest("owner", "missing (expected: a node id)");
        }
        RoutingKey key = RoutingKey.of(node.spec.cellId(), tenant, namespace);
        long current = node.guard.viewOf(key).epoch();
        long epoch = optionalLong(json, "epoch", current + 1);
        long fence = optionalLong(json, "fence", epoch);
        RouteEntry view = node.takeOverride(key, owner, epoch, fence); // saved before the answer
        node.handoffs.end(key); // an operator's word ends a hand-off left held (NamespaceMove)
        log.info("{}: {} now owned by {} at epoch {}, fence {}", node.nodeId, key, owner, epoch, fence);

        Map<String, @Nullable Object> out = viewJson(key, view);
        CompletableFuture<Boolean> published = publish(node, key, view);
        // Answers after Redis has (or has not) taken it; each command is bounded by the L2 timeout.
        published.whenComplete((ok, error) -> {
            if (error != null) {
                log.warn("{}: could not publish {} to Redis: {}", node.nodeId, key, error.toString());
            }
            out.put("published", error == null && Boolean.TRUE.equals(ok));
            ex.respondJson(HttpResponseStatus.OK, out);
        });
    }

    /**
     * Stores a key's new view in L2 and publishes its invalidation, when the node has Redis: the
     * stage answers whether both were done (false without Redis; it fails when Redis did). Each
     * command is bounded by the L2 timeout.
     */
    static CompletableFuture<Boolean> publish(OwnerNode node, RoutingKey key, RouteEntry view) {
        RedisRouting redis = node.redis;
        if (redis == null) {
            return CompletableFuture.completedFuture(false);
        }
        RouteInvalidation invalidation = new RouteInvalidation(
                node.nodeId, key.tenant(), key.namespace(), view.owner(), view.epoch(), view.fence());
        try {
            return redis.cache()
                    .putOwned(key, view)
                    .thenCompose(stored -> redis.cache().publish(invalidation))
                    .thenApply(receivers -> true)
                    .toCompletableFuture();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Returns {@code {tenant, namespace, owner, epoch, fence}} of a key's view, to add to. */
    static Map<String, @Nullable Object> viewJson(RoutingKey key, RouteEntry view) {
        Map<String, @Nullable Object> out = new LinkedHashMap<>();
        out.put("tenant", key.tenant());
        out.put("namespace", key.namespace());
        out.put("owner", view.owner());
        out.put("epoch", view.epoch());
        out.put("fence", view.fence());
        return out;
    }

    private static void view(Exchange ex) {
        OwnerNode node = ex.node;
        String namespace = ex.queryParam("namespace");
        if (namespace == null) {
            throw SpectorException.badRequest("namespace", "missing (expected: a routing name)");
        }
        String tenant = ex.queryParam("tenant");
        RoutingKey key =
                RoutingKey.of(node.spec.cellId(), tenant == null || tenant.isEmpty() ? null : tenant, namespace);
        RouteEntry view = node.guard.viewOf(key);
        Map<String, @Nullable Object> out = viewJson(key, view);
        out.put("node", node.nodeId);
        out.put("handingTo", node.handoffs.handingTo(key));
        out.put("writesRunning", node.handoffs.writesRunning(key));
        ex.respondJson(HttpResponseStatus.OK, out);
    }

    private static List<Map<String, @Nullable Object>> rows(OwnerNode node) {
        List<Map<String, @Nullable Object>> rows = new ArrayList<>();
        for (RecordedRequest r : node.requests.snapshot()) {
            Map<String, @Nullable Object> row = new LinkedHashMap<>();
            row.put("method", r.method());
            row.put("path", r.path());
            row.put("tenant", r.tenant());
            row.put("namespace", r.namespace());
            row.put("status", r.status());
            row.put("headers", r.headers());
            rows.add(row);
        }
        return rows;
    }

    private static Map<String, Object> stats(OwnerNode node) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("node", node.nodeId);
        out.put("commandExecutions", node.commandSequence.get());
        out.put("commandsInFlight", node.commandsInFlight.get());
        out.put("activeStreams", node.activeStreams.get());
        out.put("eventSubscribers", node.events.subscriberCount());
        out.put("lastEventId", node.events.lastId());
        out.put("requestsLogged", node.requests.total());
        CellRing ring = node.guard.snapshot();
        out.put(
                "ring",
                Map.of(
                        "epoch", ring.epoch(),
                        "source", ring.source().label(),
                        "members", ring.ketama().members()));
        return out;
    }

    static @Nullable String optionalText(JsonNode json, String field) {
        JsonNode value = json.get(field);
        if (value == null || value.isNull()) {
            return null;
        }
        if (!value.isTextual()) {
            throw SpectorException.badRequest(field, value.getNodeType() + " (expected: a string or null)");
        }
        return value.asText();
    }

    private static long optionalLong(JsonNode json, String field, long fallback) {
        JsonNode value = json.get(field);
        if (value == null || value.isNull()) {
            return fallback;
        }
        if (!value.isIntegralNumber() || !value.canConvertToLong() || value.asLong() < 0) {
            throw SpectorException.badRequest(field, value.toString() + " (expected: an integer >= 0)");
        }
        return value.asLong();
    }
}
