package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.SpectorHeaders;
import com.spectrayan.spector.testkit.FakeClock;
import io.netty.handler.codec.http.HttpHeaders;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

final class PeerMacTest {
    private static final String SECRET = "peer-secret-0123456789-0123456789";
    private static final String PATH = "/relay/w1/app/x?y=1";

    private final FakeClock clock = FakeClock.at(Instant.parse("2026-01-01T00:00:00Z"));
    private final PeerMac mac = new PeerMac(SECRET, clock);

    @Test
    void sign_isTheDocumentedHmac_overMethodPathTenantLeaseAndTime() throws Exception {
        HttpHeaders h = mac.sign("PUT", PATH, "acme", "l-9");

        String time = Long.toString(clock.millis() / 1000);
        Mac hmac = Mac.getInstance("HmacSHA256");
        hmac.init(new SecretKeySpec(SECRET.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        String expected = Base64.getUrlEncoder()
                .withoutPadding()
                .encodeToString(
                        hmac.doFinal(("PUT\n" + PATH + "\nacme\nl-9\n" + time).getBytes(StandardCharsets.UTF_8)));
        assertThat(h.get(SpectorHeaders.PEER_TIME)).isEqualTo(time);
        assertThat(h.get(SpectorHeaders.PEER_TENANT)).isEqualTo("acme");
        assertThat(h.get(SpectorHeaders.PEER_LEASE)).isEqualTo("l-9");
        assertThat(h.get(SpectorHeaders.PEER_MAC)).isEqualTo(expected);
        assertThat(mac.refusal("PUT", PATH, h)).isNull();
    }

    @Test
    void refusal_atTheSkewLimitEitherWay_isAccepted_andOneSecondPast_isStale() {
        HttpHeaders h = mac.sign("GET", PATH, "acme", null);

        clock.advance(PeerMac.MAX_SKEW);
        assertThat(mac.refusal("GET", PATH, h)).as("30 s old").isNull();
        clock.advance(Duration.ofSeconds(1));
        assertThat(mac.refusal("GET", PATH, h)).as("31 s old").isEqualTo("stale");

        clock.advance(PeerMac.MAX_SKEW.multipliedBy(-2).minusSeconds(1)); // the signer 30 s ahead
        assertThat(mac.refusal("GET", PATH, h)).as("30 s ahead").isNull();
        clock.advance(Duration.ofSeconds(-1));
        assertThat(mac.refusal("GET", PATH, h)).as("31 s ahead").isEqualTo("stale");
    }

    /** A time whose distance from now overflows a long is stale, however well it is signed. */
    @Test
    void refusal_aTimeThatOverflowsTheSkew_isStale() throws Exception {
        long now = clock.millis() / 1000;
        for (long time : new long[] {now - Long.MIN_VALUE, Long.MIN_VALUE + now, Long.MIN_VALUE, Long.MAX_VALUE}) {
            HttpHeaders h = mac.sign("GET", PATH, "acme", null);
            h.set(SpectorHeaders.PEER_TIME, Long.toString(time));
            h.set(SpectorHeaders.PEER_MAC, hmac("GET\n" + PATH + "\nacme\n\n" + time));
            assertThat(mac.refusal("GET", PATH, h)).as("time %d", time).isEqualTo("stale");
        }
    }

    /** The documented MAC of {@code input}: HMAC-SHA256 with the secret, base64url without padding. */
    private static String hmac(String input) throws Exception {
        Mac hmac = Mac.getInstance("HmacSHA256");
        hmac.init(new SecretKeySpec(SECRET.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        return Base64.getUrlEncoder()
                .withoutPadding()
                .encodeToString(hmac.doFinal(input.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void refusal_anyCoveredPartChanged_isBadMac() {
        HttpHeaders h = mac.sign("GET", PATH, "acme", "l-9");

        assertThat(mac.refusal("POST", PATH, h)).as("method").isEqualTo("bad-mac");
        assertThat(mac.refusal("GET", PATH + "&z=2", h)).as("query").isEqualTo("bad-mac");
        assertThat(mac.refusal("GET", PATH, h.copy().set(SpectorHeaders.PEER_TENANT, "other")))
                .as("tenant")
                .isEqualTo("bad-mac");
        assertThat(mac.refusal("GET", PATH, h.copy().remove(SpectorHeaders.PEER_LEASE)))
                .as("lease dropped")
                .isEqualTo("bad-mac");
        assertThat(new PeerMac(SECRET + "x", clock).refusal("GET", PATH, h))
                .as("another secret")
                .isEqualTo("bad-mac");
    }

    /**
     * A rotation with no hop refused: a replica signs with its secret and accepts the secret and
     * the previous one, so replicas that already sign with the new key and those that do not yet
     * accept each other; a third key is refused.
     */
    @Test
    void rotation_signsWithTheSecret_acceptsThePreviousToo_andNothingElse() {
        String next = "next-peer-secret-0123456789-012345678";
        PeerMac old = new PeerMac(SECRET, clock); // not yet rotated
        PeerMac accepting = new PeerMac(SECRET, next, clock); // step 1: accepts the next key
        PeerMac signing = new PeerMac(next, SECRET, clock); // step 2: signs with it, still accepts the old
        PeerMac rotated = new PeerMac(next, clock); // step 3: the old key gone

        HttpHeaders byOld = old.sign("GET", PATH, "acme", null);
        HttpHeaders bySigning = signing.sign("GET", PATH, "acme", null);

        assertThat(accepting.refusal("GET", PATH, bySigning))
                .as("step 1 takes step 2's")
                .isNull();
        assertThat(signing.refusal("GET", PATH, byOld))
                .as("step 2 takes the old one's")
                .isNull();
        assertThat(rotated.refusal("GET", PATH, bySigning))
                .as("step 2 signs with the next key")
                .isNull();
        assertThat(old.refusal("GET", PATH, bySigning))
                .as("the old alone refuses the next key")
                .isEqualTo("bad-mac");
        assertThat(new PeerMac("third-peer-secret-0123456789-0123456", SECRET, clock).refusal("GET", PATH, bySigning))
                .as("neither key")
                .isEqualTo("bad-mac");
    }

    @Test
    void refusal_headerMissingRepeatedOrMalformed() {
        HttpHeaders h = mac.sign("GET", PATH, "acme", null);

        for (String name :
                new String[] {SpectorHeaders.PEER_TIME, SpectorHeaders.PEER_TENANT, SpectorHeaders.PEER_MAC}) {
            assertThat(mac.refusal("GET", PATH, h.copy().remove(name))).as(name).isEqualTo("missing");
            assertThat(mac.refusal("GET", PATH, h.copy().add(name, "x")))
                    .as(name + " twice")
                    .isEqualTo("missing");
        }
        assertThat(mac.refusal("GET", PATH, h.copy().set(SpectorHeaders.PEER_TIME, "soon")))
                .isEqualTo("malformed");
    }

    @Test
    void tenant_anyUnicode_roundTripsThroughItsHeader() {
        String tenant = "Ärger & co/π 1";
        HttpHeaders h = mac.sign("GET", PATH, tenant, null);

        assertThat(h.get(SpectorHeaders.PEER_TENANT)).isEqualTo("%C3%84rger%20%26%20co%2F%CF%80%201");
        assertThat(PeerMac.decodeTenant(h.get(SpectorHeaders.PEER_TENANT))).isEqualTo(tenant);
        assertThat(PeerMac.decodeTenant("acme-1._~")).isEqualTo("acme-1._~");
        assertThatThrownBy(() -> PeerMac.decodeTenant("a%4")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> PeerMac.decodeTenant("%FF")).isInstanceOf(IllegalArgumentException.class);
    }
}
