package com.spectrayan.spector.cluster.gateway;

import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.net.URI;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The headers of the request an owner receives, edited in place from the client's (no copy, as
 * {@link HeaderFilter} explains):
 *
 * <ul>
 *   <li>once per exchange: the header policy ({@link HeaderFilter#toOwner}: hop-by-hop, framing,
 *       gateway-owned and routing names dropped; {@code Idempotency-Key} (K7) and every other end-
 *       to-end header byte for byte), {@code Upgrade} and {@code Connection: upgrade} again for an
 *       upgrade (hop-by-hop, so this hop asks anew, RFC 9110 §7.8), and the forwarding facts
 *       ({@link ForwardingHeaders}: a client's own dropped unless it is a trusted proxy, {@code
 *       X-Forwarded-For} appended to a trusted proxy's, else the client's address alone, {@code
 *       -Proto} and {@code -Host});
 *   <li>per attempt: {@code Host} (the owner's authority), the routing headers (namespace, tenant,
 *       epoch, fence or none, attempt number), and the framing (the client's Content-Length, or
 *       chunked; none for a request without a body).
 * </ul>
 *
 * <p>A pinned request ({@link PinnedTarget}) gets the same filter, but keeps the client's
 * forwarding facts as they came and gains none, and carries no routing headers: after {@code Host}
 * come the target's own headers, then the framing.
 *
 * <p>Threading: confined to the exchange's event loop. The client's header map is the owner's
 * from the first {@link #forAttempt}: nobody reads it as the client's after that.
 */
final class OwnerRequestHeaders {
    // Names as AsciiStrings made once: their case-insensitive hash is cached, not computed per set.
    private static final AsciiString NAMESPACE = AsciiString.cached(SpectorHeaders.NAMESPACE);
    private static final AsciiString TENANT = AsciiString.cached(SpectorHeaders.TENANT);
    private static final AsciiString EPOCH = AsciiString.cached(SpectorHeaders.EPOCH);
    private static final AsciiString FENCE = AsciiString.cached(SpectorHeaders.FENCE);
    private static final AsciiString ATTEMPT = AsciiString.cached(SpectorHeaders.ATTEMPT);

    /** The texts of the usual attempt numbers (a first try and two retargets); others are made when sent. */
    private static final AsciiString[] ATTEMPT_TEXT = {
        AsciiString.cached("0"), AsciiString.cached("1"), AsciiString.cached("2"), AsciiString.cached("3")
    };

    /** An epoch and its text. */
    private record EpochText(long epoch, AsciiString text) {}

    /**
     * The last epoch's text, shared by every loop: an epoch changes when the ring does, so it is
     * made once per change instead of a {@code Long.toString} per attempt (issue 14). A race only
     * makes the text again.
     */
    private static volatile EpochText lastEpoch = new EpochText(0, ATTEMPT_TEXT[0]);

    /** The most owners whose {@code Host} text is kept; past it the texts are made again. */
    static final int MAX_HOSTS = 64;

    /** The {@code Host} text per owner URI, made once per owner instead of a concatenation per attempt. */
    private static final ConcurrentHashMap<URI, String> HOSTS = new ConcurrentHashMap<>();

    private final ForwardRequest request;
    private boolean prepared;

    OwnerRequestHeaders(ForwardRequest request) {
        this.request = request;
    }

    /** Returns the headers for attempt {@code number} to {@code owner} at {@code entry}. */
    HttpHeaders forAttempt(URI owner, RouteEntry entry, int number) {
        HttpHeaders out = request.headers();
        if (!prepared) { // once per exchange: the same map serves every attempt
            prepared = true;
            prepare(out);
        }
        out.set(HttpHeaderNames.HOST, hostOf(owner));
        PinnedTarget pinned = request.pinned();
        if (pinned != null) {
            out.setAll(pinned.headers().get()); // made per attempt; set, each: a client's copy was dropped
            framing(out);
            return out;
        }
        RoutingKey key = request.routingKey();
        out.set(NAMESPACE, key.namespace());
        String tenant = key.tenant();
        if (tenant != null) {
            out.set(TENANT, tenant);
        }
        out.set(EPOCH, epochText(entry.epoch()));
        if (entry.fence() != RouteEntry.NO_FENCE) {
            out.set(FENCE, entry.fence());
        } else {
            out.remove(FENCE);
        }
        out.set(ATTEMPT, number >= 0 && number < ATTEMPT_TEXT.length ? ATTEMPT_TEXT[number] : Integer.toString(number));
        framing(out);
        return out;
    }

    /** Returns the {@code Host} value for an owner's URI: {@code host[:port]}. */
    static String hostOf(URI owner) {
        String host = HOSTS.get(owner);
        if (host == null) {
            host = owner.getPort() > 0 ? owner.getHost() + ":" + owner.getPort() : owner.getHost();
            if (HOSTS.size() >= MAX_HOSTS) {
                HOSTS.clear(); // owners come and go over a long life: the map stays bounded
            }
            HOSTS.put(owner, host);
        }
        return host;
    }

    /** Returns the text of an epoch. */
    static AsciiString epochText(long epoch) {
        EpochText t = lastEpoch;
        if (t.epoch() != epoch) {
            t = new EpochText(epoch, new AsciiString(Long.toString(epoch)));
            lastEpoch = t;
        }
        return t.text();
    }

    private void framing(HttpHeaders out) {
        if (request.body() != RequestBody.EMPTY) {
            if (request.declaredLength() >= 0) {
                out.set(HttpHeaderNames.CONTENT_LENGTH, request.declaredLength());
            } else {
                out.set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            }
        } else if (request.declaredLength() == 0) {
            // A client's "Content-Length: 0" (a POST with no content) passes on, as Envoy passes
            // it: an owner may refuse a POST without a length (411, RFC 9110 §15.5.12).
            out.set(HttpHeaderNames.CONTENT_LENGTH, HttpHeaderValues.ZERO);
        }
    }

    private void prepare(HttpHeaders out) {
        if (request.pinned() != null) {
            HeaderFilter.toOwner(out); // the hop changes nothing the final target reads: facts as they came
            return;
        }
        HeaderFilter.toOwner(out);
        String upgrade = request.upgrade();
        if (upgrade != null) { // hop-by-hop, so dropped above; this hop asks again (RFC 9110 §7.8)
            out.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE);
            out.set(HttpHeaderNames.UPGRADE, upgrade);
        }
        ForwardingHeaders.set(out, request.trustedProxy(), request.clientAddress(), request.scheme(), request.host());
    }
}
