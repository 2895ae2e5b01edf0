package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The cell's admin token: what every caller of an owner's admin API presents as {@code
 * Authorization: Bearer <token>} (RFC 6750 §2.1) once the owner has one, and what a move sends on
 * its {@code /admin/import} (the cell's owners share one token). Immutable.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li>The token is {@value OwnerLimits#MIN_ADMIN_TOKEN_BYTES}..{@value
 *       OwnerLimits#MAX_ADMIN_TOKEN_BYTES} bytes of RFC 9110 §11.2 {@code token68} ({@code
 *       A-Za-z0-9-._~+/}, then {@code =} padding only at the end): what fits a bearer credential
 *       unquoted, so base64 and base64url output and hex are all taken as they are.
 *   <li>A presented token is compared with {@link MessageDigest#isEqual} on the bytes, the
 *       configured token first: its time depends on the configured token's length only, never on
 *       where a guess first differs.
 *   <li>The token never appears in a message, a problem or {@link #toString()}: a refusal says
 *       what was wrong with it (its length, the index of a bad character), never its text.
 * </ul>
 */
final class AdminToken {
    /** The realm of the admin API's challenge (RFC 9110 §11.6.1). */
    static final String REALM = "spector-admin";

    /** The {@code WWW-Authenticate} value of a 401 without a bearer token (RFC 6750 §3). */
    static final String CHALLENGE = "Bearer realm=\"" + REALM + "\"";

    /** The {@code WWW-Authenticate} value of a 401 with a wrong one (RFC 6750 §3.1, {@code invalid_token}). */
    static final String CHALLENGE_INVALID = CHALLENGE + ", error=\"invalid_token\"";

    private static final String SCHEME = "Bearer";

    private final byte[] bytes;
    private final String authorization;

    private AdminToken(String token) {
        this.bytes = token.getBytes(StandardCharsets.US_ASCII);
        this.authorization = SCHEME + " " + token;
    }

    /**
     * Returns the admin token {@code token}.
     *
     * @throws IllegalArgumentException naming what is wrong with it (never its text)
     */
    static AdminToken of(String token) {
        return new AdminToken(check(token));
    }

    /**
     * Returns {@code token} when it is an admin token.
     *
     * @throws IllegalArgumentException naming what is wrong with it (never its text)
     */
    static String check(String token) {
        String problem = problemOf(token);
        if (problem != null) {
            throw new IllegalArgumentException("adminToken: " + problem);
        }
        return token;
    }

    /**
     * Returns what makes {@code token} no admin token, without its text ({@code "15 bytes
     * (expected: 16..256 bytes)"}), or null when it is one.
     */
    static @Nullable String problemOf(String token) {
        requireNonNull(token, "token");
        int bytes = token.getBytes(StandardCharsets.UTF_8).length;
        if (bytes < OwnerLimits.MIN_ADMIN_TOKEN_BYTES || bytes > OwnerLimits.MAX_ADMIN_TOKEN_BYTES) {
            return bytes + " bytes (expected: " + OwnerLimits.MIN_ADMIN_TOKEN_BYTES + ".."
                    + OwnerLimits.MAX_ADMIN_TOKEN_BYTES + " bytes)";
        }
        int padding = token.length();
        while (padding > 0 && token.charAt(padding - 1) == '=') {
            padding--;
        }
        if (padding == 0) {
            return "only '=' (expected: token68, A-Za-z0-9-._~+/ with '=' only at the end)";
        }
        for (int i = 0; i < padding; i++) {
            if (!isToken68(token.charAt(i))) {
                return "a character outside token68 at index " + i
                        + " (expected: A-Za-z0-9-._~+/ with '=' only at the end)";
            }
        }
        return null;
    }

    private static boolean isToken68(char c) {
        return (c >= 'A' && c <= 'Z')
                || (c >= 'a' && c <= 'z')
                || (c >= '0' && c <= '9')
                || c == '-'
                || c == '.'
                || c == '_'
                || c == '~'
                || c == '+'
                || c == '/';
    }

    /** Returns the {@code Authorization} value that carries this token. */
    String authorization() {
        return authorization;
    }

    /**
     * Answers whether a request's {@code Authorization} values present this token: exactly one
     * value, scheme {@code Bearer} in any case (RFC 9110 §11.1), then spaces, then the token.
     */
    Verdict check(List<String> authorizations) {
        if (authorizations.isEmpty()) {
            return Verdict.MISSING;
        }
        if (authorizations.size() > 1) {
            return Verdict.WRONG;
        }
        String value = authorizations.get(0);
        if (value.length() <= SCHEME.length()
                || !value.regionMatches(true, 0, SCHEME, 0, SCHEME.length())
                || value.charAt(SCHEME.length()) != ' ') {
            return Verdict.MISSING; // another scheme: no bearer token was presented
        }
        int start = SCHEME.length();
        while (start < value.length() && value.charAt(start) == ' ') {
            start++;
        }
        byte[] presented = value.substring(start).getBytes(StandardCharsets.ISO_8859_1);
        return MessageDigest.isEqual(bytes, presented) ? Verdict.ACCEPTED : Verdict.WRONG;
    }

    @Override
    public String toString() {
        return "AdminToken{" + bytes.length + " bytes}";
    }

    /** What a request's {@code Authorization} says about the token. */
    enum Verdict {
        /** It carries the token. */
        ACCEPTED,
        /** It carries no bearer token. */
        MISSING,
        /** It carries another token, or more than one {@code Authorization}. */
        WRONG
    }
}
