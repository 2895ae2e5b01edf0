package com.spectrayan.spector.uplink.testing;

import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedResponse;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/** Reads bodies, makes byte patterns and converts text for the uplink's tests. */
public final class TestBodies {
    private TestBodies() {}

    /** Returns the UTF-8 bytes of {@code s}. */
    public static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Returns {@code bytes} read as UTF-8. */
    public static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** Returns the body of a response that must have one. */
    public static BodySource body(RelayedResponse response) {
        return body(response, "the response");
    }

    /** Returns the body of a response that must have one; the failure names {@code what}. */
    public static BodySource body(RelayedResponse response, String what) {
        BodySource body = response.body();
        if (body == null) {
            throw new AssertionError(what + ": a " + response.status() + " response has a body, got null");
        }
        return body;
    }

    /** Returns {@code size} bytes of a pattern that differs per {@code salt}. */
    public static byte[] pattern(int size, int salt) {
        byte[] data = new byte[size];
        for (int i = 0; i < size; i++) {
            data[i] = (byte) (i * 31 + (i >>> 8) + salt);
        }
        return data;
    }

    /** Returns the bytes left in {@code part}, leaving its position where it was. */
    public static byte[] bytesOf(ByteBuffer part) {
        ByteBuffer p = part.duplicate();
        byte[] bytes = new byte[p.remaining()];
        p.get(bytes);
        return bytes;
    }

    /** Reads a body to its end; the stage fails with the body's failure. */
    public static CompletableFuture<byte[]> readAll(BodySource body) {
        CompletableFuture<byte[]> all = new CompletableFuture<>();
        readNext(body, new ByteArrayOutputStream(), all);
        return all;
    }

    private static void readNext(BodySource body, ByteArrayOutputStream out, CompletableFuture<byte[]> all) {
        body.next().whenComplete((part, error) -> {
            if (error != null) {
                all.completeExceptionally(error);
            } else if (part == null) {
                all.complete(out.toByteArray());
            } else {
                out.writeBytes(bytesOf(part));
                readNext(body, out, all);
            }
        });
    }
}
