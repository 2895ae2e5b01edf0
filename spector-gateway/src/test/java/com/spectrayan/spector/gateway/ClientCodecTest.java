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
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig());
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
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig());
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
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig());
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
        ClientCodec codec = new ClientCodec(new HttpDecoderConfig());
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
}
