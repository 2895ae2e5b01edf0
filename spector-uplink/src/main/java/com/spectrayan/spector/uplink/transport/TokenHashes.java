package com.spectrayan.spector.uplink.transport;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** Worker tokens as the gateway keeps them: SHA-256 hashes, compared in constant time. */
public final class TokenHashes {
    private static final int SHA256_HEX_CHARS = 64;

    private TokenHashes() {}

    /** Returns the lower-case hex SHA-256 of the token's UTF-8 bytes. */
    public static String sha256Hex(String token) {
        return HexFormat.of().formatHex(sha256(token));
    }

    /**
     * Answers whether {@code token} hashes to {@code expectedSha256Hex} (hex, either case), comparing
     * the digests in constant time. A malformed expected hash matches nothing.
     */
    public static boolean matches(String expectedSha256Hex, String token) {
        byte[] actual = sha256(token);
        byte[] expected;
        if (expectedSha256Hex.length() != SHA256_HEX_CHARS) {
            expected = new byte[actual.length];
            MessageDigest.isEqual(expected, actual);
            return false;
        }
        try {
            expected = HexFormat.of().parseHex(expectedSha256Hex);
        } catch (IllegalArgumentException e) {
            return false;
        }
        return MessageDigest.isEqual(expected, actual);
    }

    private static byte[] sha256(String token) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
