package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * RFC 9112 §9.6: a server that closes while its client is still sending must not destroy its own
 * last response with a reset. The gateway half-closes and reads (and discards) for a while, as
 * nginx's {@code lingering_close} does.
 */
final class EdgeLingerTest {
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(1)
                .set("spector.routing.gateway.max-buffered-body-bytes", "1000")
                .set("spector.routing.gateway.replay-buffer-bytes", "1000")
                .start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    /**
     * RFC 9112 §9.6: a request answered with a close (a malformed target: 400) that has pipelined
     * requests behind it, read or still arriving: the gateway lingers, as for a body it did not
     * read, and the client reads the whole 400 before the end. Regression (a review): it closed at
     * once with those bytes unread, and the kernel's reset could destroy the 400 on its way.
     */
    @Test
    void shouldLetAPipeliningClientReadTheAnswerThatClosesItsConnection() throws Exception {
        byte[] refused = "GET /a%zz HTTP/1.1\r\nHost: gw\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);
        byte[] next =
                "GET /actuator/health HTTP/1.1\r\nHost: gw\r\n\r\n".repeat(1000).getBytes(StandardCharsets.ISO_8859_1);
        for (int round = 0; round < 5; round++) {
            try (Socket s = new Socket()) {
                s.connect(
                        new InetSocketAddress(InetAddress.getLoopbackAddress(), cell.gateway.port()),
                        RawClient.TIMEOUT_MS);
                s.setSoTimeout(RawClient.TIMEOUT_MS);
                OutputStream out = s.getOutputStream();
                out.write(refused);
                CompletableFuture<Void> pipelining = CompletableFuture.runAsync(() -> {
                    try {
                        for (int i = 0; i < 50; i++) { // 2 MB behind the refused request, still arriving at the close
                            out.write(next);
                        }
                    } catch (IOException e) {
                        // the gateway closes after lingering: the rest is refused
                    }
                });
                InputStream in = s.getInputStream();
                String status = RawClient.line(in);
                assertThat(status).as("round %d", round).startsWith("HTTP/1.1 400");
                String body = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
                assertThat(body)
                        .as("round %d: the whole answer, then the end", round)
                        .contains("\"code\":\"BAD_REQUEST\"");
                pipelining.cancel(true);
            }
        }
    }

    /** The client keeps uploading after the 413 (no Expect): it still reads the whole 413. */
    @Test
    void shouldLetAnUploaderReadA413ItIsStillSendingInto() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        try (Socket s = new Socket()) {
            s.connect(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), cell.gateway.port()), RawClient.TIMEOUT_MS);
            s.setSoTimeout(RawClient.TIMEOUT_MS);
            int bodyBytes = 4 * 1024 * 1024;
            OutputStream out = s.getOutputStream();
            out.write(("PUT /api/v1/namespaces/" + ns + "/objects/big HTTP/1.1\r\nHost: gw\r\n"
                            + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n"
                            + "Content-Length: " + bodyBytes + "\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            CompletableFuture<Void> upload = CompletableFuture.runAsync(() -> {
                byte[] chunk = new byte[64 * 1024];
                try {
                    for (int sent = 0; sent < bodyBytes; sent += chunk.length) {
                        out.write(chunk);
                    }
                } catch (IOException e) {
                    // the gateway closes after lingering: the rest of the upload is refused
                }
            });
            String response = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            assertThat(response).startsWith("HTTP/1.1 413");
            assertThat(response).containsIgnoringCase("connection: close").contains("\"code\":\"PAYLOAD_TOO_LARGE\"");
            upload.get(RawClient.TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
    }
}
