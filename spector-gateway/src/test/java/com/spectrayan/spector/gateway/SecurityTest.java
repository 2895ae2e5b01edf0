package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.gateway.config.GatewaySettings;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The CORS adapter at the edge: what it adds to a response, and that it never takes anything away. */
final class SecurityTest {
    private static final String APP = "https://app.example.com";

    private static Cors cors(Map<String, String> extra) {
        Map<String, String> props = new HashMap<>();
        props.put("spector.cell.role", "gateway");
        props.put("spector.cell.ring-members", "owner-0");
        props.put("spector.security.enabled", "false");
        props.put("spector.cors.allowed-origins", APP);
        props.putAll(extra);
        return Security.cors(GatewaySettings.load(null, Map.of(), props).cors());
    }

    private static HttpHeaders request(String origin) {
        return new DefaultHttpHeaders().add("Origin", origin);
    }

    /** An upstream response, as an owner sends it: framing, a type and a Vary of its own. */
    private static HttpHeaders upstream() {
        return new DefaultHttpHeaders()
                .add("Content-Type", "text/event-stream")
                .add("Content-Length", "246")
                .add("Cache-Control", "no-cache")
                .add("Vary", "Accept-Encoding")
                .add("Set-Cookie", "a=1")
                .add("Set-Cookie", "b=2");
    }

    /** RFC 9110 section 12.5.5 and issue 9: the edge's headers are added to the upstream's, none replaced. */
    @Test
    void decorate_allowedOrigin_addsCorsAndKeepsEveryUpstreamHeader() {
        HttpHeaders response = upstream();

        cors(Map.of()).decorate(request(APP), response);

        assertThat(response.get("Content-Type")).isEqualTo("text/event-stream");
        assertThat(response.get("Content-Length")).isEqualTo("246");
        assertThat(response.get("Cache-Control")).isEqualTo("no-cache");
        assertThat(response.getAll("Set-Cookie")).containsExactly("a=1", "b=2");
        assertThat(response.getAll("Vary"))
                .as("Origin is merged into the upstream's Vary")
                .containsExactly("Accept-Encoding, Origin");
        assertThat(response.getAll("Access-Control-Allow-Origin")).containsExactly(APP);
        assertThat(response.contains("Access-Control-Allow-Credentials"))
                .as("credentials are off by default")
                .isFalse();
    }

    /** Fetch standard, CORS protocol: with credentials allowed, an actual response says so. */
    @Test
    void decorate_credentialsAllowed_addsAllowCredentialsAndTheEchoedOrigin() {
        HttpHeaders response = upstream();

        cors(Map.of("spector.cors.allow-credentials", "true")).decorate(request(APP), response);

        assertThat(response.getAll("Access-Control-Allow-Origin")).containsExactly(APP);
        assertThat(response.getAll("Access-Control-Allow-Credentials")).containsExactly("true");
        assertThat(response.get("Content-Length")).isEqualTo("246");
    }

    /** RFC 9110 section 12.5.5: a response that may differ by Origin says so even to a request without one. */
    @Test
    void decorate_noOriginOrAnotherOrigin_addsVaryOnly() {
        HttpHeaders noOrigin = upstream();
        HttpHeaders other = new DefaultHttpHeaders().add("Content-Length", "0");
        Cors cors = cors(Map.of("spector.cors.allow-credentials", "true"));

        cors.decorate(new DefaultHttpHeaders(), noOrigin);
        cors.decorate(request("https://evil.example.com"), other);

        assertThat(noOrigin.getAll("Vary")).containsExactly("Accept-Encoding, Origin");
        assertThat(noOrigin.contains("Access-Control-Allow-Origin")).isFalse();
        assertThat(other.getAll("Vary")).containsExactly("Origin");
        assertThat(other.contains("Access-Control-Allow-Origin")).isFalse();
        assertThat(other.contains("Access-Control-Allow-Credentials")).isFalse();
    }

    /** Fetch standard, CORS protocol: one Access-Control-Allow-Origin; an upstream's own CORS answer stands. */
    @Test
    void decorate_upstreamAnsweredCorsItself_keepsItsAnswerAndAddsVaryOnce() {
        HttpHeaders response = new DefaultHttpHeaders()
                .add("Access-Control-Allow-Origin", "https://other.example.com")
                .add("Vary", "origin");
        Cors cors = cors(Map.of("spector.cors.allow-credentials", "true"));

        cors.decorate(request(APP), response);
        cors.decorate(request(APP), response);

        assertThat(response.getAll("Access-Control-Allow-Origin")).containsExactly("https://other.example.com");
        assertThat(response.contains("Access-Control-Allow-Credentials")).isFalse();
        assertThat(response.getAll("Vary")).as("already varies on Origin").containsExactly("origin");
    }

    /** Fetch standard, CORS-preflight fetch: a credentialed preflight answer allows credentials. */
    @Test
    void preflight_credentialsAllowed_answersAllowCredentials() {
        HttpHeaders preflight = request(APP).add("Access-Control-Request-Method", "GET");

        FullHttpResponse answer = requireNonNull(
                cors(Map.of("spector.cors.allow-credentials", "true")).preflight(HttpMethod.OPTIONS, preflight),
                "an allowed preflight is answered");
        try {
            assertThat(answer.status().code()).isEqualTo(204);
            assertThat(answer.headers().get("Access-Control-Allow-Origin")).isEqualTo(APP);
            assertThat(answer.headers().get("Access-Control-Allow-Credentials")).isEqualTo("true");
            assertThat(answer.headers().get("Vary")).contains("Origin");
        } finally {
            answer.release();
        }
    }
}
