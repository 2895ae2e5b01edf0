package com.spectrayan.spector.bench;

import com.spectrayan.spector.gateway.auth.Claims;
import com.spectrayan.spector.gateway.auth.HmacTokens;
import com.spectrayan.spector.gateway.auth.JwtAuthenticator;
import com.spectrayan.spector.gateway.config.SecuritySettings;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Edge auth on every request (issue 14): the {@code Authorization} value of a client that sends the
 * same HS256 token each time, answered by the verified-token cache (keyed by the header value and
 * looked up before any parsing; before issue 14 the value was stripped, checked char by char and cut
 * to the token first). Run it on an older commit for the comparison.
 */
public class EdgeAuthBenchmark extends NanoBenchmark {
    private static final String SECRET = "edge-auth-benchmark-secret-0123456789abcdef";

    private JwtAuthenticator cached = create();
    private String header = "";

    private static JwtAuthenticator create() {
        return JwtAuthenticator.create(new SecuritySettings.Jwt(SECRET, null, null, null, null, null, null, false));
    }

    /** One token, verified once. */
    @Setup
    public void setUp() {

        byte[] key = SECRET.getBytes(StandardCharsets.UTF_8);
        header = "Bearer " + HmacTokens.mint(key, "bench", Duration.ofHours(1));
        cached.authenticate(header);
    }

    @TearDown
    public void tearDown() {
        cached.close();
    }

    /** The steady state: the same header again, answered from the cache. */
    @Benchmark
    public Claims cacheHit() {
        return cached.authenticate(header);
    }
}
