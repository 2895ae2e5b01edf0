package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.wire.Frame;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A v1 peer that sends calls and never reads their answers: the link keeps at most {@link
 * WebSocketFrameChannel#MAX_UNSENT_BYTES} of frames waiting for the socket, then closes 1008.
 * Regression (the third review, a hostile gateway against a worker): every answer was queued,
 * 300 000 of them, 365 MB resident. Here the receiving side is the test gateway's link, which
 * answers each call as a worker's session does; the channel class is the one both sides use.
 */
final class UplinkUnreadAnswersTest {
    /** Calls sent at most: each answer is about 200 bytes, so far past the bound if all were held. */
    private static final int CALLS = 600_000;

    @RegisterExtension
    final Closing closing = new Closing();

    @Test
    void aPeerThatCallsAndNeverReads_isClosed_onceTheBoundOfUnsentBytesIsPassed() throws IOException {
        LongAdder answered = new LongAdder();
        AtomicReference<@Nullable FrameChannel> link = new AtomicReference<>();
        TestGateway g = TestGateway.speakingV1Only(closing.group, (workerId, channel) -> {
            link.set(channel);
            return new FrameChannel.Receiver() {
                @Override
                public void onFrame(Frame frame) {
                    if (frame instanceof Frame.Call call) {
                        answered.increment();
                        var unused = channel.send(Frame.ErrorFrame.of(call.id(), refusal(call.op())));
                    }
                }

                @Override
                public void onClose(@Nullable Throwable cause) {}
            };
        });
        closing.add(g);
        try (Socket socket = UplinkPingFloodTest.rawWorker(g, FrameCodec.SUBPROTOCOL)) {
            OutputStream out = socket.getOutputStream();
            until("the link is open", WAIT, () -> link.get() != null);
            FrameChannel channel = java.util.Objects.requireNonNull(link.get());

            int sent = 0;
            try {
                while (sent < CALLS && channel.isOpen()) {
                    ByteArrayOutputStream batch = new ByteArrayOutputStream();
                    for (int i = 0; i < 100; i++) {
                        batch.write(maskedText(
                                "{\"type\":\"call\",\"id\":" + (sent + i + 1) + ",\"op\":\"x\",\"input\":{}}"));
                    }
                    out.write(batch.toByteArray()); // blocks once the link stops reading; fails once it closed
                    sent += 100;
                }
            } catch (IOException closedByTheLink) {
                // the link closed under the flood
            }
            int calls = sent;
            until("the link closes after " + calls + " unread answers", WAIT, () -> !channel.isOpen());
            long answerBytes = FrameCodec.encodeUtf8(Frame.ErrorFrame.of(1, refusal("x"))).length;
            assertThat(answered.sum() * answerBytes)
                    .as("it answered about the bound's worth before it closed (Netty counts each waiting"
                            + " frame with its own overhead): the bound closed it, nothing earlier")
                    .isGreaterThanOrEqualTo(WebSocketFrameChannel.MAX_UNSENT_BYTES / 2);
        }
    }

    private static SpectorException refusal(String op) {
        return SpectorException.badRequest(
                "op", "'" + op + "' is no operation of this test (expected: none: every call is answered so)");
    }

    /** A masked text frame (RFC 6455 §5.2) carrying {@code text}, under 65 536 bytes. */
    private static byte[] maskedText(String text) {
        byte[] payload = text.getBytes(StandardCharsets.UTF_8);
        int header = payload.length < 126 ? 2 : 4;
        byte[] f = new byte[header + 4 + payload.length];
        f[0] = (byte) 0x81;
        if (payload.length < 126) {
            f[1] = (byte) (0x80 | payload.length);
        } else {
            f[1] = (byte) (0x80 | 126);
            f[2] = (byte) (payload.length >> 8);
            f[3] = (byte) payload.length;
        }
        byte[] mask = {1, 2, 3, 4};
        System.arraycopy(mask, 0, f, header, 4);
        for (int i = 0; i < payload.length; i++) {
            f[header + 4 + i] = (byte) (payload[i] ^ mask[i & 3]);
        }
        return f;
    }
}
