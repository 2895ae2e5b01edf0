package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsReader.show;
import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import io.smallrye.config.EnvConfigSource;
import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfigBuilder;
import io.smallrye.config.source.yaml.YamlConfigSource;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.security.PublicKey;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An immutable snapshot of every gateway setting (docs/CONFIG.md), bound with SmallRye Config and
 * validated as a whole.
 *
 * <p>Sources, highest precedence first: system properties, the environment (each key's form in
 * upper case with {@code .} and {@code -} as {@code _}: {@code SPECTOR_CELL_RING_MEMBERS}), a YAML
 * file, then the documented defaults. {@link #load(Path, Map, Map)} reads only the sources it is
 * given, never the process environment behind a caller's back.
 *
 * <p>A bad value stops the process at start: {@link SettingsException} lists every problem, one
 * per line, as {@code key: value (expected: ...)}; secrets are never shown. Durations are written
 * {@code 200ms}, {@code 10s}, {@code 5m}, {@code 1h} or ISO-8601 ({@code PT10S}); keys named
 * {@code -ms} or {@code -seconds} also take a bare number in that unit.
 *
 * <p>Thread-safe: immutable.
 */
public final class GatewaySettings {
    private static final Logger log = LoggerFactory.getLogger(GatewaySettings.class);

    /** The only role the gateway process starts under ({@code spector.cell.role}). */
    public static final String GATEWAY_ROLE = "gateway";

    /** The port a ring member given as a bare id is dialled on: {@code http://<id>:7070}. */
    public static final int DEFAULT_OWNER_PORT = 7070;

    /** Precedence of system properties, the highest (SmallRye's own ordinal for them). */
    static final int SYSTEM_PROPERTIES_ORDINAL = 400;

    /** Precedence of the environment (SmallRye's own ordinal for it). */
    static final int ENVIRONMENT_ORDINAL = 300;

    /** Precedence of the YAML file, below the environment. */
    static final int YAML_ORDINAL = 100;

    /** The largest request body cap, {@code spector.routing.gateway.max-buffered-body-bytes}: 1 GiB. */
    static final long MAX_BODY_BYTES_LIMIT = 1024L * 1024 * 1024;

    /** The smallest request head cap, {@code spector.server.max-header-size}. */
    static final int MIN_HEADER_SIZE = 1024;

    /** The largest request head cap, {@code spector.server.max-header-size}: 1 MiB. */
    static final int MAX_HEADER_SIZE_LIMIT = 1024 * 1024;

    /** The smallest request line cap, {@code spector.server.max-initial-line-length}. */
    static final int MIN_INITIAL_LINE_LENGTH = 256;

    /** The largest request line cap, {@code spector.server.max-initial-line-length}. */
    static final int MAX_INITIAL_LINE_LENGTH_LIMIT = 65536;

    /** The most relays at once per worker, {@code spector.uplink.relay.max-per-worker}. */
    static final int MAX_RELAYS_PER_WORKER_LIMIT = 64;

    /** The fewest bytes of an HMAC secret: 256 bits, as HS256 needs (RFC 7518 section 3.2). */
    static final int MIN_HMAC_SECRET_BYTES = 32;

    /** Chars of a worker id in {@code spector.uplink.tokens}, of {@code [A-Za-z0-9._-]}. */
    static final int MAX_WORKER_ID_CHARS = 64;

    /** Hex chars of a SHA-256 token hash in {@code spector.uplink.tokens}. */
    static final int TOKEN_HASH_HEX_CHARS = 64;

    /** The longest {@code spector.server.drain-timeout}: a drain longer than this is a stuck stop. */
    public static final Duration MAX_DRAIN_TIMEOUT = Duration.ofMinutes(10);

    /** The shortest {@code spector.server.header-timeout} and {@code body-timeout}: less cuts honest slow clients. */
    static final Duration MIN_CLIENT_TIMEOUT = Duration.ofSeconds(1);

    /** The longest {@code spector.server.header-timeout}: a request head slower than this is an attack. */
    static final Duration MAX_HEADER_TIMEOUT = Duration.ofMinutes(10);

    /** The longest {@code spector.server.body-timeout}: a longer gap between body reads is a stalled client. */
    static final Duration MAX_BODY_TIMEOUT = Duration.ofHours(1);

    /** The longest preflight cache time, {@code spector.cors.max-age} (browsers cap it lower). */
    static final Duration MAX_CORS_MAX_AGE = Duration.ofHours(24);

    /** The longest duration any setting takes, so that no conversion to milliseconds overflows. */
    static final Duration MAX_DURATION = Duration.ofDays(365);

    /** Chars of a host name or literal in {@code spector.server.host} (RFC 1035 names, IPv6). */
    static final int MAX_HOST_CHARS = 253;

    /** What {@link #describe()} shows in place of a secret. */
    static final String REDACTED = "<redacted>";

    private static final Pattern ROUTING_NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");
    private static final Pattern WORKER_ID = Pattern.compile("[A-Za-z0-9._-]{1," + MAX_WORKER_ID_CHARS + "}");
    private static final Pattern HEX = Pattern.compile("[0-9a-fA-F]{" + TOKEN_HASH_HEX_CHARS + "}");
    private static final Pattern IPV4 = Pattern.compile("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})");
    private static final Pattern IPV6_CHARS = Pattern.compile("[0-9a-fA-F:.]+");
    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");
    private static final Pattern USERINFO = Pattern.compile("//[^/?#@]*@");
    private static final Set<String> REDIS_SCHEMES =
            Set.of("redis", "rediss", "redis-sentinel", "rediss-sentinel", "redis-socket");
    private static final String DURATION_EXAMPLES = "e.g. 200ms, 10s, 5m, 1h or PT10S";

    private final String cellId;
    private final String cellRole;
    private final @Nullable String nodeId;
    private final Map<String, URI> ringMembers;
    private final long ringEpoch;

    private final Duration caffeineTtl;
    private final long caffeineMaxSize;
    private final boolean redisEnabled;
    private final URI redisUri;
    private final Duration redisTtl;
    private final Duration redisTimeout;
    private final int retryMax;
    private final long maxBufferedBodyBytes;
    private final long replayBufferBytes;
    private final Duration ownerTimeout;
    private final Duration streamIdleTimeout;

    private final Map<String, String> uplinkTokens;
    private final Duration relayDeadline;
    private final int relayMaxPerWorker;

    private final boolean securityEnabled;
    private final @Nullable String jwtHmacSecret;
    private final @Nullable Path jwtPublicKeyLocation;
    private final @Nullable PublicKey jwtPublicKey;
    private final @Nullable URI jwkSetUri;
    private final @Nullable String jwtIssuer;
    private final @Nullable String jwtAudience;
    private final @Nullable String jwtCookieName;
    private final boolean allowQueryToken;

    private final List<String> corsAllowedOrigins;
    private final List<String> corsAllowedMethods;
    private final List<String> corsAllowedHeaders;
    private final Duration corsMaxAge;
    private final boolean corsAllowCredentials;

    private final int serverPort;
    private final String serverHost;
    private final int maxHeaderSize;
    private final int maxInitialLineLength;
    private final Duration idleTimeout;
    private final Duration headerTimeout;
    private final Duration bodyTimeout;
    private final int maxConnections;
    private final Duration drainTimeout;
    private final List<InetAddress> trustedProxies;

    private final List<String> warnings;

    private GatewaySettings(SettingsReader r, List<String> earlyProblems, List<String> warnings) {
        List<String> notes = new ArrayList<>(warnings);

        // ---- Cell ----
        this.cellId = routingName(r, Keys.CELL_ID);
        String role = r.raw(Keys.CELL_ROLE);
        if (role == null || !role.equals(GATEWAY_ROLE)) {
            r.problem(
                    Keys.CELL_ROLE,
                    role == null ? SettingsReader.UNSET : show(role),
                    GATEWAY_ROLE + "; the gateway refuses to start unless " + Keys.CELL_ROLE + "=" + GATEWAY_ROLE);
        }
        this.cellRole = role == null ? "" : role;
        String node = r.raw(Keys.CELL_NODE_ID);
        if (node != null && !isMemberLabel(node)) {
            r.problem(Keys.CELL_NODE_ID, show(node), memberLabelExpectation());
        }
        this.nodeId = node;
        this.ringMembers = ringMembers(r);
        this.ringEpoch = r.integer(Keys.RING_EPOCH, 0, Long.MAX_VALUE, "an integer >= 0");

        // ---- Routing ----
        this.caffeineTtl = positive(r, Keys.CAFFEINE_TTL, ChronoUnit.SECONDS, "60 (seconds) or 1m");
        this.caffeineMaxSize = r.integer(Keys.CAFFEINE_MAX_SIZE, 1, Long.MAX_VALUE, "an integer >= 1");
        this.redisEnabled = r.bool(Keys.REDIS_ENABLED);
        this.redisUri = redisUri(r);
        this.redisTtl = positive(r, Keys.REDIS_TTL, ChronoUnit.SECONDS, "30 (seconds) or 30s");
        this.redisTimeout = positive(r, Keys.REDIS_TIMEOUT, ChronoUnit.MILLIS, "200ms or 200 (ms)");
        this.retryMax = (int) r.integer(
                Keys.RETRY_MAX,
                Limits.RETARGETS.min(),
                Limits.RETARGETS.max(),
                "an integer in " + Limits.RETARGETS.min() + ".." + Limits.RETARGETS.max()
                        + ", the retargets after an owner's 421");
        this.maxBufferedBodyBytes = r.integer(
                Keys.MAX_BODY, 1, MAX_BODY_BYTES_LIMIT, "an integer in 1.." + MAX_BODY_BYTES_LIMIT + " bytes");
        this.replayBufferBytes = r.integer(
                Keys.REPLAY_BUFFER,
                0,
                maxBufferedBodyBytes,
                "an integer in 0.." + maxBufferedBodyBytes + " bytes, at most " + Keys.MAX_BODY);
        this.ownerTimeout = positive(r, Keys.OWNER_TIMEOUT, null, "10s");
        this.streamIdleTimeout = positive(r, Keys.STREAM_IDLE_TIMEOUT, null, "5m");

        // ---- Uplink ----
        this.uplinkTokens = uplinkTokens(r);
        this.relayDeadline = positive(r, Keys.RELAY_DEADLINE, null, "330s");
        this.relayMaxPerWorker = (int) r.integer(
                Keys.RELAY_MAX_PER_WORKER,
                1,
                MAX_RELAYS_PER_WORKER_LIMIT,
                "an integer in 1.." + MAX_RELAYS_PER_WORKER_LIMIT);

        // ---- Security ----
        this.securityEnabled = r.bool(Keys.SECURITY_ENABLED);
        String secret = r.raw(Keys.JWT_HMAC_SECRET);
        if (secret != null) {
            int bytes = secret.getBytes(StandardCharsets.UTF_8).length;
            if (bytes < MIN_HMAC_SECRET_BYTES) {
                r.problem(
                        Keys.JWT_HMAC_SECRET,
                        REDACTED + " of " + bytes + " bytes",
                        "a secret of at least " + MIN_HMAC_SECRET_BYTES
                                + " bytes, e.g. the output of 'openssl rand -base64 48'");
            }
        }
        this.jwtHmacSecret = secret;
        String keyLocation = r.raw(Keys.JWT_PUBLIC_KEY);
        Path keyPath = null;
        PublicKey key = null;
        if (keyLocation != null) {
            try {
                keyPath = Path.of(keyLocation);
                key = PemKeys.read(keyPath);
            } catch (InvalidPathException | IOException e) {
                r.problem(
                        Keys.JWT_PUBLIC_KEY,
                        show(keyLocation),
                        "a readable PEM file (" + e.getClass().getSimpleName() + ")");
            } catch (IllegalArgumentException e) {
                r.problem(Keys.JWT_PUBLIC_KEY, show(keyLocation), String.valueOf(e.getMessage()));
            }
        }
        this.jwtPublicKeyLocation = keyPath;
        this.jwtPublicKey = key;
        this.jwkSetUri = jwkSetUri(r, notes);
        this.jwtIssuer = r.raw(Keys.JWT_ISSUER);
        this.jwtAudience = r.raw(Keys.JWT_AUDIENCE);
        this.jwtCookieName = cookieName(r);
        this.allowQueryToken = r.bool(Keys.JWT_ALLOW_QUERY_TOKEN);
        if (securityEnabled && secret == null && keyLocation == null && r.raw(Keys.JWT_JWK_SET_URI) == null) {
            r.problem(
                    Keys.JWT_HMAC_SECRET + ", " + Keys.JWT_PUBLIC_KEY + ", " + Keys.JWT_JWK_SET_URI,
                    SettingsReader.UNSET,
                    "at least one of them while " + Keys.SECURITY_ENABLED + "=true; set " + Keys.SECURITY_ENABLED
                            + "=false to serve /api/v1/** without authentication");
        }
        if (!securityEnabled) {
            notes.add(Keys.SECURITY_ENABLED + "=false: /api/v1/** is served without authentication");
        }

        // ---- CORS ----
        this.corsAllowedOrigins = origins(r);
        this.corsAllowedMethods = tokens(r, Keys.CORS_METHODS, "HTTP methods, e.g. GET,POST");
        this.corsAllowedHeaders = tokens(r, Keys.CORS_HEADERS, "header names, e.g. Authorization,Content-Type");
        this.corsMaxAge = r.duration(
                Keys.CORS_MAX_AGE,
                ChronoUnit.SECONDS,
                Duration.ZERO,
                MAX_CORS_MAX_AGE,
                "a duration in 0s.." + Durations.format(MAX_CORS_MAX_AGE) + ", " + DURATION_EXAMPLES);
        this.corsAllowCredentials = r.bool(Keys.CORS_ALLOW_CREDENTIALS);
        if (corsAllowCredentials && corsAllowedOrigins.contains("*")) {
            r.problem(
                    Keys.CORS_ALLOW_CREDENTIALS,
                    "true with " + Keys.CORS_ORIGINS + "=*",
                    "false, or exact origins in " + Keys.CORS_ORIGINS
                            + ": the Fetch standard forbids credentials with a wildcard origin");
        } else if (corsAllowCredentials && corsAllowedOrigins.isEmpty()) {
            notes.add(Keys.CORS_ALLOW_CREDENTIALS + "=true does nothing while " + Keys.CORS_ORIGINS
                    + " is empty (CORS is off)");
        }

        // ---- Server ----
        this.serverPort = (int) r.integer(Keys.SERVER_PORT, 0, 65535, "a port in 0..65535 (0: any free port)");
        this.serverHost = host(r);
        this.maxHeaderSize = (int) r.integer(
                Keys.SERVER_MAX_HEADER_SIZE,
                MIN_HEADER_SIZE,
                MAX_HEADER_SIZE_LIMIT,
                "an integer in " + MIN_HEADER_SIZE + ".." + MAX_HEADER_SIZE_LIMIT + " bytes");
        this.maxInitialLineLength = (int) r.integer(
                Keys.SERVER_MAX_INITIAL_LINE,
                MIN_INITIAL_LINE_LENGTH,
                MAX_INITIAL_LINE_LENGTH_LIMIT,
                "an integer in " + MIN_INITIAL_LINE_LENGTH + ".." + MAX_INITIAL_LINE_LENGTH_LIMIT + " bytes");
        this.idleTimeout = positive(r, Keys.SERVER_IDLE_TIMEOUT, null, "60s");
        this.headerTimeout = clientTimeout(r, Keys.SERVER_HEADER_TIMEOUT, MAX_HEADER_TIMEOUT);
        this.bodyTimeout = clientTimeout(r, Keys.SERVER_BODY_TIMEOUT, MAX_BODY_TIMEOUT);
        this.maxConnections = (int) r.integer(Keys.SERVER_MAX_CONNECTIONS, 1, Integer.MAX_VALUE, "an integer >= 1");
        this.drainTimeout = r.duration(
                Keys.SERVER_DRAIN_TIMEOUT,
                null,
                Duration.ZERO,
                MAX_DRAIN_TIMEOUT,
                "a duration in 0s.." + Durations.format(MAX_DRAIN_TIMEOUT) + ", " + DURATION_EXAMPLES);
        this.trustedProxies = trustedProxies(r);

        this.warnings = List.copyOf(notes);
        List<String> problems = new ArrayList<>(earlyProblems);
        problems.addAll(r.problems());
        if (!problems.isEmpty()) {
            throw new SettingsException(problems);
        }
    }

    /**
     * Loads and validates the settings from the given sources only.
     *
     * @param yamlFile a YAML file, or null for none; a file that is given must be readable
     * @param environment environment variables, e.g. {@link System#getenv()}
     * @param systemProperties system properties, the highest precedence
     * @throws SettingsException listing every problem found
     */
    public static GatewaySettings load(
            @Nullable Path yamlFile, Map<String, String> environment, Map<String, String> systemProperties) {
        requireNonNull(environment, "environment");
        requireNonNull(systemProperties, "systemProperties");
        List<String> problems = new ArrayList<>();
        List<String> warnings = new ArrayList<>();
        PropertiesConfigSource sys = new PropertiesConfigSource(
                Map.copyOf(systemProperties), "system properties", SYSTEM_PROPERTIES_ORDINAL);
        SmallRyeConfigBuilder builder = new SmallRyeConfigBuilder()
                .withDefaultValues(Keys.DEFAULTS)
                .withSources(sys, new EnvConfigSource(Map.copyOf(environment), ENVIRONMENT_ORDINAL));
        warnUnknown(sys.getPropertyNames(), "a system property", warnings);
        if (yamlFile != null) {
            try {
                String text = Files.readString(yamlFile, StandardCharsets.UTF_8);
                YamlConfigSource yaml = new YamlConfigSource("YAML file " + yamlFile, text, YAML_ORDINAL);
                builder.withSources(yaml);
                warnUnknown(yaml.getPropertyNames(), "the YAML file " + yamlFile, warnings);
            } catch (IOException | RuntimeException e) { // snakeyaml refuses bad YAML unchecked
                problems.add("config file: " + show(yamlFile.toString()) + " (expected: a readable YAML file; "
                        + e.getClass().getSimpleName() + ")");
            }
        }
        GatewaySettings settings = new GatewaySettings(new SettingsReader(builder.build()), problems, warnings);
        for (String warning : settings.warnings) {
            log.warn("{}", warning);
        }
        return settings;
    }

    /**
     * Loads the settings of this process: a YAML file (or none), {@link System#getenv()} and
     * {@link System#getProperties()}.
     *
     * @throws SettingsException listing every problem found
     */
    public static GatewaySettings load(@Nullable Path yamlFile) {
        Properties props = System.getProperties();
        Map<String, String> sys = new HashMap<>();
        for (String name : props.stringPropertyNames()) {
            String value = props.getProperty(name);
            if (value != null) {
                sys.put(name, value);
            }
        }
        return load(yamlFile, System.getenv(), sys);
    }

    // ---- Cell ----

    /** Returns {@code spector.cell.id}, a routing name. */
    public String cellId() {
        return cellId;
    }

    /** Returns {@code spector.cell.role}: always {@value #GATEWAY_ROLE} once loaded. */
    public String cellRole() {
        return cellRole;
    }

    /** Returns {@code spector.cell.node-id}, or null when unset. */
    public @Nullable String nodeId() {
        return nodeId;
    }

    /** Returns {@code spector.cell.ring-members}: member id to its base URL, in the order given. */
    public Map<String, URI> ringMembers() {
        return ringMembers;
    }

    /** Returns {@code spector.cell.ring-epoch}. */
    public long ringEpoch() {
        return ringEpoch;
    }

    // ---- Routing ----

    /** Returns {@code spector.routing.caffeine.ttl-seconds}, L1's time to live. */
    public Duration caffeineTtl() {
        return caffeineTtl;
    }

    /** Returns {@code spector.routing.caffeine.max-size}, L1's entries. */
    public long caffeineMaxSize() {
        return caffeineMaxSize;
    }

    /** Returns {@code spector.routing.redis.enabled}: whether L2 and the invalidation channel are used. */
    public boolean redisEnabled() {
        return redisEnabled;
    }

    /** Returns {@code spector.routing.redis.uri}; it may hold a password, so never log it as is. */
    public URI redisUri() {
        return redisUri;
    }

    /** Returns {@code spector.routing.redis.ttl-seconds}, L2's time to live. */
    public Duration redisTtl() {
        return redisTtl;
    }

    /** Returns {@code spector.routing.redis.timeout-ms}, the longest wait for one Redis command. */
    public Duration redisTimeout() {
        return redisTimeout;
    }

    /** Returns {@code spector.routing.gateway.retry-max}, the retargets after an owner's 421. */
    public int retryMax() {
        return retryMax;
    }

    /** Returns {@code spector.routing.gateway.max-buffered-body-bytes}, the request body cap. */
    public long maxBufferedBodyBytes() {
        return maxBufferedBodyBytes;
    }

    /** Returns {@code spector.routing.gateway.replay-buffer-bytes}, the body kept for a replay. */
    public long replayBufferBytes() {
        return replayBufferBytes;
    }

    /** Returns {@code spector.routing.gateway.owner-timeout}, the wait for an owner's response head. */
    public Duration ownerTimeout() {
        return ownerTimeout;
    }

    /** Returns {@code spector.routing.gateway.stream-idle-timeout}, the quiet time that closes an SSE stream. */
    public Duration streamIdleTimeout() {
        return streamIdleTimeout;
    }

    // ---- Uplink ----

    /** Returns {@code spector.uplink.tokens}: worker id to the lower-case hex SHA-256 of its token. */
    public Map<String, String> uplinkTokens() {
        return uplinkTokens;
    }

    /** Returns {@code spector.uplink.relay.deadline}, a relayed exchange's whole life. */
    public Duration relayDeadline() {
        return relayDeadline;
    }

    /** Returns {@code spector.uplink.relay.max-per-worker}, the relays running at once per worker. */
    public int relayMaxPerWorker() {
        return relayMaxPerWorker;
    }

    // ---- Security ----

    /** Returns {@code spector.security.enabled}: whether {@code /api/v1/**} needs a bearer JWT. */
    public boolean securityEnabled() {
        return securityEnabled;
    }

    /** Returns {@code spector.security.jwt.hmac-secret}, or null; a secret, never log it. */
    public @Nullable String jwtHmacSecret() {
        return jwtHmacSecret;
    }

    /** Returns {@code spector.security.jwt.public-key-location}, or null. */
    public @Nullable Path jwtPublicKeyLocation() {
        return jwtPublicKeyLocation;
    }

    /** Returns the RSA or EC key read from {@link #jwtPublicKeyLocation()}, or null. */
    public @Nullable PublicKey jwtPublicKey() {
        return jwtPublicKey;
    }

    /** Returns {@code spector.security.jwt.jwk-set-uri}, an http(s) URI, or null. */
    public @Nullable URI jwkSetUri() {
        return jwkSetUri;
    }

    /** Returns {@code spector.security.jwt.issuer}, the required {@code iss}, or null for any. */
    public @Nullable String jwtIssuer() {
        return jwtIssuer;
    }

    /** Returns {@code spector.security.jwt.audience}, a required {@code aud} member, or null for any. */
    public @Nullable String jwtAudience() {
        return jwtAudience;
    }

    /**
     * Returns {@code spector.security.jwt.cookie-name}, a cookie that may carry the bearer token
     * when a request has no {@code Authorization}, or null when tokens are never read from cookies.
     */
    public @Nullable String jwtCookieName() {
        return jwtCookieName;
    }

    /**
     * Returns {@code spector.security.jwt.allow-query-token}: whether the bearer token may come in
     * the {@code access_token} query parameter (RFC 6750 section 2.3).
     */
    public boolean allowQueryToken() {
        return allowQueryToken;
    }

    // ---- CORS ----

    /** Returns {@code spector.cors.allowed-origins}, lower case; empty means CORS is off, {@code *} any origin. */
    public List<String> corsAllowedOrigins() {
        return corsAllowedOrigins;
    }

    /** Returns {@code spector.cors.allowed-methods}. */
    public List<String> corsAllowedMethods() {
        return corsAllowedMethods;
    }

    /** Returns {@code spector.cors.allowed-headers}. */
    public List<String> corsAllowedHeaders() {
        return corsAllowedHeaders;
    }

    /** Returns {@code spector.cors.max-age}, how long a browser may cache a preflight answer. */
    public Duration corsMaxAge() {
        return corsMaxAge;
    }

    /**
     * Returns {@code spector.cors.allow-credentials}: whether allowed origins get {@code
     * Access-Control-Allow-Credentials: true}; never with {@code *} among the origins.
     */
    public boolean corsAllowCredentials() {
        return corsAllowCredentials;
    }

    // ---- Server ----

    /** Returns {@code spector.server.port}; 0 binds any free port. */
    public int serverPort() {
        return serverPort;
    }

    /** Returns {@code spector.server.host}, the address to bind. */
    public String serverHost() {
        return serverHost;
    }

    /** Returns {@code spector.server.max-header-size}, request head bytes (431 past it). */
    public int maxHeaderSize() {
        return maxHeaderSize;
    }

    /** Returns {@code spector.server.max-initial-line-length}, request line bytes (414 past it). */
    public int maxInitialLineLength() {
        return maxInitialLineLength;
    }

    /** Returns {@code spector.server.idle-timeout}; idle client connections are closed after it. */
    public Duration idleTimeout() {
        return idleTimeout;
    }

    /** Returns {@code spector.server.header-timeout}: a request's whole head must arrive within it (408 past it). */
    public Duration headerTimeout() {
        return headerTimeout;
    }

    /** Returns {@code spector.server.body-timeout}: the longest gap between two reads of a request body (then 408). */
    public Duration bodyTimeout() {
        return bodyTimeout;
    }

    /** Returns {@code spector.server.max-connections}, client connections open at once. */
    public int maxConnections() {
        return maxConnections;
    }

    /**
     * Returns {@code spector.server.drain-timeout}: on SIGTERM, how long in-flight exchanges may
     * finish before they are cut (0: cut at once).
     */
    public Duration drainTimeout() {
        return drainTimeout;
    }

    /** Returns {@code spector.server.trusted-proxies}: peers whose {@code X-Forwarded-*} are believed. */
    public List<InetAddress> trustedProxies() {
        return trustedProxies;
    }

    // ---- Reporting ----

    /**
     * Returns what an operator should know but that does not stop the start: unknown {@code
     * spector.*} keys (likely typos), security turned off, a JWK set over plain http. {@link
     * #load(Path, Map, Map)} has logged each at WARN.
     */
    public List<String> warnings() {
        return warnings;
    }

    /**
     * Returns every key with its effective value, in the documented order, for a start-up log line.
     * Secrets are redacted: the HMAC secret, the uplink token hashes, and any password in a URI.
     * An unset optional key maps to an empty string.
     */
    public Map<String, String> describe() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(Keys.CELL_ID, cellId);
        d.put(Keys.CELL_ROLE, cellRole);
        d.put(Keys.CELL_NODE_ID, orEmpty(nodeId));
        d.put(
                Keys.RING_MEMBERS,
                ringMembers.entrySet().stream()
                        .map(e -> e.getKey() + "=" + e.getValue())
                        .collect(Collectors.joining(",")));
        d.put(Keys.RING_EPOCH, String.valueOf(ringEpoch));
        d.put(Keys.CAFFEINE_TTL, Durations.format(caffeineTtl));
        d.put(Keys.CAFFEINE_MAX_SIZE, String.valueOf(caffeineMaxSize));
        d.put(Keys.REDIS_ENABLED, String.valueOf(redisEnabled));
        d.put(Keys.REDIS_URI, redactUserInfo(redisUri.toString()));
        d.put(Keys.REDIS_TTL, Durations.format(redisTtl));
        d.put(Keys.REDIS_TIMEOUT, Durations.format(redisTimeout));
        d.put(Keys.RETRY_MAX, String.valueOf(retryMax));
        d.put(Keys.MAX_BODY, String.valueOf(maxBufferedBodyBytes));
        d.put(Keys.REPLAY_BUFFER, String.valueOf(replayBufferBytes));
        d.put(Keys.OWNER_TIMEOUT, Durations.format(ownerTimeout));
        d.put(Keys.STREAM_IDLE_TIMEOUT, Durations.format(streamIdleTimeout));
        d.put(
                Keys.UPLINK_TOKENS,
                uplinkTokens.keySet().stream().map(id -> id + "=" + REDACTED).collect(Collectors.joining(",")));
        d.put(Keys.RELAY_DEADLINE, Durations.format(relayDeadline));
        d.put(Keys.RELAY_MAX_PER_WORKER, String.valueOf(relayMaxPerWorker));
        d.put(Keys.SECURITY_ENABLED, String.valueOf(securityEnabled));
        d.put(Keys.JWT_HMAC_SECRET, jwtHmacSecret == null ? "" : REDACTED);
        d.put(Keys.JWT_PUBLIC_KEY, jwtPublicKeyLocation == null ? "" : jwtPublicKeyLocation.toString());
        d.put(Keys.JWT_JWK_SET_URI, jwkSetUri == null ? "" : redactUserInfo(jwkSetUri.toString()));
        d.put(Keys.JWT_ISSUER, orEmpty(jwtIssuer));
        d.put(Keys.JWT_AUDIENCE, orEmpty(jwtAudience));
        d.put(Keys.JWT_COOKIE_NAME, orEmpty(jwtCookieName));
        d.put(Keys.JWT_ALLOW_QUERY_TOKEN, String.valueOf(allowQueryToken));
        d.put(Keys.CORS_ORIGINS, String.join(",", corsAllowedOrigins));
        d.put(Keys.CORS_METHODS, String.join(",", corsAllowedMethods));
        d.put(Keys.CORS_HEADERS, String.join(",", corsAllowedHeaders));
        d.put(Keys.CORS_MAX_AGE, Durations.format(corsMaxAge));
        d.put(Keys.CORS_ALLOW_CREDENTIALS, String.valueOf(corsAllowCredentials));
        d.put(Keys.SERVER_PORT, String.valueOf(serverPort));
        d.put(Keys.SERVER_HOST, serverHost);
        d.put(Keys.SERVER_MAX_HEADER_SIZE, String.valueOf(maxHeaderSize));
        d.put(Keys.SERVER_MAX_INITIAL_LINE, String.valueOf(maxInitialLineLength));
        d.put(Keys.SERVER_IDLE_TIMEOUT, Durations.format(idleTimeout));
        d.put(Keys.SERVER_HEADER_TIMEOUT, Durations.format(headerTimeout));
        d.put(Keys.SERVER_BODY_TIMEOUT, Durations.format(bodyTimeout));
        d.put(Keys.SERVER_MAX_CONNECTIONS, String.valueOf(maxConnections));
        d.put(Keys.SERVER_DRAIN_TIMEOUT, Durations.format(drainTimeout));
        d.put(
                Keys.SERVER_TRUSTED_PROXIES,
                trustedProxies.stream().map(InetAddress::getHostAddress).collect(Collectors.joining(",")));
        return Collections.unmodifiableMap(d);
    }

    @Override
    public String toString() {
        return "GatewaySettings" + describe();
    }

    // ---- Parsing ----

    private static Duration positive(SettingsReader r, String key, @Nullable ChronoUnit bareUnit, String example) {
        return r.duration(
                key,
                bareUnit,
                Duration.ofNanos(1),
                MAX_DURATION,
                "a duration > 0, e.g. " + example + " (at most " + Durations.format(MAX_DURATION) + ")");
    }

    private static Duration clientTimeout(SettingsReader r, String key, Duration max) {
        return r.duration(
                key,
                null,
                MIN_CLIENT_TIMEOUT,
                max,
                "a duration in " + Durations.format(MIN_CLIENT_TIMEOUT) + ".." + Durations.format(max) + ", "
                        + DURATION_EXAMPLES);
    }

    private static @Nullable String cookieName(SettingsReader r) {
        String name = r.raw(Keys.JWT_COOKIE_NAME);
        if (name != null && !TOKEN.matcher(name).matches()) {
            r.problem(
                    Keys.JWT_COOKIE_NAME,
                    show(name),
                    "a cookie name (an RFC 6265 token of letters, digits and !#$%&'*+-.^_`|~), e.g. spector_token");
            return null;
        }
        return name;
    }

    private static String routingName(SettingsReader r, String key) {
        String value = r.text(key);
        if (!ROUTING_NAME.matcher(value).matches()) {
            r.problem(key, show(value), "a routing name [a-z0-9][a-z0-9._-]{0,62}");
            return Keys.DEFAULTS.getOrDefault(key, "default");
        }
        return value;
    }

    private static boolean isMemberLabel(String label) {
        if (!Limits.RING_MEMBER_CHARS.allows(label.length())) {
            return false;
        }
        for (int i = 0; i < label.length(); i++) {
            char c = label.charAt(i);
            if (c == ',' || c <= 0x20 || c == 0x7f) {
                return false;
            }
        }
        return true;
    }

    private static String memberLabelExpectation() {
        return "an id of " + Limits.RING_MEMBER_CHARS.min() + ".." + Limits.RING_MEMBER_CHARS.max()
                + " chars without commas, spaces or control chars";
    }

    private static Map<String, URI> ringMembers(SettingsReader r) {
        String key = Keys.RING_MEMBERS;
        String expected = "id=http://host:port or a bare id (http://<id>:" + DEFAULT_OWNER_PORT + ")";
        if (r.raw(key) == null) {
            r.problem(key, SettingsReader.UNSET, "a comma-separated list of ring members, each " + expected);
            return Map.of();
        }
        List<String> entries = r.list(key);
        if (entries.size() > Limits.RING_MEMBERS.max()) {
            r.problem(key, entries.size() + " members", "1.." + Limits.RING_MEMBERS.max() + " members");
            return Map.of();
        }
        Map<String, URI> members = new LinkedHashMap<>();
        for (String entry : entries) {
            int eq = entry.indexOf('=');
            String id = (eq < 0 ? entry : entry.substring(0, eq)).strip();
            if (!isMemberLabel(id)) {
                r.problem(key, show(entry), memberLabelExpectation() + ", as " + expected);
                continue;
            }
            URI url;
            if (eq < 0) {
                url = ownerUrl("http://" + id + ":" + DEFAULT_OWNER_PORT);
                if (url == null) {
                    r.problem(key, show(entry), "a bare id that is a host name, else id=http://host:port");
                    continue;
                }
            } else {
                String text = entry.substring(eq + 1).strip();
                url = ownerUrl(text);
                if (url == null) {
                    r.problem(key, show(entry), "id=http://host:port with an http URL, a host and a port");
                    continue;
                }
            }
            if (members.putIfAbsent(id, url) != null) {
                r.problem(key, show(entry), "each id once; '" + show(id) + "' is listed twice");
            }
        }
        return Collections.unmodifiableMap(members);
    }

    private static @Nullable URI ownerUrl(String text) {
        try {
            URI u = new URI(text);
            String path = u.getRawPath();
            boolean ok = "http".equals(u.getScheme())
                    && u.getHost() != null
                    && u.getPort() > 0
                    && u.getRawUserInfo() == null
                    && u.getRawQuery() == null
                    && u.getRawFragment() == null
                    && (path == null || path.isEmpty() || path.equals("/"));
            return ok ? u : null;
        } catch (URISyntaxException e) {
            return null;
        }
    }

    private static URI redisUri(SettingsReader r) {
        String value = r.text(Keys.REDIS_URI);
        String expected = "redis://host:port or rediss://host:port (Lettuce URI forms)";
        try {
            URI u = new URI(value);
            String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
            if (REDIS_SCHEMES.contains(scheme) && (u.getHost() != null || scheme.equals("redis-socket"))) {
                return u;
            }
        } catch (URISyntaxException e) {
            // recorded below
        }
        r.problem(Keys.REDIS_URI, show(redactUserInfo(value)), expected);
        return URI.create(Keys.DEFAULTS.getOrDefault(Keys.REDIS_URI, "redis://localhost:6379"));
    }

    private static Map<String, String> uplinkTokens(SettingsReader r) {
        Map<String, String> tokens = new LinkedHashMap<>();
        String expected = "workerId=<" + TOKEN_HASH_HEX_CHARS + " hex chars of the token's SHA-256>, the id 1.."
                + MAX_WORKER_ID_CHARS + " chars of [A-Za-z0-9._-]";
        for (String entry : r.list(Keys.UPLINK_TOKENS)) {
            int eq = entry.indexOf('=');
            String id = (eq < 0 ? entry : entry.substring(0, eq)).strip();
            String hash = eq < 0 ? "" : entry.substring(eq + 1).strip();
            String shown = show(id) + "=" + REDACTED;
            if (!WORKER_ID.matcher(id).matches() || !HEX.matcher(hash).matches()) {
                r.problem(Keys.UPLINK_TOKENS, shown, expected);
            } else if (tokens.putIfAbsent(id, hash.toLowerCase(Locale.ROOT)) != null) {
                r.problem(Keys.UPLINK_TOKENS, shown, "each worker id once; '" + id + "' is listed twice");
            }
        }
        return Collections.unmodifiableMap(tokens);
    }

    private static @Nullable URI jwkSetUri(SettingsReader r, List<String> notes) {
        String value = r.raw(Keys.JWT_JWK_SET_URI);
        if (value == null) {
            return null;
        }
        try {
            URI u = new URI(value);
            String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
            if ((scheme.equals("http") || scheme.equals("https")) && u.getHost() != null) {
                if (scheme.equals("http") && !isLoopback(u.getHost())) {
                    notes.add(Keys.JWT_JWK_SET_URI + " is plain http to " + u.getHost()
                            + ": anyone on the path can substitute signing keys; use https");
                }
                return u;
            }
        } catch (URISyntaxException e) {
            // recorded below
        }
        r.problem(Keys.JWT_JWK_SET_URI, show(redactUserInfo(value)), "an http(s) URI with a host");
        return null;
    }

    private static boolean isLoopback(String host) {
        return host.equals("localhost") || host.startsWith("127.") || host.equals("[::1]");
    }

    private static List<String> origins(SettingsReader r) {
        List<String> origins = new ArrayList<>();
        for (String entry : r.list(Keys.CORS_ORIGINS)) {
            String origin = origin(entry);
            if (origin == null) {
                r.problem(
                        Keys.CORS_ORIGINS,
                        show(entry),
                        "* or origins scheme://host[:port] with an http(s) scheme and no path, e.g. "
                                + "https://app.example.com");
            } else if (!origins.contains(origin)) {
                origins.add(origin);
            }
        }
        return List.copyOf(origins);
    }

    private static @Nullable String origin(String entry) {
        if (entry.equals("*")) {
            return entry;
        }
        try {
            URI u = new URI(entry);
            String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
            boolean ok = (scheme.equals("http") || scheme.equals("https"))
                    && u.getHost() != null
                    && u.getRawUserInfo() == null
                    && (u.getRawPath() == null || u.getRawPath().isEmpty())
                    && u.getRawQuery() == null
                    && u.getRawFragment() == null;
            return ok ? entry.toLowerCase(Locale.ROOT) : null;
        } catch (URISyntaxException e) {
            return null;
        }
    }

    private static List<String> tokens(SettingsReader r, String key, String what) {
        List<String> tokens = new ArrayList<>();
        for (String entry : r.list(key)) {
            if (!TOKEN.matcher(entry).matches()) {
                r.problem(key, show(entry), "a comma-separated list of " + what + " (RFC 9110 tokens)");
            } else if (!tokens.contains(entry)) {
                tokens.add(entry);
            }
        }
        return List.copyOf(tokens);
    }

    private static String host(SettingsReader r) {
        String value = r.text(Keys.SERVER_HOST);
        boolean ok = value.length() <= MAX_HOST_CHARS;
        for (int i = 0; ok && i < value.length(); i++) {
            char c = value.charAt(i);
            ok = c > 0x20 && c < 0x7f && c != '/' && c != '@';
        }
        if (!ok) {
            r.problem(Keys.SERVER_HOST, show(value), "a host name or IP literal to bind, e.g. 0.0.0.0 or ::");
            return Keys.DEFAULTS.getOrDefault(Keys.SERVER_HOST, "0.0.0.0");
        }
        return value;
    }

    private static List<InetAddress> trustedProxies(SettingsReader r) {
        List<InetAddress> proxies = new ArrayList<>();
        for (String entry : r.list(Keys.SERVER_TRUSTED_PROXIES)) {
            InetAddress address = ipLiteral(entry);
            if (address == null) {
                r.problem(Keys.SERVER_TRUSTED_PROXIES, show(entry), "IP literals, e.g. 10.0.0.1 or ::1");
            } else {
                proxies.add(address);
            }
        }
        return List.copyOf(proxies);
    }

    /** Parses an IPv4 or IPv6 literal without ever asking DNS; null when it is not one. */
    static @Nullable InetAddress ipLiteral(String text) {
        String s = text.startsWith("[") && text.endsWith("]") ? text.substring(1, text.length() - 1) : text;
        if (s.indexOf(':') >= 0) {
            if (!IPV6_CHARS.matcher(s).matches()) {
                return null; // no zone ids, nothing that could make the JDK resolve a name
            }
        } else {
            var m = IPV4.matcher(s);
            if (!m.matches()) {
                return null;
            }
            for (int g = 1; g <= 4; g++) {
                if (Integer.parseInt(m.group(g)) > 255) {
                    return null;
                }
            }
        }
        try {
            return InetAddress.getByName(s); // a literal: parsed, never resolved
        } catch (UnknownHostException e) {
            return null;
        }
    }

    private static void warnUnknown(Iterable<String> names, String where, List<String> warnings) {
        Set<String> unknown = new TreeSet<>();
        for (String name : names) {
            int bracket = name.indexOf('[');
            String key = bracket < 0 ? name : name.substring(0, bracket);
            if (key.startsWith("spector.") && !Keys.ALL.contains(key)) {
                unknown.add(key);
            }
        }
        for (String key : unknown) {
            warnings.add("unknown key " + show(key) + " in " + where + " is ignored (a typo?)");
        }
    }

    private static String redactUserInfo(String uri) {
        return USERINFO.matcher(uri).replaceFirst(Matcher.quoteReplacement("//" + REDACTED + "@"));
    }

    private static String orEmpty(@Nullable String s) {
        return s == null ? "" : s;
    }
}
