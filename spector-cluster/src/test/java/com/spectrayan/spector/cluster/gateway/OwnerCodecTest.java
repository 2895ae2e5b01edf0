package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Whether an owner connection's codec holds bytes past the last response ({@link
 * OwnerCodec#holdsBytes}): the pool closes such a connection rather than give it to the next
 * exchange, whose answer those bytes would start (a response desync, RFC 9112 §6.3 and §11.2).
 * The bytes arrive as an owner writes them, on a codec in a channel of its own.
 */
final class OwnerCodecTest {
    private final OwnerCodec codec = new OwnerCodec(new HttpDecoderConfig());
    private final EmbeddedChannel channel = new EmbeddedChannel(codec);

    @AfterEach
    void close() {
        channel.finishAndReleaseAll();
    }

    private void owner(String bytes) {
        channel.writeInbound(Unpooled.copiedBuffer(bytes, StandardCharsets.ISO_8859_1));
        for (Object m; (m = channel.readInbound()) != null; ) {
            io.netty.util.ReferenceCountUtil.release(m);
        }
    }

    @Test
    void wholeResponses_leaveNothing() {
        owner("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        assertThat(codec.holdsBytes()).isFalse();
        owner("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n");
        assertThat(codec.holdsBytes()).isFalse();
        owner("HTTP/1.1 204 No Content\r\n\r\n");
        assertThat(codec.holdsBytes()).isFalse();
    }

    @Test
    void aResponseArrivingInPieces_isNoStrayHeadOnceWhole() {
        owner("HTTP/1.1 200 OK\r\n");
        owner("Content-Length: 2\r\n");
        owner("\r\nh");
        owner("i");
        assertThat(codec.holdsBytes()).isFalse();
    }

    /**
     * A status line and whole header lines after a response: Netty's decoder takes each line out
     * of its buffer as it parses it, so its buffer is empty while it is mid-head. The old check
     * (the buffer's readable bytes) called this connection clean and pooled it (found by a review).
     */
    @Test
    void aStatusLineAndHeaderLinesAfterAResponse_areBytesPastIt() {
        owner("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        owner("HTTP/1.1 200 OK\r\nX-Forged: 1\r\n");
        assertThat(codec.holdsBytes()).isTrue();
    }

    @Test
    void anyByteAfterAResponse_isPastIt() {
        owner("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        owner("\r\n");
        assertThat(codec.holdsBytes()).as("a line end").isTrue();
    }

    @Test
    void partOfAStatusLine_isPastIt() {
        owner("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 2");
        assertThat(codec.holdsBytes()).isTrue();
    }
}
