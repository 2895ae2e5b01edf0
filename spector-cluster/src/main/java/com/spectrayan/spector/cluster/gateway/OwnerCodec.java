package com.spectrayan.spector.cluster.gateway;

import com.spectrayan.spector.contract.ResponseFraming;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.CombinedChannelDuplexHandler;
import io.netty.handler.codec.http.HttpClientUpgradeHandler;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestEncoder;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.AsciiString;
import java.util.ArrayDeque;
import java.util.List;

/**
 * An owner connection's HTTP/1.1 codec: Netty's request encoder and response decoder, paired as
 * Netty's {@code HttpClientCodec} pairs them (each request's method is queued, so the answer to a
 * {@code HEAD} has no body, RFC 9110 §9.3.2), and able to say what that codec cannot: whether its
 * decoder holds bytes that belong to no response it delivered ({@link #holdsBytes}).
 *
 * <p>Design notes. An owner that sends more than its {@code Content-Length} (or anything after a
 * response's end) leaves those bytes in the decoder, complete or not. On a connection that then
 * goes back to its pool, they would be read as the start of the next exchange's response: another
 * client's, maybe another tenant's (a response desync, RFC 9112 §11.2's "response splitting" from
 * the other side). nginx refuses such an upstream connection for keep-alive ("upstream sent more
 * data than specified"); so does the pool here: a connection whose codec holds bytes is closed
 * instead of pooled, and an idle one found holding bytes is closed instead of handed out. What is
 * still in the socket when the next request goes out cannot be told from the next response's first
 * bytes, as for any HTTP/1.1 client.
 *
 * <p>{@code CONNECT} is refused at the edge, so the codec never carries a tunnel's {@code 200}.
 * After an upgrade's {@code 101} the gateway takes the codec out; the worker keeps it, set to pass
 * bytes as they are both ways ({@link #prepareUpgradeFrom}: the decoder is past the {@code 101},
 * in Netty's upgraded state), as with Netty's {@code HttpClientCodec}. An interim answer ({@code
 * 1xx}) pairs with no request. Threading: the connection's event loop.
 */
final class OwnerCodec extends CombinedChannelDuplexHandler<OwnerCodec.Decoder, OwnerCodec.Encoder>
        implements HttpClientUpgradeHandler.SourceCodec {
    private static final int CONTENT_LENGTH_CHARS = HttpHeaderNames.CONTENT_LENGTH.length();

    /** The methods of the requests whose final answers have not begun, oldest first. */
    private final ArrayDeque<HttpMethod> methods = new ArrayDeque<>(2);

    OwnerCodec(HttpDecoderConfig config) {
        init(new Decoder(config), new Encoder());
    }

    /** After a {@code 101}: the encoder passes what is written as it is (the decoder already does). */
    @Override
    public void prepareUpgradeFrom(ChannelHandlerContext ctx) {
        outboundHandler().upgraded = true;
    }

    /** Takes the codec out (what the decoder still holds goes on down the pipeline). */
    @Override
    public void upgradeFrom(ChannelHandlerContext ctx) {
        ctx.pipeline().remove(this);
    }

    /**
     * Answers whether the decoder holds bytes it made no message of, or took bytes it made no
     * message of yet: bytes past the last response. Netty's decoder takes a head's lines out of its
     * buffer as it parses them, so a status line and whole header lines sent after a response left
     * an empty buffer and a decoder mid-head; only its own count says so (found by a review).
     */
    boolean holdsBytes() {
        Decoder d = inboundHandler();
        return d.held() > 0 || d.headBegun;
    }

    /**
     * Answers whether {@code channel}'s framing may carry another exchange: its codec (named {@code
     * name}) is an owner codec holding no bytes. A channel without one is not (its framing is unknown).
     */
    static boolean clean(Channel channel, String name) {
        ChannelHandler codec = channel.pipeline().get(name);
        return codec instanceof OwnerCodec c && !c.holdsBytes();
    }

    /** The response decoder: pairs each final answer with its request's method. */
    final class Decoder extends HttpResponseDecoder {
        /** A response was handed on and its last content not yet. */
        private boolean messageOpen;
        /** Bytes were taken outside any response handed on: a next head's start (any byte, even a line end). */
        private boolean headBegun;
        /** The Content-Length fields of the head being read. */
        private int lengthFields;

        Decoder(HttpDecoderConfig config) {
            super(config);
        }

        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf buffer, List<Object> out) throws Exception {
            int from = out.size();
            int readFrom = buffer.readerIndex();
            super.decode(ctx, buffer, out);
            int n = out.size();
            for (int i = from; i < n; i++) {
                Object m = out.get(i);
                if (m instanceof HttpResponse) {
                    messageOpen = true;
                    headBegun = false;
                }
                if (m instanceof LastHttpContent) {
                    messageOpen = false;
                }
            }
            if (n == from && !messageOpen && buffer.readerIndex() > readFrom) {
                headBegun = true;
            }
        }

        int held() {
            return actualReadableBytes();
        }

        /** A name owners send on nearly every response is one made once ({@link FieldNames}). */
        @Override
        protected AsciiString splitHeaderName(byte[] sb, int start, int length) {
            AsciiString known = FieldNames.known(sb, start, length);
            AsciiString name = known != null ? known : super.splitHeaderName(sb, start, length);
            if (length == CONTENT_LENGTH_CHARS && name.contentEqualsIgnoreCase(HttpHeaderNames.CONTENT_LENGTH)) {
                lengthFields++;
            }
            return name;
        }

        @Override
        protected HttpMessage createMessage(String[] initialLine) {
            lengthFields = 0;
            return super.createMessage(initialLine);
        }

        /**
         * Called once a head's fields are read, before its body: pairs a final answer with its
         * request's method, and says which answers have no body. A 205 has none (RFC 9110
         * §15.3.6, {@link ResponseFraming}): what an owner sends as its content is bytes past the
         * answer, so the connection is closed, not pooled, and the client's exchange ends with the
         * head (it waited for that content to end: a trickled chunk held a finished 205 and the
         * requests pipelined behind it, found by a review). An HTTP/1.0 answer with two
         * Content-Length fields is refused, as Netty refuses one of HTTP/1.1 (it frames a 1.0
         * answer by the first and drops the other: a body cut and passed as whole, RFC 9112 §6.3).
         */
        @Override
        protected boolean isContentAlwaysEmpty(HttpMessage msg) {
            if (lengthFields > 1) {
                throw new IllegalArgumentException("Content-Length " + lengthFields + " times");
            }
            HttpResponse response = (HttpResponse) msg;
            if (response.status().codeClass() == HttpStatusClass.INFORMATIONAL) {
                return super.isContentAlwaysEmpty(msg); // interim: its request's final answer follows
            }
            HttpMethod method = methods.poll();
            return ResponseFraming.bodyless(
                            HttpMethod.HEAD.equals(method), response.status().code())
                    || super.isContentAlwaysEmpty(msg);
        }
    }

    /** The request encoder: queues each request's method for the decoder; after an upgrade, passes bytes. */
    final class Encoder extends HttpRequestEncoder {
        /** Set once the connection switched protocols ({@link #prepareUpgradeFrom}). */
        boolean upgraded;

        @Override
        protected void encode(ChannelHandlerContext ctx, Object msg, List<Object> out) throws Exception {
            if (upgraded) {
                out.add(msg); // Netty 4.2's HTTP encoder owns what it is given: no retain
                return;
            }
            if (msg instanceof HttpRequest r) {
                methods.offer(r.method());
            }
            super.encode(ctx, msg, out);
        }
    }
}
