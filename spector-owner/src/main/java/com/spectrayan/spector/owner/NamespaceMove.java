package com.spectrayan.spector.owner;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A planned move of one namespace to another owner, for real: {@code POST /admin/move} on the
 * owner that serves it, {@code POST /admin/import} on the one that takes it.
 *
 * <p>The move, on the old owner (each step bounded):
 *
 * <pre>
 *   1. mark the key handing off ({@link Handoffs}): its requests are answered 503 with
 *      X-Spector-Handoff (the gateways hold them);
 *   2. wait until no write of the key admitted before the mark still runs
 *      ({@link OwnerLimits#MOVE_DRAIN_TIMEOUT}, checked every {@link OwnerLimits#MOVE_DRAIN_CHECK});
 *   3. copy: the key's objects (base64) and answered idempotency records, in one import request
 *      of at most {@link OwnerLimits#IMPORT_BYTES} ({@link OwnerLimits#MOVE_IMPORT_TIMEOUT}), with
 *      this node's admin token if it has one (the cell's owners share it); the new owner stores
 *      them and takes the key at the new epoch (an ownership override, saved to its
 *      {@link OwnershipFile} before it answers);
 *   4. take this node's override naming the new owner at that epoch, and save it: its requests
 *      are now 421 moved, after a restart too; end the mark (a failed save still takes the
 *      override, and the move answers 500 saying a restart would forget it);
 *   5. store the entry in L2 and publish the invalidation: gateways send their held requests on.
 * </pre>
 *
 * The hand-off time reported is from step 1 to the end of step 5. A step that fails ends the mark
 * and the node serves the key on, as before: a failed move costs no data (an import the new owner
 * refuses, a 401 for a token it does not share, is such a failure). The old copy stays on
 * disk (unused: the key's requests are 421 here now).
 *
 * <p>An import whose answer is lost (a timeout, a connection lost after the request went) may still
 * have landed: the new owner took the key and its answer was lost. Serving on then makes two owners
 * of one key, each taking writes, and a later move copies the wrong one (the routing review lost an
 * acknowledged write so). So the move asks the new owner's view ({@code GET /admin/ownership},
 * {@link OwnerLimits#MOVE_VERIFY_TIMEOUT}) before it calls anything off: it holds the key at the
 * move's epoch or later, and the move goes on to steps 4 and 5 (the import landed); it does not,
 * and the move is called off; no answer either, and the key stays marked (its requests 503, no
 * second writer) until an operator names its owner ({@code POST /admin/ownership}, which ends
 * the mark), and the move's caller gets a 504 saying so.
 *
 * <p>Threading: steps 1 to 3 run on the admin request's event loop (the file reads are bounded by
 * the import cap); the rest on the HTTP client's threads. Every shared structure is thread-safe.
 */
final class NamespaceMove {
    private static final Logger log = LoggerFactory.getLogger(NamespaceMove.class);

    /** The path of the import endpoint on the new owner. */
    static final String IMPORT_PATH = "/admin/import";

    private static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(OwnerLimits.MOVE_IMPORT_TIMEOUT)
            .build();

    private NamespaceMove() {}

    /** {@code POST /admin/move} {@code {"tenant"?, "namespace", "to", "toUrl"}}. */
    static void move(Exchange ex, byte[] body) {
        OwnerNode node = ex.node;
        JsonNode json = Json.object(body);
        String tenant = AdminEndpoints.optionalText(json, "tenant");
        String namespace = required(json, "namespace");
        String to = OwnershipGuard.checkNode("to", required(json, "to"));
        URI toUrl = url(required(json, "toUrl"));
        RoutingKey key = RoutingKey.of(node.spec.cellId(), tenant, namespace);
        RouteEntry view = node.guard.viewOf(key);
        if (!view.owner().equals(node.nodeId)) {
            throw SpectorException.badRequest(
                    "namespace", key + " is owned by " + view.owner() + " (expected: a key " + node.nodeId + " owns)");
        }
        if (to.equals(node.nodeId)) {
            throw SpectorException.badRequest("to", "'" + to + "' is this node (expected: another owner)");
        }
        if (!node.handoffs.start(key, to)) {
            throw SpectorException.badRequest("namespace", key + " is being moved already");
        }
        long startNanos = System.nanoTime();
        log.info("{}: handing {} to {}", node.nodeId, key, to);
        Move m = new Move(ex, key, to, toUrl, view.epoch() + 1, startNanos);
        m.awaitWrites(startNanos + OwnerLimits.MOVE_DRAIN_TIMEOUT.toNanos());
    }

    /** One move in progress. */
    private static final class Move {
        private final Exchange ex;
        private final OwnerNode node;
        private final RoutingKey key;
        private final String to;
        private final URI toUrl;
        private final long epoch;
        private final long startNanos;

        Move(Exchange ex, RoutingKey key, String to, URI toUrl, long epoch, long startNanos) {
            this.ex = ex;
            this.node = ex.node;
            this.key = key;
            this.to = to;
            this.toUrl = toUrl;
            this.epoch = epoch;
            this.startNanos = startNanos;
        }

        /** Step 2: on the loop, until the key's running writes are done or the deadline passes. */
        void awaitWrites(long deadlineNanos) {
            if (node.handoffs.writesRunning(key) == 0) {
                copy();
                return;
            }
            if (System.nanoTime() - deadlineNanos >= 0) {
                calledOff(SpectorException.of(
                        ErrorCode.OWNER_TIMEOUT,
                        "writes of " + key + " still ran after " + OwnerLimits.MOVE_DRAIN_TIMEOUT.toMillis() + " ms",
                        Map.of("owner", node.nodeId, "timeoutMs", OwnerLimits.MOVE_DRAIN_TIMEOUT.toMillis())));
                return;
            }
            ex.ctx
                    .executor()
                    .schedule(
                            () -> awaitWrites(deadlineNanos),
                            OwnerLimits.MOVE_DRAIN_CHECK.toNanos(),
                            TimeUnit.NANOSECONDS);
        }

        /** Steps 3 to 5. */
        private void copy() {
            Map<String, Object> payload;
            try {
                payload = exportOf(node, key, to, epoch);
            } catch (SpectorException e) {
                calledOff(e);
                return;
            } catch (IOException | RuntimeException e) {
                calledOff(SpectorException.of(ErrorCode.INTERNAL, "reading " + key + " failed: " + e));
                return;
            }
            byte[] body = Json.bytes(payload);
            if (body.length > OwnerLimits.IMPORT_BYTES.max()) {
                calledOff(OwnerLimits.IMPORT_BYTES.refusal(body.length));
                return;
            }
            int objects = ((List<?>) java.util.Objects.requireNonNull(payload.get("objects"))).size();
            int records = ((List<?>) java.util.Objects.requireNonNull(payload.get("idempotency"))).size();
            HttpRequest request = importRequest(body);
            HTTP.sendAsync(request, HttpResponse.BodyHandlers.ofString()).whenComplete((response, error) -> {
                if (error == null && response.statusCode() == 200) {
                    handedOver(objects, records, body.length);
                } else if (error == null || neverSent(error)) {
                    calledOff(importFailed(error, response)); // it answered no, or never had the request
                } else {
                    verifyAfter(importFailed(error, response), objects, records, body.length);
                }
            });
        }

        /**
         * The import did not answer 200: asks the new owner whether it holds the key anyway, and
         * goes on, calls the move off, or keeps the key marked (see the class notes).
         */
        private void verifyAfter(SpectorException failure, int objects, int records, int importBytes) {
            HttpRequest.Builder view = HttpRequest.newBuilder(toUrl.resolve("/admin/ownership?tenant="
                            + (key.tenant() == null ? "" : key.tenant()) + "&namespace=" + key.namespace()))
                    .timeout(OwnerLimits.MOVE_VERIFY_TIMEOUT)
                    .GET();
            AdminToken token = node.adminToken;
            if (token != null) {
                view.header("Authorization", token.authorization());
            }
            HTTP.sendAsync(view.build(), HttpResponse.BodyHandlers.ofString()).whenComplete((response, error) -> {
                JsonNode held = null;
                if (error == null && response.statusCode() == 200) {
                    try {
                        held = Json.object(response.body().getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    } catch (RuntimeException notAView) {
                        held = null; // as no answer: whether it holds the key stays unknown
                    }
                }
                if (held != null) {
                    if (to.equals(held.path("owner").asText())
                            && held.path("epoch").asLong() >= epoch) {
                        log.warn(
                                "{}: the import of {} to {} did not answer 200 ({}), but {} holds the key at"
                                        + " epoch {}: the import landed, the move goes on",
                                node.nodeId,
                                key,
                                to,
                                failure.getMessage(),
                                to,
                                held.path("epoch").asLong());
                        handedOver(objects, records, importBytes);
                        return;
                    }
                    calledOff(failure); // it does not hold the key: serving on leaves one writer
                    return;
                }
                String why = error != null ? String.valueOf(error) : response.statusCode() + " " + response.body();
                if (why.length() > 200) {
                    why = why.substring(0, 200) + "...";
                }
                log.error(
                        "{}: the import of {} to {} did not answer 200 ({}) and its view is unknown ({}): the key"
                                + " stays held here (503) until POST /admin/ownership names its owner",
                        node.nodeId,
                        key,
                        to,
                        failure.getMessage(),
                        why);
                ex.respondProblem(SpectorException.of(
                        ErrorCode.OWNER_TIMEOUT,
                        "the import of " + key + " to " + to + " may or may not have landed (" + failure.getMessage()
                                + "; its view: " + why + "): " + key + " stays held on " + node.nodeId
                                + " until POST /admin/ownership names its owner, on every owner of the cell",
                        Map.of("owner", to)));
            });
        }

        /** Answers whether a failed request never reached the new owner (no connection was made). */
        private static boolean neverSent(Throwable error) {
            for (Throwable t = error; t != null; t = t.getCause()) {
                if (t instanceof java.net.ConnectException || t instanceof java.net.http.HttpConnectTimeoutException) {
                    return true;
                }
            }
            return false;
        }

        /** Steps 4 and 5, once the new owner holds the key. */
        private void handedOver(int objects, int records, int importBytes) {
            RouteEntry moved;
            String unsaved = null;
            try {
                moved = node.handOverride(key, to, epoch, epoch);
            } catch (OwnerNode.UnsavedOverride e) {
                moved = e.entry(); // taken all the same: the new owner holds the key
                unsaved = String.valueOf(e.getCause());
                log.error(
                        "{}: {} is handed to {} at epoch {}, but {} could not be saved ({}): a restart of this"
                                + " owner would forget the move and serve its stale copy; fix the disk, then POST"
                                + " /admin/ownership {} at epoch {} here again",
                        node.nodeId,
                        key,
                        to,
                        epoch,
                        node.ownershipFile.path(),
                        unsaved,
                        to,
                        epoch);
            }
            node.handoffs.end(key); // its requests are 421 moved from now on
            String notSaved = unsaved;
            RouteEntry view = moved;
            AdminEndpoints.publish(node, key, moved).whenComplete((published, e) -> {
                long handoffMs = (System.nanoTime() - startNanos) / 1_000_000;
                log.info(
                        "{}: {} handed to {} at epoch {} in {} ms ({} objects, {} idempotency records)",
                        node.nodeId,
                        key,
                        to,
                        epoch,
                        handoffMs,
                        objects,
                        records);
                Map<String, @Nullable Object> out = new LinkedHashMap<>();
                out.put("tenant", key.tenant());
                out.put("namespace", key.namespace());
                out.put("from", node.nodeId);
                out.put("to", to);
                out.put("epoch", view.epoch());
                out.put("fence", view.fence());
                out.put("objects", objects);
                out.put("idempotencyRecords", records);
                out.put("importBytes", importBytes);
                out.put("handoffMs", handoffMs);
                out.put("published", e == null && Boolean.TRUE.equals(published));
                if (notSaved != null) {
                    ex.respondProblem(SpectorException.of(
                            ErrorCode.INTERNAL,
                            key + " is handed to " + to + " at epoch " + view.epoch() + ", but " + node.nodeId
                                    + " could not save it to " + node.ownershipFile.path() + " (" + notSaved
                                    + "): a restart would forget the move; fix the disk and POST /admin/ownership"
                                    + " naming " + to + " at epoch " + view.epoch() + " on " + node.nodeId,
                            Map.of("owner", to)));
                    return;
                }
                ex.respondJson(HttpResponseStatus.OK, out);
            });
        }

        /** Returns the import request: the copy, with this node's admin token if it has one. */
        private HttpRequest importRequest(byte[] body) {
            HttpRequest.Builder request = HttpRequest.newBuilder(toUrl.resolve(IMPORT_PATH))
                    .timeout(OwnerLimits.MOVE_IMPORT_TIMEOUT)
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(body));
            AdminToken token = node.adminToken;
            if (token != null) {
                request.header("Authorization", token.authorization()); // the cell's owners share it
            }
            return request.build();
        }

        /** Returns the problem of an import that did not answer 200. */
        private SpectorException importFailed(@Nullable Throwable error, @Nullable HttpResponse<String> response) {
            String why;
            if (error != null || response == null) {
                why = String.valueOf(error);
            } else if (response.statusCode() == 401) {
                why = "401, " + to
                        + (node.adminToken == null
                                ? " asks for an admin token and " + node.nodeId + " has none"
                                : " refused " + node.nodeId + "'s admin token")
                        + " (the cell's owners must share one: SPECTOR_OWNER_ADMIN_TOKEN); " + response.body();
            } else {
                why = response.statusCode() + " " + response.body();
            }
            return SpectorException.of(
                    ErrorCode.OWNER_UNREACHABLE, "the import to " + to + " failed: " + why, Map.of("owner", to));
        }

        /** A step failed: the mark ends, the node serves the key on, the caller gets the problem. */
        private void calledOff(SpectorException problem) {
            node.handoffs.end(key);
            log.warn("{}: move of {} to {} called off: {}", node.nodeId, key, to, problem.getMessage());
            ex.respondProblem(problem);
        }
    }

    /** Returns the import of a key: its objects and answered idempotency records, for node {@code to}. */
    static Map<String, Object> exportOf(OwnerNode node, RoutingKey key, String to, long epoch) throws IOException {
        List<Map<String, Object>> objects = new ArrayList<>();
        long bytes = 0;
        Base64.Encoder b64 = Base64.getEncoder();
        for (String k : node.objects.keys(key.tenant(), key.namespace(), OwnerLimits.MOVE_MAX_OBJECTS)) {
            Path file = node.objects.pathOf(key.tenant(), key.namespace(), k);
            long size = Files.size(file);
            bytes += size;
            if (bytes > OwnerLimits.IMPORT_BYTES.max()) {
                throw OwnerLimits.IMPORT_BYTES.refusal(bytes);
            }
            byte[] data = Files.readAllBytes(file);
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("key", k);
            o.put("sha256", Digests.sha256Hex(data));
            o.put("data", b64.encodeToString(data));
            objects.add(o);
        }
        List<Map<String, Object>> records = new ArrayList<>();
        for (IdempotencyStore.Answered a : node.idempotency.answered(tenantOf(key), key.namespace())) {
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("key", a.key());
            r.put("fingerprint", a.fingerprint());
            r.put("status", a.response().status());
            r.put("contentType", a.response().contentType());
            r.put("body", b64.encodeToString(a.response().body()));
            records.add(r);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        if (key.tenant() != null) {
            out.put("tenant", key.tenant());
        }
        out.put("namespace", key.namespace());
        out.put("from", node.nodeId);
        out.put("owner", to);
        out.put("epoch", epoch);
        out.put("fence", epoch);
        out.put("objects", objects);
        out.put("idempotency", records);
        return out;
    }

    /**
     * {@code POST /admin/import}: stores a moved key's objects and idempotency records, then takes
     * the key at the import's epoch and fence (this node's override names itself).
     */
    static void importNamespace(Exchange ex, byte[] body) throws IOException {
        OwnerNode node = ex.node;
        JsonNode json = Json.object(body);
        String tenant = AdminEndpoints.optionalText(json, "tenant");
        String namespace = required(json, "namespace");
        String owner = required(json, "owner");
        if (!owner.equals(node.nodeId)) {
            throw SpectorException.badRequest("owner", "'" + owner + "' (expected: this node, " + node.nodeId + ")");
        }
        long epoch = number(json, "epoch");
        long fence = number(json, "fence");
        RoutingKey key = RoutingKey.of(node.spec.cellId(), tenant, namespace);
        Base64.Decoder b64 = Base64.getDecoder();
        int objects = 0;
        for (JsonNode o : json.path("objects")) {
            String k = ObjectStore.checkKey(o.path("key").asText(""));
            byte[] data = b64.decode(o.path("data").asText(""));
            ObjectStore.Stored stored = node.objects.write(node.objects.pathOf(tenant, namespace, k), data);
            if (!stored.sha256().equals(o.path("sha256").asText())) {
                throw SpectorException.badRequest("sha256", "object " + k + " arrived with another hash");
            }
            objects++;
        }
        int records = 0;
        for (JsonNode r : json.path("idempotency")) {
            node.idempotency.complete(
                    tenantOf(key),
                    namespace,
                    r.path("key").asText(),
                    r.path("fingerprint").asText(),
                    new IdempotencyStore.StoredResponse(
                            r.path("status").asInt(200),
                            r.path("contentType").asText("application/json"),
                            b64.decode(r.path("body").asText(""))));
            records++;
        }
        // saved before the answer: a restart must not forget a key it said it took
        RouteEntry view = node.takeOverride(key, node.nodeId, epoch, fence);
        log.info(
                "{}: took {} at epoch {} ({} objects, {} idempotency records)",
                node.nodeId,
                key,
                epoch,
                objects,
                records);
        Map<String, @Nullable Object> out = AdminEndpoints.viewJson(key, view);
        out.put("objects", objects);
        out.put("idempotencyRecords", records);
        ex.respondJson(HttpResponseStatus.OK, out);
    }

    private static String tenantOf(RoutingKey key) {
        String t = key.tenant();
        return t == null ? "" : t;
    }

    private static String required(JsonNode json, String field) {
        String value = AdminEndpoints.optionalText(json, field);
        if (value == null) {
            throw SpectorException.badRequest(field, "missing (expected: a string)");
        }
        return value;
    }

    private static long number(JsonNode json, String field) {
        JsonNode v = json.get(field);
        if (v == null || !v.canConvertToLong() || v.asLong() < 0) {
            throw SpectorException.badRequest(field, "missing or not an integer >= 0");
        }
        return v.asLong();
    }

    private static URI url(String value) {
        try {
            URI u = URI.create(value);
            if ("http".equals(u.getScheme()) && u.getHost() != null) {
                return u;
            }
        } catch (IllegalArgumentException e) {
            // refused below
        }
        throw SpectorException.badRequest("toUrl", "'" + value + "' (expected: http://host:port)");
    }
}
