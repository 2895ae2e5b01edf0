package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.gateway.RelayCall;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.RelayHeaders;
import com.spectrayan.spector.uplink.wire.StatusReport;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The gateway's routes onto the uplink: {@code ANY /relay/{workerId}/{target}/{rest}} relays the
 * exchange to the worker's {@code target} as {@code <method> /{rest}?{query}} (tenant from the
 * token, lease id from {@code X-Spector-Lease}); {@code GET /gateway/v1/workers} lists the connected
 * workers, their targets and active relays. Both need a valid token. A relay always goes to this
 * replica's own links: the peer hop ({@link PeerHop}, {@link PeerRelay}) decides before, and
 * gives the tenant and lease it carried to {@link #relay}.
 */
final class RelayRoute {
    static final String PREFIX = "/relay/";
    static final String WORKERS = "/gateway/v1/workers";

    /** The tenant of a relayed request when auth is off and the caller names none. */
    static final String DEFAULT_TENANT = "default";

    private final GatewayRelay relay;
    private final WorkerDirectory directory;

    RelayRoute(GatewayRelay relay, WorkerDirectory directory) {
        this.relay = relay;
        this.directory = directory;
    }

    /**
     * Returns the worker id of a {@code /relay/{workerId}/...} path, or null when the path has
     * none ({@link #relay} then refuses it BAD_REQUEST).
     */
    static @Nullable String workerIdOf(String path) {
        int slash = path.indexOf('/', PREFIX.length());
        return slash <= PREFIX.length() ? null : path.substring(PREFIX.length(), slash);
    }

    /**
     * Returns the tenant a relay runs under: with a token, its {@code tenant} claim (DESIGN
     * section 5), which an {@code X-Spector-Tenant} may repeat but not contradict; without one
     * (auth off), {@code X-Spector-Tenant}, else {@value #DEFAULT_TENANT}.
     *
     * @throws SpectorException FORBIDDEN when a token names no tenant, or the header another one
     *     (before, a token without a tenant ran a relay as whatever tenant the header named, and a
     *     header that contradicted the token was ignored where the forwarded path refuses it)
     */
    static String tenantOf(HttpRequest request, Map<String, Object> claims) {
        String header = request.headers().get(SpectorHeaders.TENANT);
        if (claims.isEmpty()) {
            return header != null ? header : DEFAULT_TENANT;
        }
        if (!(claims.get("tenant") instanceof String tenant)) {
            throw SpectorException.of(ErrorCode.FORBIDDEN, "the token names no tenant", Map.of("reason", "no-tenant"));
        }
        if (header != null && !header.equals(tenant)) {
            throw SpectorException.of(
                    ErrorCode.FORBIDDEN,
                    SpectorHeaders.TENANT + " names a tenant the token does not grant",
                    Map.of("reason", "tenant-mismatch"));
        }
        return tenant;
    }

    /**
     * Returns the relay's lease id from {@code X-Spector-Lease}, or null.
     *
     * @throws SpectorException BAD_REQUEST past {@code Limits.LEASE_ID_CHARS}
     */
    static @Nullable String leaseOf(HttpRequest request) {
        String lease = request.headers().get(SpectorHeaders.LEASE);
        if (lease != null) {
            Limits.LEASE_ID_CHARS.check(lease.length());
        }
        return lease;
    }

    /** A relay checked and built from its request head, not yet started ({@link #start}). */
    record Prepared(String workerId, RelayCall call, RelayedExchange exchange) {}

    /** Starts a relay {@link #prepare} built: the answer reaches its exchange. */
    void start(Prepared relay) {
        relay.exchange().onRelayed(this.relay.relay(relay.workerId(), relay.call()));
    }

    /**
     * Checks a relay's request head and builds the relay to this replica's own links of its worker,
     * under {@code tenant} and {@code lease}; {@link #start} sends it, and the answer reaches {@code
     * exchange}. What the head alone decides (a malformed path or field) is refused here, before
     * any body is read.
     *
     * @throws SpectorException BAD_REQUEST for a malformed path or field
     */
    Prepared prepare(
            HttpRequest request,
            String path,
            @Nullable String rawQuery,
            String tenant,
            @Nullable String lease,
            boolean hasBody,
            RelayedExchange exchange) {
        // path is normalized (RequestTarget): no dot-segment can leave the target's base path
        exchange.tenant(tenant);
        String method = request.method().name();
        if (hasBody && (method.equals("GET") || method.equals("HEAD"))) {
            // The uplink carries no content on these (PROTOCOL.md section 3); RFC 9110 §9.3.1 gives
            // it no meaning and lets a server refuse it. Said here, before any body is read.
            throw SpectorException.badRequest(
                    request.headers().contains(HttpHeaderNames.TRANSFER_ENCODING)
                            ? HttpHeaderNames.TRANSFER_ENCODING.toString()
                            : HttpHeaderNames.CONTENT_LENGTH.toString(),
                    "a relayed " + method + " carries no content (expected: none)");
        }
        String query = rawQuery == null ? "" : "?" + RequestTarget.escapeBrowserQueryChars(rawQuery);
        String rest = path.substring(PREFIX.length());
        int slash = rest.indexOf('/');
        if (slash <= 0) {
            throw SpectorException.badRequest("path", "expected /relay/{workerId}/{target}/...");
        }
        String workerId = rest.substring(0, slash);
        rest = rest.substring(slash + 1);
        slash = rest.indexOf('/');
        String target = slash < 0 ? rest : rest.substring(0, slash);
        String targetPath = slash < 0 ? "/" : RequestTarget.normalizePath(rest.substring(slash));
        if (target.isEmpty()) {
            throw SpectorException.badRequest("path", "expected /relay/{workerId}/{target}/...");
        }
        List<Header> headers = new ArrayList<>();
        for (Map.Entry<String, String> h : request.headers()) {
            headers.add(new Header(h.getKey(), h.getValue()));
        }
        URI url;
        try {
            url = URI.create("http://" + target + targetPath + query);
        } catch (IllegalArgumentException e) {
            throw SpectorException.badRequest("path", "not a valid relayed path");
        }
        RelayedRequest relayed = new RelayedRequest(
                request.method().name(),
                url,
                RelayHeaders.forRequest(headers),
                tenant,
                lease,
                exchange.requestBody(hasBody),
                exchange.signal(),
                exchange.upgrade(),
                exchange.eventLoop(), // a v2 link on the client's own loop is preferred
                declaredLength(request, hasBody, exchange.upgrade() != null));
        return new Prepared(workerId, new RelayCall(target, relayed), exchange);
    }

    /**
     * Returns the length a relayed request declares (docs/PROTOCOL.md sections 3, 5 and 9.3): the
     * client's {@code Content-Length}, which the edge validated, when it sent one and no {@code
     * Transfer-Encoding} (RFC 9112 §6.3); else unknown (-1), the body relayed as it comes. A request
     * without a body declares at most 0, an upgrade none.
     *
     * @throws SpectorException BAD_REQUEST ({@code Content-Length}) past {@code Limits.RELAY_LENGTH_BYTES}
     */
    static long declaredLength(HttpRequest request, boolean hasBody, boolean upgrade) {
        if (upgrade || request.headers().contains(HttpHeaderNames.TRANSFER_ENCODING)) {
            return ResponseFraming.UNKNOWN_LENGTH;
        }
        long length = HttpUtil.getContentLength(request, ResponseFraming.UNKNOWN_LENGTH);
        if (!hasBody && length > 0) {
            return ResponseFraming.UNKNOWN_LENGTH; // never so: the edge reads a body it announced
        }
        if (length != ResponseFraming.UNKNOWN_LENGTH && !Limits.RELAY_LENGTH_BYTES.allows(length)) {
            throw SpectorException.badRequest(
                    "Content-Length",
                    length + " (expected: <= " + Limits.RELAY_LENGTH_BYTES.max() + " bytes for a relayed request)");
        }
        return length;
    }

    /** The connected workers as JSON. */
    FullHttpResponse workers() {
        return Responses.jsonOf(HttpResponseStatus.OK, Map.of("workers", workerRows()));
    }

    /**
     * One row per live worker: its id, targets, active relays (across its links) and the most
     * status misses in a row of any link; then one row per link: its slot, where it was dialled
     * from, since when, its relays running and its misses.
     */
    List<Map<String, Object>> workerRows() {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (String id : new java.util.TreeSet<>(directory.workerIds())) {
            List<WorkerLink> links = directory.links(id);
            if (links.isEmpty()) {
                continue;
            }
            StatusReport status = null;
            int misses = 0;
            List<Map<String, Object>> linkRows = new ArrayList<>();
            for (WorkerLink link : links) {
                StatusReport s = link.lastStatus();
                if (status == null && s != null) {
                    status = s;
                }
                misses = Math.max(misses, link.misses());
                Map<String, Object> l = new LinkedHashMap<>();
                l.put("slot", link.slot());
                l.put("remote", link.remote());
                l.put("connectedAt", link.connectedAt().toString());
                l.put("activeRelays", link.activeRelays());
                l.put("statusMisses", link.misses());
                linkRows.add(l);
            }
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("id", id);
            row.put("targets", status == null ? List.of() : status.targets());
            row.put("activeRelays", relay.running(id));
            row.put("statusMisses", misses);
            row.put("links", linkRows);
            rows.add(row);
        }
        return rows;
    }
}
