package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The HTTP decoding limits, at the limit and one past it, over a raw socket. */
final class OwnerLimitsTest {
    private ReferenceOwner owner;

    @BeforeEach
    void startOwner() {
        owner = ReferenceOwner.start(OwnerSpec.builder("owner-0").build());
    }

    @AfterEach
    void stopOwner() {
        owner.close();
    }

    /** Returns a request line of exactly {@code length} bytes (CRLF not counted). */
    private static String requestLine(int length) {
        String head = "GET /api/v1/namespaces/orders/echo?pad=";
        String tail = " HTTP/1.1";
        return head + "p".repeat(length - head.length() - tail.length()) + tail;
    }

    private RawHttp.Head send(String request) throws Exception {
        try (RawHttp raw = new RawHttp(owner)) {
            raw.write(request.getBytes(StandardCharsets.ISO_8859_1));
            return raw.readFinalHead();
        }
    }

    @Test
    void requestLine_atTheLimitIsServed_andOnePastIs400() throws Exception {
        int limit = OwnerLimits.MAX_INITIAL_LINE_BYTES;

        RawHttp.Head at = send(requestLine(limit) + "\r\nHost: x\r\n\r\n");
        RawHttp.Head past = send(requestLine(limit + 1) + "\r\nHost: x\r\n\r\n");

        assertThat(at.status()).as("a request line of %d bytes", limit).isEqualTo(200);
        assertThat(past.status()).as("a request line of %d bytes", limit + 1).isEqualTo(400);
        assertThat(past.header("X-Spector-Node")).isEqualTo("owner-0");
        assertThat(past.header("Content-Type")).isEqualTo("application/problem+json");
    }

    @Test
    void headers_atTheLimitAreServed_andOnePastIs400() throws Exception {
        int limit = OwnerLimits.MAX_HEADER_BYTES;
        String host = "Host: x\r\n";
        // Netty counts each header line's bytes without its CRLF.
        int fill = limit - (host.length() - 2) - "X-Fill: ".length();

        RawHttp.Head at = send("GET /health HTTP/1.1\r\n" + host + "X-Fill: " + "f".repeat(fill) + "\r\n\r\n");
        RawHttp.Head past = send("GET /health HTTP/1.1\r\n" + host + "X-Fill: " + "f".repeat(fill + 1) + "\r\n\r\n");

        assertThat(at.status()).as("headers of %d bytes", limit).isEqualTo(200);
        assertThat(past.status()).as("headers of %d bytes", limit + 1).isEqualTo(400);
    }

    @Test
    void refusedBody_pastTheDrainLimit_closesTheConnection() throws Exception {
        try (RawHttp raw = new RawHttp(owner)) {
            long declared = OwnerLimits.MAX_DRAIN_BYTES + 2;
            raw.write("PUT /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: " + declared + "\r\n\r\n");
            RawHttp.Head head = raw.readFinalHead();
            raw.readBody(head);
            byte[] block = new byte[64 * 1024];
            for (long sent = 0; sent <= OwnerLimits.MAX_DRAIN_BYTES; sent += block.length) {
                try {
                    raw.write(block);
                } catch (java.io.IOException e) {
                    break; // the owner closed while we were still sending
                }
            }

            assertThat(head.status()).as("answered at the head").isEqualTo(404);
            assertThat(raw.readsEof()).as("closed past the drain limit").isTrue();
        }
    }
}
