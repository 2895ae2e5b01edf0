package com.spectrayan.spector.gateway.auth;

import static com.spectrayan.spector.gateway.auth.AuthFixtures.cors;
import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Preflight answers and actual-response headers of the CORS policy. */
final class CorsPolicyTest {
    private static final String APP = "https://app.example.com";

    private static CorsPolicy policy(String origins) {
        return CorsPolicy.create(cors(Map.of(
                "spector.security.enabled", "false",
                "spector.cors.allowed-origins", origins,
                "spector.cors.max-age", "10m")));
    }

    private static CorsPolicy withCredentials(String origins) {
        return CorsPolicy.create(cors(Map.of(
                "spector.security.enabled", "false",
                "spector.cors.allowed-origins", origins,
                "spector.cors.allow-credentials", "true")));
    }

    @Test
    void preflight_allowedOrigin_getsEveryHeader() {
        CorsPreflight answer = requireNonNull(
                policy(APP + ",http://localhost:3000").preflight(APP, "POST", "authorization, content-type"),
                "an allowed origin's preflight is answered");

        assertThat(answer.headers())
                .containsEntry("Access-Control-Allow-Origin", APP)
                .containsEntry("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
                .containsEntry(
                        "Access-Control-Allow-Headers",
                        "Authorization, Content-Type, Idempotency-Key, X-Idempotency-Key, X-Spector-Namespace,"
                                + " X-Spector-Tenant, Last-Event-ID")
                .containsEntry("Access-Control-Max-Age", "600")
                .doesNotContainKey("Access-Control-Allow-Credentials");
        assertThat(answer.headers().get("Vary")).as("caches keep origins apart").contains("Origin");
        assertThat(CorsPreflight.STATUS).isEqualTo(204);
    }

    @Test
    void preflight_disallowedOriginMethodOrHeader_isNull() {
        CorsPolicy cors = policy(APP);

        assertThat(cors.preflight("https://evil.example.com", "GET", null))
                .as("another origin")
                .isNull();
        assertThat(cors.preflight("https://app.example.com:8443", "GET", null))
                .as("another port")
                .isNull();
        assertThat(cors.preflight("http://app.example.com", "GET", null))
                .as("another scheme")
                .isNull();
        assertThat(cors.preflight(APP, "TRACE", null))
                .as("a method not allowed")
                .isNull();
        assertThat(cors.preflight(APP, "post", null))
                .as("methods are case-sensitive")
                .isNull();
        assertThat(cors.preflight(APP, "GET", "Authorization, X-Secret"))
                .as("a header not allowed")
                .isNull();
        assertThat(cors.preflight(APP, "GET", "")).as("no request headers").isNotNull();
    }

    @Test
    void preflight_star_allowsAnyOriginAndEchoesIt() {
        CorsPolicy cors = policy("*");

        CorsPreflight answer = requireNonNull(
                cors.preflight("https://anything.example.org", "GET", null), "* allows any http(s) origin");

        assertThat(answer.headers())
                .as("the origin is echoed, never *")
                .containsEntry("Access-Control-Allow-Origin", "https://anything.example.org");
        assertThat(cors.preflight("null", "GET", null))
                .as("the opaque origin is never allowed")
                .isNull();
    }

    @Test
    void preflight_originAtTheLengthLimit_isAnsweredAndOnePastIsNull() {
        CorsPolicy cors = policy("*");
        String prefix = "https://";
        String atLimit = prefix + "a".repeat(CorsPolicy.MAX_ORIGIN_CHARS - prefix.length());

        assertThat(cors.preflight(atLimit, "GET", null))
                .as("%d chars", CorsPolicy.MAX_ORIGIN_CHARS)
                .isNotNull();
        assertThat(cors.preflight(atLimit + "a", "GET", null))
                .as("one char past")
                .isNull();
        assertThat(cors.preflight("https://a.example\r\nSet-Cookie: x", "GET", null))
                .as("control chars are never echoed")
                .isNull();
    }

    @Test
    void preflight_requestHeadersAtTheCountLimit_isAnsweredAndOnePastIsNull() {
        CorsPolicy cors = policy(APP);
        String atLimit = IntStream.range(0, CorsPolicy.MAX_REQUEST_HEADERS)
                .mapToObj(i -> "content-type")
                .collect(Collectors.joining(","));

        assertThat(cors.preflight(APP, "GET", atLimit)).isNotNull();
        assertThat(cors.preflight(APP, "GET", atLimit + ",content-type")).isNull();
    }

    @Test
    void actualResponseHeaders_allowedOrigin_getsAllowOriginAndVary() {
        CorsPolicy cors = policy(APP);

        assertThat(cors.actualResponseHeaders(APP))
                .containsExactly(
                        Map.entry("Access-Control-Allow-Origin", APP),
                        Map.entry(
                                "Access-Control-Expose-Headers",
                                "X-Request-Id, Retry-After, Idempotent-Replayed, X-Spector-Node"),
                        Map.entry("Vary", "Origin"));
        assertThat(cors.actualResponseHeaders("https://evil.example.com"))
                .as("another origin gets Vary only")
                .containsExactly(Map.entry("Vary", "Origin"));
        assertThat(cors.actualResponseHeaders(null)).containsExactly(Map.entry("Vary", "Origin"));
    }

    /** Fetch standard, CORS protocol (HTTP responses): credentials need the echoed origin and "true". */
    @Test
    void preflight_credentialsAllowed_getsAllowCredentialsAndTheEchoedOrigin() {
        CorsPolicy cors = withCredentials(APP);

        CorsPreflight answer = requireNonNull(cors.preflight(APP, "GET", "authorization"), "an allowed preflight");

        assertThat(cors.allowsCredentials()).isTrue();
        assertThat(answer.headers())
                .containsEntry("Access-Control-Allow-Origin", APP)
                .containsEntry("Access-Control-Allow-Credentials", "true");
        assertThat(answer.headers().get("Vary")).contains("Origin");
        assertThat(cors.preflight("https://evil.example.com", "GET", null))
                .as("credentials change nothing for an origin not listed")
                .isNull();
        assertThat(policy(APP).allowsCredentials()).as("off by default").isFalse();
    }

    /** Fetch standard, CORS protocol: an actual credentialed response names the origin, never *. */
    @Test
    void actualResponseHeaders_credentialsAllowed_getsAllowCredentialsForAllowedOriginsOnly() {
        CorsPolicy cors = withCredentials(APP);

        assertThat(cors.actualResponseHeaders(APP))
                .containsExactly(
                        Map.entry("Access-Control-Allow-Origin", APP),
                        Map.entry("Access-Control-Allow-Credentials", "true"),
                        Map.entry(
                                "Access-Control-Expose-Headers",
                                "X-Request-Id, Retry-After, Idempotent-Replayed, X-Spector-Node"),
                        Map.entry("Vary", "Origin"));
        assertThat(cors.actualResponseHeaders("https://evil.example.com")).containsExactly(Map.entry("Vary", "Origin"));
        assertThat(cors.actualResponseHeaders(null)).containsExactly(Map.entry("Vary", "Origin"));
    }

    /**
     * Fetch standard, CORS protocol (HTTP responses): a script reads only the safelisted response
     * headers and those {@code Access-Control-Expose-Headers} lists. The configured list is sent
     * as one field to allowed origins, none when it is empty, and never on a preflight.
     */
    @Test
    void exposedHeaders_areListedForAllowedOriginsOnly_asConfigured() {
        CorsPolicy custom = CorsPolicy.create(cors(Map.of(
                "spector.security.enabled", "false",
                "spector.cors.allowed-origins", APP,
                "spector.cors.exposed-headers", "X-Request-Id,ETag")));
        assertThat(custom.actualResponseHeaders(APP))
                .containsEntry("Access-Control-Expose-Headers", "X-Request-Id, ETag");
        assertThat(custom.actualResponseHeaders("https://evil.example.com"))
                .doesNotContainKey("Access-Control-Expose-Headers");
        assertThat(requireNonNull(custom.preflight(APP, "GET", null), "allowed").headers())
                .doesNotContainKey("Access-Control-Expose-Headers");

        CorsPolicy none = CorsPolicy.create(cors(Map.of(
                "spector.security.enabled", "false",
                "spector.cors.allowed-origins", APP,
                "spector.cors.exposed-headers", "none")));
        assertThat(none.actualResponseHeaders(APP))
                .as("an empty list exposes nothing: no empty field")
                .doesNotContainKey("Access-Control-Expose-Headers");
    }

    /**
     * Fetch standard, CORS protocol: {@code Access-Control-Expose-Headers: *} exposes every header
     * to a request without credentials, but only a header named {@code *} to one with them. An
     * upstream's {@code *} then keeps the edge's names beside it, or the page could not read the
     * request id of a credentialed call.
     */
    @Test
    void mergeExposed_anUpstreamsStar_isAWildcardOnlyWithoutCredentials() {
        assertThat(policy(APP).mergeExposed(java.util.List.of("*"), "X-Request-Id"))
                .isEqualTo("*");
        assertThat(withCredentials(APP).mergeExposed(java.util.List.of("*", "ETag"), "X-Request-Id, etag"))
                .isEqualTo("*, ETag, X-Request-Id");
    }

    /** Fetch standard, CORS protocol: a wildcard origin with credentials is refused, here as in the settings. */
    @Test
    void create_credentialsWithStar_isRefused() {
        assertThatThrownBy(
                        () -> new CorsPolicy(List.of("*"), List.of("GET"), List.of(), Duration.ZERO, true, List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("allowCredentials: true with origins *");
    }

    /** RFC 9110 section 12.5.5: Vary is a list; what a response varies on is kept, Origin added once. */
    @Test
    void mergeVary_existingValues_areKeptAndOriginAddedOnce() {
        assertThat(CorsPolicy.mergeVary(List.of(), "Origin")).isEqualTo("Origin");
        assertThat(CorsPolicy.mergeVary(List.of("Accept-Encoding"), "Origin")).isEqualTo("Accept-Encoding, Origin");
        assertThat(CorsPolicy.mergeVary(List.of("Accept-Encoding, origin"), "Origin"))
                .as("names compare case-insensitively")
                .isEqualTo("Accept-Encoding, origin");
        assertThat(CorsPolicy.mergeVary(List.of("Accept", "Accept-Language"), "Origin"))
                .as("several field lines become one list")
                .isEqualTo("Accept, Accept-Language, Origin");
        assertThat(CorsPolicy.mergeVary(List.of("*"), "Origin"))
                .as("* already varies on everything")
                .isEqualTo("*");
        assertThat(CorsPolicy.mergeVary(List.of("Origin"), "Origin, Access-Control-Request-Method"))
                .isEqualTo("Origin, Access-Control-Request-Method");
        assertThat(CorsPolicy.mergeVary(List.of(" , Accept ,"), "Origin"))
                .as("empty list members are dropped")
                .isEqualTo("Accept, Origin");
    }

    @Test
    void corsOff_noOriginsConfigured_writesNothing() {
        CorsPolicy off = CorsPolicy.create(cors(Map.of("spector.security.enabled", "false")));

        assertThat(off.enabled()).isFalse();
        assertThat(off.preflight(APP, "GET", null)).isNull();
        assertThat(off.actualResponseHeaders(APP))
                .as("no CORS header while CORS is off")
                .isEmpty();
    }

    @Test
    void isPreflight_needsOptionsOriginAndRequestMethod() {
        assertThat(CorsPolicy.isPreflight("OPTIONS", APP, "POST")).isTrue();
        assertThat(CorsPolicy.isPreflight("OPTIONS", APP, null))
                .as("a plain OPTIONS")
                .isFalse();
        assertThat(CorsPolicy.isPreflight("OPTIONS", null, "POST"))
                .as("no origin")
                .isFalse();
        assertThat(CorsPolicy.isPreflight("POST", APP, "POST"))
                .as("not OPTIONS")
                .isFalse();
    }
}
