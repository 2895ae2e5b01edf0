package com.spectrayan.spector.uplink.testing;

import com.spectrayan.spector.uplink.BodySource;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/** Reads bodies and makes byte patterns for the uplink's tests. */
public final class TestBodies {
    private TestBodies() {}

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
