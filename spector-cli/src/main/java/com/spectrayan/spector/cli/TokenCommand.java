package com.spectrayan.spector.cli;

import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.gateway.auth.Claims;
import com.spectrayan.spector.gateway.auth.HmacTokens;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code spector token --secret-file F --tenant T [--scope S]...}: mints an HS256 bearer token for a
 * tenant with the cell's HMAC secret (for operators, the demo and the benchmarks), granting the
 * scopes asked for ({@code --scope spector:admin} reads the status views). Prints the token alone.
 */
@Command(
        name = "token",
        mixinStandardHelpOptions = true,
        description = "Print an HS256 bearer token for TENANT, signed with the secret in FILE.")
final class TokenCommand implements Callable<Integer> {
    /** Longest validity a minted token may have. */
    static final Duration MAX_TTL = Duration.ofDays(1);

    @Spec
    @SuppressWarnings("NullAway.Init") // injected by picocli before call()
    CommandSpec spec;

    @Option(
            names = "--secret-file",
            required = true,
            paramLabel = "FILE",
            description = "The HMAC secret (>= 32 bytes).")
    Path secretFile = Path.of("");

    @Option(names = "--tenant", required = true, paramLabel = "T", description = "The tenant claim.")
    String tenant = "";

    @Option(
            names = "--scope",
            paramLabel = "S",
            description = "A scope the token grants (repeatable); " + Claims.ADMIN_SCOPE
                    + " reads the gateway's /gateway/v1/status and /workers.")
    List<String> scopes = new ArrayList<>();

    @Option(names = "--ttl", paramLabel = "SECONDS", description = "Validity in seconds (default: ${DEFAULT-VALUE}).")
    long ttlSeconds = 3600;

    @Override
    public Integer call() throws IOException {
        RoutingKey.checkName("tenant", tenant);
        if (ttlSeconds < 1 || ttlSeconds > MAX_TTL.toSeconds()) {
            throw SpectorException.badRequest("ttl", ttlSeconds + " (expected: 1.." + MAX_TTL.toSeconds() + ")");
        }
        for (String scope : scopes) {
            if (scope.isEmpty() || !scope.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != '"' && c != '\\')) {
                throw SpectorException.badRequest(
                        "scope", "'" + scope + "' (expected: RFC 6749 §3.3 scope characters)");
            }
        }
        spec.commandLine()
                .getOut()
                .println(mint(Secrets.read(secretFile), tenant, Duration.ofSeconds(ttlSeconds), scopes));
        spec.commandLine().getOut().flush();
        return 0;
    }

    /** Returns an HS256 token with {@code tenant} and {@code sub} claims. */
    static String mint(String secret, String tenant, Duration ttl) {
        return mint(secret, tenant, ttl, List.of());
    }

    /** Returns an HS256 token with {@code tenant} and {@code sub} claims, granting {@code scopes}. */
    static String mint(String secret, String tenant, Duration ttl, List<String> scopes) {
        byte[] key = secret.getBytes(StandardCharsets.UTF_8);
        if (key.length < 32) {
            throw SpectorException.badRequest("secret", key.length + " bytes (expected: >= 32)");
        }
        return HmacTokens.mint(key, tenant, ttl, scopes);
    }
}
