package com.spectrayan.spector.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPairGenerator;
import java.security.NoSuchAlgorithmException;
import java.security.PublicKey;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Binding, precedence and validation of every gateway setting. */
final class GatewaySettingsTest {
    private static final String SECRET = "0123456789abcdef0123456789abcdef"; // 32 bytes
    private static final String HASH = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    @TempDir
    Path dir;

    /** The keys without which the gateway does not start. */
    private static Map<String, String> required() {
        Map<String, String> m = new HashMap<>();
        m.put("spector.cell.role", "gateway");
        m.put("spector.cell.ring-members", "owner-0");
        m.put("spector.security.jwt.hmac-secret", SECRET);
        return m;
    }

    private static GatewaySettings withProps(Map<String, String> extra) {
        Map<String, String> props = required();
        props.putAll(extra);
        return GatewaySettings.load(null, Map.of(), props);
    }

    private static SettingsException refused(Map<String, String> extra) {
        Map<String, String> props = required();
        props.putAll(extra);
        return refusedExactly(props);
    }

    private static SettingsException refusedExactly(Map<String, String> props) {
        SettingsException e =
                catchThrowableOfType(SettingsException.class, () -> GatewaySettings.load(null, Map.of(), props));
        assertThat(e).as("settings %s must be refused", props).isNotNull();
        return e;
    }

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

    // ---- Bounds, each at its limit and one past ----

    @Test
    void retryMax_atTwo_isAcceptedAndThreeIsRefused() {
        assertThat(withProps(Map.of("spector.routing.gateway.retry-max", "2"))
                        .routing()
                        .gateway()
                        .retryMax())
                .isEqualTo(2);
        assertThat(withProps(Map.of("spector.routing.gateway.retry-max", "0"))
                        .routing()
                        .gateway()
                        .retryMax())
                .isEqualTo(0);

        assertThat(refused(Map.of("spector.routing.gateway.retry-max", "3")).problems())
                .as("retry-max past 2 breaks the three-attempt rule")
                .containsExactly(
                        "spector.routing.gateway.retry-max: 3 (expected: an integer in 0..2, the retargets after an owner's 421)");
        assertThat(refused(Map.of("spector.routing.gateway.retry-max", "-1")).getMessage())
                .contains("spector.routing.gateway.retry-max: -1");
    }

    @Test
    void maxConnections_atOne_isAcceptedAndZeroIsRefused() {
        assertThat(withProps(Map.of("spector.server.max-connections", "1"))
                        .server()
                        .maxConnections())
                .isEqualTo(1);
        assertThat(withProps(Map.of("spector.server.max-connections", "2147483647"))
                        .server()
                        .maxConnections())
                .isEqualTo(Integer.MAX_VALUE);

        assertThat(refused(Map.of("spector.server.max-connections", "0")).getMessage())
                .contains("spector.server.max-connections: 0 (expected: an integer >= 1)");
        assertThat(refused(Map.of("spector.server.max-connections", "2147483648"))
                        .getMessage())
                .as("past an int")
                .contains("spector.server.max-connections: 2147483648");
    }

    @Test
    void maxHeaderSize_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.server.max-header-size", "1024"))
                        .server()
                        .maxHeaderSize())
                .isEqualTo(ServerSettings.MIN_HEADER_SIZE);
        assertThat(withProps(Map.of("spector.server.max-header-size", "1048576"))
                        .server()
                        .maxHeaderSize())
                .isEqualTo(ServerSettings.MAX_HEADER_SIZE_LIMIT);

        assertThat(refused(Map.of("spector.server.max-header-size", "1023")).getMessage())
                .contains("spector.server.max-header-size: 1023 (expected: an integer in 1024..1048576 bytes)");
        assertThat(refused(Map.of("spector.server.max-header-size", "1048577")).getMessage())
                .contains("spector.server.max-header-size: 1048577");
    }

    @Test
    void maxInitialLineLength_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.server.max-initial-line-length", "256"))
                        .server()
                        .maxInitialLineLength())
                .isEqualTo(256);
        assertThat(withProps(Map.of("spector.server.max-initial-line-length", "65536"))
                        .server()
                        .maxInitialLineLength())
                .isEqualTo(65536);

        assertThat(refused(Map.of("spector.server.max-initial-line-length", "255"))
                        .getMessage())
                .contains("spector.server.max-initial-line-length: 255");
        assertThat(refused(Map.of("spector.server.max-initial-line-length", "65537"))
                        .getMessage())
                .contains("spector.server.max-initial-line-length: 65537");
    }

    @Test
    void port_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.server.port", "0")).server().port())
                .isZero();
        assertThat(withProps(Map.of("spector.server.port", "65535")).server().port())
                .isEqualTo(65535);

        assertThat(refused(Map.of("spector.server.port", "65536")).getMessage())
                .contains("spector.server.port: 65536 (expected: a port in 0..65535");
        assertThat(refused(Map.of("spector.server.port", "-1")).getMessage()).contains("spector.server.port: -1");
        assertThat(refused(Map.of("spector.server.port", "http")).getMessage()).contains("spector.server.port: http");
    }

    @Test
    void replayBuffer_upToTheBodyCap_isAcceptedAndOnePastIsRefused() {
        GatewaySettings atCap = withProps(Map.of(
                "spector.routing.gateway.max-buffered-body-bytes", "4096",
                "spector.routing.gateway.replay-buffer-bytes", "4096"));
        assertThat(atCap.routing().gateway().replayBufferBytes()).isEqualTo(4096);
        assertThat(withProps(Map.of("spector.routing.gateway.replay-buffer-bytes", "0"))
                        .routing()
                        .gateway()
                        .replayBufferBytes())
                .as("0 turns replay off")
                .isZero();

        SettingsException e = refused(Map.of(
                "spector.routing.gateway.max-buffered-body-bytes", "4096",
                "spector.routing.gateway.replay-buffer-bytes", "4097"));
        assertThat(e.problems())
                .as("the replay buffer never exceeds the body cap")
                .containsExactly("spector.routing.gateway.replay-buffer-bytes: 4097 (expected: an integer in 0..4096"
                        + " bytes, at most spector.routing.gateway.max-buffered-body-bytes)");
    }

    @Test
    void maxBufferedBody_atOneGib_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.routing.gateway.max-buffered-body-bytes", "1073741824"))
                        .routing()
                        .gateway()
                        .maxBufferedBodyBytes())
                .isEqualTo(RoutingSettings.MAX_BODY_BYTES_LIMIT);

        assertThat(refused(Map.of("spector.routing.gateway.max-buffered-body-bytes", "1073741825"))
                        .getMessage())
                .contains("spector.routing.gateway.max-buffered-body-bytes: 1073741825");
        assertThat(refused(Map.of("spector.routing.gateway.max-buffered-body-bytes", "0"))
                        .getMessage())
                .contains("spector.routing.gateway.max-buffered-body-bytes: 0");
    }

    @Test
    void relayMaxPerWorker_atSixtyFour_isAcceptedAndSixtyFiveIsRefused() {
        assertThat(withProps(Map.of("spector.uplink.relay.max-per-worker", "64"))
                        .uplink()
                        .relayMaxPerWorker())
                .isEqualTo(64);

        assertThat(refused(Map.of("spector.uplink.relay.max-per-worker", "65")).getMessage())
                .contains("spector.uplink.relay.max-per-worker: 65 (expected: an integer in 1..64)");
        assertThat(refused(Map.of("spector.uplink.relay.max-per-worker", "0")).getMessage())
                .contains("spector.uplink.relay.max-per-worker: 0");
    }

    @Test
    void caffeine_atTheirLowerLimits_areAcceptedAndOnePastIsRefused() {
        GatewaySettings s = withProps(Map.of(
                "spector.routing.caffeine.ttl-seconds", "1",
                "spector.routing.caffeine.max-size", "1",
                "spector.cell.ring-epoch", "0"));
        assertThat(s.routing().caffeine().ttl()).isEqualTo(Duration.ofSeconds(1));
        assertThat(s.routing().caffeine().maxSize()).isEqualTo(1);
        assertThat(s.cell().ringEpoch()).isZero();

        SettingsException e = refused(Map.of(
                "spector.routing.caffeine.ttl-seconds", "0",
                "spector.routing.caffeine.max-size", "0",
                "spector.cell.ring-epoch", "-1"));
        assertThat(e.problems())
                .hasSize(3)
                .anySatisfy(p -> assertThat(p).startsWith("spector.routing.caffeine.ttl-seconds: 0 "))
                .anySatisfy(p -> assertThat(p).startsWith("spector.routing.caffeine.max-size: 0 "))
                .anySatisfy(p -> assertThat(p).startsWith("spector.cell.ring-epoch: -1 "));
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

    @Test
    void headerTimeout_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.server.header-timeout", "1s"))
                        .server()
                        .headerTimeout())
                .isEqualTo(ServerSettings.MIN_CLIENT_TIMEOUT);
        assertThat(withProps(Map.of("spector.server.header-timeout", "10m"))
                        .server()
                        .headerTimeout())
                .isEqualTo(ServerSettings.MAX_HEADER_TIMEOUT);

        assertThat(refused(Map.of("spector.server.header-timeout", "999ms")).problems())
                .containsExactly("spector.server.header-timeout: 999ms (expected: a duration in 1s..10m, e.g. 200ms,"
                        + " 10s, 5m, 1h or PT10S)");
        assertThat(refused(Map.of("spector.server.header-timeout", "601s")).getMessage())
                .contains("spector.server.header-timeout: 601s (expected: a duration in 1s..10m");
        assertThat(refused(Map.of("spector.server.header-timeout", "30")).getMessage())
                .as("a bare number has no unit in a key not named -ms or -seconds")
                .contains("spector.server.header-timeout: 30 ");
    }

    @Test
    void bodyTimeout_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.server.body-timeout", "1s"))
                        .server()
                        .bodyTimeout())
                .isEqualTo(ServerSettings.MIN_CLIENT_TIMEOUT);
        assertThat(withProps(Map.of("spector.server.body-timeout", "1h"))
                        .server()
                        .bodyTimeout())
                .isEqualTo(ServerSettings.MAX_BODY_TIMEOUT);

        assertThat(refused(Map.of("spector.server.body-timeout", "999ms")).problems())
                .containsExactly("spector.server.body-timeout: 999ms (expected: a duration in 1s..1h, e.g. 200ms,"
                        + " 10s, 5m, 1h or PT10S)");
        assertThat(refused(Map.of("spector.server.body-timeout", "3601s")).getMessage())
                .contains("spector.server.body-timeout: 3601s (expected: a duration in 1s..1h");
    }

    // ---- Ring members ----

    @Test
    void ringMembers_bareAndExplicit_keepTheirOrder() {
        GatewaySettings s =
                withProps(Map.of("spector.cell.ring-members", " owner-2 , owner-0=http://10.0.0.1:9000 ,owner-1"));

        assertThat(s.cell().ringMembers())
                .as("a bare id is http://<id>:7070; order is kept")
                .containsExactly(
                        Map.entry("owner-2", URI.create("http://owner-2:7070")),
                        Map.entry("owner-0", URI.create("http://10.0.0.1:9000")),
                        Map.entry("owner-1", URI.create("http://owner-1:7070")));
    }

    @Test
    void ringMembers_duplicateId_isRefused() {
        assertThat(refused(Map.of("spector.cell.ring-members", "owner-0,owner-0=http://h:1"))
                        .problems())
                .singleElement()
                .asString()
                .startsWith("spector.cell.ring-members: owner-0=http://h:1 (expected: each id once");
    }

    @Test
    void ringMembers_badUrls_areRefusedEachByName() {
        SettingsException e = refused(Map.of(
                "spector.cell.ring-members",
                "a=https://h:1,b=http://h,c=ftp://h:21,d=http://h:1/path,e=http://u@h:1,f=not a url,g_h"));

        assertThat(e.problems())
                .as("https, no port, another scheme, a path, userinfo, spaces, a non-host bare id")
                .hasSize(7)
                .allSatisfy(p -> assertThat(p).startsWith("spector.cell.ring-members: "));
    }

    @Test
    void ringMembers_missingOrEmptyEntry_isRefused() {
        Map<String, String> props = required();
        props.remove("spector.cell.ring-members");
        assertThat(refusedExactly(props).problems())
                .singleElement()
                .asString()
                .startsWith("spector.cell.ring-members: <unset> (expected: ");
        assertThat(refused(Map.of("spector.cell.ring-members", "a,,b")).getMessage())
                .contains("without empty entries");
    }

    @Test
    void ringMembers_idOf255Chars_isAcceptedAnd256IsRefused() {
        String id255 = "o".repeat(255);
        assertThat(withProps(Map.of("spector.cell.ring-members", id255 + "=http://h:1"))
                        .cell()
                        .ringMembers())
                .containsOnlyKeys(id255);
        assertThat(refused(Map.of("spector.cell.ring-members", "o".repeat(256) + "=http://h:1"))
                        .getMessage())
                .contains("spector.cell.ring-members: ");
    }

    // ---- Role and cell ----

    @Test
    void role_missing_isRefusedNamingTheKey() {
        Map<String, String> props = required();
        props.remove("spector.cell.role");

        assertThat(refusedExactly(props).problems())
                .singleElement()
                .asString()
                .as("the refusal names spector.cell.role and says it must be gateway")
                .isEqualTo("spector.cell.role: <unset> (expected: gateway; the gateway refuses to start unless"
                        + " spector.cell.role=gateway)");
    }

    @Test
    void role_notGateway_isRefusedNamingTheKey() {
        assertThat(refused(Map.of("spector.cell.role", "owner")).getMessage())
                .contains("spector.cell.role: owner (expected: gateway");
    }

    @Test
    void cellId_notARoutingName_isRefused() {
        assertThat(withProps(Map.of("spector.cell.id", "eu-1.a_b")).cell().id()).isEqualTo("eu-1.a_b");
        assertThat(refused(Map.of("spector.cell.id", "EU")).getMessage())
                .contains("spector.cell.id: EU (expected: a routing name [a-z0-9][a-z0-9._-]{0,62})");
        assertThat(refused(Map.of("spector.cell.id", "a".repeat(64))).getMessage())
                .as("64 chars is one past a routing name")
                .contains("spector.cell.id: ");
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

    // ---- Security ----

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

    // ---- Uplink, CORS, server lists ----

    @Test
    void uplinkTokens_badHexOrDuplicate_isRefused() {
        assertThat(refused(Map.of("spector.uplink.tokens", "w1=" + HASH.substring(1)))
                        .problems())
                .as("63 hex chars")
                .singleElement()
                .asString()
                .startsWith("spector.uplink.tokens: w1=<redacted> (expected: workerId=<64 hex chars");
        assertThat(refused(Map.of("spector.uplink.tokens", "w1=" + HASH.replace('a', 'g')))
                        .getMessage())
                .contains("spector.uplink.tokens: w1=<redacted>");
        assertThat(refused(Map.of("spector.uplink.tokens", "w1=" + HASH + ",w1=" + HASH))
                        .getMessage())
                .contains("listed twice");
    }

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

    @Test
    void trustedProxies_ipLiterals_areReadAndNamesRefusedWithoutDns() {
        GatewaySettings s = withProps(Map.of("spector.server.trusted-proxies", "10.0.0.1, ::1,[fe80::1]"));

        assertThat(s.server().trustedProxies())
                .extracting(InetAddress::getHostAddress)
                .containsExactly("10.0.0.1", "0:0:0:0:0:0:0:1", "fe80:0:0:0:0:0:0:1");
        SettingsException e = refused(Map.of("spector.server.trusted-proxies", "proxy.internal,256.0.0.1,10.0.0.0/8"));
        assertThat(e.problems())
                .as("a name, an octet past 255, a CIDR")
                .hasSize(3)
                .allSatisfy(p -> assertThat(p).startsWith("spector.server.trusted-proxies: "));
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
