package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The peer-port half of the peer hop: what a {@link GatewayHandler} on the peer listener does with
 * each request instead of the client routes. Only {@code ANY /relay/{workerId}/{target}/...} with a
 * valid {@link PeerMac} is served, relayed to this replica's own links under the tenant and lease
 * the signing replica carried (never forwarded again: a relay crosses at most one hop); anything
 * else is 404, a bad or missing MAC 401 {@code UNAUTHENTICATED} with {@code details.reason} and
 * {@link SpectorHeaders#PEER_REFUSED} naming it (a signing replica answers its client 503). No
 * token, cookie or client header is an authentication here, and the client ports never read the
 * peer headers.
 *
 * <p>A relay for a worker with no live link here (it closed, or the drain sent it away since the
 * caller looked this replica up) is refused before its body is read: {@code 421} with {@link
 * SpectorHeaders#PEER_REFUSED} {@code no-link} and a {@code WORKER_UNREACHABLE} problem, which the
 * caller's hop takes to another holder (RFC 9110 section 15.5.20: this server is not able to
 * produce the response). Nothing reached the worker, so even a {@code POST} may go on.
 *
 * <p>Threading: confined to the connection's event loop; the counters are thread-safe.
 */
final class PeerRelay {
    private static final Logger log = LoggerFactory.getLogger(PeerRelay.class);

    /** The meter of every refused peer request, by reason. */
    static final String REFUSED = "spector.relay.peer.refused";

    /** The value of {@link SpectorHeaders#PEER_REFUSED} when this replica holds no live link. */
    static final String NO_LINK = "no-link";

    private final PeerMac mac;
    private final WorkerDirectory directory;
    private final MeterRegistry registry;
    private final Map<String, Counter> refusals = new ConcurrentHashMap<>();

    PeerRelay(PeerMac mac, WorkerDirectory directory, MeterRegistry registry) {
        this.mac = requireNonNull(mac, "mac");
        this.directory = requireNonNull(directory, "directory");
        this.registry = requireNonNull(registry, "registry");
    }

    /**
     * Returns why {@code request} is no signed hop ({@link PeerMac#refusal}), or null: checked once
     * per request, before its id is taken (only a signed hop speaks for its id).
     */
    @Nullable
    String refusal(HttpRequest request) {
        return mac.refusal(request.method().name(), request.uri(), request.headers());
    }

    /** Serves a request of the peer port whose MAC check said {@code refusal} (null: signed). */
    void serve(
            ChannelHandlerContext ctx,
            ClientConnection c,
            HttpRequest request,
            RequestTarget target,
            GatewayContext context,
            @Nullable String refusal) {
        String path = target.path();
        c.route("peer-relay");
        if (!path.startsWith(RelayRoute.PREFIX)) {
            c.answer(Responses.problem(
                    SpectorException.of(ErrorCode.NOT_FOUND, "the peer port serves /relay/ only", Map.of("path", path)),
                    path,
                    c.requestId()));
            return;
        }
        if (refusal != null) {
            refusals.computeIfAbsent(
                            refusal,
                            r -> Counter.builder(REFUSED)
                                    .description("Peer requests refused, by reason")
                                    .tag("reason", r)
                                    .register(registry))
                    .increment();
            // debug only: whoever reaches the port could fill the log; the meter is the signal
            log.debug(
                    "peer request from {} refused: {}, request id {}",
                    ctx.channel().remoteAddress(),
                    refusal,
                    c.requestId());
            FullHttpResponse refused = Responses.problem(
                    SpectorException.of(
                            ErrorCode.UNAUTHENTICATED, "peer request refused: " + refusal, Map.of("reason", refusal)),
                    path,
                    c.requestId());
            // Marked as this replica's own refusal: the signing replica answers its client 503, not
            // this 401, which would tell the client its token was bad (PeerHop.HolderSink).
            refused.headers().set(SpectorHeaders.PEER_REFUSED, refusal);
            c.answer(refused);
            return;
        }
        if (Upgrades.isUpgrade(request)) {
            c.answer(Responses.problem(Upgrades.relayRefusal(), path, c.requestId()));
            return;
        }
        String workerId = RelayRoute.workerIdOf(path);
        if (workerId != null && directory.live(workerId) == null) {
            refuse(c, workerId, path);
            return;
        }
        RelayedExchange relayed = new RelayedExchange(
                c, ctx.executor(), path, HttpUtil.is100ContinueExpected(request), context.metrics());
        c.start(relayed);
        if (workerId != null) {
            relayed.onNoLink(() -> refuse(c, workerId, path)); // the link went in between: the caller tries another
        }
        try {
            String lease = request.headers().get(SpectorHeaders.PEER_LEASE);
            if (lease != null) {
                Limits.LEASE_ID_CHARS.check(lease.length());
            }
            String tenant;
            try {
                tenant = PeerMac.decodeTenant(
                        requireNonNull(request.headers().get(SpectorHeaders.PEER_TENANT), "checked by the MAC"));
            } catch (IllegalArgumentException e) {
                throw SpectorException.badRequest(SpectorHeaders.PEER_TENANT, String.valueOf(e.getMessage()));
            }
            RelayRoute route = context.relay();
            route.start(route.prepare(request, path, target.query(), tenant, lease, c.bodyPending(), relayed));
        } catch (SpectorException e) {
            c.problem(e, path);
        }
    }

    /** Answers 421 no-link: this replica holds no live link of the worker; the caller tries another. */
    private static void refuse(ClientConnection c, String workerId, String path) {
        FullHttpResponse r = Responses.problem(
                SpectorException.of(
                        ErrorCode.WORKER_UNREACHABLE,
                        "worker " + workerId + ": this gateway replica holds no live uplink of it",
                        Map.of("workerId", workerId)),
                path,
                c.requestId());
        r.setStatus(HttpResponseStatus.MISDIRECTED_REQUEST);
        r.headers().set(SpectorHeaders.PEER_REFUSED, NO_LINK);
        c.answer(r);
    }
}
