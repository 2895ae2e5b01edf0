package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsFixtures.HASH;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.SECRET;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.refused;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.refusedExactly;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.required;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.withProps;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Binding, precedence, reporting and the duration forms of the gateway settings as a whole. */
final class GatewaySettingsTest {
    @TempDir
    Path dir;

    private Path yaml(String text) throws IOException {
        Path file = dir.resolve("gateway.yaml");
        Files.writeString(file, text, StandardCharsets.UTF_8);
        return file;
    }

    // ---- Defaults and sources ----

    @Test
    void load_onlyRequiredKeys_givesTheDocumentedDefaults() {
        GatewaySettings s = withProps(Map.of());

        assertThat(s.cell().id()).as("spector.cell.id default").isEqualTo("default");
        assertThat(s.cell().role()).isEqualTo("gateway");
        assertThat(s.cell().nodeId()).as("spector.cell.node-id has no default").isNull();
        assertThat(s.cell().ringMembers()).containsExactly(Map.entry("owner-0", URI.create("http://owner-0:7070")));
        assertThat(s.cell().ringEpoch()).isEqualTo(1);
        assertThat(s.routing().caffeine().ttl()).isEqualTo(Duration.ofSeconds(60));
        assertThat(s.routing().caffeine().maxSize()).isEqualTo(1000);
        assertThat(s.routing().redis().enabled()).isTrue();
        assertThat(s.routing().redis().uri()).isEqualTo(URI.create("redis://localhost:6379"));
        assertThat(s.routing().redis().ttl()).isEqualTo(Duration.ofSeconds(30));
        assertThat(s.routing().redis().timeout()).isEqualTo(Duration.ofMillis(200));
        assertThat(s.routing().gateway().retryMax()).isEqualTo(2);
        assertThat(s.routing().gateway().maxBufferedBodyBytes()).isEqualTo(10_485_760L);
        assertThat(s.routing().gateway().replayBufferBytes()).isEqualTo(1_048_576L);
        assertThat(s.routing().gateway().ownerTimeout()).isEqualTo(Duration.ofSeconds(10));
        assertThat(s.routing().gateway().streamIdleTimeout()).isEqualTo(Duration.ofMinutes(5));
        assertThat(s.uplink().tokens()).isEmpty();
        assertThat(s.uplink().relayDeadline()).isEqualTo(Duration.ofSeconds(330));
        assertThat(s.uplink().relayMaxPerWorker()).isEqualTo(8);
        assertThat(s.security().enabled()).isTrue();
        assertThat(s.security().jwt().publicKeyLocation()).isNull();
        assertThat(s.security().jwt().jwkSetUri()).isNull();
        assertThat(s.security().jwt().issuer()).isNull();
        assertThat(s.security().jwt().audience()).isNull();
        assertThat(s.security().jwt().cookieName())
                .as("tokens are not read from cookies by default")
                .isNull();
        assertThat(s.security().jwt().allowQueryToken())
                .as("nor from the query")
                .isFalse();
        assertThat(s.cors().allowedOrigins()).as("CORS is off by default").isEmpty();
        assertThat(s.cors().allowedMethods()).containsExactly("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS");
        assertThat(s.cors().allowedHeaders())
                .containsExactly(
                        "Authorization",
                        "Content-Type",
                        "Idempotency-Key",
                        "X-Idempotency-Key",
                        "X-Spector-Namespace",
                        "X-Spector-Tenant",
                        "Last-Event-ID");
        assertThat(s.cors().maxAge()).isEqualTo(Duration.ofHours(1));
        assertThat(s.cors().allowCredentials()).isFalse();
        assertThat(s.server().port()).isEqualTo(7070);
        assertThat(s.server().host()).isEqualTo("0.0.0.0");
        assertThat(s.server().maxHeaderSize()).isEqualTo(16384);
        assertThat(s.server().maxInitialLineLength()).isEqualTo(8192);
        assertThat(s.server().idleTimeout()).isEqualTo(Duration.ofSeconds(60));
        assertThat(s.server().headerTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(s.server().bodyTimeout()).as("nginx's client_body_timeout").isEqualTo(Duration.ofSeconds(60));
        assertThat(s.server().maxConnections()).isEqualTo(10_000);
        assertThat(s.server().trustedProxies()).isEmpty();
        assertThat(s.warnings()).isEmpty();
    }

    @Test
    void load_sameKeyInEverySource_systemPropertiesBeatEnvironmentBeatYamlBeatDefaults() throws IOException {
        Path file = yaml("""
                spector:
                  cell:
                    role: gateway
                    id: from-yaml
                    ring-members: [owner-0, "owner-1=http://10.0.0.2:8080"]
                  security:
                    jwt:
                      hmac-secret: %s
                  routing:
                    redis:
                      timeout-ms: 300
                      ttl-seconds: 40
                    caffeine:
                      max-size: 11
                """.formatted(SECRET));
        Map<String, String> env = Map.of(
                "SPECTOR_ROUTING_REDIS_TIMEOUT_MS", "400",
                "SPECTOR_ROUTING_REDIS_TTL_SECONDS", "50");
        Map<String, String> sys = Map.of("spector.routing.redis.timeout-ms", "500");

        GatewaySettings s = GatewaySettings.load(file, env, sys);

        assertThat(s.routing().redis().timeout())
                .as("system properties beat the environment")
                .isEqualTo(Duration.ofMillis(500));
        assertThat(s.routing().redis().ttl())
                .as("the environment beats the YAML file")
                .isEqualTo(Duration.ofSeconds(50));
        assertThat(s.routing().caffeine().maxSize())
                .as("the YAML file beats the default")
                .isEqualTo(11);
        assertThat(s.cell().id()).as("a YAML-only key is read").isEqualTo("from-yaml");
        assertThat(s.cell().ringMembers())
                .as("a YAML sequence is a list")
                .containsExactly(
                        Map.entry("owner-0", URI.create("http://owner-0:7070")),
                        Map.entry("owner-1", URI.create("http://10.0.0.2:8080")));
        assertThat(s.routing().caffeine().ttl())
                .as("an unset key keeps its default")
                .isEqualTo(Duration.ofSeconds(60));
    }

    @Test
    void load_environmentForm_bindsDashedKeys() {
        Map<String, String> env = Map.of(
                "SPECTOR_CELL_ROLE", "gateway",
                "SPECTOR_CELL_RING_MEMBERS", "a=http://h1:1,b",
                "SPECTOR_SECURITY_JWT_HMAC_SECRET", SECRET,
                "SPECTOR_ROUTING_REDIS_TIMEOUT_MS", "250",
                "SPECTOR_ROUTING_GATEWAY_MAX_BUFFERED_BODY_BYTES", "2048",
                "SPECTOR_ROUTING_GATEWAY_REPLAY_BUFFER_BYTES", "1024");

        GatewaySettings s = GatewaySettings.load(null, env, Map.of());

        assertThat(s.routing().redis().timeout())
                .as("SPECTOR_ROUTING_REDIS_TIMEOUT_MS")
                .isEqualTo(Duration.ofMillis(250));
        assertThat(s.routing().gateway().maxBufferedBodyBytes()).isEqualTo(2048);
        assertThat(s.routing().gateway().replayBufferBytes()).isEqualTo(1024);
        assertThat(s.cell().ringMembers()).containsOnlyKeys("a", "b");
    }

    @Test
    void load_environmentForm_bindsTheEdgeKeys() {
        Map<String, String> env = new HashMap<>();
        env.put("SPECTOR_CELL_ROLE", "gateway");
        env.put("SPECTOR_CELL_RING_MEMBERS", "owner-0");
        env.put("SPECTOR_SECURITY_JWT_HMAC_SECRET", SECRET);
        env.put("SPECTOR_SERVER_HEADER_TIMEOUT", "5s");
        env.put("SPECTOR_SERVER_BODY_TIMEOUT", "2m");
        env.put("SPECTOR_SECURITY_JWT_COOKIE_NAME", "spector_token");
        env.put("SPECTOR_SECURITY_JWT_ALLOW_QUERY_TOKEN", "true");
        env.put("SPECTOR_CORS_ALLOWED_ORIGINS", "https://app.example.com");
        env.put("SPECTOR_CORS_ALLOW_CREDENTIALS", "true");

        GatewaySettings s = GatewaySettings.load(null, env, Map.of());

        assertThat(s.server().headerTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThat(s.server().bodyTimeout()).isEqualTo(Duration.ofMinutes(2));
        assertThat(s.security().jwt().cookieName()).isEqualTo("spector_token");
        assertThat(s.security().jwt().allowQueryToken()).isTrue();
        assertThat(s.cors().allowCredentials()).isTrue();
        assertThat(s.describe())
                .containsEntry("spector.server.header-timeout", "5s")
                .containsEntry("spector.server.body-timeout", "2m")
                .containsEntry("spector.security.jwt.cookie-name", "spector_token")
                .containsEntry("spector.security.jwt.allow-query-token", "true")
                .containsEntry("spector.cors.allow-credentials", "true");
    }

    @Test
    void load_explicitSources_neverReadsTheProcessSystemProperties() {
        System.setProperty("spector.cell.id", "leaked-from-the-process");
        try {
            GatewaySettings s = withProps(Map.of());

            assertThat(s.cell().id())
                    .as("load(file, env, props) reads only the maps it is given")
                    .isEqualTo("default");
        } finally {
            System.clearProperty("spector.cell.id");
        }
    }

    @Test
    void load_yamlFileGivenButMissing_isRefused() {
        Path missing = dir.resolve("nope.yaml");

        SettingsException e = catchThrowableOfType(
                SettingsException.class, () -> GatewaySettings.load(missing, Map.of(), required()));

        assertThat(e).as("a config file that was named must exist").isNotNull();
        assertThat(e.problems()).singleElement().asString().contains("config file: " + missing);
    }

    @Test
    void load_unknownSpectorKeyInYaml_isAWarningNotAFailure() throws IOException {
        Path file = yaml("spector:\n  routing:\n    gateway:\n      retry-maxx: 1\n");

        GatewaySettings s = GatewaySettings.load(file, Map.of(), required());

        assertThat(s.warnings())
                .as("a likely typo is reported")
                .singleElement()
                .asString()
                .contains("spector.routing.gateway.retry-maxx");
    }

    // ---- owner connections and passive health ----

    @Test
    void ownerConnections_atItsBoundsAndOnePast_andInTheTransportSpec() {
        assertThat(Specs.transport(withProps(Map.of("spector.routing.gateway.owner-connections", "1")))
                        .maxConnectionsPerOwner())
                .isEqualTo(1);
        assertThat(Specs.transport(withProps(Map.of("spector.routing.gateway.owner-connections", "65536")))
                        .maxConnectionsPerOwner())
                .isEqualTo(65_536);
        for (String bad : List.of("0", "65537")) {
            assertThat(refused(Map.of("spector.routing.gateway.owner-connections", bad))
                            .problems())
                    .as(bad)
                    .singleElement()
                    .satisfies(p -> assertThat(p).contains("spector.routing.gateway.owner-connections"));
        }
        assertThat(Specs.transport(withProps(Map.of())).maxConnectionsPerOwner())
                .as("default")
                .isEqualTo(256);
    }

    @Test
    void ownerStreams_atItsBoundsAndOnePast_andInTheTransportSpec() {
        String key = "spector.routing.gateway.owner-streams";
        assertThat(Specs.transport(withProps(Map.of(key, "0"))).maxStreamsPerOwner())
                .isZero();
        assertThat(Specs.transport(withProps(Map.of(key, "65536"))).maxStreamsPerOwner())
                .isEqualTo(65_536);
        for (String bad : List.of("-1", "65537")) {
            assertThat(refused(Map.of(key, bad)).problems())
                    .as(bad)
                    .singleElement()
                    .satisfies(p -> assertThat(p).contains(key));
        }
        assertThat(Specs.transport(withProps(Map.of())).maxStreamsPerOwner())
                .as("default")
                .isEqualTo(8192);
    }

    @Test
    void ownerDown_boundsAndOnePast_andTheBackoffMaxAtLeastTheBackoff() {
        var spec = Specs.forwarder(withProps(Map.of(
                "spector.routing.gateway.owner-down-after", "100",
                "spector.routing.gateway.owner-down-backoff", "10ms",
                "spector.routing.gateway.owner-down-backoff-max", "1h")));
        assertThat(spec.ownerDownAfter()).isEqualTo(100);
        assertThat(spec.ownerDownBackoff()).isEqualTo(Duration.ofMillis(10));
        assertThat(spec.ownerDownBackoffMax()).isEqualTo(Duration.ofHours(1));
        assertThat(Specs.forwarder(withProps(Map.of("spector.routing.gateway.owner-down-after", "0")))
                        .ownerDownAfter())
                .as("0: off")
                .isZero();
        assertThat(refused(Map.of("spector.routing.gateway.owner-down-after", "101"))
                        .problems())
                .singleElement()
                .satisfies(p -> assertThat(p).contains("owner-down-after"));
        assertThat(refused(Map.of("spector.routing.gateway.owner-down-backoff", "9ms"))
                        .problems())
                .singleElement()
                .satisfies(p -> assertThat(p).contains("owner-down-backoff"));
        assertThat(refused(Map.of(
                                "spector.routing.gateway.owner-down-backoff", "2s",
                                "spector.routing.gateway.owner-down-backoff-max", "1s"))
                        .problems())
                .singleElement()
                .satisfies(p -> assertThat(p).contains("owner-down-backoff-max"));
    }

    @Test
    void handoff_defaultsAndBoundsAndOnePast() {
        var d = Specs.forwarder(withProps(Map.of()));
        assertThat(d.handoffHold()).isEqualTo(Duration.ofSeconds(2));
        assertThat(d.handoffMaxHeld()).isEqualTo(1000);
        assertThat(d.handoffMaxHeldBytes()).isEqualTo(16L * 1024 * 1024);
        var spec = Specs.forwarder(withProps(Map.of(
                "spector.routing.gateway.handoff-hold", "30s",
                "spector.routing.gateway.handoff-max-held", "100000",
                "spector.routing.gateway.handoff-max-held-bytes", "0")));
        assertThat(spec.handoffHold()).as("at the max").isEqualTo(Duration.ofSeconds(30));
        assertThat(spec.handoffMaxHeld()).as("at the max").isEqualTo(100_000);
        assertThat(spec.handoffMaxHeldBytes()).isZero();
        assertThat(Specs.forwarder(withProps(Map.of("spector.routing.gateway.handoff-hold", "0s")))
                        .handoffHold())
                .as("0: no hold")
                .isZero();
        assertThat(refused(Map.of("spector.routing.gateway.handoff-hold", "30001ms"))
                        .problems())
                .singleElement()
                .satisfies(p -> assertThat(p).contains("handoff-hold"));
        assertThat(refused(Map.of("spector.routing.gateway.handoff-max-held", "100001"))
                        .problems())
                .singleElement()
                .satisfies(p -> assertThat(p).contains("handoff-max-held"));
        assertThat(refused(Map.of("spector.routing.gateway.handoff-max-held-bytes", "-1"))
                        .problems())
                .singleElement()
                .satisfies(p -> assertThat(p).contains("handoff-max-held-bytes"));
    }

    // ---- Durations ----

    @Test
    void durations_everyDocumentedForm_isRead() {
        assertThat(withProps(Map.of("spector.routing.gateway.owner-timeout", "200ms"))
                        .routing()
                        .gateway()
                        .ownerTimeout())
                .isEqualTo(Duration.ofMillis(200));
        assertThat(withProps(Map.of("spector.routing.gateway.owner-timeout", "10s"))
                        .routing()
                        .gateway()
                        .ownerTimeout())
                .isEqualTo(Duration.ofSeconds(10));
        assertThat(withProps(Map.of("spector.routing.gateway.owner-timeout", "5m"))
                        .routing()
                        .gateway()
                        .ownerTimeout())
                .isEqualTo(Duration.ofMinutes(5));
        assertThat(withProps(Map.of("spector.routing.gateway.owner-timeout", "1h"))
                        .routing()
                        .gateway()
                        .ownerTimeout())
                .isEqualTo(Duration.ofHours(1));
        assertThat(withProps(Map.of("spector.routing.gateway.owner-timeout", "PT10S"))
                        .routing()
                        .gateway()
                        .ownerTimeout())
                .as("ISO-8601")
                .isEqualTo(Duration.ofSeconds(10));
        assertThat(withProps(Map.of("spector.routing.redis.timeout-ms", "150"))
                        .routing()
                        .redis()
                        .timeout())
                .as("a bare number in a -ms key is milliseconds")
                .isEqualTo(Duration.ofMillis(150));
        assertThat(withProps(Map.of("spector.routing.redis.ttl-seconds", "1m"))
                        .routing()
                        .redis()
                        .ttl())
                .as("a -seconds key also takes a unit")
                .isEqualTo(Duration.ofMinutes(1));
    }

    @Test
    void durations_badOrNotPositive_areRefusedWithTheExpectation() {
        assertThat(refused(Map.of("spector.routing.redis.timeout-ms", "-5")).problems())
                .singleElement()
                .asString()
                .startsWith("spector.routing.redis.timeout-ms: -5 (expected: a duration > 0, e.g. 200ms");
        for (String bad : List.of("10", "0s", "-5s", "PT-1S", "ten seconds", "5d", "9999999999999999999h")) {
            assertThat(refused(Map.of("spector.routing.gateway.owner-timeout", bad))
                            .getMessage())
                    .as("owner-timeout '%s' must be refused", bad)
                    .contains("spector.routing.gateway.owner-timeout: " + bad + " (expected: a duration > 0");
        }
        assertThat(withProps(Map.of("spector.routing.gateway.stream-idle-timeout", "8760h"))
                        .routing()
                        .gateway()
                        .streamIdleTimeout())
                .as("at the longest duration")
                .isEqualTo(SettingsReader.MAX_DURATION);
        assertThat(refused(Map.of("spector.routing.gateway.stream-idle-timeout", "8761h"))
                        .getMessage())
                .as("one past the longest duration")
                .contains("spector.routing.gateway.stream-idle-timeout: 8761h");
    }

    // ---- Reporting ----

    @Test
    void load_severalBadKeys_reportsThemAllOnePerLine() {
        Map<String, String> props = required();
        props.remove("spector.cell.role");
        props.put("spector.routing.gateway.retry-max", "3");
        props.put("spector.server.port", "70000");
        props.put("spector.routing.redis.enabled", "yes");

        SettingsException e = refusedExactly(props);

        assertThat(e.problems())
                .as("every problem, in the documented key order")
                .hasSize(4)
                .satisfiesExactly(
                        p -> assertThat(p).startsWith("spector.cell.role: "),
                        p -> assertThat(p).startsWith("spector.routing.redis.enabled: yes (expected: true or false)"),
                        p -> assertThat(p).startsWith("spector.routing.gateway.retry-max: 3 "),
                        p -> assertThat(p).startsWith("spector.server.port: 70000 "));
        assertThat(String.valueOf(e.getMessage()).split("\n", -1))
                .as("a headline, then one problem per line")
                .hasSize(5);
    }

    @Test
    void describe_everyKey_withSecretsRedacted() {
        GatewaySettings s = withProps(Map.of(
                "spector.uplink.tokens",
                "w1=" + HASH.toUpperCase(Locale.ROOT),
                "spector.routing.redis.uri",
                "redis://:hunter2@redis.internal:6379/0"));

        Map<String, String> d = s.describe();

        assertThat(d.keySet()).as("every key, in order").containsExactlyElementsOf(Keys.ALL);
        assertThat(d.get("spector.security.jwt.hmac-secret")).isEqualTo("<redacted>");
        assertThat(d.get("spector.uplink.tokens")).isEqualTo("w1=<redacted>");
        assertThat(d.get("spector.routing.redis.uri")).isEqualTo("redis://<redacted>@redis.internal:6379/0");
        assertThat(d.get("spector.routing.redis.timeout-ms")).isEqualTo("200ms");
        assertThat(String.join(" ", d.values()))
                .as("no secret appears anywhere in describe()")
                .doesNotContain(SECRET)
                .doesNotContain("hunter2")
                .doesNotContainIgnoringCase(HASH);
        assertThat(s.uplink().tokens()).containsExactly(Map.entry("w1", HASH));
    }

    @Test
    void toString_settingsAndEverySection_showsNoSecret() {
        GatewaySettings s = withProps(Map.of(
                "spector.uplink.tokens",
                "w1=" + HASH,
                "spector.routing.redis.uri",
                "redis://:hunter2@redis.internal:6379/0",
                "spector.security.jwt.jwk-set-uri",
                "https://user:hunter3@idp.example.com/jwks"));

        List<Object> shown = List.of(
                s,
                s.cell(),
                s.routing(),
                s.routing().redis(),
                s.uplink(),
                s.security(),
                s.security().jwt(),
                s.cors(),
                s.server());

        assertThat(shown)
                .as("a record's own toString would print every component")
                .allSatisfy(o -> assertThat(o.toString())
                        .doesNotContain(SECRET)
                        .doesNotContain("hunter2")
                        .doesNotContain("hunter3")
                        .doesNotContainIgnoringCase(HASH));
        assertThat(s.toString()).isEqualTo("GatewaySettings" + s.describe());
    }
}
