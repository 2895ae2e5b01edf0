package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * The client connection's codec on its own: a paused decoder leaves what follows the message it
 * handed on as bytes (RFC 9112 §9.3.2 pipelining, answered one request at a time as nginx parses
 * them), and the encoder answers a HEAD without a body (RFC 9110 §9.3.2) as HttpServerCodec does.
 */
final class ClientCodecTest {
    /** Collects the requests' targets and pauses the decoder at each one, as a running exchange does. */
    private static final class PausingAtEachRequest extends ChannelInboundHandlerAdapter {
        final List<String> targets = new ArrayList<>();
        private final ClientCodec.Decoder decoder;

        PausingAtEachRequest(ClientCodec.Decoder decoder) {
            this.decoder = decoder;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof HttpRequest r) {
                targets.add(r.uri());
                decoder.pause();
            }
            ReferenceCountUtil.release(msg);
        }
    }

    private static ByteBuf bytes(String text) {
        return Unpooled.copiedBuffer(text, StandardCharsets.ISO_8859_1);
    }

    @Test
    void aPausedDecoder_decodesOneRequestAtATime_fromOneReadOfFive() {
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig(), true);
        PausingAtEachRequest seen = new PausingAtEachRequest(codec.decoder());
        EmbeddedChannel ch = new EmbeddedChannel(codec.decoder(), codec.encoder(), seen);
        StringBuilder five = new StringBuilder();
        for (int i = 0; i < 5; i++) {
            five.append("GET /r").append(i).append(" HTTP/1.1\r\nHost: x\r\n\r\n");
        }
        ch.writeInbound(bytes(five.toString()));
        assertThat(seen.targets)
                .as("one request decoded; the other four wait as bytes")
                .containsExactly("/r0");
        for (int i = 1; i < 5; i++) {
            codec.decoder().resume();
            ch.runPendingTasks();
            assertThat(seen.targets).as("after resume %d", i).hasSize(i + 1).endsWith("/r" + i);
        }
        codec.decoder().resume();
        ch.runPendingTasks();
        assertThat(seen.targets).as("nothing more").hasSize(5);
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void theAnswerToAHead_isEncodedWithoutItsBody_andTheNextRequestsWithIt() {
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig(), true);
        EmbeddedChannel ch = new EmbeddedChannel(codec.decoder(), codec.encoder());
        ch.writeInbound(bytes("HEAD /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"));
        Object m;
        while ((m = ch.readInbound()) != null) {
            ReferenceCountUtil.release(m);
        }
        for (int i = 0; i < 2; i++) {
            DefaultFullHttpResponse r =
                    new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, bytes("hello"));
            r.headers().set(HttpHeaderNames.CONTENT_LENGTH, 5);
            ch.writeOutbound(r);
        }
        StringBuilder wire = new StringBuilder();
        ByteBuf out;
        while ((out = ch.readOutbound()) != null) {
            wire.append(out.toString(StandardCharsets.ISO_8859_1));
            out.release();
        }
        assertThat(wire.toString())
                .as("the HEAD's answer has no body; the GET's has")
                .isEqualTo("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n"
                        + "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello");
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    /**
     * After a whole request, any start of a next head read with it counts as a head begun (its
     * 408 clock), wherever the read ends in it; the empty lines RFC 9112 §2.2 lets a client send
     * before a request line do not, nor does a request whose body is still arriving.
     */
    @Property(tries = 300)
    void aHeadBegunBehindARequest_isSeen_wherePartOfItWasRead(
            @ForAll @IntRange(min = 0, max = 3) int emptyLines, @ForAll @IntRange(min = 0, max = 40) int cut) {
        String next = "GET /b HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n";
        String prefix = "\r\n".repeat(emptyLines) + next.substring(0, Math.min(cut, next.length()));
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig(), true);
        EmbeddedChannel ch = new EmbeddedChannel(codec.decoder(), codec.encoder());
        ch.writeInbound(bytes("GET /a HTTP/1.1\r\nHost: x\r\n\r\n" + prefix));
        boolean expected = prefix.chars().anyMatch(c -> c > ' ');
        assertThat(codec.decoder().holdsPartialHead())
                .as("%s", Bytes.escape(prefix))
                .isEqualTo(expected);
        ch.finishAndReleaseAll();
    }

    @Test
    void aRequestWhoseBodyIsArriving_isNoHeadBegun() {
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig(), true);
        EmbeddedChannel ch = new EmbeddedChannel(codec.decoder(), codec.encoder());
        ch.writeInbound(bytes("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello"));
        assertThat(codec.decoder().holdsPartialHead()).isFalse();
        ch.writeInbound(bytes("world"));
        assertThat(codec.decoder().holdsPartialHead())
                .as("the body ended, nothing after it")
                .isFalse();
        ch.writeInbound(bytes("PUT"));
        assertThat(codec.decoder().holdsPartialHead()).isTrue();
        ch.finishAndReleaseAll();
    }

    /** A WebSocket handshake's head, without its empty last line. */
    private static final String HANDSHAKE = String.join(
            "\r\n",
            "GET /ws HTTP/1.1",
            "Host: x",
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13",
            "");

    /** Collects the targets of the requests decoded, releasing every message. */
    private static final class Targets extends ChannelInboundHandlerAdapter {
        final List<String> targets = new ArrayList<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof HttpRequest r) {
                targets.add(r.uri());
            }
            ReferenceCountUtil.release(msg);
        }
    }

    /**
     * RFC 9110 §7.8: after a passed upgrade's request (here with a body, RFC 9110 §8.6), what
     * follows may be the new protocol's: the decoder holds it as bytes, a resume does not end
     * the hold, and bytes that arrive while held turn reading off, so what it holds stays within
     * a read whoever turned reading on (found by a review: a pipelined upgrade turned it on again).
     */
    @Test
    void aPassedUpgrade_holdsWhatFollowsAsBytes_andStopsReading() {
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig(), true);
        Targets seen = new Targets();
        EmbeddedChannel ch = new EmbeddedChannel(codec.decoder(), codec.encoder(), seen);
        ch.writeInbound(bytes(HANDSHAKE + "Content-Length: 5\r\n\r\nhello" + "GET /frame-shaped HTTP/1.1\r\n\r\n"));
        assertThat(seen.targets).as("the handshake only").containsExactly("/ws");
        assertThat(codec.decoder().isPaused()).isTrue();

        codec.decoder().resume();
        ch.runPendingTasks();
        ch.config().setAutoRead(true);
        ch.writeInbound(bytes("GET /later HTTP/1.1\r\n\r\n"));

        assertThat(seen.targets).as("a resume does not end the hold").containsExactly("/ws");
        assertThat(ch.config().isAutoRead())
                .as("bytes reached the held decoder: reading stopped")
                .isFalse();
        assertThat(codec.decoder().holdsPartialHead()).as("bytes held").isTrue();
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    /**
     * A lingering close decodes what arrives to drop it, held or not, for good: an upgrade's head
     * among those bytes does not hold the decoder again (found by a review: it did, and a client
     * could fill it for the linger's two seconds with reading on).
     */
    @Test
    void afterResumeToDiscard_noUpgradeHoldsTheDecoderAgain() {
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig(), true);
        Targets seen = new Targets();
        EmbeddedChannel ch = new EmbeddedChannel(codec.decoder(), codec.encoder(), seen);
        ch.writeInbound(bytes(HANDSHAKE + "\r\n" + "GET /behind HTTP/1.1\r\n\r\n"));
        assertThat(seen.targets).containsExactly("/ws");

        codec.decoder().resumeToDiscard();
        ch.runPendingTasks();
        ch.writeInbound(bytes(HANDSHAKE + "\r\n" + "GET /after-another HTTP/1.1\r\n\r\n"));

        assertThat(seen.targets)
                .as("everything decoded (and dropped downstream)")
                .containsExactly("/ws", "/behind", "/ws", "/after-another");
        assertThat(codec.decoder().isPaused()).isFalse();
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    /**
     * The admin port passes no upgrade and keeps its connections: its decoder never holds, so a
     * request behind an upgrade-shaped one is decoded (found by a review: the admin connection
     * hung until its head timer).
     */
    @Test
    void aCodecThatPassesNoUpgrade_neverHolds() {
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig(), false);
        Targets seen = new Targets();
        EmbeddedChannel ch = new EmbeddedChannel(codec.decoder(), codec.encoder(), seen);
        ch.writeInbound(bytes(HANDSHAKE + "\r\n" + "GET /actuator/health HTTP/1.1\r\n\r\n"));
        assertThat(seen.targets).containsExactly("/ws", "/actuator/health");
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }
}
