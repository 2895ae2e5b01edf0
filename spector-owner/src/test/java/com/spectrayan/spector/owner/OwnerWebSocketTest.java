package com.spectrayan.spector.owner;

import static com.spectrayan.spector.owner.RingOwnerExtension.MINE;
import static com.spectrayan.spector.owner.RingOwnerExtension.THEIRS;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.SpectorHeaders;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The reference owner's WebSocket echo at {@code /api/v1/namespaces/{ns}/ws} over a raw loopback
 * socket: the handshake and every frame are written and read byte by byte ({@link RawWebSocket}).
 * The owner is {@code owner-0} of a three-member ring at epoch 1, so the guard's refusals apply to
 * the handshake like to any request.
 */
final class OwnerWebSocketTest {
    @RegisterExtension
    final RingOwnerExtension ring = new RingOwnerExtension();

    private String wsPath(String namespace) {
        return "/api/v1/namespaces/" + namespace + "/ws";
    }

    /** Opens a connection and completes the handshake on the owned namespace. */
    private RawHttp upgraded() throws Exception {
        RawHttp raw = new RawHttp(ring.owner());
        raw.write(RawWebSocket.handshake(wsPath(MINE)));
        RawHttp.Head head = raw.readHead();
        assertThat(head.status()).as("handshake").isEqualTo(101);
        return raw;
    }

    /** RFC 6455 §4.2.2 (and §1.3): the accept value is the RFC's for its sample key. */
    @Test
    void handshake_rfcSampleKey_answers101WithTheRfcAcceptValue() throws Exception {
        try (RawHttp raw = new RawHttp(ring.owner())) {
            raw.write(RawWebSocket.handshake(wsPath(MINE)));

            RawHttp.Head head = raw.readHead();

            assertThat(head.status()).isEqualTo(101);
            assertThat(head.header("Upgrade")).isEqualToIgnoringCase("websocket");
            assertThat(head.header("Connection")).isEqualToIgnoringCase("upgrade");
            assertThat(head.header("Sec-WebSocket-Accept")).isEqualTo(RawWebSocket.SAMPLE_ACCEPT);
            assertThat(head.header(SpectorHeaders.NODE)).isEqualTo("owner-0");
        }
    }

    /**
     * RFC 6455 §4.2.1: the handshake is in the owner's request log like any request, with the
     * headers it arrived with.
     */
    @Test
    void handshake_servedIsRecordedWith101AndItsUpgradeHeaders() throws Exception {
        try (RawHttp raw = upgraded()) {
            raw.write(RawWebSocket.clientText("after the log"));
            assertThat(RawWebSocket.readFrame(raw).text()).isEqualTo("after the log");
            RecordedRequest row =
                    ring.owner().requests().get(ring.owner().requests().size() - 1);

            assertThat(row.method()).isEqualTo("GET");
            assertThat(row.path()).isEqualTo(wsPath(MINE));
            assertThat(row.namespace()).isEqualTo(MINE);
            assertThat(row.status()).isEqualTo(101);
            assertThat(row.header("Upgrade")).isEqualTo("websocket");
            assertThat(row.header("Connection")).isEqualTo("Upgrade");
            assertThat(row.header("Sec-WebSocket-Key")).isEqualTo(RawWebSocket.SAMPLE_KEY);
            assertThat(row.header("Sec-WebSocket-Version")).isEqualTo("13");
        }
    }

    /** RFC 6455 §5.7: the RFC's masked "Hello" comes back as the RFC's unmasked "Hello". */
    @Test
    void textFrame_rfcMaskedHello_isEchoedAsTheRfcUnmaskedHello() throws Exception {
        try (RawHttp raw = upgraded()) {
            raw.write(new byte[] {
                (byte) 0x81, (byte) 0x85, 0x37, (byte) 0xfa, 0x21, 0x3d, 0x7f, (byte) 0x9f, 0x4d, 0x51, 0x58
            });

            assertThat(raw.readBytes(7)).containsExactly(0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f);
        }
    }

    /** RFC 6455 §5.6: a masked text message is echoed as a text message with the same text. */
    @Test
    void textFrame_masked_isEchoedAsText() throws Exception {
        try (RawHttp raw = upgraded()) {
            raw.write(RawWebSocket.clientText("ping-me"));

            RawWebSocket.Frame echo = RawWebSocket.readFrame(raw);

            assertThat(echo.opcode()).isEqualTo(RawWebSocket.TEXT);
            assertThat(echo.fin()).isTrue();
            assertThat(echo.text()).isEqualTo("ping-me");
        }
    }

    /** RFC 6455 §5.6, §5.2 (16-bit length): a binary message comes back byte for byte. */
    @Test
    void binaryFrame_masked_isEchoedAsBinary() throws Exception {
        byte[] payload = new byte[1000];
        new Random(7).nextBytes(payload);
        try (RawHttp raw = upgraded()) {
            raw.write(RawWebSocket.clientFrame(true, RawWebSocket.BINARY, payload));

            RawWebSocket.Frame echo = RawWebSocket.readFrame(raw);

            assertThat(echo.opcode()).isEqualTo(RawWebSocket.BINARY);
            assertThat(echo.payload()).isEqualTo(payload);
        }
    }

    /** RFC 6455 §5.4: the fragments of a message are echoed one by one, FIN bits kept. */
    @Test
    void fragmentedText_isEchoedFragmentByFragment() throws Exception {
        try (RawHttp raw = upgraded()) {
            raw.write(RawWebSocket.clientFrame(false, RawWebSocket.TEXT, "ping-".getBytes(StandardCharsets.UTF_8)));
            raw.write(RawWebSocket.clientFrame(true, RawWebSocket.CONTINUATION, "me".getBytes(StandardCharsets.UTF_8)));

            RawWebSocket.Frame first = RawWebSocket.readFrame(raw);
            RawWebSocket.Frame last = RawWebSocket.readFrame(raw);

            assertThat(first)
                    .extracting(f -> f.opcode(), f -> f.fin(), f -> f.text())
                    .containsExactly(RawWebSocket.TEXT, false, "ping-");
            assertThat(last)
                    .extracting(f -> f.opcode(), f -> f.fin(), f -> f.text())
                    .containsExactly(RawWebSocket.CONTINUATION, true, "me");
        }
    }

    /** RFC 6455 §5.5.2, §5.5.3: a ping is answered with a pong of the same payload. */
    @Test
    void ping_withPayload_isAnsweredWithAPongOfThatPayload() throws Exception {
        try (RawHttp raw = upgraded()) {
            raw.write(RawWebSocket.clientFrame(
                    true, RawWebSocket.PING, "are-you-there".getBytes(StandardCharsets.UTF_8)));

            RawWebSocket.Frame pong = RawWebSocket.readFrame(raw);

            assertThat(pong.opcode()).isEqualTo(RawWebSocket.PONG);
            assertThat(pong.text()).isEqualTo("are-you-there");
        }
    }

    /**
     * RFC 6455 §5.5.1, §7.1.1: a close frame is answered with a close frame of the same status,
     * and the owner (the server) then closes the TCP connection.
     */
    @Test
    void close_1000_isEchoedAndTheOwnerClosesTheConnection() throws Exception {
        try (RawHttp raw = upgraded()) {
            raw.write(RawWebSocket.clientClose(1000));

            RawWebSocket.Frame close = RawWebSocket.readFrame(raw);

            assertThat(close.opcode()).isEqualTo(RawWebSocket.CLOSE);
            assertThat(close.closeCode()).isEqualTo(1000);
            assertThat(raw.readsEof())
                    .as("the owner closes after its close frame")
                    .isTrue();
        }
    }

    /**
     * RFC 6455 §5.2, §7.4.1: a frame of exactly the owner's bound is echoed; one byte more is
     * refused with close code 1009 (message too big) from its header alone, and the connection
     * closes.
     */
    @Test
    void frame_atTheLimitIsEchoed_andOnePastClosesWith1009() throws Exception {
        int limit = OwnerLimits.MAX_WEBSOCKET_FRAME_BYTES;
        byte[] payload = new byte[limit];
        new Random(11).nextBytes(payload);

        try (RawHttp raw = upgraded()) {
            raw.write(RawWebSocket.clientFrame(true, RawWebSocket.BINARY, payload));

            assertThat(RawWebSocket.readFrame(raw).payload())
                    .as("a frame of %d bytes", limit)
                    .isEqualTo(payload);
        }
        try (RawHttp raw = upgraded()) {
            // The header alone: the owner must refuse before it reads (or buffers) the payload.
            raw.write(RawWebSocket.clientHeaderOnly(RawWebSocket.BINARY, limit + 1L));

            RawWebSocket.Frame close = RawWebSocket.readFrame(raw);

            assertThat(close.opcode()).isEqualTo(RawWebSocket.CLOSE);
            assertThat(close.closeCode()).as("a frame of %d bytes", limit + 1).isEqualTo(1009);
            assertThat(raw.readsEof()).isTrue();
        }
    }

    /** RFC 6455 §5.1: a client frame without a mask is a protocol error, closed with 1002. */
    @Test
    void frame_unmasked_closesWith1002() throws Exception {
        try (RawHttp raw = upgraded()) {
            raw.write(RawWebSocket.unmaskedFrame(RawWebSocket.TEXT, "ping-me".getBytes(StandardCharsets.UTF_8)));

            RawWebSocket.Frame close = RawWebSocket.readFrame(raw);

            assertThat(close.opcode()).isEqualTo(RawWebSocket.CLOSE);
            assertThat(close.closeCode()).isEqualTo(1002);
            assertThat(raw.readsEof()).isTrue();
        }
    }

    /** RFC 6455 §8.1, §7.4.1: a text frame that is not UTF-8 is closed with 1007. */
    @Test
    void textFrame_invalidUtf8_closesWith1007() throws Exception {
        try (RawHttp raw = upgraded()) {
            raw.write(RawWebSocket.clientFrame(true, RawWebSocket.TEXT, new byte[] {'o', 'k', (byte) 0xc3, 0x28}));

            RawWebSocket.Frame close = RawWebSocket.readFrame(raw);

            assertThat(close.opcode()).isEqualTo(RawWebSocket.CLOSE);
            assertThat(close.closeCode()).isEqualTo(1007);
            assertThat(raw.readsEof()).isTrue();
        }
    }

    /**
     * DESIGN §4, RFC 9110 §15.5.20: the guard decides on the handshake before any upgrade; a
     * namespace another node owns is 421 naming it, and the connection stays HTTP.
     */
    @Test
    void handshake_notTheOwner_answers421AndTheConnectionStaysHttp() throws Exception {
        try (RawHttp raw = new RawHttp(ring.owner())) {
            raw.write(RawWebSocket.handshake(wsPath(THEIRS)));

            RawHttp.Head head = raw.readHead();
            raw.readBody(head);
            raw.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
            RawHttp.Head next = raw.readHead();

            assertThat(head.status()).isEqualTo(421);
            assertThat(head.header(SpectorHeaders.OWNER)).isEqualTo("owner-1");
            assertThat(head.header("Sec-WebSocket-Accept")).isEmpty();
            assertThat(head.header("Upgrade")).isEmpty();
            assertThat(next.status())
                    .as("the next request on the same connection")
                    .isEqualTo(200);
        }
        RecordedRequest row = ring.owner().requests().get(0);
        assertThat(row.status()).isEqualTo(421);
        assertThat(row.header("Upgrade")).isEqualTo("websocket");
    }

    /** DESIGN §4: a handshake with an epoch newer than the owner's is 503, and no upgrade. */
    @Test
    void handshake_newerEpoch_answers503() throws Exception {
        try (RawHttp raw = new RawHttp(ring.owner())) {
            raw.write(RawWebSocket.handshake(wsPath(MINE), SpectorHeaders.EPOCH + ": 2"));

            RawHttp.Head head = raw.readHead();

            assertThat(head.status()).isEqualTo(503);
            assertThat(head.header("Retry-After")).isNotEmpty();
            assertThat(head.header("Sec-WebSocket-Accept")).isEmpty();
        }
    }

    /**
     * RFC 6455 §4.2.1 (a request that is no handshake is answered with an error such as 400), RFC
     * 9110 §7.8: a plain GET of the endpoint is a 400 problem naming {@code Upgrade}.
     */
    @Test
    void get_withoutUpgrade_answers400Problem() throws Exception {
        try (RawHttp raw = new RawHttp(ring.owner())) {
            raw.write("GET " + wsPath(MINE) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");

            RawHttp.Head head = raw.readHead();
            String body = new String(raw.readBody(head), StandardCharsets.UTF_8);

            assertThat(head.status()).isEqualTo(400);
            assertThat(head.header("Content-Type")).isEqualTo("application/problem+json");
            assertThat(body).contains("\"BAD_REQUEST\"").contains("Upgrade");
        }
    }

    /** RFC 6455 §4.2.1 item 5: a handshake without a key is 400, and no upgrade. */
    @Test
    void handshake_withoutKey_answers400() throws Exception {
        try (RawHttp raw = new RawHttp(ring.owner())) {
            raw.write("GET " + wsPath(MINE) + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                    + "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n");

            RawHttp.Head head = raw.readHead();
            String body = new String(raw.readBody(head), StandardCharsets.UTF_8);

            assertThat(head.status()).isEqualTo(400);
            assertThat(body).contains("Sec-WebSocket-Key");
        }
    }

    /** RFC 6455 §4.4: an unsupported version is 426 with {@code Sec-WebSocket-Version: 13}. */
    @Test
    void handshake_version8_answers426Naming13() throws Exception {
        try (RawHttp raw = new RawHttp(ring.owner())) {
            raw.write(RawWebSocket.handshake(wsPath(MINE))
                    .replace("Sec-WebSocket-Version: 13", "Sec-WebSocket-Version: 8"));

            RawHttp.Head head = raw.readHead();
            String body = new String(raw.readBody(head), StandardCharsets.UTF_8);

            assertThat(head.status()).isEqualTo(426);
            assertThat(head.header("Sec-WebSocket-Version")).isEqualTo("13");
            assertThat(body).contains(OffRegistryProblems.WEBSOCKET_VERSION_UNSUPPORTED);
        }
    }
}
