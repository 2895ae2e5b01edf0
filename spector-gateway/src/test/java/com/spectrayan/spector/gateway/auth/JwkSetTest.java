package com.spectrayan.spector.gateway.auth;

import static com.spectrayan.spector.gateway.auth.AuthFixtures.CLOCK;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.SECRET;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.jwt;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.reasonOf;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.sign;
import static com.spectrayan.spector.gateway.auth.AuthFixtures.validClaims;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jose.crypto.RSASSASigner;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.KeyUse;
import com.nimbusds.jose.jwk.RSAKey;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.interfaces.RSAPublicKey;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A JWK set served by a real loopback HTTP server: caching, rate-limited refresh, outage. */
final class JwkSetTest {
    private static KeyPair signing;
    private static KeyPair stranger;

    private final AtomicInteger fetches = new AtomicInteger();
    private volatile int status = 200;
    /** The set the issuer serves now; {@link #rotated} adds k2 (the stranger's key) to k1. */
    private volatile byte[] serving = new byte[0];

    private byte[] rotated = new byte[0];
    /** How long the issuer takes to answer a fetch. */
    private volatile long slowMillis;

    private HttpServer server;
    private String jwksUri;

    @BeforeAll
    static void keys() throws GeneralSecurityException {
        KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
        g.initialize(2048);
        signing = g.generateKeyPair();
        stranger = g.generateKeyPair();
    }

    @BeforeEach
    void serveJwks() throws IOException {
        byte[] body = new JWKSet(new RSAKey.Builder((RSAPublicKey) signing.getPublic())
                        .keyID("k1")
                        .keyUse(KeyUse.SIGNATURE)
                        .algorithm(JWSAlgorithm.RS256)
                        .build())
                .toString()
                .getBytes(StandardCharsets.UTF_8);
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        serving = body;
        rotated = new JWKSet(List.of(
                        new RSAKey.Builder((RSAPublicKey) signing.getPublic())
                                .keyID("k1")
                                .keyUse(KeyUse.SIGNATURE)
                                .algorithm(JWSAlgorithm.RS256)
                                .build(),
                        new RSAKey.Builder((RSAPublicKey) stranger.getPublic())
                                .keyID("k2")
                                .keyUse(KeyUse.SIGNATURE)
                                .algorithm(JWSAlgorithm.RS256)
                                .build()))
                .toString()
                .getBytes(StandardCharsets.UTF_8);
        server.createContext("/jwks.json", exchange -> {
            fetches.incrementAndGet();
            long slow = slowMillis;
            if (slow > 0) {
                try {
                    Thread.sleep(slow); // the issuer is slow: the server's own pace, not the test's wait
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            byte[] answer = status == 200 ? serving : "down".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(status, answer.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(answer);
            }
        });
        server.start();
        jwksUri = "http://" + InetAddress.getLoopbackAddress().getHostAddress() + ":"
                + server.getAddress().getPort() + "/jwks.json";
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private JwtAuthenticator jwks(String uri) {
        return JwtAuthenticator.create(jwt(Map.of("spector.security.jwt.jwk-set-uri", uri)), CLOCK);
    }

    private static String rs256(String kid, KeyPair pair, String subject) throws JOSEException {
        return sign(
                new JWSHeader.Builder(JWSAlgorithm.RS256).keyID(kid).build(),
                validClaims().subject(subject).build(),
                new RSASSASigner(pair.getPrivate()));
    }

    @Test
    void authenticate_manyTokens_fetchTheJwkSetOnce() throws JOSEException {
        try (JwtAuthenticator auth = jwks(jwksUri)) {
            for (int i = 0; i < 50; i++) {
                assertThat(auth.authenticate("Bearer " + rs256("k1", signing, "user-" + i))
                                .subject())
                        .isEqualTo("user-" + i);
            }

            assertThat(fetches.get())
                    .as("the JWK set is cached, not fetched per token")
                    .isEqualTo(1);
        }
    }

    @Test
    void authenticate_unknownKeyIds_areBadSignatureAndRefetchesAreRateLimited() throws JOSEException {
        try (JwtAuthenticator auth = jwks(jwksUri)) {
            assertThat(auth.authenticate("Bearer " + rs256("k1", signing, "alice"))
                            .subject())
                    .isEqualTo("alice");

            for (int i = 0; i < 10; i++) {
                assertThat(reasonOf(auth, "Bearer " + rs256("rotated-" + i, stranger, "mallory")))
                        .as("a key id the set lacks")
                        .isEqualTo("bad-signature");
            }

            await("the background fetch an unknown key id asked for")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> fetches.get() == 2);
            for (int i = 0; i < 10; i++) {
                assertThat(reasonOf(auth, "Bearer " + rs256("again-" + i, stranger, "mallory")))
                        .isEqualTo("bad-signature");
            }
            assertThat(auth.authenticate("Bearer " + rs256("k1", signing, "bob"))
                            .subject())
                    .isEqualTo("bob");
            assertThat(fetches.get())
                    .as("an unknown key id refreshes the set at most twice per interval, not once per token")
                    .isEqualTo(2);
        }
    }

    /**
     * The issuer rotates: a token with a key id the cached set lacks is refused at once, never
     * waiting for the fetch (here the issuer takes 1.8 s to answer), and once the background fetch
     * brought the new set, the next token with that key id is verified. Regression (a review):
     * the fetch ran on the caller's thread, an event loop, up to 4 s.
     */
    @Test
    void authenticate_aKeyIdTheSetLacks_neverWaitsForTheFetch_andTheNextTokenFindsTheRotatedKey() throws JOSEException {
        try (JwtAuthenticator auth = jwks(jwksUri)) {
            assertThat(auth.authenticate("Bearer " + rs256("k1", signing, "alice"))
                            .subject())
                    .isEqualTo("alice");
            serving = rotated;
            slowMillis = 1800; // within the 2 s read timeout: the fetch succeeds, late

            long start = System.nanoTime();
            assertThat(reasonOf(auth, "Bearer " + rs256("k2", stranger, "carol")))
                    .isEqualTo("bad-signature");
            long tookMs = (System.nanoTime() - start) / 1_000_000;

            assertThat(tookMs)
                    .as("refused without waiting for the issuer, %d ms", tookMs)
                    .isLessThan(1000);
            await("the rotated set fetched in the background")
                    .atMost(Duration.ofSeconds(10))
                    .ignoreExceptionsInstanceOf(com.spectrayan.spector.contract.SpectorException.class)
                    .untilAsserted(() -> assertThat(auth.authenticate("Bearer " + rs256("k2", stranger, "carol"))
                                    .subject())
                            .isEqualTo("carol"));
        }
    }

    @Test
    void authenticate_hmacTokenAgainstAJwkSet_isUnexpectedAlg() throws JOSEException {
        String hs256 = sign(
                new JWSHeader(JWSAlgorithm.HS256),
                validClaims().build(),
                new MACSigner(SECRET.getBytes(StandardCharsets.UTF_8)));

        try (JwtAuthenticator auth = jwks(jwksUri)) {
            assertThat(reasonOf(auth, "Bearer " + hs256))
                    .as("a JWK set never verifies HMAC tokens")
                    .isEqualTo("unexpected-alg");
        }
    }

    @Test
    void authenticate_jwkSetAnswering500_isJwksUnavailable() throws JOSEException {
        status = 500;

        try (JwtAuthenticator auth = jwks(jwksUri)) {
            assertThat(reasonOf(auth, "Bearer " + rs256("k1", signing, "alice")))
                    .as("the issuer's keys cannot be fetched")
                    .isEqualTo("jwks-unavailable");
            assertThat(reasonOf(auth, "Bearer " + rs256("k1", signing, "alice")))
                    .as("still unavailable while refetches are rate limited")
                    .isEqualTo("jwks-unavailable");
        }
    }

    @Test
    void authenticate_nothingListening_isJwksUnavailable() throws IOException, JOSEException {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }

        try (JwtAuthenticator auth = jwks("http://127.0.0.1:" + closedPort + "/jwks.json")) {
            assertThat(reasonOf(auth, "Bearer " + rs256("k1", signing, "alice")))
                    .as("connection refused")
                    .isEqualTo("jwks-unavailable");
        }
    }
}
