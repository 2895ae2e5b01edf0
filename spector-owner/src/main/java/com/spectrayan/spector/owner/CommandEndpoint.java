package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * {@code POST /api/v1/namespaces/{ns}/commands}: runs a command (echoes it with a per-node sequence
 * number) at most once per idempotency key.
 *
 * <p>The key is {@code Idempotency-Key}, else {@code X-Idempotency-Key}, stored per tenant with the
 * request's fingerprint: SHA-256 of method, request target and the body's SHA-256. Same key and
 * fingerprint replays the stored response with {@code Idempotent-Replayed: true}; a different
 * fingerprint is 422; a repeat while the first still runs is 409. An optional {@code delayMs}
 * query parameter keeps a command running that long (scheduled, never slept), so the 409 can be
 * seen.
 */
final class CommandEndpoint {
    private CommandEndpoint() {}

    /**
     * Returns the sink of a command request.
     *
     * @throws SpectorException BAD_REQUEST for a malformed key or delay, PAYLOAD_TOO_LARGE for a
     *     declared body over the cap
     */
    static BodySink open(Exchange ex, RoutingKey key) {
        String idempotencyKey = idempotencyKey(ex);
        String delayParam = ex.queryParam("delayMs");
        long delayMs = delayParam == null ? 0 : StreamResponse.parse(OwnerLimits.DELAY_MS, delayParam);
        String tenant = key.tenant() == null ? "" : key.tenant();
        return Sinks.collect(ex, body -> run(ex, tenant, key.namespace(), idempotencyKey, delayMs, body));
    }

    private static void run(
            Exchange ex, String tenant, String namespace, @Nullable String idempotencyKey, long delayMs, byte[] body) {
        String bodySha = Digests.sha256Hex(body);
        String fingerprint =
                Digests.sha256Hex((ex.method + " " + ex.uri + "\n" + bodySha).getBytes(StandardCharsets.UTF_8));
        OwnerNode node = ex.node;
        if (idempotencyKey != null) {
            IdempotencyStore.Claim claim = node.idempotency.claim(tenant, namespace, idempotencyKey, fingerprint);
            switch (claim.verdict()) {
                case REPLAY -> {
                    IdempotencyStore.StoredResponse stored = requireNonNull(claim.stored());
                    ex.respond(
                            HttpResponseStatus.valueOf(stored.status()),
                            stored.contentType(),
                            stored.body(),
                            Map.of(SpectorHeaders.IDEMPOTENT_REPLAYED, "true"));
                    return;
                }
                case MISMATCH -> {
                    ex.respond(
                            HttpResponseStatus.UNPROCESSABLE_ENTITY,
                            Problem.CONTENT_TYPE,
                            OffRegistryProblems.body(
                                    422,
                                    OffRegistryProblems.IDEMPOTENCY_KEY_REUSED,
                                    "Idempotency key reused",
                                    "the idempotency key was used with a different request (method, target or body)",
                                    Map.of("idempotencyKey", idempotencyKey),
                                    ex.path),
                            Map.of());
                    return;
                }
                case IN_FLIGHT -> {
                    ex.respond(
                            HttpResponseStatus.CONFLICT,
                            Problem.CONTENT_TYPE,
                            OffRegistryProblems.body(
                                    409,
                                    OffRegistryProblems.IDEMPOTENCY_KEY_IN_FLIGHT,
                                    "Idempotency key in flight",
                                    "the first request with this idempotency key is still being processed; retry",
                                    Map.of("idempotencyKey", idempotencyKey),
                                    ex.path),
                            Map.of());
                    return;
                }
                case EXECUTE -> {}
            }
        }
        node.commandsInFlight.incrementAndGet();
        // The command is a write of its key until it has run, not until its exchange ends: a
        // client that leaves while it is scheduled must not let a move copy the key before it
        // runs (review finding 4). So the command, not the exchange, ends the write.
        Runnable settled = ex.takeFinished();
        Runnable execute = () -> {
            try {
                execute(ex, tenant, namespace, idempotencyKey, fingerprint, body, bodySha);
            } finally {
                settled.run();
            }
        };
        if (delayMs > 0) {
            ex.ctx.executor().schedule(execute, delayMs, TimeUnit.MILLISECONDS);
        } else {
            execute.run();
        }
    }

    private static void execute(
            Exchange ex,
            String tenant,
            String namespace,
            @Nullable String idempotencyKey,
            String fingerprint,
            byte[] body,
            String bodySha) {
        OwnerNode node = ex.node;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("node", node.nodeId);
        out.put("command", commandOf(body, bodySha));
        out.put("executedAt", node.clock.instant().toString());
        out.put("sequence", node.commandSequence.incrementAndGet());
        byte[] json = Json.bytes(out);
        if (idempotencyKey != null) {
            node.idempotency.complete(
                    tenant,
                    namespace,
                    idempotencyKey,
                    fingerprint,
                    new IdempotencyStore.StoredResponse(200, "application/json", json));
        }
        node.commandsInFlight.decrementAndGet();
        // The command ran whether or not its caller is still connected; a retry replays it.
        ex.respond(HttpResponseStatus.OK, "application/json", json, Map.of());
    }

    private static Object commandOf(byte[] body, String bodySha) {
        if (body.length > 0) {
            try {
                JsonNode node = Json.MAPPER.readTree(body);
                if (node != null) {
                    return node;
                }
            } catch (IOException e) {
                // Not JSON: echo its hash instead.
            }
        }
        return Map.of("sha256", bodySha, "bytes", body.length);
    }

    /**
     * Returns the request's idempotency key, or null when it has none.
     *
     * @throws SpectorException BAD_REQUEST for an empty, over-long or non-visible-ASCII key, or two
     *     headers that disagree
     */
    static @Nullable String idempotencyKey(Exchange ex) {
        String key = ex.headers.get(SpectorHeaders.IDEMPOTENCY_KEY);
        String legacy = ex.headers.get(SpectorHeaders.X_IDEMPOTENCY_KEY);
        if (key != null && legacy != null && !key.equals(legacy)) {
            throw SpectorException.badRequest(
                    SpectorHeaders.X_IDEMPOTENCY_KEY,
                    "differs from " + SpectorHeaders.IDEMPOTENCY_KEY + " (expected: the same value or absent)");
        }
        String value = key != null ? key : legacy;
        if (value == null) {
            return null;
        }
        String field = key != null ? SpectorHeaders.IDEMPOTENCY_KEY : SpectorHeaders.X_IDEMPOTENCY_KEY;
        if (!OwnerLimits.IDEMPOTENCY_KEY_CHARS.allows(value.length())) {
            throw SpectorException.badRequest(
                    field,
                    value.length() + " chars (expected: " + OwnerLimits.IDEMPOTENCY_KEY_CHARS.min() + ".."
                            + OwnerLimits.IDEMPOTENCY_KEY_CHARS.max() + " chars)");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x21 || c > 0x7e) {
                throw SpectorException.badRequest(
                        field, "has a non-visible character at " + i + " (expected: visible ASCII)");
            }
        }
        return value;
    }
}
