package com.spectrayan.spector.gateway.auth;

import static com.spectrayan.spector.gateway.auth.AuthFixtures.CLOCK;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.NOW;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.SECRET;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.b64;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.jwt;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.pem;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.reasonOf;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.sign;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.validClaims;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.ECDSASigner;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jwt.JWTClaimsSet;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.FakeClock;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.interfaces.ECPrivateKey;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiFunction;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bearer JWT verification: keys, algorithms, times, issuer, audience and the header's form. */
final class JwtAuthenticatorTest {
    private static KeyPair rsa;
    private static KeyPair ec;

    @TempDir
    Path dir;

    @BeforeAll
    static void keys() throws GeneralSecurityException {
        KeyPairGenerator r = KeyPairGenerator.getInstance("RSA");
        r.initialize(2048);
        rsa = r.generateKeyPair();
        KeyPairGenerator e = KeyPairGenerator.getInstance("EC");
        e.initialize(new ECGenParameterSpec("secp256r1"));
        ec = e.generateKeyPair();
    }

    private static JwtAuthenticator hmac() {
        return JwtAuthenticator.create(jwt(Map.of("spector.security.jwt.hmac-secret", SECRET)), CLOCK);
    }

    private static String hs256(JWTClaimsSet claims) throws JOSEException {
        return sign(new JWSHeader(JWSAlgorithm.HS256), claims, new MACSigner(SECRET.getBytes(StandardCharsets.UTF_8)));
    }

    private JwtAuthenticator withPublicKey(KeyPair pair, Map<String, String> extra) throws IOException {
        Path file = dir.resolve("key.pem");
        Files.writeString(file, pem(pair.getPublic()), StandardCharsets.US_ASCII);
        Map<String, String> props = new HashMap<>(extra);
        props.put("spector.security.jwt.public-key-location", file.toString());
        return JwtAuthenticator.create(jwt(props), CLOCK);
    }

    // ---- HMAC ----

    @Test
    void authenticate_hs256Token_returnsItsClaims() throws JOSEException {
        Claims claims = hmac().authenticate("Bearer " + hs256(validClaims().build()));

        assertThat(claims.tenant()).as("the tenant claim").isEqualTo("acme");
        assertThat(claims.subject()).isEqualTo("alice");
        assertThat(claims.namespace()).isNull();
        assertThat(claims.expiresAt()).isEqualTo(NOW.plus(Duration.ofMinutes(5)));
        assertThat(claims.asMap()).containsEntry("sub", "alice").containsEntry("tenant", "acme");
        assertThatThrownBy(() -> claims.asMap().put("tenant", "evil"))
                .as("claims are immutable")
                .isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void authenticate_schemeInAnyCase_isAccepted() throws JOSEException {
        String token = hs256(validClaims().build());

        assertThat(hmac().authenticate("bearer " + token).tenant()).isEqualTo("acme");
        assertThat(hmac().authenticate("BEARER   " + token + "  ").tenant()).isEqualTo("acme");
    }

    @Test
    void authenticate_signedWithAnotherSecret_isBadSignature() throws JOSEException {
        String other = sign(
                new JWSHeader(JWSAlgorithm.HS256),
                validClaims().build(),
                new MACSigner("ffffffffffffffffffffffffffffffff".getBytes(StandardCharsets.UTF_8)));

        assertThat(reasonOf(hmac(), "Bearer " + other))
                .as("another key's signature")
                .isEqualTo("bad-signature");
    }

    @Test
    void authenticate_payloadSwappedUnderASignature_isBadSignature() throws JOSEException {
        String[] parts = hs256(validClaims().build()).split("\\.", -1);
        String forged = b64("{\"sub\":\"alice\",\"tenant\":\"other\",\"exp\":"
                + NOW.plusSeconds(300).getEpochSecond() + "}");

        assertThat(reasonOf(hmac(), "Bearer " + parts[0] + "." + forged + "." + parts[2]))
                .as("a tenant changed after signing")
                .isEqualTo("bad-signature");
    }

    @Test
    void authenticate_hs512WithA32ByteSecret_isUnexpectedAlg() throws JOSEException {
        byte[] secret64 = (SECRET + SECRET).getBytes(StandardCharsets.UTF_8);
        String hs512 = sign(new JWSHeader(JWSAlgorithm.HS512), validClaims().build(), new MACSigner(secret64));

        assertThat(reasonOf(hmac(), "Bearer " + hs512))
                .as("HS512 needs a 64-byte secret (RFC 7518 3.2)")
                .isEqualTo("unexpected-alg");
        JwtAuthenticator longSecret =
                JwtAuthenticator.create(jwt(Map.of("spector.security.jwt.hmac-secret", SECRET + SECRET)), CLOCK);
        assertThat(longSecret.algorithms()).containsExactlyInAnyOrder("HS256", "HS384", "HS512");
        assertThat(longSecret.authenticate("Bearer " + hs512).subject()).isEqualTo("alice");
    }

    // ---- Algorithms ----

    @Test
    void authenticate_algNone_isRefusedAsAlgNone() {
        String claims = b64("{\"sub\":\"alice\",\"tenant\":\"acme\",\"exp\":"
                + NOW.plusSeconds(300).getEpochSecond() + "}");

        assertThat(reasonOf(hmac(), "Bearer " + b64("{\"alg\":\"none\"}") + "." + claims + "."))
                .as("an unsigned token")
                .isEqualTo("alg-none");
        assertThat(reasonOf(hmac(), "Bearer " + b64("{\"alg\":\"none\"}") + "." + claims + ".c2ln"))
                .as("an unsigned token with a signature part")
                .isEqualTo("alg-none");
        assertThat(reasonOf(hmac(), "Bearer " + b64("{\"alg\":\"None\"}") + "." + claims + "."))
                .as("alg: none in another case")
                .isEqualTo("alg-none");
    }

    @Test
    void authenticate_hs256WhenOnlyAnRsaKeyIsConfigured_isUnexpectedAlg() throws Exception {
        JwtAuthenticator auth = withPublicKey(rsa, Map.of());
        byte[] publicKeyAsSecret = pem(rsa.getPublic()).getBytes(StandardCharsets.US_ASCII);
        String confused =
                sign(new JWSHeader(JWSAlgorithm.HS256), validClaims().build(), new MACSigner(publicKeyAsSecret));

        assertThat(reasonOf(auth, "Bearer " + confused))
                .as("HS256 keyed with the public key (the key confusion attack)")
                .isEqualTo("unexpected-alg");
        assertThat(reasonOf(auth, "Bearer " + hs256(validClaims().build()))).isEqualTo("unexpected-alg");
    }

    @Test
    void authenticate_encryptedToken_isUnexpectedAlg() {
        String jwe = b64("{\"alg\":\"RSA-OAEP-256\",\"enc\":\"A256GCM\"}") + ".a.b.c.d";

        assertThat(reasonOf(hmac(), "Bearer " + jwe))
                .as("a JWE is not a signed JWT")
                .isEqualTo("unexpected-alg");
    }

    @Test
    void authenticate_rs256AndPs256WithAPemKey_areAccepted() throws Exception {
        JwtAuthenticator auth = withPublicKey(rsa, Map.of());
        RSASSASigner signer = new RSASSASigner(rsa.getPrivate());

        String rs256 = sign(new JWSHeader(JWSAlgorithm.RS256), validClaims().build(), signer);
        String ps256 = sign(new JWSHeader(JWSAlgorithm.PS256), validClaims().build(), signer);

        assertThat(auth.authenticate("Bearer " + rs256).tenant()).as("RS256").isEqualTo("acme");
        assertThat(auth.authenticate("Bearer " + ps256).tenant()).as("PS256").isEqualTo("acme");
        assertThat(auth.algorithms()).containsExactlyInAnyOrder("RS256", "RS384", "RS512", "PS256", "PS384", "PS512");
    }

    @Test
    void authenticate_es256WithAPemEcKey_isAccepted() throws Exception {
        JwtAuthenticator auth = withPublicKey(ec, Map.of());
        String es256 = sign(new JWSHeader(JWSAlgorithm.ES256), validClaims().build(), new ECDSASigner((ECPrivateKey)
                ec.getPrivate()));

        assertThat(auth.authenticate("Bearer " + es256).tenant()).isEqualTo("acme");
        assertThat(auth.algorithms()).as("a P-256 key verifies ES256 only").containsExactly("ES256");
    }

    @Test
    void authenticate_hmacAndRsaBothConfigured_triesEachKey() throws Exception {
        JwtAuthenticator auth = withPublicKey(rsa, Map.of("spector.security.jwt.hmac-secret", SECRET));
        String rs256 =
                sign(new JWSHeader(JWSAlgorithm.RS256), validClaims().build(), new RSASSASigner(rsa.getPrivate()));

        assertThat(auth.authenticate("Bearer " + rs256).subject()).isEqualTo("alice");
        assertThat(auth.authenticate("Bearer " + hs256(validClaims().build())).subject())
                .isEqualTo("alice");
    }

    // ---- Times ----

    @Test
    void authenticate_rememberedToken_isServedToExpPlusSkewAndRefusedOneMillisecondPast() throws JOSEException {
        FakeClock moving = FakeClock.at(NOW);
        JwtAuthenticator auth =
                JwtAuthenticator.create(jwt(Map.of("spector.security.jwt.hmac-secret", SECRET)), moving);
        String token = hs256(
                validClaims().expirationTime(Date.from(NOW.plusSeconds(60))).build());
        Instant limit = NOW.plusSeconds(60).plus(JwtAuthenticator.CLOCK_SKEW);
        assertThat(auth.authenticate("Bearer " + token).subject()).isEqualTo("alice");
        assertThat(auth.authenticate("Bearer " + token).subject())
                .as("answered from the cache")
                .isEqualTo("alice");

        moving.set(limit);
        assertThat(auth.authenticate("Bearer " + token).subject())
                .as("a remembered token at exp + skew exactly")
                .isEqualTo("alice");
        moving.set(limit.plusMillis(1));
        assertThat(reasonOf(auth, "Bearer " + token))
                .as("a remembered token one millisecond past exp + skew")
                .isEqualTo("expired");
    }

    /**
     * A remembered token (the thread's last, then the cache) is served as the verified claims
     * themselves until {@link JwtAuthenticator#VERIFIED_CACHE_TTL} after its verification; from
     * then on it is verified again, however far its {@code exp}.
     */
    @Test
    void authenticate_rememberedToken_isVerifiedAgainAfterTheCachesTtl() throws JOSEException {
        FakeClock moving = FakeClock.at(NOW);
        JwtAuthenticator auth =
                JwtAuthenticator.create(jwt(Map.of("spector.security.jwt.hmac-secret", SECRET)), moving);
        String header = "Bearer "
                + hs256(validClaims()
                        .expirationTime(Date.from(NOW.plus(Duration.ofHours(1))))
                        .build());
        Claims first = auth.authenticate(header);

        moving.set(NOW.plus(JwtAuthenticator.VERIFIED_CACHE_TTL).minusMillis(1));
        assertThat(auth.authenticate(header)).as("remembered within the TTL").isSameAs(first);
        moving.set(NOW.plus(JwtAuthenticator.VERIFIED_CACHE_TTL));
        Claims again = auth.authenticate(header);

        assertThat(again).as("verified again at the TTL").isNotSameAs(first);
        assertThat(again.subject()).isEqualTo("alice");
        assertThat(auth.authenticate(header)).as("and remembered again").isSameAs(again);
    }

    /**
     * The cache of verified tokens is keyed by the token, not by the header that carried it: one
     * token sent in a thousand spellings of its header (the scheme's case, the spaces around it)
     * is one entry. Regression (the fourth review): each spelling was an entry with its own claims,
     * and one valid token of 8 KiB in 4 720 spellings ran a 256 MiB gateway out of heap.
     */
    @Test
    void authenticate_oneTokenInManySpellings_isOneCacheEntry() throws JOSEException {
        JwtAuthenticator auth = hmac();
        String token = hs256(validClaims().build());
        for (int i = 0; i < 1000; i++) {
            StringBuilder scheme = new StringBuilder();
            for (int c = 0; c < 6; c++) {
                char ch = "Bearer".charAt(c);
                scheme.append((i >> c & 1) == 1 ? Character.toUpperCase(ch) : Character.toLowerCase(ch));
            }
            String header = scheme + " ".repeat(1 + i / 64) + token + " ".repeat(i % 3);
            assertThat(auth.authenticate(header).tenant()).isEqualTo("acme");
        }
        assertThat(auth.cachedTokens()).isEqualTo(1);
        assertThat(auth.cachedWeight()).isEqualTo(JwtAuthenticator.weight(token));
    }

    /**
     * The cache is bounded by weight ({@link JwtAuthenticator#VERIFIED_CACHE_BYTES}): the longest
     * tokens accepted fill it exactly at the limit, and one more leaves it at the limit, not past.
     */
    @Test
    void authenticate_cacheOfVerifiedTokens_isBoundedByWeight_atTheLimitAndOnePast() throws JOSEException {
        JwtAuthenticator auth = hmac();
        String pad = "p".repeat(5_900); // a token of about 8 000 chars, under MAX_TOKEN_CHARS
        List<String> tokens = new ArrayList<>();
        int fit = -1;
        for (int i = 0; fit < 0 || i <= fit; i++) {
            String t = hs256(validClaims()
                    .subject(String.format(Locale.ROOT, "user-%06d", i))
                    .claim("pad", pad)
                    .build());
            assertThat(t.length()).isLessThanOrEqualTo(JwtAuthenticator.MAX_TOKEN_CHARS);
            tokens.add(t);
            if (fit < 0) {
                fit = (int) (JwtAuthenticator.VERIFIED_CACHE_BYTES / JwtAuthenticator.weight(t));
            }
        }
        int same = tokens.get(0).length();
        assertThat(tokens).allSatisfy(t -> assertThat(t).hasSize(same));
        for (int i = 0; i < fit; i++) {
            auth.authenticate("Bearer " + tokens.get(i));
        }
        assertThat(auth.cachedTokens()).as("at the limit: all %d kept", fit).isEqualTo(fit);
        auth.authenticate("Bearer " + tokens.get(fit)); // one past
        assertThat(auth.cachedWeight()).isLessThanOrEqualTo(JwtAuthenticator.VERIFIED_CACHE_BYTES);
        assertThat(auth.cachedTokens())
                .as("one past: one of them is verified again next time")
                .isEqualTo(fit);
    }

    /** The thread's last token serves only the same header: another one is verified on its own. */
    @Test
    void authenticate_afterAGoodToken_anotherHeaderIsVerifiedOnItsOwn() throws JOSEException {
        JwtAuthenticator auth = JwtAuthenticator.create(jwt(Map.of("spector.security.jwt.hmac-secret", SECRET)), CLOCK);
        String good = "Bearer " + hs256(validClaims().build());
        assertThat(auth.authenticate(good).subject()).isEqualTo("alice");

        String forged = good.substring(0, good.length() - 4) + (good.endsWith("AAAA") ? "BBBB" : "AAAA");

        assertThat(reasonOf(auth, forged)).isEqualTo("bad-signature");
        assertThat(auth.authenticate(good).subject()).isEqualTo("alice");
    }

    @Test
    void authenticate_expiredPastTheSkew_isExpired() throws JOSEException {
        Instant atSkew = NOW.minus(JwtAuthenticator.CLOCK_SKEW);
        assertSkewBoundary(JWTClaimsSet.Builder::expirationTime, atSkew, atSkew.minusSeconds(1), "expired");
    }

    @Test
    void authenticate_notBeforePastTheSkew_isNotYetValid() throws JOSEException {
        Instant atSkew = NOW.plus(JwtAuthenticator.CLOCK_SKEW);
        assertSkewBoundary(JWTClaimsSet.Builder::notBeforeTime, atSkew, atSkew.plusSeconds(1), "not-yet-valid");
    }

    /**
     * Asserts that a token whose {@code claim} is {@code atSkew} (off by exactly the allowed skew)
     * is accepted, and one whose claim is {@code pastSkew} (a second further) is refused for
     * {@code reason}.
     */
    private static void assertSkewBoundary(
            BiFunction<JWTClaimsSet.Builder, Date, JWTClaimsSet.Builder> claim,
            Instant atSkew,
            Instant pastSkew,
            String reason)
            throws JOSEException {
        String at = hs256(claim.apply(validClaims(), Date.from(atSkew)).build());
        String past = hs256(claim.apply(validClaims(), Date.from(pastSkew)).build());

        assertThat(hmac().authenticate("Bearer " + at).subject())
                .as("off by exactly the allowed skew")
                .isEqualTo("alice");
        assertThat(reasonOf(hmac(), "Bearer " + past))
                .as("one second past the skew")
                .isEqualTo(reason);
    }

    @Test
    void authenticate_noExp_isMalformed() throws JOSEException {
        String noExp = hs256(new JWTClaimsSet.Builder().subject("alice").build());

        assertThat(reasonOf(hmac(), "Bearer " + noExp)).as("exp is required").isEqualTo("malformed");
    }

    // ---- Issuer, audience, claims ----

    @Test
    void authenticate_issuerOrAudienceMismatch_isRefused() throws JOSEException {
        JwtAuthenticator auth = JwtAuthenticator.create(
                jwt(Map.of(
                        "spector.security.jwt.hmac-secret", SECRET,
                        "spector.security.jwt.issuer", "https://idp.example.com",
                        "spector.security.jwt.audience", "spector")),
                CLOCK);
        JWTClaimsSet.Builder right =
                validClaims().issuer("https://idp.example.com").audience(List.of("other", "spector"));

        assertThat(auth.authenticate("Bearer " + hs256(right.build())).issuer()).isEqualTo("https://idp.example.com");
        assertThat(reasonOf(
                        auth,
                        "Bearer "
                                + hs256(validClaims()
                                        .issuer("https://evil")
                                        .audience("spector")
                                        .build())))
                .as("another issuer")
                .isEqualTo("issuer");
        assertThat(reasonOf(
                        auth,
                        "Bearer " + hs256(validClaims().audience("spector").build())))
                .as("no issuer")
                .isEqualTo("issuer");
        assertThat(reasonOf(
                        auth,
                        "Bearer "
                                + hs256(validClaims()
                                        .issuer("https://idp.example.com")
                                        .audience("other")
                                        .build())))
                .as("another audience")
                .isEqualTo("audience");
    }

    @Test
    void authenticate_tenantNotAString_isMalformed() throws JOSEException {
        String token =
                hs256(validClaims().claim(Claims.TENANT, List.of("a", "b")).build());

        assertThat(reasonOf(hmac(), "Bearer " + token))
                .as("a routing claim that is not a string")
                .isEqualTo("malformed");
    }

    // ---- The header's form ----

    @Test
    void authenticate_missingHeader_isMissing() {
        assertThat(reasonOf(hmac(), null)).isEqualTo("missing");
        assertThat(reasonOf(hmac(), "   ")).isEqualTo("missing");
    }

    @Test
    void authenticate_notBearer_isMalformed() throws JOSEException {
        String token = hs256(validClaims().build());

        assertThat(reasonOf(hmac(), "Basic dXNlcjpwYXNz")).as("another scheme").isEqualTo("malformed");
        assertThat(reasonOf(hmac(), "Bearer")).as("no token").isEqualTo("malformed");
        assertThat(reasonOf(hmac(), "Bearertoken")).as("no space").isEqualTo("malformed");
        assertThat(reasonOf(hmac(), "Token " + token)).isEqualTo("malformed");
        assertThat(reasonOf(hmac(), "Bearer not-a-jwt")).isEqualTo("malformed");
        assertThat(reasonOf(hmac(), "Bearer " + token + " extra"))
                .as("a space in the token")
                .isEqualTo("malformed");
    }

    @Test
    void authenticate_tokenAtTheLengthLimit_isVerifiedAndOnePastIsMalformed() throws JOSEException {
        String atLimit = tokenOfLength(JwtAuthenticator.MAX_TOKEN_CHARS);
        String onePast = tokenOfLength(JwtAuthenticator.MAX_TOKEN_CHARS + 1);

        assertThat(hmac().authenticate("Bearer " + atLimit).subject())
                .as("a token of exactly %d chars", JwtAuthenticator.MAX_TOKEN_CHARS)
                .isEqualTo("alice");
        SpectorException e =
                catchThrowableOfType(SpectorException.class, () -> hmac().authenticate("Bearer " + onePast));
        assertThat(e.details()).as("one char past the limit").containsEntry("reason", "malformed");
        assertThat(e.getMessage()).contains("8193 chars (expected: <= 8192)").doesNotContain(onePast);
    }

    @Test
    void refusal_message_neverHoldsTheToken() throws JOSEException {
        String token = hs256(
                validClaims().expirationTime(Date.from(NOW.minusSeconds(3600))).build());

        SpectorException e = catchThrowableOfType(SpectorException.class, () -> hmac().authenticate("Bearer " + token));

        assertThat(e.getMessage()).as("a token is never echoed").doesNotContain(token.substring(0, 20));
    }

    @Test
    void wwwAuthenticate_eachReason_isABearerChallenge() {
        assertThat(JwtAuthenticator.wwwAuthenticate("missing"))
                .as("RFC 6750 3.1: no error code")
                .isEqualTo("Bearer");
        assertThat(JwtAuthenticator.wwwAuthenticate("expired"))
                .isEqualTo("Bearer error=\"invalid_token\", error_description=\"the token has expired\"");
        for (Reason reason : Reason.values()) {
            if (reason != Reason.MISSING) {
                assertThat(JwtAuthenticator.wwwAuthenticate(reason.wire()))
                        .as("the challenge of %s", reason)
                        .startsWith("Bearer error=\"invalid_token\", error_description=\"")
                        .matches("[ -~]*");
            }
        }
        assertThat(JwtAuthenticator.wwwAuthenticate("anything else")).startsWith("Bearer error=\"invalid_token\"");
    }

    @Test
    void create_withoutAnyKey_isRefused() {
        assertThatThrownBy(() -> JwtAuthenticator.create(jwt(Map.of("spector.security.enabled", "false"))))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("spector.security.jwt.hmac-secret");
    }

    /** Builds a valid HS256 token of exactly {@code chars} chars, padding a claim and the key id. */
    private static String tokenOfLength(int chars) throws JOSEException {
        for (int kid = 1; kid <= 4; kid++) {
            JWSHeader header = new JWSHeader.Builder(JWSAlgorithm.HS256)
                    .keyID("k".repeat(kid))
                    .build();
            MACSigner signer = new MACSigner(SECRET.getBytes(StandardCharsets.UTF_8));
            for (int pad = Math.max(0, chars * 3 / 4 - 300); pad < chars; pad++) {
                String token =
                        sign(header, validClaims().claim("pad", "x".repeat(pad)).build(), signer);
                if (token.length() == chars) {
                    return token;
                }
                if (token.length() > chars) {
                    break;
                }
            }
        }
        throw new AssertionError("no token of " + chars + " chars");
    }
}
