package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsFixtures.refused;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.withProps;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Validation of the {@code spector.cors.*} keys: origins, tokens, max age and credentials. */
final class CorsSettingsTest {
    @Test
    void corsOrigins_originsAndStar_areReadAndPathsRefused() {
        assertThat(withProps(Map.of("spector.cors.allowed-origins", "https://App.example.com,http://localhost:3000,*"))
                        .cors()
                        .allowedOrigins())
                .containsExactly("https://app.example.com", "http://localhost:3000", "*");

        assertThat(refused(Map.of("spector.cors.allowed-origins", "https://app.example.com/"))
                        .getMessage())
                .as("a trailing slash is a path, which no Origin header has")
                .contains("spector.cors.allowed-origins: https://app.example.com/ (expected: * or origins");
        assertThat(refused(Map.of("spector.cors.allowed-methods", "GET,PO ST")).getMessage())
                .contains("spector.cors.allowed-methods: PO ST");
        assertThat(withProps(Map.of("spector.cors.max-age", "24h")).cors().maxAge())
                .isEqualTo(Duration.ofHours(24));
        assertThat(refused(Map.of("spector.cors.max-age", "25h")).getMessage()).contains("spector.cors.max-age: 25h");
    }

    /** The headers a page may read: the request id and the retry and replay headers by default; tokens only. */
    @Test
    void corsExposedHeaders_defaultToTheGatewaysOwn_andAreTokens() {
        assertThat(withProps(Map.of()).cors().exposedHeaders())
                .containsExactly("X-Request-Id", "Retry-After", "Idempotent-Replayed", "X-Spector-Node");
        assertThat(withProps(Map.of("spector.cors.exposed-headers", "ETag,Location,ETag"))
                        .cors()
                        .exposedHeaders())
                .containsExactly("ETag", "Location");
        assertThat(withProps(Map.of("spector.cors.exposed-headers", "none"))
                        .cors()
                        .exposedHeaders())
                .as("none exposes none (an empty value is unset, so the default)")
                .isEmpty();
        assertThat(refused(Map.of("spector.cors.exposed-headers", "X-Request-Id,Bad Name"))
                        .getMessage())
                .contains("spector.cors.exposed-headers: Bad Name");
        assertThat(withProps(Map.of(
                                "spector.cors.allowed-origins", "https://app.example.com",
                                "spector.cors.allow-credentials", "true",
                                "spector.cors.exposed-headers", "*"))
                        .warnings())
                .as("* with credentials exposes a header named *, and the settings say so")
                .singleElement()
                .asString()
                .contains("spector.cors.exposed-headers lists *");
    }

    /** Fetch standard, CORS protocol: credentials are never shared with a wildcard origin. */
    @Test
    void corsAllowCredentials_withExactOrigins_isReadAndWithStarRefused() {
        GatewaySettings s = withProps(Map.of(
                "spector.cors.allowed-origins", "https://app.example.com",
                "spector.cors.allow-credentials", "true"));
        assertThat(s.cors().allowCredentials()).isTrue();
        assertThat(s.warnings()).isEmpty();

        assertThat(refused(Map.of(
                                "spector.cors.allowed-origins", "https://app.example.com,*",
                                "spector.cors.allow-credentials", "true"))
                        .problems())
                .containsExactly("spector.cors.allow-credentials: true with spector.cors.allowed-origins=* (expected:"
                        + " false, or exact origins in spector.cors.allowed-origins: the Fetch standard forbids"
                        + " credentials with a wildcard origin)");
        assertThat(withProps(Map.of("spector.cors.allowed-origins", "*")).cors().allowCredentials())
                .as("* alone, without credentials, stays allowed")
                .isFalse();
        assertThat(withProps(Map.of("spector.cors.allow-credentials", "true")).warnings())
                .as("credentials while CORS is off do nothing, and say so")
                .singleElement()
                .asString()
                .contains("spector.cors.allow-credentials=true does nothing");
    }
}
