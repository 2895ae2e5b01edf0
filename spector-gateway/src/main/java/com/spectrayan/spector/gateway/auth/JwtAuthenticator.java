package com.spectrayan.spector.gateway.auth;

import static java.util.Objects.requireNonNull;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.nimbusds.jose.Algorithm;
import com.nimbusds.jose.Header;
import com.nimbusds.jose.JOSEException;
import com.nimbusds.jose.JWSAlgorithm;
import com.nimbusds.jose.JWSHeader;
import com.nimbusds.jose.JWSVerifier;
import com.nimbusds.jose.KeySourceException;
import com.nimbusds.jose.crypto.ECDSAVerifier;
import com.nimbusds.jose.crypto.MACVerifier;
import com.nimbusds.jose.crypto.RSASSAVerifier;
import com.nimbusds.jose.crypto.factories.DefaultJWSVerifierFactory;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.JWK;
import com.nimbusds.jose.jwk.JWKMatcher;
import com.nimbusds.jose.jwk.JWKSelector;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.KeyConverter;
import com.nimbusds.jose.jwk.source.JWKSource;
import com.nimbusds.jose.jwk.source.JWKSourceBuilder;
import com.nimbusds.jose.jwk.source.RateLimitReachedException;
import com.nimbusds.jose.proc.SecurityContext;
import com.nimbusds.jose.util.Base64URL;
import com.nimbusds.jose.util.DefaultResourceRetriever;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.gateway.config.SecuritySettings;
import io.netty.util.concurrent.FastThreadLocal;
import java.io.Closeable;
import java.io.IOException;
import java.net.MalformedURLException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.Key;
import java.security.PublicKey;
import java.security.interfaces.ECPublicKey;
import java.security.interfaces.RSAPublicKey;
import java.text.ParseException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Verifies the bearer JWT of a request with Nimbus JOSE+JWT, against the keys of {@code
 * spector.security.jwt.*}: an HMAC secret (HS256, and HS384/HS512 when the secret is long enough
 * for them), a PEM public key (RSA: RS256/384/512 and PS256/384/512; EC: the ES algorithm of its
 * curve), and a JWK set URI (RSA and EC keys). Several may be configured; each that accepts the
 * token's algorithm is tried.
 *
 * <p>Rules: the {@code Bearer} scheme only (any case); at most {@link #MAX_TOKEN_CHARS} chars;
 * signed compact JWS only ({@code alg: none}, encrypted tokens and any algorithm no configured key
 * takes are refused before any signature work); {@code exp} required and {@code nbf} honoured, both
 * with {@link #CLOCK_SKEW}; {@code iss} and {@code aud} checked when configured; the routing claims
 * {@code tenant} and {@code namespace} must be strings when present. A refusal is a {@link
 * SpectorException} UNAUTHENTICATED whose {@code reason} detail is one of {@code missing},
 * {@code malformed}, {@code bad-signature}, {@code expired}, {@code not-yet-valid}, {@code
 * alg-none}, {@code unexpected-alg}, {@code issuer}, {@code audience}, {@code jwks-unavailable};
 * {@link #wwwAuthenticate(String)} turns it into the 401's header. No token or claim value is ever
 * logged or put in a message.
 *
 * <p><b>Blocking.</b> With an HMAC secret or a PEM key, {@link #authenticate} is CPU only (an RSA
 * verification is tens of microseconds) and safe on an event loop. With a JWK set URI it reads the
 * last set fetched, which one background thread keeps: fetched at start, again every {@link
 * #JWKS_CACHE_TTL}, and at once (in the background) when a token names a key id the set lacks;
 * that token is refused {@code bad-signature} without waiting, and the next one finds the new key.
 * Fetches are bounded by {@link #JWKS_CONNECT_TIMEOUT} plus {@link #JWKS_READ_TIMEOUT} and rate
 * limited to two per {@link #JWKS_MIN_FETCH_INTERVAL}, so a flood of unknown key ids can neither
 * hammer the issuer nor hold an event loop (Envoy's {@code jwt_authn} never fetches on a worker
 * thread either; this gateway's did, up to 4 s a fetch, found by a review). Only before the first
 * set ever arrived (a cold start) does a caller wait for the fetch in flight, at most {@link
 * #JWKS_REFRESH_TIMEOUT}; once a set was fetched no request waits for the network again.
 *
 * <p>Thread-safe. {@link #close()} stops the JWK set refresh thread.
 */
public final class JwtAuthenticator implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(JwtAuthenticator.class);

    /** The longest token accepted, in chars; one past is refused as {@code malformed}. */
    public static final int MAX_TOKEN_CHARS = 8192;

    /**
     * What the verified tokens remembered at once may weigh, in bytes as {@link #weight} estimates
     * them (the token and its parsed claims); past it the least used are verified again. About
     * 8 000 tokens of 400 chars, 400 of the longest accepted: the cache is a speed-up, and one
     * client's many spellings or a few huge tokens must not pin the heap (the fourth review).
     */
    public static final long VERIFIED_CACHE_BYTES = 16L * 1024 * 1024;

    /**
     * The bytes a remembered token is taken to hold: its chars (one byte each, base64url) and its
     * parsed claims, which hold every string of the payload (about three quarters of the token)
     * in maps, lists and string objects, taken as four times the chars; plus the entry itself.
     */
    static final int WEIGHT_PER_TOKEN_CHAR = 5;

    private static final int WEIGHT_PER_ENTRY = 256;

    /** How long a verified token is remembered (its own {@code exp} is checked on every hit). */
    public static final Duration VERIFIED_CACHE_TTL = Duration.ofMinutes(5);

    /** The clock difference allowed when checking {@code exp} and {@code nbf}. */
    public static final Duration CLOCK_SKEW = Duration.ofSeconds(30);

    private static final long CLOCK_SKEW_MILLIS = CLOCK_SKEW.toMillis();

    private static final long VERIFIED_CACHE_TTL_MILLIS = VERIFIED_CACHE_TTL.toMillis();

    /** How long a fetched JWK set is used before it is fetched again (in the background). */
    static final Duration JWKS_CACHE_TTL = Duration.ofMinutes(5);

    /** The longest a caller waits for a JWK set fetch another thread is running. */
    static final Duration JWKS_REFRESH_TIMEOUT = Duration.ofSeconds(5);

    /** The interval in which at most two JWK set fetches run (Nimbus's rate limiter). */
    static final Duration JWKS_MIN_FETCH_INTERVAL = Duration.ofSeconds(30);

    /** The connect timeout of a JWK set fetch. */
    static final Duration JWKS_CONNECT_TIMEOUT = Duration.ofSeconds(2);

    /** The read timeout of a JWK set fetch. */
    static final Duration JWKS_READ_TIMEOUT = Duration.ofSeconds(2);

    /** The largest JWK set document read, in bytes. */
    static final int JWKS_MAX_BYTES = 64 * 1024;

    /** Algorithms of an RSA key. */
    static final Set<JWSAlgorithm> RSA_ALGORITHMS = Set.of(
            JWSAlgorithm.RS256,
            JWSAlgorithm.RS384,
            JWSAlgorithm.RS512,
            JWSAlgorithm.PS256,
            JWSAlgorithm.PS384,
            JWSAlgorithm.PS512);

    /** Algorithms a JWK set key may sign with: RSA and EC, never HMAC (no key confusion). */
    static final Set<JWSAlgorithm> JWKS_ALGORITHMS =
            union(RSA_ALGORITHMS, Set.of(JWSAlgorithm.ES256, JWSAlgorithm.ES384, JWSAlgorithm.ES512));

    private static final String BEARER = "Bearer";
    private static final String KEY_HMAC = "spector.security.jwt.hmac-secret";
    private static final String KEY_PUBLIC = "spector.security.jwt.public-key-location";
    private static final String KEY_JWKS = "spector.security.jwt.jwk-set-uri";

    private final List<KeyVerifier> verifiers;
    private final @Nullable Jwks jwks;
    private final Set<JWSAlgorithm> algorithms;
    private final @Nullable String issuer;
    private final @Nullable String audience;
    private final Clock clock;

    /**
     * Tokens already verified, by the token's compact form (signature included), so a client
     * that sends the same token on every request pays for parsing and HMAC/RSA once; a hit is
     * that token verified. Keyed by the token, not by the header that carried it: the scheme's
     * case and the spaces around the token are the client's, and one token spelled ten thousand
     * ways was ten thousand entries, each with its claims. Bounded by weight ({@link
     * #VERIFIED_CACHE_BYTES}), not by count. A hit is re-checked against {@code exp}; an
     * expired one is dropped and verified again (and refused).
     */
    private final Cache<String, Claims> verified = Caffeine.newBuilder()
            .maximumWeight(VERIFIED_CACHE_BYTES)
            .weigher((String token, Claims claims) -> weight(token))
            .expireAfterWrite(VERIFIED_CACHE_TTL)
            .executor(Runnable::run)
            .build();

    /**
     * The token each thread (an event loop) verified or found last, asked before {@link
     * #verified}: a keep-alive client sends the same {@code Authorization} on every request, and
     * comparing it with the last one is cheaper than the cache's look-up and its bookkeeping (3 %
     * of a small request's samples, issue 14). Trusted as the cache's entry is: its
     * {@code exp} re-checked, and no longer than {@link #VERIFIED_CACHE_TTL} after it was
     * verified. One per thread, so bounded by the loops.
     */
    private final FastThreadLocal<Remembered> lastOnThread = new FastThreadLocal<>();

    /** A header value and the claims of its verified token. */
    private record Remembered(String header, Claims claims) {}

    private JwtAuthenticator(
            List<KeyVerifier> verifiers,
            @Nullable Jwks jwks,
            @Nullable String issuer,
            @Nullable String audience,
            Clock clock) {
        this.verifiers = List.copyOf(verifiers);
        this.jwks = jwks;
        Set<JWSAlgorithm> all = new LinkedHashSet<>();
        verifiers.forEach(v -> all.addAll(v.algorithms()));
        if (jwks != null) {
            all.addAll(JWKS_ALGORITHMS);
        }
        this.algorithms = Set.copyOf(all);
        this.issuer = issuer;
        this.audience = audience;
        this.clock = clock;
    }

    /**
     * Builds the authenticator from the settings' {@code spector.security.jwt.*} keys. With a JWK
     * set URI, a first fetch starts in the background at once.
     *
     * @throws IllegalArgumentException when no key is configured
     */
    public static JwtAuthenticator create(SecuritySettings.Jwt settings) {
        return create(settings, Clock.systemUTC());
    }

    /** Builds the authenticator with a clock for {@code exp} and {@code nbf} (tests fix it). */
    static JwtAuthenticator create(SecuritySettings.Jwt settings, Clock clock) {
        requireNonNull(settings, "settings");
        requireNonNull(clock, "clock");
        List<KeyVerifier> verifiers = new ArrayList<>();
        try {
            String secret = settings.hmacSecret();
            if (secret != null) {
                byte[] bytes = secret.getBytes(StandardCharsets.UTF_8);
                verifiers.add(new KeyVerifier(hmacAlgorithms(bytes.length), new MACVerifier(bytes)));
            }
            PublicKey key = settings.publicKey();
            if (key instanceof RSAPublicKey rsa) {
                verifiers.add(new KeyVerifier(RSA_ALGORITHMS, new RSASSAVerifier(rsa)));
            } else if (key instanceof ECPublicKey ec) {
                verifiers.add(new KeyVerifier(Set.of(ecAlgorithm(ec)), new ECDSAVerifier(ec)));
            } else if (key != null) {
                throw new IllegalArgumentException(
                        KEY_PUBLIC + ": a " + key.getAlgorithm() + " key (expected: an RSA or EC public key)");
            }
        } catch (JOSEException e) {
            throw new IllegalArgumentException(
                    "spector.security.jwt: a key Nimbus refuses (" + e.getMessage() + ")", e);
        }
        URI jwkSetUri = settings.jwkSetUri();
        Jwks jwks = jwkSetUri == null ? null : Jwks.start(jwkSetUri);
        if (verifiers.isEmpty() && jwks == null) {
            throw new IllegalArgumentException(KEY_HMAC + ", " + KEY_PUBLIC + ", " + KEY_JWKS
                    + ": none is set (expected: at least one, to verify bearer tokens)");
        }
        return new JwtAuthenticator(verifiers, jwks, settings.issuer(), settings.audience(), clock);
    }

    /**
     * Verifies the bearer token of an {@code Authorization} header value and returns its claims.
     *
     * @param authorizationHeader the header value, or null when the request has none
     * @throws SpectorException UNAUTHENTICATED with a {@code reason} detail
     */
    public Claims authenticate(@Nullable String authorizationHeader) {
        String header = authorizationHeader;
        // Milliseconds, not clock.instant(): an Instant per request was 3.5 % of the event
        // loop's samples (issue 14). Exact for exp, a whole second.
        long now = clock.millis();
        if (header != null) {
            Remembered last = lastOnThread.get();
            // The hashes first, as the cache compares: a header is compared with another client's
            // token only when their hashes match, so its time tells a guesser nothing of the token.
            if (last != null
                    && header.hashCode() == last.header().hashCode()
                    && header.equals(last.header())
                    && isFresh(last.claims(), now)) {
                return last.claims();
            }
        }
        String token = bearerToken(header); // refuses a missing header
        Claims remembered = verified.getIfPresent(token);
        if (remembered != null) {
            if (isFresh(remembered, now)) {
                lastOnThread.set(new Remembered(requireNonNull(header), remembered));
                return remembered;
            }
            verified.invalidate(token); // expired since: verify again, which refuses it
        }
        Claims claims = verify(token);
        verified.put(token, claims);
        lastOnThread.set(new Remembered(requireNonNull(header), claims));
        return claims;
    }

    /** The bytes a remembered token is taken to hold ({@link #WEIGHT_PER_TOKEN_CHAR}). */
    static int weight(String token) {
        return WEIGHT_PER_ENTRY + WEIGHT_PER_TOKEN_CHAR * token.length();
    }

    /** Returns the weight the cache of verified tokens holds now, after its pending upkeep (tests). */
    long cachedWeight() {
        verified.cleanUp();
        return verified.policy().eviction().orElseThrow().weightedSize().orElseThrow();
    }

    /** Returns how many verified tokens the cache holds now, after its pending upkeep (tests). */
    long cachedTokens() {
        verified.cleanUp();
        return verified.estimatedSize();
    }

    /** Answers whether remembered claims may still be served: not past exp + skew, nor the cache's TTL. */
    private static boolean isFresh(Claims claims, long nowMillis) {
        return nowMillis - CLOCK_SKEW_MILLIS <= claims.expiresAtMillis()
                && nowMillis - claims.verifiedAtMillis() < VERIFIED_CACHE_TTL_MILLIS;
    }

    private Claims verify(String token) {
        int firstDot = token.indexOf('.');
        int secondDot = firstDot < 0 ? -1 : token.indexOf('.', firstDot + 1);
        Header header;
        try {
            header = Header.parse(new Base64URL(token.substring(0, firstDot)));
        } catch (ParseException e) {
            throw fail(Reason.MALFORMED, "the token header is not a JOSE header (expected: a signed JWT)");
        }
        Algorithm alg = header.getAlgorithm();
        if (Algorithm.NONE.equals(alg) || "none".equalsIgnoreCase(alg.getName())) {
            throw fail(Reason.ALG_NONE, "the token is unsigned, alg: none (expected: a signed JWT)");
        }
        if (!(header instanceof JWSHeader jwsHeader)) {
            throw fail(
                    Reason.UNEXPECTED_ALG, "the token is encrypted (expected: a signed JWT, one of " + names() + ")");
        }
        if (!algorithms.contains(jwsHeader.getAlgorithm())) {
            throw fail(
                    Reason.UNEXPECTED_ALG, "the token's algorithm is not accepted (expected: one of " + names() + ")");
        }
        if (secondDot < 0 || token.indexOf('.', secondDot + 1) >= 0) {
            throw fail(Reason.MALFORMED, "the token is not header.payload.signature (expected: a compact JWS)");
        }
        SignedJWT jwt;
        try {
            jwt = new SignedJWT(
                    new Base64URL(token.substring(0, firstDot)),
                    new Base64URL(token.substring(firstDot + 1, secondDot)),
                    new Base64URL(token.substring(secondDot + 1)));
        } catch (ParseException e) {
            throw fail(Reason.MALFORMED, "the token is not a compact JWS (expected: a signed JWT)");
        }
        verifySignature(jwt, jwsHeader);
        JWTClaimsSet claims;
        try {
            claims = jwt.getJWTClaimsSet();
        } catch (ParseException e) {
            throw fail(Reason.MALFORMED, "the token's claims are not valid JWT claims (expected: a JSON object)");
        }
        Instant expiresAt = checkTimes(claims);
        if (issuer != null && !issuer.equals(claims.getIssuer())) {
            throw fail(Reason.ISSUER, "the token's iss is not the configured issuer");
        }
        if (audience != null && !claims.getAudience().contains(audience)) {
            throw fail(Reason.AUDIENCE, "the token's aud does not name the configured audience");
        }
        for (String name : List.of(Claims.TENANT, Claims.NAMESPACE)) {
            Object value = claims.getClaim(name);
            if (value != null && !(value instanceof String)) {
                throw fail(Reason.MALFORMED, "the token's " + name + " claim is not a string (expected: a string)");
            }
        }
        return new Claims(claims.toJSONObject(), expiresAt, clock.millis());
    }

    /**
     * Returns the {@code WWW-Authenticate} value of a 401 for a refusal's {@code reason} detail:
     * {@code Bearer} alone when the token was missing (RFC 6750 section 3.1), else {@code Bearer
     * error="invalid_token", error_description="..."} with a fixed description.
     */
    public static String wwwAuthenticate(String reason) {
        Reason r = Reason.fromWire(reason);
        if (r == Reason.MISSING) {
            return BEARER;
        }
        String description = r == null ? "the token is invalid" : r.description();
        return BEARER + " error=\"invalid_token\", error_description=\"" + description + "\"";
    }

    /** Returns the algorithms some configured key accepts, e.g. {@code [HS256, RS256, ...]}. */
    public Set<String> algorithms() {
        return algorithms.stream().map(Algorithm::getName).sorted().collect(Collectors.toUnmodifiableSet());
    }

    /** Stops the JWK set refresh thread; verification with the JWK set fails after it. */
    @Override
    public void close() {
        if (jwks != null) {
            jwks.close();
        }
    }

    private static String bearerToken(@Nullable String authorization) {
        if (authorization == null || authorization.isBlank()) {
            throw fail(Reason.MISSING, "Authorization: none (expected: Bearer <JWT>)");
        }
        String value = authorization.strip();
        if (value.length() <= BEARER.length()
                || !value.regionMatches(true, 0, BEARER, 0, BEARER.length())
                || value.charAt(BEARER.length()) != ' ') {
            throw fail(Reason.MALFORMED, "Authorization: not the Bearer scheme (expected: Bearer <JWT>)");
        }
        String token = value.substring(BEARER.length() + 1).strip();
        if (token.length() > MAX_TOKEN_CHARS) {
            throw fail(
                    Reason.MALFORMED,
                    "Authorization: a token of " + token.length() + " chars (expected: <= " + MAX_TOKEN_CHARS + ")");
        }
        if (token.isEmpty() || token.indexOf('.') < 0) {
            throw fail(Reason.MALFORMED, "Authorization: not a JWT after Bearer (expected: Bearer <JWT>)");
        }
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            boolean base64url = (c >= 'A' && c <= 'Z')
                    || (c >= 'a' && c <= 'z')
                    || (c >= '0' && c <= '9')
                    || c == '-'
                    || c == '_'
                    || c == '.';
            if (!base64url) {
                throw fail(
                        Reason.MALFORMED,
                        "Authorization: the token has a char outside base64url at " + i + " (expected: a JWT)");
            }
        }
        return token;
    }

    private void verifySignature(SignedJWT jwt, JWSHeader header) {
        JWSAlgorithm alg = header.getAlgorithm();
        byte[] signingInput = jwt.getSigningInput();
        for (KeyVerifier v : verifiers) {
            if (v.algorithms().contains(alg) && verifies(v.verifier(), header, signingInput, jwt.getSignature())) {
                return;
            }
        }
        Jwks set = jwks;
        if (set != null && JWKS_ALGORITHMS.contains(alg)) {
            List<Key> keys;
            try {
                keys = set.keys(header);
            } catch (KeySourceException e) {
                log.debug("JWK set unavailable: {}", e.toString());
                throw fail(Reason.JWKS_UNAVAILABLE, "the JWK set could not be fetched (expected: retry later)");
            }
            for (Key key : keys) {
                try {
                    JWSVerifier verifier = set.factory.createJWSVerifier(header, key);
                    if (verifies(verifier, header, signingInput, jwt.getSignature())) {
                        return;
                    }
                } catch (JOSEException e) {
                    // a key of the set that cannot verify this algorithm: try the next one
                }
            }
        }
        throw fail(Reason.BAD_SIGNATURE, "the token signature does not verify with any configured key");
    }

    private static boolean verifies(JWSVerifier verifier, JWSHeader header, byte[] input, Base64URL signature) {
        try {
            return verifier.verify(header, input, signature);
        } catch (JOSEException e) {
            return false; // e.g. a critical header the verifier does not know: not verified
        }
    }

    private Instant checkTimes(JWTClaimsSet claims) {
        Date exp = claims.getExpirationTime();
        if (exp == null) {
            throw fail(Reason.MALFORMED, "the token has no exp claim (expected: an expiry)");
        }
        Instant now = clock.instant();
        Instant expiresAt = exp.toInstant();
        if (now.isAfter(expiresAt.plus(CLOCK_SKEW))) {
            throw fail(
                    Reason.EXPIRED,
                    "the token has expired (expected: exp after now, " + CLOCK_SKEW.toSeconds()
                            + "s of clock skew allowed)");
        }
        Date nbf = claims.getNotBeforeTime();
        if (nbf != null && now.plus(CLOCK_SKEW).isBefore(nbf.toInstant())) {
            throw fail(
                    Reason.NOT_YET_VALID,
                    "the token is not valid yet (expected: nbf before now, " + CLOCK_SKEW.toSeconds()
                            + "s of clock skew allowed)");
        }
        return expiresAt;
    }

    private String names() {
        return algorithms().stream().sorted().collect(Collectors.joining(", ", "[", "]"));
    }

    private static SpectorException fail(Reason reason, String message) {
        return SpectorException.of(ErrorCode.UNAUTHENTICATED, message, Map.of("reason", reason.wire()));
    }

    private static Set<JWSAlgorithm> hmacAlgorithms(int secretBytes) {
        Set<JWSAlgorithm> algs = new LinkedHashSet<>();
        algs.add(JWSAlgorithm.HS256); // the settings guarantee >= 32 bytes
        if (secretBytes >= 48) {
            algs.add(JWSAlgorithm.HS384);
        }
        if (secretBytes >= 64) {
            algs.add(JWSAlgorithm.HS512);
        }
        return Set.copyOf(algs);
    }

    private static JWSAlgorithm ecAlgorithm(ECPublicKey key) {
        Curve curve = Curve.forECParameterSpec(key.getParams());
        if (Curve.P_256.equals(curve)) {
            return JWSAlgorithm.ES256;
        }
        if (Curve.P_384.equals(curve)) {
            return JWSAlgorithm.ES384;
        }
        if (Curve.P_521.equals(curve)) {
            return JWSAlgorithm.ES512;
        }
        throw new IllegalArgumentException(
                KEY_PUBLIC + ": an EC key on another curve (expected: P-256, P-384 or P-521)");
    }

    private static Set<JWSAlgorithm> union(Set<JWSAlgorithm> a, Set<JWSAlgorithm> b) {
        Set<JWSAlgorithm> all = new LinkedHashSet<>(a);
        all.addAll(b);
        return Set.copyOf(all);
    }

    /** A configured key and the algorithms it verifies. */
    private record KeyVerifier(Set<JWSAlgorithm> algorithms, JWSVerifier verifier) {}

    /**
     * The remote JWK set: Nimbus's cached, rate-limited source, read only by one background thread,
     * which publishes each set it gets ({@link #current}); callers select keys from that.
     *
     * <p>Concurrency: {@link #current} is volatile (an immutable set, swapped whole); {@link
     * #inFlight} is the fetch running or queued on {@link #refresher}, at most one (compare-and-set),
     * so a flood of unknown key ids queues one fetch, not one each.
     */
    private static final class Jwks {
        private static final JWKSelector ALL = new JWKSelector(new JWKMatcher.Builder().build());

        private final JWKSource<SecurityContext> source;
        private final DefaultJWSVerifierFactory factory = new DefaultJWSVerifierFactory();
        private final ScheduledExecutorService refresher;
        private final String where;
        private volatile @Nullable JWKSet current;
        private final AtomicReference<@Nullable CompletableFuture<JWKSet>> inFlight = new AtomicReference<>();
        /**
         * When an unknown key id last queued a fetch: at most one per half {@link
         * #JWKS_MIN_FETCH_INTERVAL}, what the source's limiter lets through, so a flood of unknown
         * key ids queues no more work than that on the refresher.
         */
        private volatile long lastKeyedFetchNanos = System.nanoTime() - KEYED_FETCH_INTERVAL_NANOS;

        private static final long KEYED_FETCH_INTERVAL_NANOS = JWKS_MIN_FETCH_INTERVAL.toNanos() / 2;

        private Jwks(JWKSource<SecurityContext> source, ScheduledExecutorService refresher, String where) {
            this.source = source;
            this.refresher = refresher;
            this.where = where;
        }

        static Jwks start(URI uri) {
            ScheduledExecutorService refresher = Executors.newSingleThreadScheduledExecutor(task -> {
                Thread t = new Thread(task, "spector-jwks-refresh");
                t.setDaemon(true);
                return t;
            });
            DefaultResourceRetriever retriever = new DefaultResourceRetriever(
                    (int) JWKS_CONNECT_TIMEOUT.toMillis(), (int) JWKS_READ_TIMEOUT.toMillis(), JWKS_MAX_BYTES);
            JWKSource<SecurityContext> source;
            try {
                source = JWKSourceBuilder.<SecurityContext>create(uri.toURL(), retriever)
                        .cache(JWKS_CACHE_TTL.toMillis(), JWKS_REFRESH_TIMEOUT.toMillis())
                        .rateLimited(JWKS_MIN_FETCH_INTERVAL.toMillis())
                        .retrying(false)
                        .build();
            } catch (MalformedURLException | IllegalArgumentException e) {
                refresher.shutdownNow();
                throw new IllegalArgumentException(KEY_JWKS + ": not a URL (expected: an http(s) URL)", e);
            }
            Jwks jwks = new Jwks(source, refresher, uri.getHost() + uri.getRawPath());
            var unused = jwks.fetch(null);
            refresher.scheduleWithFixedDelay(
                    () -> jwks.fetch(null),
                    JWKS_CACHE_TTL.toMillis(),
                    JWKS_CACHE_TTL.toMillis(),
                    TimeUnit.MILLISECONDS);
            return jwks;
        }

        /**
         * Returns the keys of the last set fetched that match {@code header} (its algorithm, key
         * id and use), without waiting for the network; none found fetches the set again in the
         * background (the issuer may have rotated). Before any set arrived, waits for the fetch in
         * flight (cold start), at most {@link #JWKS_REFRESH_TIMEOUT}.
         *
         * @throws KeySourceException when no set has ever been fetched
         */
        List<Key> keys(JWSHeader header) throws KeySourceException {
            JWKSet set = current;
            if (set == null) {
                set = awaitFirst();
            }
            List<JWK> matches = new JWKSelector(JWKMatcher.forJWSHeader(header)).select(set);
            long now = System.nanoTime();
            if (matches.isEmpty() && now - lastKeyedFetchNanos >= KEYED_FETCH_INTERVAL_NANOS) {
                lastKeyedFetchNanos = now; // racy by design: at worst two threads queue one fetch each
                var unused = fetch(header); // the next token with this key id finds it, if the issuer has it
            }
            return KeyConverter.toJavaKeys(matches);
        }

        void close() {
            if (source instanceof Closeable closeable) {
                try {
                    closeable.close();
                } catch (IOException e) {
                    log.debug("closing the JWK source: {}", e.toString());
                }
            }
            refresher.shutdownNow();
        }

        private JWKSet awaitFirst() throws KeySourceException {
            try {
                return fetch(null).get(JWKS_REFRESH_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                throw new KeySourceException("no JWK set fetched yet: " + e.getCause(), e.getCause());
            } catch (TimeoutException e) {
                throw new KeySourceException("no JWK set within " + JWKS_REFRESH_TIMEOUT.toMillis() + " ms", e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new KeySourceException("interrupted waiting for the JWK set", e);
            }
        }

        /**
         * Returns the fetch in flight, or queues one on the refresher: for {@code header}, a look-up
         * of its key first (Nimbus's source fetches the set again when the cached one lacks it,
         * rate limited), then the whole set, published to {@link #current}.
         */
        private CompletableFuture<JWKSet> fetch(@Nullable JWSHeader header) {
            CompletableFuture<JWKSet> running = inFlight.get();
            if (running != null) {
                return running;
            }
            CompletableFuture<JWKSet> mine = new CompletableFuture<>();
            if (!inFlight.compareAndSet(null, mine)) {
                CompletableFuture<JWKSet> other = inFlight.get();
                return other != null ? other : mine;
            }
            try {
                refresher.execute(() -> run(mine, header));
            } catch (RejectedExecutionException e) { // closed
                inFlight.set(null);
                mine.completeExceptionally(e);
            }
            return mine;
        }

        private void run(CompletableFuture<JWKSet> done, @Nullable JWSHeader header) {
            try {
                if (header != null) {
                    var unused = source.get(new JWKSelector(JWKMatcher.forJWSHeader(header)), null);
                }
                JWKSet set = new JWKSet(source.get(ALL, null));
                boolean first = current == null;
                current = set;
                if (first) {
                    log.info(
                            "JWK set fetched from {}: {} keys",
                            where,
                            set.getKeys().size());
                }
                inFlight.set(null);
                done.complete(set);
            } catch (KeySourceException | RuntimeException e) {
                if (e instanceof RateLimitReachedException) {
                    log.debug("JWK set from {}: not fetched again yet (rate limited)", where);
                } else {
                    log.warn("could not fetch the JWK set from {} (tried again later): {}", where, e.toString());
                }
                inFlight.set(null);
                done.completeExceptionally(e);
            }
        }
    }
}
