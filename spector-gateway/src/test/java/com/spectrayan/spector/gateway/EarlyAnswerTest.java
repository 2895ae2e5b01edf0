package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.EarlyAnswerUpstream;
import com.spectrayan.spector.testkit.Waits;
import java.io.IOException;
import java.net.URI;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * RFC 9112 §9.6 at the edge, over raw sockets: an owner that answers an upload before reading it
 * and closes (its kernel then resets the connection, the body still arriving) has its answer
 * passed on to the client, as nginx does, and the connection then closes ({@code Connection: close},
 * the client's body not read whole) or, the body read and dropped whole by then, serves the next
 * request; however many times in a row: an owner that answers is never counted as failing.
 * Regression: each such upload got {@code 502 OWNER_UNREACHABLE}, and the fourth {@code 503
 * OWNER_DOWN} (three failures mark an owner down), found with curl against a raw owner.
 */
final class EarlyAnswerTest {
    /** The upload: far more than the sockets' buffers hold, under the gateway's 10 MiB cap. */
    private static final int LENGTH = 4 * 1024 * 1024;

    @Test
    void anOwnersEarlyAnswer_reachesTheClient_uploadAfterUpload() throws Exception {
        try (EarlyAnswerUpstream owner = EarlyAnswerUpstream.start(EarlyAnswerUpstream.TOO_LARGE);
                Cell cell = Cell.builder()
                        .owners(0)
                        .member("early-0", URI.create("http://127.0.0.1:" + owner.port()))
                        .start()) {
            for (int upload = 1; upload <= 4; upload++) { // past the three failures that mark an owner down
                try (RawClient c = new RawClient(cell.gateway.port())) {
                    c.send("PUT /api/v1/namespaces/uploads/blob HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                            + Cell.token(Cell.TENANT)
                            + "\r\nContent-Type: application/octet-stream\r\nContent-Length: " + LENGTH + "\r\n\r\n");
                    CompletableFuture<Void> body = CompletableFuture.runAsync(() -> {
                        byte[] part = new byte[64 * 1024];
                        try {
                            for (int sent = 0; sent < LENGTH; sent += part.length) {
                                c.send(part);
                            }
                        } catch (IOException closed) {
                            // the gateway closed after its answer: the rest was not wanted
                        }
                    });

                    RawClient.Response r = c.read();

                    assertThat(r.status()).as("upload %d", upload).isEqualTo(413);
                    assertThat(r.text()).isEqualTo("large");
                    Waits.done(body, "the client's writes end (sent whole, or cut by the close)");
                    if (!"close".equalsIgnoreCase(r.header("Connection"))) {
                        // The gateway read and dropped the whole body before the answer went out:
                        // the connection is still good for the next request (RFC 9112 §9.3).
                        assertThat(c.send("GET /actuator/health/liveness HTTP/1.1\r\nHost: x\r\n\r\n")
                                        .read()
                                        .status())
                                .as("kept alive after upload %d, its body read whole", upload)
                                .isEqualTo(200);
                    }
                }
            }
        }
    }
}
