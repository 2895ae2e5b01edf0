package com.spectrayan.spector.gateway.auth;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;

/**
 * Mints the HS256 bearer tokens that {@link JwtAuthenticator} accepts with an HMAC secret: {@code
 * sub} and {@code tenant} the tenant, {@code iat} now, {@code exp} a TTL later, and the scopes
 * asked for. For {@code spector
 * token} and the class-data training run, which authenticate against a gateway they were given the
 * secret of; the gateway itself never mints.
 */
public final class HmacTokens {
    private HmacTokens() {}

    /**
     * Returns a signed token for {@code tenant}, valid for {@code ttl}.
     *
     * @throws IllegalArgumentException when {@code key} is shorter than HS256 allows (32 bytes)
     */
    public static String mint(byte[] key, String tenant, Duration ttl) {
        return mint(key, tenant, ttl, List.of());
    }

    /**
     * Returns a signed token for {@code tenant}, valid for {@code ttl}, granting {@code scopes}
     * (the {@value Claims#SCOPE} claim, space-separated; none when empty).
     *
     * @throws IllegalArgumentException when {@code key} is shorter than HS256 allows (32 bytes)
     */
    public static String mint(byte[] key, String tenant, Duration ttl, List<String> scopes) {
        Instant now = Instant.now();
        JWTClaimsSet.Builder b = new JWTClaimsSet.Builder()
                .subject(tenant)
                .claim(Claims.TENANT, tenant)
                .issueTime(Date.from(now))
                .expirationTime(Date.from(now.plus(ttl)));
        if (!scopes.isEmpty()) {
            b.claim(Claims.SCOPE, String.join(" ", scopes));
        }
        JWTClaimsSet claims = b.build();
        SignedJWT jwt = new SignedJWT(new JWSHeader(JWSAlgorithm.HS256), claims);
        try {
            jwt.sign(new MACSigner(key));
        } catch (JOSEException e) {
            throw new IllegalArgumentException("HS256 signing failed: " + e.getMessage(), e);
        }
        return jwt.serialize();
    }
}
