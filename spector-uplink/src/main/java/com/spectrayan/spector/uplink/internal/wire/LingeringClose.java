package com.spectrayan.spector.uplink.internal.wire;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Ends an uplink's connection after a close frame this end started (RFC 6455 §7.1.1: the peer
 * answers with its own close, then the TCP connection ends), the way nginx's {@code
 * lingering_close} ends an HTTP connection whose peer is still sending.
 *
 * <p>Design notes. A close frame written and the socket closed at once, with the peer's bytes
 * still arriving (the rest of a message over the limit, frames sent before the peer saw the
 * close), makes this end's kernel answer them with a reset; the reset can overtake the close frame,
 * and the peer's kernel then drops what it had not read: the peer logs "connection reset" instead
 * of the code and the reason (seen in CI: close code -1 where 1009 was sent). So once the close
 * frame is written this end sends its FIN (over TLS behind a close_notify, RFC 8446 §6.1), keeps
 * reading, and the uplink's handlers, closed already, drop what comes. The peer's close frame or
 * its FIN ends the connection (Netty closes a channel at its input's end; the handlers close at a
 * close frame once theirs was sent), and {@link #LINGER} after the FIN it is closed in any case.
 * A close frame that cannot be written, or a channel that is no socket, closes at once. A peer that
 * does not read holds the close frame (or the close_notify) in this end's buffer, and the FIN
 * behind it: the close frame, close_notify and FIN get {@link #LINGER} from the call to be written,
 * then the channel is closed (found by a review: a worker with a zero window kept a closed link's
 * socket open for good, since its handlers had closed already and its idle check did nothing).
 */
public final class LingeringClose {
    /** The longest a connection waits for the peer's close after this end's FIN. */
    public static final Duration LINGER = Duration.ofSeconds(2);

    private LingeringClose() {}

    /** Ends {@code closeFrame}'s channel once that close frame is written, lingering as above. */
    public static void after(ChannelFuture closeFrame) {
        Channel ch = closeFrame.channel();
        ScheduledFuture<?> unwritten =
                ch.eventLoop().schedule(() -> ch.close(), LINGER.toMillis(), TimeUnit.MILLISECONDS);
        ch.closeFuture().addListener(closed -> unwritten.cancel(false));
        closeFrame.addListener(written -> {
            if (!written.isSuccess() || !ch.isActive() || !(ch instanceof DuplexChannel duplex)) {
                ch.close();
                return;
            }
            SslHandler tls = ch.pipeline().get(SslHandler.class);
            ChannelFuture notified = tls == null ? ch.newSucceededFuture() : tls.closeOutbound();
            notified.addListener(n -> duplex.shutdownOutput().addListener(fin -> {
                if (!fin.isSuccess()) {
                    ch.close();
                    return;
                }
                unwritten.cancel(false);
                ch.config().setOption(ChannelOption.AUTO_READ, true); // read what still comes; the handlers drop it
                ScheduledFuture<?> bound =
                        ch.eventLoop().schedule(() -> ch.close(), LINGER.toMillis(), TimeUnit.MILLISECONDS);
                ch.closeFuture().addListener(closed -> bound.cancel(false));
            }));
        });
    }
}
