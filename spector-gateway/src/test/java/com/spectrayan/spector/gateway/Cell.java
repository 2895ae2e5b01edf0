package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.crypto.MACSigner;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.owner.OwnerSpec;
import com.spectrayan.spector.owner.RecordedRequest;
import com.spectrayan.spector.owner.ReferenceOwner;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A real cell on loopback for scenario tests: reference owners on ephemeral ports, optional extra
 * ring members that are dead (a closed port) or silent (accepts, never answers), and a gateway in
 * this process. Everyone shares one ring; auth is on with a fresh HMAC secret.
 */
final class Cell implements AutoCloseable {
    static final String SECRET = "test-secret-0123456789-0123456789-0123456789";
    static final String TENANT = "acme";
    static final String CELL_ID = "test";

    /** The bound on a request made with {@link #request} or {@link #get}. */
    static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(20);

    final List<ReferenceOwner> owners = new ArrayList<>();
    final Map<String, URI> members = new LinkedHashMap<>();
    final KetamaRing ring;
    final GatewayServer gateway;
    final HttpClient http = HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(5))
            .version(HttpClient.Version.HTTP_1_1)
            .build();
    private final @Nullable SilentServer silent;
    private int nextNamespace;

    private Cell(Builder b) throws IOException {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < b.owners; i++) {
            ids.add("owner-" + i);
        }
        if (b.deadMember) {
            ids.add("dead-0");
        }
        if (b.silentMember) {
            ids.add("silent-0");
        }
        ids.addAll(b.extraMembers.keySet());
        this.ring = KetamaRing.of(1, ids);
        for (int i = 0; i < b.owners; i++) {
            OwnerSpec.Builder spec = OwnerSpec.builder("owner-" + i)
                    .cellId(CELL_ID)
                    .port(0)
                    .ringMembers(ids)
                    .ringEpoch(1)
                    .hmacSecret(SECRET.getBytes(StandardCharsets.UTF_8));
            ReferenceOwner owner = ReferenceOwner.start(spec.build());
            owners.add(owner);
            members.put(owner.nodeId(), URI.create("http://127.0.0.1:" + owner.port()));
        }
        if (b.deadMember) {
            members.put("dead-0", URI.create("http://127.0.0.1:" + SilentServer.closedPort()));
        }
        SilentServer s = null;
        if (b.silentMember) {
            s = SilentServer.start();
            members.put("silent-0", URI.create("http://127.0.0.1:" + s.port()));
        }
        this.silent = s;
        members.putAll(b.extraMembers);
        Map<String, String> props = new HashMap<>();
        props.put("spector.cell.role", "gateway");
        props.put("spector.cell.id", CELL_ID);
        StringBuilder ring = new StringBuilder();
        members.forEach((id, uri) -> ring.append(ring.length() == 0 ? "" : ",")
                .append(id)
                .append('=')
                .append(uri));
        props.put("spector.cell.ring-members", ring.toString());
        props.put("spector.server.port", "0");
        props.put("spector.server.host", "127.0.0.1");
        props.put("spector.server.drain-timeout", "0s"); // DrainTest sets its own
        props.put("spector.routing.redis.enabled", b.redisUri == null ? "false" : "true");
        if (b.redisUri != null) {
            props.put("spector.routing.redis.uri", b.redisUri);
        }
        props.put("spector.security.jwt.hmac-secret", SECRET);
        props.putAll(b.settings);
        this.gateway = GatewayServer.start(GatewaySettings.load(null, Map.of(), props));
    }

    static Builder builder() {
        return new Builder();
    }

    URI uri(String pathAndQuery) {
        return URI.create("http://127.0.0.1:" + gateway.port() + pathAndQuery);
    }

    /** Returns a request to the gateway with {@link #TENANT}'s token, bounded by {@link #REQUEST_TIMEOUT}. */
    /**
     * Returns a request for {@code pathAndQuery} with a token that may read it: {@link #TENANT}'s,
     * or for the status views under {@code /gateway/v1/} an operator's ({@link #adminToken}).
     */
    HttpRequest.Builder request(String pathAndQuery) {
        return HttpRequest.newBuilder(uri(pathAndQuery))
                .timeout(REQUEST_TIMEOUT)
                .header(
                        "Authorization",
                        "Bearer " + (pathAndQuery.startsWith("/gateway/v1/") ? adminToken() : token(TENANT)));
    }

    /** Sends {@link #request} as a GET and returns the answer, its body as text. */
    HttpResponse<String> get(String pathAndQuery) throws IOException, InterruptedException {
        return http.send(request(pathAndQuery).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Sends a GET without a token (a local endpoint, a refusal), bounded by {@link #REQUEST_TIMEOUT}. */
    HttpResponse<String> getWithoutToken(String pathAndQuery) throws IOException, InterruptedException {
        return http.send(
                HttpRequest.newBuilder(uri(pathAndQuery))
                        .timeout(REQUEST_TIMEOUT)
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Sends a GET with {@link #TENANT}'s token on a raw connection of its own, with {@code
     * headerLines} (each ending in CRLF, Host among them) that {@code java.net.http} would not
     * send, and returns the answer.
     */
    RawClient.Response rawGet(String pathAndQuery, String headerLines) throws IOException {
        return RawClient.exchange(
                gateway.port(),
                "GET " + pathAndQuery + " HTTP/1.1\r\n" + headerLines + "Authorization: Bearer " + token(TENANT)
                        + "\r\n\r\n");
    }

    /**
     * Sends {@code n} GETs to {@code namespace}'s echo one after another and asserts each is served
     * 200 within a second: none waited for an owner connection (the pool's acquire timeout is 2 s).
     */
    void assertServedWithoutWaiting(String namespace, int n, String beside) throws IOException, InterruptedException {
        for (int i = 0; i < n; i++) {
            long start = System.nanoTime();
            HttpResponse<String> r = get("/api/v1/namespaces/" + namespace + "/echo?i=" + i);
            assertThat(r.statusCode())
                    .as("request %d beside %s: %s", i, beside, r.body())
                    .isEqualTo(200);
            assertThat(Duration.ofNanos(System.nanoTime() - start))
                    .as("not a wait for a connection (the pool's acquire timeout is 2 s)")
                    .isLessThan(Duration.ofSeconds(1));
        }
    }

    /** Returns what the owners recorded for {@code namespace}, owner by owner, each oldest first. */
    List<RecordedRequest> recorded(String namespace) {
        return owners.stream()
                .flatMap(o -> o.requests().stream())
                .filter(r -> namespace.equals(r.namespace()))
                .toList();
    }

    /** Returns what owner {@code id} recorded for a method and path, oldest first. */
    List<RecordedRequest> served(String id, String method, String path) {
        return owner(id).requests().stream()
                .filter(q -> q.method().equals(method) && q.path().equals(path))
                .toList();
    }

    /** Returns the gateway's TLS port; fails when the cell was built without {@link Builder#tls}. */
    int tlsPort() {
        int port = gateway.tlsPort();
        if (port < 0) {
            throw new IllegalStateException("no TLS listener (expected: Cell.builder().tls(cert, key))");
        }
        return port;
    }

    ReferenceOwner owner(String id) {
        for (ReferenceOwner o : owners) {
            if (o.nodeId().equals(id)) {
                return o;
            }
        }
        throw new IllegalArgumentException("no owner " + id);
    }

    /**
     * Returns a namespace, new to this cell, whose key {@code tenant/ns} the ring gives to {@code
     * member}, so tests sharing a cell never share a namespace.
     */
    synchronized String namespaceOwnedBy(String member) {
        while (nextNamespace < 1_000_000) {
            String ns = "ns-" + nextNamespace++;
            if (ring.ownerOf(TENANT + "/" + ns).equals(member)) {
                return ns;
            }
        }
        throw new IllegalStateException("no namespace owned by " + member);
    }

    /**
     * Moves namespace {@code ns} of {@link #TENANT} from ring owner {@code from} to {@code to} at
     * {@code epoch} and {@code fence}: both owners learn the override, so {@code from} answers 421
     * naming {@code to}, and {@code to} serves it. Returns the namespace's routing key.
     */
    RoutingKey moveNamespace(String ns, String from, String to, long epoch, long fence) {
        RoutingKey key = RoutingKey.of(CELL_ID, TENANT, ns);
        owner(from).guard().setOverride(key, to, epoch, fence);
        owner(to).guard().setOverride(key, to, epoch, fence);
        return key;
    }

    /**
     * Starts {@code owner-0}, the only member of a ring at epoch 1, on a free port: the upstream of
     * the tests whose gateways run apart from a cell (replicas in this process or in their own).
     */
    static ReferenceOwner soleOwner() {
        return ReferenceOwner.start(OwnerSpec.builder("owner-0")
                .cellId(CELL_ID)
                .port(0)
                .ringMembers(List.of("owner-0"))
                .ringEpoch(1)
                .hmacSecret(SECRET.getBytes(StandardCharsets.UTF_8))
                .build());
    }

    /**
     * Returns the settings every gateway replica of a test cell shares: the gateway role in {@link
     * #CELL_ID} with {@code owner} as its ring, loopback, auth with {@link #SECRET}, Redis at {@code
     * redisUri} and the peer hop with {@code peerSecret}. Mutable: the caller adds its ports.
     */
    static Map<String, String> replicaSettings(ReferenceOwner owner, String redisUri, String peerSecret) {
        Map<String, String> s = new HashMap<>();
        s.put("spector.cell.role", "gateway");
        s.put("spector.cell.id", CELL_ID);
        s.put("spector.cell.ring-members", "owner-0=" + owner.baseUri());
        s.put("spector.cell.peer-secret", peerSecret);
        s.put("spector.server.host", "127.0.0.1");
        s.put("spector.routing.redis.enabled", "true");
        s.put("spector.routing.redis.uri", redisUri);
        s.put("spector.security.jwt.hmac-secret", SECRET);
        return s;
    }

    /**
     * Returns the value of counter {@code name} with label {@code tag=value} in a gateway's {@code
     * /actuator/prometheus} text, 0 when absent.
     */
    static double counter(String prometheusText, String name, String tag, String value) {
        Matcher m = Pattern.compile(
                        "(?m)^" + name + "\\{[^}]*" + tag + "=\"" + Pattern.quote(value) + "\"[^}]*} (\\S+)$")
                .matcher(prometheusText);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    /** Returns the lines of access log {@code log} whose path is {@code path}, oldest first. */
    static List<String> accessLogLines(Path log, String path) {
        try {
            return java.nio.file.Files.readAllLines(log).stream()
                    .filter(l -> l.contains("\"path\":\"" + path + "\""))
                    .toList();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * Returns the raw request that opens the reference owner's event stream for {@link #TENANT}
     * (it runs until the client closes): a connection that holds one is in an exchange.
     */
    static String eventStreamRequest() {
        return "GET /api/v1/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n" + "Authorization: Bearer "
                + token(TENANT) + "\r\n\r\n";
    }

    /** Returns a valid HS256 token for a tenant. */
    static String token(String tenant) {
        return token(tenant, Instant.now().plusSeconds(3600), SECRET);
    }

    /**
     * An operator's token: no tenant, the scope {@link com.spectrayan.spector.gateway.auth.Claims#ADMIN_SCOPE}
     * that reads the status views.
     */
    static String adminToken() {
        return sign(
                new JWTClaimsSet.Builder()
                        .subject("ops")
                        .claim("scope", "openid spector:admin")
                        .issueTime(Date.from(Instant.now().minusSeconds(120)))
                        .expirationTime(Date.from(Instant.now().plusSeconds(3600)))
                        .build(),
                SECRET);
    }

    /** A valid token that names no tenant (only a subject), signed with the cell's secret. */
    static String untenantedToken() {
        return sign(
                new JWTClaimsSet.Builder()
                        .subject("nobody-in-particular")
                        .issueTime(Date.from(Instant.now().minusSeconds(120)))
                        .expirationTime(Date.from(Instant.now().plusSeconds(3600)))
                        .build(),
                SECRET);
    }

    static String token(String tenant, Instant expires, String secret) {
        return sign(
                new JWTClaimsSet.Builder()
                        .subject(tenant)
                        .claim("tenant", tenant)
                        .issueTime(Date.from(Instant.now().minusSeconds(120)))
                        .expirationTime(Date.from(expires))
                        .build(),
                secret);
    }

    private static String sign(JWTClaimsSet claims, String secret) {
        SignedJWT jwt = new SignedJWT(new JWSHeader(JWSAlgorithm.HS256), claims);
        try {
            jwt.sign(new MACSigner(secret.getBytes(StandardCharsets.UTF_8)));
        } catch (JOSEException e) {
            throw new IllegalStateException(e);
        }
        return jwt.serialize();
    }

    /** Returns how many connections the silent member accepted (0 without one). */
    int silentAcceptedConnections() {
        SilentServer s = silent;
        return s == null ? 0 : s.acceptedConnections();
    }

    @Override
    public void close() {
        gateway.close();
        for (ReferenceOwner o : owners) {
            o.close();
        }
        SilentServer s = silent;
        if (s != null) {
            s.close();
        }
    }

    static final class Builder {
        int owners = 3;
        boolean deadMember;
        boolean silentMember;

        @Nullable
        String redisUri;

        final Map<String, String> settings = new HashMap<>();
        final Map<String, URI> extraMembers = new LinkedHashMap<>();

        Builder owners(int n) {
            this.owners = n;
            return this;
        }

        Builder deadMember() {
            this.deadMember = true;
            return this;
        }

        Builder silentMember() {
            this.silentMember = true;
            return this;
        }

        /** Adds a ring member the test serves itself (a scripted owner), at {@code uri}. */
        Builder member(String id, URI uri) {
            extraMembers.put(id, uri);
            return this;
        }

        Builder redis(String uri) {
            this.redisUri = uri;
            return this;
        }

        /**
         * Adds the TLS listener on a free port with a server certificate for 127.0.0.1 and
         * localhost that {@code ca} issues now, its files written into {@code dir}.
         */
        Builder tls(TestPki ca, Path dir) {
            Path certificate = dir.resolve("tls.crt");
            Path key = dir.resolve("tls.key");
            ca.server("gateway").writeTo(certificate, key);
            return tls(certificate, key);
        }

        /**
         * Adds the TLS listener on a free port, serving the PEM pair in these files (the files are
         * the test's: it may rewrite them to rotate the pair).
         */
        Builder tls(Path certificate, Path privateKey) {
            settings.put("spector.server.tls.certificate", certificate.toString());
            settings.put("spector.server.tls.private-key", privateKey.toString());
            settings.put("spector.server.tls.port", "0");
            return this;
        }

        Builder set(String key, String value) {
            settings.put(key, value);
            return this;
        }

        Cell start() throws IOException {
            return new Cell(this);
        }
    }
}
