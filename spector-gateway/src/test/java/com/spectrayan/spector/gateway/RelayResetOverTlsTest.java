package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A relayed response cut mid-body reaches a TLS client as a reset, never as the clean end of the
 * stream: the worker's head has no length, so an HTTP/1.0 client reads the body to the close, and
 * a close_notify would make the part it got look whole (RFC 8446 §6.1; RFC 9112 §6.3: a
 * close-delimited body ends at the close). Over the TLS listener, with a raw TLS client.
 */
final class RelayResetOverTlsTest {
    private static final String WORKER = "cutw";
    private static final String FIRST_PART = "the first part of a body that never ends";

    @TempDir
    Path dir;

    private RelayCell relayCell;
    private SSLContext trusting;

    @BeforeEach
    void start() throws Exception {
        TestPki ca = TestPki.authority("relay-reset");
        trusting = TestPki.clientTrusting(ca);
        relayCell = RelayCell.start(
                Cell.builder().owners(1).tls(ca, dir), WORKER, (c, httpForward) -> Map.of("cut", firstPartThenWait()));
    }

    @AfterEach
    void stop() {
        relayCell.close();
    }

    /** A target whose response has no length: one part, then a body that never goes on. */
    private static RelayTarget firstPartThenWait() {
        return request -> CompletableFuture.completedFuture(new RelayedResponse(200, List.of(), new BodySource() {
            private boolean sent;

            @Override
            public CompletionStage<@Nullable ByteBuffer> next() {
                if (sent) {
                    return new CompletableFuture<>(); // the link drops before it goes on
                }
                sent = true;
                return CompletableFuture.completedFuture(
                        ByteBuffer.wrap(FIRST_PART.getBytes(StandardCharsets.US_ASCII)));
            }

            @Override
            public void cancel(Throwable reason) {}
        }));
    }

    @Test
    void shouldResetAnHttp10ClientOverTlsWhenTheWorkerLinkDropsMidBody() throws Exception {
        RelayCell rc = relayCell;
        try (SSLSocket socket = TlsWire.handshake(rc.cell.tlsPort(), trusting)) {
            socket.getOutputStream()
                    .write(("GET /relay/" + WORKER + "/cut/x HTTP/1.0\r\nHost: gateway.test\r\nAuthorization: Bearer "
                                    + Cell.token(Cell.TENANT) + "\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            InputStream in = socket.getInputStream();
            String got = readUntil(in, FIRST_PART);
            assertThat(got).startsWith("HTTP/1.1 200").doesNotContainIgnoringCase("content-length");

            rc.worker.dialer.close(); // the worker's link drops mid-body

            assertThatThrownBy(() -> readToTheEnd(in))
                    .as("the cut body ends in a reset, not in a close_notify (read -1)")
                    .isInstanceOf(IOException.class)
                    .isNotInstanceOf(SocketTimeoutException.class);
        }
    }

    /** Reads until what was read ends with {@code end}; fails at the end of the stream (the socket's timeout bounds it). */
    private static String readUntil(InputStream in, String end) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (!out.toString(StandardCharsets.US_ASCII).endsWith(end)) {
            int b = in.read();
            if (b < 0) {
                throw new AssertionError("the stream ended before " + end + ": " + out);
            }
            out.write(b);
        }
        return out.toString(StandardCharsets.US_ASCII);
    }

    /** Reads to the end of the stream (a read of -1); returns the bytes read after what was read before. */
    private static int readToTheEnd(InputStream in) throws IOException {
        byte[] buf = new byte[8192];
        int total = 0;
        for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
            total += n;
        }
        return total;
    }
}
