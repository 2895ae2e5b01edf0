package com.spectrayan.spector.gateway.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.JWSSigner;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.gateway.config.CorsSettings;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.gateway.config.SecuritySettings;
import java.nio.charset.StandardCharsets;
import java.security.PublicKey;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Base64;
import java.util.Date;
import java.util.HashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** Settings, tokens and assertions shared by the auth tests. */
final class AuthFixtures {
    /** A 32-byte HMAC secret: HS256 only. */
    static final String SECRET = "0123456789abcdef0123456789abcdef";

    /** The fixed time every test verifies at. */
    static final Instant NOW = Instant.parse("2026-01-01T00:00:00Z");

    /** A clock stopped at {@link #NOW}. */
    static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);

    private AuthFixtures() {}

    /** Loads settings with the required cell keys and the given extra keys. */
    static GatewaySettings settings(Map<String, String> extra) {
        Map<String, String> props = new HashMap<>();
        props.put("spector.cell.role", "gateway");
        props.put("spector.cell.ring-members", "owner-0");
        props.putAll(extra);
        return GatewaySettings.load(null, Map.of(), props);
    }

    /** Loads settings as {@link #settings(Map)} does and returns their {@code spector.security.jwt.*}. */
    static SecuritySettings.Jwt jwt(Map<String, String> extra) {
        return settings(extra).security().jwt();
    }

    /** Loads settings as {@link #settings(Map)} does and returns their {@code spector.cors.*}. */
    static CorsSettings cors(Map<String, String> extra) {
        return settings(extra).cors();
    }

    /** Claims that pass every check at {@link #NOW}: sub alice, tenant acme, exp in 5 minutes. */
    static JWTClaimsSet.Builder validClaims() {
        return new JWTClaimsSet.Builder()
                .subject("alice")
                .claim(Claims.TENANT, "acme")
                .issueTime(Date.from(NOW))
                .expirationTime(Date.from(NOW.plus(Duration.ofMinutes(5))));
    }

    /** Signs claims into a compact JWS. */
    static String sign(JWSHeader header, JWTClaimsSet claims, JWSSigner signer) throws JOSEException {
        SignedJWT jwt = new SignedJWT(header, claims);
        jwt.sign(signer);
        return jwt.serialize();
    }

    /** Returns the unpadded base64url of a UTF-8 string. */
    static String b64(String text) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Writes a public key as a PEM {@code PUBLIC KEY} block. */
    static String pem(PublicKey key) {
        return "-----BEGIN PUBLIC KEY-----\n"
                + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(key.getEncoded())
                + "\n-----END PUBLIC KEY-----\n";
    }

    /** Asserts that the header is refused as UNAUTHENTICATED and returns the {@code reason} detail. */
    static String reasonOf(JwtAuthenticator auth, @Nullable String authorization) {
        SpectorException e = catchThrowableOfType(SpectorException.class, () -> auth.authenticate(authorization));
        assertThat(e).as("the token must be refused").isNotNull();
        assertThat(e.code()).as("a refused token is UNAUTHENTICATED").isEqualTo(ErrorCode.UNAUTHENTICATED);
        return String.valueOf(e.details().get("reason"));
    }
}
