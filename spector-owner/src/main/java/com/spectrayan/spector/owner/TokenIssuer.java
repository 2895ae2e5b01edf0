package com.spectrayan.spector.owner;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.cluster.routing.RoutingKeyExtractor;
import java.time.Clock;
import java.time.Instant;
import java.util.Date;

/**
 * Issues demo-grade HS256 tokens ({@code POST /api/v1/auth/token}): claims {@code tenant}, {@code
 * sub} (the tenant), {@code iat} and {@code exp} ({@link OwnerLimits#TOKEN_TTL} later), signed
 * with the node's HMAC secret. Thread-safe.
 */
final class TokenIssuer {
    private final MACSigner signer;
    private final Clock clock;

    TokenIssuer(byte[] secret, Clock clock) {
        try {
            this.signer = new MACSigner(secret);
        } catch (JOSEException e) {
            throw new IllegalArgumentException(
                    "hmacSecret: " + secret.length + " bytes (expected: >= " + OwnerLimits.MIN_HMAC_SECRET_BYTES + ")",
                    e);
        }
        this.clock = clock;
    }

    /**
     * Returns a signed token for a tenant.
     *
     * @throws com.spectrayan.spector.contract.SpectorException BAD_REQUEST when the tenant is not
     *     a valid routing name
     */
    String issue(String tenant) {
        RoutingKey.checkName("tenant", tenant);
        Instant now = clock.instant();
        JWTClaimsSet claims = new JWTClaimsSet.Builder()
                .subject(tenant)
                .claim(RoutingKeyExtractor.TENANT_CLAIM, tenant)
                .issueTime(Date.from(now))
                .expirationTime(Date.from(now.plus(OwnerLimits.TOKEN_TTL)))
                .build();
        SignedJWT jwt = new SignedJWT(new JWSHeader(JWSAlgorithm.HS256), claims);
        try {
            jwt.sign(signer);
        } catch (JOSEException e) {
            throw new IllegalStateException("HS256 signing failed with a checked key", e);
        }
        return jwt.serialize();
    }
}
