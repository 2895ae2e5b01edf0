package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsFixtures.SECRET;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.refused;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.refusedExactly;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.required;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.withProps;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPairGenerator;
import java.security.NoSuchAlgorithmException;
import java.security.PublicKey;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Validation of the {@code spector.security.*} keys: that a key is set, and each key's form. */
final class SecuritySettingsTest {
    @TempDir
    Path dir;

    @Test
    void security_enabledWithoutAnyKey_isRefusedNamingTheKeys() {
        Map<String, String> props = required();
        props.remove("spector.security.jwt.hmac-secret");

        assertThat(refusedExactly(props).getMessage())
                .contains("spector.security.jwt.hmac-secret, spector.security.jwt.public-key-location,"
                        + " spector.security.jwt.jwk-set-uri: <unset> (expected: at least one of them while"
                        + " spector.security.enabled=true");
    }

    @Test
    void security_disabled_needsNoKeyAndWarns() {
        Map<String, String> props = required();
        props.remove("spector.security.jwt.hmac-secret");
        props.put("spector.security.enabled", "false");

        GatewaySettings s = GatewaySettings.load(null, Map.of(), props);

        assertThat(s.security().enabled()).isFalse();
        assertThat(s.warnings()).singleElement().asString().contains("without authentication");
    }

    @Test
    void hmacSecret_of32Bytes_isAcceptedAnd31IsRefusedWithoutShowingIt() {
        assertThat(withProps(Map.of()).security().jwt().hmacSecret()).isEqualTo(SECRET);
        String short31 = SECRET.substring(1);

        SettingsException e = refused(Map.of("spector.security.jwt.hmac-secret", short31));

        assertThat(e.problems())
                .singleElement()
                .asString()
                .startsWith("spector.security.jwt.hmac-secret: <redacted> of 31 bytes (expected: a secret of at"
                        + " least 32 bytes");
        assertThat(e.getMessage()).as("a secret is never shown").doesNotContain(short31);
    }

    @Test
    void publicKeyLocation_pemRsaKey_isRead() throws Exception {
        PublicKey key = rsaKey();
        Path pem = dir.resolve("key.pem");
        Files.writeString(pem, pem(key), StandardCharsets.US_ASCII);

        GatewaySettings s = withProps(Map.of("spector.security.jwt.public-key-location", pem.toString()));

        assertThat(s.security().jwt().publicKey()).as("the PEM key").isEqualTo(key);
        assertThat(s.security().jwt().publicKeyLocation()).isEqualTo(pem);
    }

    @Test
    void publicKeyLocation_missingOrNotAKey_isRefused() throws IOException {
        Path junk = dir.resolve("junk.pem");
        Files.writeString(junk, "hello", StandardCharsets.US_ASCII);

        assertThat(refused(Map.of("spector.security.jwt.public-key-location", junk.toString()))
                        .getMessage())
                .contains("spector.security.jwt.public-key-location: " + junk + " (expected: a PEM");
        assertThat(refused(Map.of(
                                "spector.security.jwt.public-key-location",
                                dir.resolve("none.pem").toString()))
                        .getMessage())
                .contains("(expected: a readable PEM file (NoSuchFileException))");
    }

    @Test
    void jwkSetUri_httpOrHttps_isAcceptedAndOtherSchemesRefused() {
        assertThat(withProps(Map.of("spector.security.jwt.jwk-set-uri", "https://idp.example.com/jwks"))
                        .security()
                        .jwt()
                        .jwkSetUri())
                .isEqualTo(URI.create("https://idp.example.com/jwks"));
        assertThat(withProps(Map.of("spector.security.jwt.jwk-set-uri", "http://idp.example.com/jwks"))
                        .warnings())
                .as("plain http to a remote host is warned about")
                .singleElement()
                .asString()
                .contains("use https");
        assertThat(refused(Map.of("spector.security.jwt.jwk-set-uri", "file:///etc/jwks.json"))
                        .getMessage())
                .contains("spector.security.jwt.jwk-set-uri: file:///etc/jwks.json (expected: an http(s) URI");
    }

    /** RFC 6265 section 4.1.1: a cookie-name is an RFC 2616 token. */
    @Test
    void jwtCookieName_aToken_isReadAndOtherTextRefused() {
        assertThat(withProps(Map.of("spector.security.jwt.cookie-name", "__Host-spector_token"))
                        .security()
                        .jwt()
                        .cookieName())
                .isEqualTo("__Host-spector_token");

        for (String bad : List.of("tok;en", "tok=en", "tok en", "t\u00f6ken", "\"token\"")) {
            assertThat(refused(Map.of("spector.security.jwt.cookie-name", bad)).problems())
                    .as("cookie name '%s'", bad)
                    .singleElement()
                    .asString()
                    .startsWith("spector.security.jwt.cookie-name: " + bad + " (expected: a cookie name (an RFC 6265"
                            + " token");
        }
    }

    /** RFC 6750 section 2.3: the query parameter is off unless asked for. */
    @Test
    void allowQueryToken_trueOrFalse_isReadAndOtherTextRefused() {
        assertThat(withProps(Map.of("spector.security.jwt.allow-query-token", "TRUE"))
                        .security()
                        .jwt()
                        .allowQueryToken())
                .isTrue();
        assertThat(refused(Map.of("spector.security.jwt.allow-query-token", "yes"))
                        .problems())
                .containsExactly("spector.security.jwt.allow-query-token: yes (expected: true or false)");
    }

    // ---- helpers ----

    private static PublicKey rsaKey() throws NoSuchAlgorithmException {
        KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
        g.initialize(2048);
        return g.generateKeyPair().getPublic();
    }

    static String pem(PublicKey key) {
        return "-----BEGIN PUBLIC KEY-----\n"
                + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(key.getEncoded())
                + "\n-----END PUBLIC KEY-----\n";
    }
}
