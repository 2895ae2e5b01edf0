package com.spectrayan.spector.gateway;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.ArrayDeque;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The HTTP/1.1 codec of a client connection (the client, peer and admin ports): Netty's request
 * decoder and response encoder, paired as {@code HttpServerCodec} pairs them (the answer to a HEAD
 * has no body), with one thing more: the decoder can stop between requests.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Why not {@code HttpServerCodec}.</b> Its decoder decodes every request a read holds, and
 *       past 128 decoded and unanswered it throws, discards the rest of the connection and closes
 *       after the next answer: a client that pipelined 200 small requests in one write got 58
 *       answers and a reset (the exhaustion review), one of its PUTs carried out and never
 *       answered. nginx and Envoy parse the next request only when the one before it is done,
 *       leaving its bytes unparsed in the read buffer; so does this codec. The connection stops it
 *       when a pipelined request arrives during an exchange ({@link Decoder#pause}, from {@code
 *       ClientConnection.holdBack}, or on the admin port while a scrape waits); what follows stays bytes in the decoder's buffer, bounded by
 *       one read, as reading has stopped too; and it goes on when the held request's turn came
 *       ({@link Decoder#resume}). So at most one request waits decoded, however deep the pipeline.
 *   <li><b>The methods' queue.</b> The decoder notes each request's method, the encoder takes one
 *       per final answer (not per 1xx), as {@code HttpServerCodec} does: a HEAD's answer is encoded
 *       without a body, a 2xx to CONNECT without {@code Transfer-Encoding}. Pausing bounds it.
 *   <li><b>Resuming.</b> Decoding what waits is a read of no new bytes, run as a task on the loop
 *       (never inside the decoder's own loop, which may be what resumed it), followed by the end of
 *       that read batch.
 *   <li><b>Held for a switch</b> (the client and peer ports, which pass upgrades on). The decoder
 *       stops by itself right after the last content of a request the gateway passes on as an
 *       upgrade ({@link Upgrades#isUpgrade}), in its own loop, before a byte behind it is decoded:
 *       those may be the new protocol's (a client's first frames), and they stay in its buffer
 *       until the switch takes the decoder out and them with it ({@code CodecRemoval}), or the
 *       uplink's handshake replaces it. Nothing downstream can stop it in time: a body's parts may
 *       wait in the flow handler while the decoder runs on, and a TLS handler hands the records of
 *       one read on one at a time (the JDK's provider), so a frame's record came after the decoder
 *       was gone and was lost (both found by a review). Node's HTTP server and Envoy's HTTP/1 codec
 *       stop at an upgrade's end the same way. While held it turns reading off whenever bytes
 *       reach it, so what it holds is bounded by a read, whoever turned reading on. Only the
 *       switch ends the hold, or a lingering close, which from then on decodes what arrives to drop
 *       it and never holds again ({@link Decoder#resumeToDiscard}): a connection whose upgrade got
 *       any answer but a {@code 101} closes. The admin port passes no upgrade and keeps its
 *       connections: its decoder never holds.
 * </ul>
 *
 * <p>Threading: confined to the connection's event loop.
 */
final class ClientCodec {
    /** The name of the encoder in a client connection's pipeline, right behind the decoder ({@code "codec"}). */
    static final String ENCODER_NAME = "codec-out";

    /** The methods of the requests decoded and not yet answered, oldest first. */
    private final ArrayDeque<HttpMethod> methods = new ArrayDeque<>(4);

    private final Decoder decoder;
    private final Encoder encoder;
    /** Whether the decoder holds itself after a passed upgrade (the ports that pass upgrades on). */
    private final boolean holdsForUpgrades;

    /**
     * A codec with {@code config}; {@code holdsForUpgrades}: for a port that passes upgrades on
     * (the client and peer ports), see "Held for a switch".
     */
    ClientCodec(HttpDecoderConfig config, boolean holdsForUpgrades) {
        this.holdsForUpgrades = holdsForUpgrades;
        decoder = new Decoder(config);
        encoder = new Encoder();
    }

    /** Returns the decoder, for the pipeline ({@code "codec"}). */
    Decoder decoder() {
        return decoder;
    }

    /** Returns the encoder, for the pipeline ({@link #ENCODER_NAME}, after the decoder). */
    Encoder encoder() {
        return encoder;
    }

    /**
     * The request decoder. Two handlers rather than one combined (as {@code HttpServerCodec}): a
     * WebSocket handshaker (the uplink's) finds an {@code HttpRequestDecoder} and an {@code
     * HttpResponseEncoder} in the pipeline, as it would find the codec Netty ships, and a switch
     * takes the decoder out alone while the encoder writes the answer.
     */
    final class Decoder extends HttpRequestDecoder {
        private boolean paused;
        /** The open message is a request passed on as an upgrade: its end holds the decoder for the switch. */
        private boolean upgradeOpen;
        /** Stopped after a passed upgrade's request, for the switch ({@link #resumeToDiscard} only ends it). */
        private boolean heldForSwitch;
        /** The connection closes and drops what is decoded ({@link #resumeToDiscard}): never held again. */
        private boolean discarding;

        private boolean resumeScheduled;
        /** A request's head was handed on and its last content not yet. */
        private boolean messageOpen;
        /** Bytes of a head were taken into the decoder's state while no message was open. */
        private boolean headBegun;

        private @Nullable ChannelHandlerContext ctx;

        Decoder(HttpDecoderConfig config) {
            super(config);
        }

        /** Stops decoding after the message being handed on: what follows stays bytes until {@link #resume}. */
        void pause() {
            paused = true;
        }

        /**
         * Answers whether the start of a next head was read and is not a message yet: bytes taken
         * into the decoder's state (a request line, field lines) or left in its buffer while no
         * message is open. Read with the request before them, they started no clock of their own.
         */
        boolean holdsPartialHead() {
            return !messageOpen && (headBegun || internalBuffer().isReadable());
        }

        /**
         * Answers whether requests were decoded whose answers' heads are not yet encoded: once a
         * response's head is written, those are pipelined requests behind it, perhaps held
         * downstream (the flow handler's queue) where the connection does not see them.
         */
        boolean hasUnansweredRequests() {
            return !methods.isEmpty();
        }

        /** Answers whether the decoder is stopped ({@link #pause}, or held for a switch). */
        boolean isPaused() {
            return paused || heldForSwitch;
        }

        @Override
        public void handlerAdded(ChannelHandlerContext context) throws Exception {
            ctx = context;
            super.handlerAdded(context);
        }

        @Override
        protected void decode(ChannelHandlerContext context, ByteBuf buffer, List<Object> out) throws Exception {
            if (heldForSwitch) {
                context.channel().config().setAutoRead(false); // what is held stays within a read
                return;
            }
            if (paused) {
                return; // no progress: the decoder's loop ends, the bytes stay in its buffer
            }
            int from = out.size();
            int readFrom = buffer.readerIndex();
            super.decode(context, buffer, out);
            int n = out.size();
            for (int i = from; i < n; i++) {
                Object m = out.get(i);
                if (m instanceof HttpRequest request) {
                    methods.add(request.method());
                    messageOpen = true;
                    headBegun = false;
                    upgradeOpen = holdsForUpgrades
                            && !discarding
                            && request.headers().contains(HttpHeaderNames.UPGRADE)
                            && Upgrades.isUpgrade(request);
                }
                if (m instanceof LastHttpContent) {
                    messageOpen = false;
                    heldForSwitch = upgradeOpen; // a step ends at a message's end: nothing behind it is decoded
                    upgradeOpen = false;
                }
            }
            if (n == from && !messageOpen && !headBegun && buffer.readerIndex() > readFrom) {
                // A step that took bytes and handed on nothing: a head's line, unless they were only
                // the empty lines a client may send before a request line (RFC 9112 §2.2), which
                // start no head (an idle connection gets no 408).
                headBegun = buffer.forEachByte(readFrom, buffer.readerIndex() - readFrom, b -> b <= ' ') >= 0;
            }
        }

        /**
         * Decodes again, first what waited (in a task on the loop, when something did), unless
         * the decoder is held for a switch.
         */
        void resume() {
            paused = false;
            ChannelHandlerContext c = ctx;
            if (c == null
                    || resumeScheduled
                    || heldForSwitch
                    || !internalBuffer().isReadable()) {
                return;
            }
            resumeScheduled = true;
            c.executor().execute(() -> {
                resumeScheduled = false;
                if (paused
                        || heldForSwitch
                        || c.isRemoved()
                        || !internalBuffer().isReadable()) {
                    return;
                }
                try {
                    channelRead(c, Unpooled.EMPTY_BUFFER);
                    channelReadComplete(c);
                } catch (Exception e) {
                    c.fireExceptionCaught(e);
                }
            });
        }

        /**
         * Decodes again past every stop, a switch's hold too, for good: the connection closes and
         * only drops what is decoded (a lingering close), so nothing is held, however the bytes
         * that arrive look (an upgrade's head among them holds no more).
         */
        void resumeToDiscard() {
            discarding = true;
            heldForSwitch = false;
            upgradeOpen = false;
            resume();
        }
    }

    /** The response encoder: a HEAD's answer without a body, as {@code HttpServerCodec}'s. */
    final class Encoder extends HttpResponseEncoder {
        private @Nullable HttpMethod method;

        @Override
        protected boolean isContentAlwaysEmpty(HttpResponse msg) {
            if (msg.status().codeClass() != HttpStatusClass.INFORMATIONAL) {
                method = methods.poll(); // the final answer of the oldest request
                if (HttpMethod.HEAD.equals(method)) {
                    return true;
                }
            }
            return super.isContentAlwaysEmpty(msg);
        }

        @Override
        protected void sanitizeHeadersBeforeEncode(HttpResponse msg, boolean isAlwaysEmpty) {
            if (!isAlwaysEmpty
                    && HttpMethod.CONNECT.equals(method)
                    && msg.status().codeClass() == HttpStatusClass.SUCCESS) {
                msg.headers().remove(HttpHeaderNames.TRANSFER_ENCODING); // RFC 9110 §9.3.6: a tunnel, no framing
                return;
            }
            super.sanitizeHeadersBeforeEncode(msg, isAlwaysEmpty);
        }
    }
}
