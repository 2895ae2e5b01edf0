package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.internal.wire.Pongs;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A worker that pings and never reads (RFC 6455 §5.5.2: each ping is answered): the gateway keeps
 * at most {@link Pongs#MAX_UNSENT} pongs waiting for the socket and then closes the link, on v1
 * and on v2. Regression (the uplink review): every pong was queued, and 600 000 pings ran a
 * 128 MiB gateway out of heap, its event loops dead.
 */
final class UplinkPingFloodTest {
    /** Pings sent at most: far more than the socket buffers on both sides and the bound hold. */
    private static final int PINGS = 200_000;

    @RegisterExtension
    final Closing closing = new Closing();

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {FrameCodec.SUBPROTOCOL, V2Limits.SUBPROTOCOL})
    void aWorkerThatPingsAndNeverReads_isClosed_withAtMostTheBoundOfPongsQueued(String subprotocol) throws IOException {
        TestGateway g = new TestGateway(closing.group, 0, null);
        closing.add(g);
        try (Socket socket = rawWorker(g, subprotocol)) {
            OutputStream out = socket.getOutputStream();
            TestGateway.Uplink link = g.nextUplink("the flooding worker's link");

            byte[] ping = maskedPing(125);
            byte[] batch = new byte[ping.length * 100];
            for (int i = 0; i < 100; i++) {
                System.arraycopy(ping, 0, batch, i * ping.length, ping.length);
            }
            int sent = 0;
            try {
                while (sent < PINGS && link.channel().isOpen()) {
                    out.write(batch); // blocks once the gateway stops reading; fails once it closed
                    sent += 100;
                }
            } catch (IOException closedByTheGateway) {
                // the gateway closed the link under the flood
            }
            int pings = sent;
            until(
                    "the gateway closes the link after " + pings + " pings",
                    WAIT,
                    () -> !link.channel().isOpen());
        }
    }

    /** A masked ping frame (RFC 6455 §5.2, §5.5.2) with {@code length} payload bytes. */
    private static byte[] maskedPing(int length) {
        byte[] f = new byte[6 + length];
        f[0] = (byte) 0x89;
        f[1] = (byte) (0x80 | length);
        f[2] = 1;
        f[3] = 2;
        f[4] = 3;
        f[5] = 4;
        for (int i = 0; i < length; i++) {
            f[6 + i] = (byte) ('p' ^ f[2 + (i & 3)]);
        }
        return f;
    }

    /**
     * Connects a raw worker to {@code g} that advertises a 4 KiB receive window (it reads nothing
     * after the handshake), and completes the uplink's handshake offering {@code subprotocol}.
     */
    static Socket rawWorker(TestGateway g, String subprotocol) throws IOException {
        Socket socket = new Socket();
        socket.setReceiveBufferSize(4096); // before connect: the window it advertises
        socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), g.port()));
        socket.setSoTimeout((int) WAIT.toMillis());
        OutputStream out = socket.getOutputStream();
        out.write(("GET /uplink HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                        + "Sec-WebSocket-Protocol: " + subprotocol + "\r\n"
                        + "X-Spector-Worker: w1\r\nAuthorization: Bearer " + TestGateway.TOKEN + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        assertThat(readHead(socket.getInputStream())).startsWith("HTTP/1.1 101");
        return socket;
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            head.write(b);
        }
        return head.toString(StandardCharsets.US_ASCII);
    }
}
