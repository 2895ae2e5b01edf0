package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * The peer hop's authentication: a request one gateway replica hands to another carries the time
 * it was signed, the caller's tenant and lease, and an HMAC over them, keyed with the cell's
 * {@code spector.cell.peer-secret}.
 *
 * <pre>
 *   X-Spector-Peer-Time:   1767225600                 epoch seconds, the signer's clock
 *   X-Spector-Peer-Tenant: acme                       the caller's tenant, UTF-8 percent-encoded
 *   X-Spector-Peer-Lease:  l-9                        the caller's lease id; absent when none
 *   X-Spector-Peer-Mac:    base64url(HMAC-SHA256(secret,
 *                            method "\n" path-and-query "\n" tenant "\n" lease "\n" time))
 * </pre>
 *
 * <p>{@code path-and-query} is the request target exactly as sent, {@code tenant} and {@code
 * lease} the header values as sent ({@code lease} empty when absent), base64url without padding
 * (RFC 4648 section 5). The tenant is percent-encoded (RFC 3986 section 2.1: every byte but the
 * unreserved chars) because a header carries ISO-8859-1, and a tenant is any Unicode text.
 *
 * <p>A request is refused when a header is missing or repeated ({@code missing}), the time is not
 * a number ({@code malformed}), it is more than {@link #MAX_SKEW} from this replica's clock either
 * way ({@code stale}: a captured request replays for that long at most), or the MAC differs
 * ({@code bad-mac}, compared in constant time). The MAC covers neither the body nor the other
 * headers: the peer port belongs on a network only the gateways reach (docs/OPERATIONS.md).
 *
 * <p><b>Rotation.</b> A replica signs with {@code spector.cell.peer-secret} and accepts a MAC made
 * with it or with {@code spector.cell.peer-secret-previous}, as nginx's {@code
 * ssl_session_ticket_key} encrypts with its first key and decrypts with any. Rotating is then three
 * rolling restarts with no hop refused: every replica accepts the new key (as the previous one, the
 * old still the secret), then signs with it (the old as the previous), then the old one goes.
 *
 * <p>Thread-safe: a {@link Mac} per call (the keys are parsed once).
 */
final class PeerMac {
    /** How far a peer request's time may be from this replica's, either way: replay window and clock skew. */
    static final Duration MAX_SKEW = Duration.ofSeconds(30);

    private static final String ALGORITHM = "HmacSHA256";

    private final SecretKeySpec key;
    /** A key still accepted, never signed with; null when none. */
    private final @Nullable SecretKeySpec previous;

    private final Clock clock;

    PeerMac(String secret, Clock clock) {
        this(secret, null, clock);
    }

    /** Signs with {@code secret}; accepts it and {@code previous} (null: none). */
    PeerMac(String secret, @Nullable String previous, Clock clock) {
        this.key = new SecretKeySpec(requireNonNull(secret, "secret").getBytes(StandardCharsets.UTF_8), ALGORITHM);
        this.previous =
                previous == null ? null : new SecretKeySpec(previous.getBytes(StandardCharsets.UTF_8), ALGORITHM);
        this.clock = requireNonNull(clock, "clock");
        var unused = mac(key); // fail at start, not on the first relay, when the JDK lacks HMAC-SHA256
    }

    /** Returns the four (or three, without a lease) headers of a peer request signed now. */
    HttpHeaders sign(String method, String pathAndQuery, String tenant, @Nullable String lease) {
        String time = Long.toString(clock.millis() / 1000);
        String encodedTenant = encodeTenant(tenant);
        HttpHeaders h = new DefaultHttpHeaders()
                .set(SpectorHeaders.PEER_TIME, time)
                .set(SpectorHeaders.PEER_TENANT, encodedTenant)
                .set(
                        SpectorHeaders.PEER_MAC,
                        mac(key, method, pathAndQuery, encodedTenant, lease == null ? "" : lease, time));
        if (lease != null) {
            h.set(SpectorHeaders.PEER_LEASE, lease);
        }
        return h;
    }

    /**
     * Returns why a peer request is refused ({@code missing}, {@code malformed}, {@code stale},
     * {@code bad-mac}), or null when it is authentic.
     */
    @Nullable
    String refusal(String method, String pathAndQuery, HttpHeaders headers) {
        String time = one(headers, SpectorHeaders.PEER_TIME);
        String tenant = one(headers, SpectorHeaders.PEER_TENANT);
        String given = one(headers, SpectorHeaders.PEER_MAC);
        List<String> leases = headers.getAll(SpectorHeaders.PEER_LEASE);
        if (time == null || tenant == null || given == null || leases.size() > 1) {
            return "missing";
        }
        long seconds;
        try {
            seconds = Long.parseLong(time);
        } catch (NumberFormatException e) {
            return "malformed";
        }
        long now = clock.millis() / 1000;
        long max = MAX_SKEW.toSeconds();
        // Compared each way, not by Math.abs(now - seconds): a time near Long.MIN_VALUE overflows
        // that difference into a negative one, which would pass as fresh.
        if (seconds < now - max || seconds > now + max) {
            return "stale";
        }
        String lease = leases.isEmpty() ? "" : leases.get(0);
        byte[] mac = given.getBytes(StandardCharsets.ISO_8859_1);
        boolean same = matches(key, mac, method, pathAndQuery, tenant, lease, time);
        SecretKeySpec old = previous;
        if (old != null) { // both compared, whichever matched: the time says nothing of the key
            same |= matches(old, mac, method, pathAndQuery, tenant, lease, time);
        }
        return same ? null : "bad-mac";
    }

    private static boolean matches(
            SecretKeySpec with,
            byte[] given,
            String method,
            String pathAndQuery,
            String tenant,
            String lease,
            String time) {
        String expected = mac(with, method, pathAndQuery, tenant, lease, time);
        return MessageDigest.isEqual(expected.getBytes(StandardCharsets.US_ASCII), given);
    }

    private static String mac(
            SecretKeySpec with, String method, String pathAndQuery, String tenant, String lease, String time) {
        String input = method + "\n" + pathAndQuery + "\n" + tenant + "\n" + lease + "\n" + time;
        byte[] sum = mac(with).doFinal(input.getBytes(StandardCharsets.UTF_8));
        return Base64.getUrlEncoder().withoutPadding().encodeToString(sum);
    }

    private static Mac mac(SecretKeySpec with) {
        try {
            Mac m = Mac.getInstance(ALGORITHM);
            m.init(with);
            return m;
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("HMAC-SHA256 is in every JDK", e);
        }
    }

    private static @Nullable String one(HttpHeaders headers, String name) {
        List<String> values = headers.getAll(name);
        return values.size() == 1 ? values.get(0) : null;
    }

    /** Percent-encodes a tenant's UTF-8 bytes, all but the unreserved chars (RFC 3986 section 2.3). */
    static String encodeTenant(String tenant) {
        StringBuilder out = new StringBuilder(tenant.length());
        for (byte b : tenant.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xff;
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || "-._~".indexOf(c) >= 0) {
                out.append((char) c);
            } else {
                out.append('%')
                        .append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            }
        }
        return out.toString();
    }

    /**
     * Decodes what {@link #encodeTenant} wrote.
     *
     * @throws IllegalArgumentException on a broken escape or bytes that are not UTF-8
     */
    static String decodeTenant(String encoded) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(encoded.length());
        for (int i = 0; i < encoded.length(); i++) {
            char c = encoded.charAt(i);
            if (c != '%') {
                if (c > 0x7e) {
                    throw new IllegalArgumentException("a char past ASCII at " + i);
                }
                out.write(c);
                continue;
            }
            int hi = i + 2 < encoded.length() ? Character.digit(encoded.charAt(i + 1), 16) : -1;
            int lo = i + 2 < encoded.length() ? Character.digit(encoded.charAt(i + 2), 16) : -1;
            if (hi < 0 || lo < 0) {
                throw new IllegalArgumentException("a broken %XX escape at " + i);
            }
            out.write(hi << 4 | lo);
            i += 2;
        }
        byte[] bytes = out.toByteArray();
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .decode(java.nio.ByteBuffer.wrap(bytes))
                    .toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new IllegalArgumentException("not UTF-8", e);
        }
    }
}
