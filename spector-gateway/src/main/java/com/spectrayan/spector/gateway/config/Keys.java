package com.spectrayan.spector.gateway.config;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every key the gateway reads, in the order docs/CONFIG.md lists them, and the defaults of those
 * that have one, gathered from the sections that own them (the seeds' numbers, as {@link
 * com.spectrayan.spector.contract.Limits} holds them).
 */
final class Keys {
    static final String CELL_ID = "spector.cell.id";
    static final String CELL_ROLE = "spector.cell.role";
    static final String CELL_NODE_ID = "spector.cell.node-id";
    static final String RING_MEMBERS = "spector.cell.ring-members";
    static final String RING_EPOCH = "spector.cell.ring-epoch";
    static final String CELL_PEER_SECRET = "spector.cell.peer-secret";
    static final String CELL_PEER_SECRET_PREVIOUS = "spector.cell.peer-secret-previous";

    static final String CAFFEINE_TTL = "spector.routing.caffeine.ttl-seconds";
    static final String CAFFEINE_MAX_SIZE = "spector.routing.caffeine.max-size";
    static final String REDIS_ENABLED = "spector.routing.redis.enabled";
    static final String REDIS_URI = "spector.routing.redis.uri";
    static final String REDIS_TTL = "spector.routing.redis.ttl-seconds";
    static final String REDIS_TIMEOUT = "spector.routing.redis.timeout-ms";
    static final String RETRY_MAX = "spector.routing.gateway.retry-max";
    static final String MAX_BODY = "spector.routing.gateway.max-buffered-body-bytes";
    static final String REPLAY_BUFFER = "spector.routing.gateway.replay-buffer-bytes";
    static final String REQUEST_BUFFER = "spector.routing.gateway.request-buffer-bytes";
    static final String OWNER_TIMEOUT = "spector.routing.gateway.owner-timeout";
    static final String STREAM_IDLE_TIMEOUT = "spector.routing.gateway.stream-idle-timeout";
    static final String OWNER_CONNECTIONS = "spector.routing.gateway.owner-connections";
    static final String OWNER_STREAMS = "spector.routing.gateway.owner-streams";
    static final String OWNER_DOWN_AFTER = "spector.routing.gateway.owner-down-after";
    static final String OWNER_DOWN_BACKOFF = "spector.routing.gateway.owner-down-backoff";
    static final String OWNER_DOWN_BACKOFF_MAX = "spector.routing.gateway.owner-down-backoff-max";
    static final String HANDOFF_HOLD = "spector.routing.gateway.handoff-hold";
    static final String HANDOFF_MAX_HELD = "spector.routing.gateway.handoff-max-held";
    static final String HANDOFF_MAX_HELD_BYTES = "spector.routing.gateway.handoff-max-held-bytes";

    static final String UPLINK_TOKENS = "spector.uplink.tokens";
    static final String RELAY_DEADLINE = "spector.uplink.relay.deadline";
    static final String RELAY_MAX_PER_WORKER = "spector.uplink.relay.max-per-worker";
    static final String RELAY_MAX_UPGRADES_PER_WORKER = "spector.uplink.relay.max-upgrades-per-worker";
    static final String MAX_LINKS_PER_WORKER = "spector.uplink.max-links-per-worker";
    static final String UPLINK_V2 = "spector.uplink.v2";

    static final String SECURITY_ENABLED = "spector.security.enabled";
    static final String JWT_HMAC_SECRET = "spector.security.jwt.hmac-secret";
    static final String JWT_PUBLIC_KEY = "spector.security.jwt.public-key-location";
    static final String JWT_JWK_SET_URI = "spector.security.jwt.jwk-set-uri";
    static final String JWT_ISSUER = "spector.security.jwt.issuer";
    static final String JWT_AUDIENCE = "spector.security.jwt.audience";
    static final String JWT_COOKIE_NAME = "spector.security.jwt.cookie-name";
    static final String JWT_ALLOW_QUERY_TOKEN = "spector.security.jwt.allow-query-token";

    static final String CORS_ORIGINS = "spector.cors.allowed-origins";
    static final String CORS_METHODS = "spector.cors.allowed-methods";
    static final String CORS_HEADERS = "spector.cors.allowed-headers";
    static final String CORS_MAX_AGE = "spector.cors.max-age";
    static final String CORS_ALLOW_CREDENTIALS = "spector.cors.allow-credentials";
    static final String CORS_EXPOSED_HEADERS = "spector.cors.exposed-headers";

    static final String SERVER_PORT = "spector.server.port";
    static final String SERVER_HOST = "spector.server.host";
    static final String SERVER_MAX_HEADER_SIZE = "spector.server.max-header-size";
    static final String SERVER_MAX_INITIAL_LINE = "spector.server.max-initial-line-length";
    static final String SERVER_IDLE_TIMEOUT = "spector.server.idle-timeout";
    static final String SERVER_HEADER_TIMEOUT = "spector.server.header-timeout";
    static final String SERVER_BODY_TIMEOUT = "spector.server.body-timeout";
    static final String SERVER_SEND_TIMEOUT = "spector.server.send-timeout";
    static final String SERVER_MAX_CONNECTIONS = "spector.server.max-connections";
    static final String SERVER_MAX_CONNECTIONS_PER_ADDRESS = "spector.server.max-connections-per-address";
    static final String SERVER_TRANSPORT = "spector.server.transport";
    static final String SERVER_SPLICE_PIPES = "spector.server.splice-pipes";
    static final String SERVER_DRAIN_TIMEOUT = "spector.server.drain-timeout";
    static final String SERVER_TRUSTED_PROXIES = "spector.server.trusted-proxies";
    static final String SERVER_ACCESS_LOG = "spector.server.access-log";
    static final String TLS_CERTIFICATE = "spector.server.tls.certificate";
    static final String TLS_PRIVATE_KEY = "spector.server.tls.private-key";
    static final String TLS_PORT = "spector.server.tls.port";
    static final String TLS_RELOAD_INTERVAL = "spector.server.tls.reload-interval";
    static final String TLS_PROVIDER = "spector.server.tls.provider";
    static final String SERVER_PEER_PORT = "spector.server.peer-port";
    static final String SERVER_PEER_ADDRESS = "spector.server.peer-address";
    static final String SERVER_ADMIN_PORT = "spector.server.admin-port";

    /** Every key, in the documented order; {@link GatewaySettings#describe()} follows it. */
    static final List<String> ALL = List.of(
            CELL_ID,
            CELL_ROLE,
            CELL_NODE_ID,
            RING_MEMBERS,
            RING_EPOCH,
            CELL_PEER_SECRET,
            CELL_PEER_SECRET_PREVIOUS,
            CAFFEINE_TTL,
            CAFFEINE_MAX_SIZE,
            REDIS_ENABLED,
            REDIS_URI,
            REDIS_TTL,
            REDIS_TIMEOUT,
            RETRY_MAX,
            MAX_BODY,
            REPLAY_BUFFER,
            REQUEST_BUFFER,
            OWNER_TIMEOUT,
            STREAM_IDLE_TIMEOUT,
            OWNER_CONNECTIONS,
            OWNER_STREAMS,
            OWNER_DOWN_AFTER,
            OWNER_DOWN_BACKOFF,
            OWNER_DOWN_BACKOFF_MAX,
            HANDOFF_HOLD,
            HANDOFF_MAX_HELD,
            HANDOFF_MAX_HELD_BYTES,
            UPLINK_TOKENS,
            RELAY_DEADLINE,
            RELAY_MAX_PER_WORKER,
            RELAY_MAX_UPGRADES_PER_WORKER,
            MAX_LINKS_PER_WORKER,
            UPLINK_V2,
            SECURITY_ENABLED,
            JWT_HMAC_SECRET,
            JWT_PUBLIC_KEY,
            JWT_JWK_SET_URI,
            JWT_ISSUER,
            JWT_AUDIENCE,
            JWT_COOKIE_NAME,
            JWT_ALLOW_QUERY_TOKEN,
            CORS_ORIGINS,
            CORS_METHODS,
            CORS_HEADERS,
            CORS_MAX_AGE,
            CORS_ALLOW_CREDENTIALS,
            CORS_EXPOSED_HEADERS,
            SERVER_PORT,
            SERVER_HOST,
            SERVER_MAX_HEADER_SIZE,
            SERVER_MAX_INITIAL_LINE,
            SERVER_IDLE_TIMEOUT,
            SERVER_HEADER_TIMEOUT,
            SERVER_BODY_TIMEOUT,
            SERVER_SEND_TIMEOUT,
            SERVER_MAX_CONNECTIONS,
            SERVER_MAX_CONNECTIONS_PER_ADDRESS,
            SERVER_TRANSPORT,
            SERVER_SPLICE_PIPES,
            SERVER_DRAIN_TIMEOUT,
            SERVER_TRUSTED_PROXIES,
            SERVER_ACCESS_LOG,
            TLS_CERTIFICATE,
            TLS_PRIVATE_KEY,
            TLS_PORT,
            TLS_RELOAD_INTERVAL,
            TLS_PROVIDER,
            SERVER_PEER_PORT,
            SERVER_PEER_ADDRESS,
            SERVER_ADMIN_PORT);

    /** The defaults, the lowest-precedence source; keys without one are optional or required. */
    static final Map<String, String> DEFAULTS = defaults();

    private Keys() {}

    private static Map<String, String> defaults() {
        Map<String, String> d = new LinkedHashMap<>();
        CellSettings.defaults(d);
        RoutingSettings.defaults(d);
        UplinkSettings.defaults(d);
        SecuritySettings.defaults(d);
        CorsSettings.defaults(d);
        ServerSettings.defaults(d);
        return Collections.unmodifiableMap(d);
    }
}
