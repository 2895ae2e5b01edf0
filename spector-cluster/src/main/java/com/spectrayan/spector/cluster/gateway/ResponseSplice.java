package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.epoll.AbstractEpollStreamChannel;
import io.netty.util.concurrent.Future;

/**
 * Moves the rest of a response body of known length from the owner's socket to the client's in
 * the kernel: {@code splice(2)} through a pipe (Netty's {@link
 * AbstractEpollStreamChannel#spliceTo}), so no body byte is copied into the JVM and back, and no
 * buffer is allocated for it. HAProxy does the same ({@code option splice-response}); nginx does
 * not splice a proxied body.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>When</b> ({@link RealExchange}): the owner's response has a {@code Content-Length} of at
 *       least {@link #MIN_LENGTH} and is no event stream; the head and the first read batch of the
 *       body went out the usual way; at the end of a read batch the body is incomplete, the whole
 *       request was sent, and the client takes bytes now; both connections are native epoll
 *       sockets on one loop (always, by the transport's design); and the client side offers its
 *       socket ({@link ResponseSink#spliceTarget()}: plain HTTP/1.x, no TLS, the response framed
 *       by the same length, a pipe free in the gateway's budget).
 *   <li><b>The owner's codec</b> comes out of its pipeline first ({@link CodecRemoval}): the
 *       decoder never sees the spliced bytes, so it must not be left waiting for them. What it
 *       still held goes to the client first, as body bytes. A new codec goes in when the body
 *       ended, before the connection goes back to its pool.
 *   <li><b>Order.</b> Each spliced part is written to the client as a task in its outbound buffer
 *       (Netty's {@code SpliceOutTask}), behind the head and the parts written before, which go
 *       out first.
 *   <li><b>Slices.</b> At most {@link #SLICE} bytes per {@code spliceTo} (an {@code int}); the next
 *       is queued from the completion of the one before, so a body of any length is moved.
 *   <li><b>Backpressure.</b> Netty stops reading the owner while a part waits for the client's
 *       socket, and resumes when it drained: at most one pipe (64 KiB) is in flight. The
 *       exchange's own pause and resume ({@link Attempt#setReading}) stand aside meanwhile, and the
 *       idle timer counts a paused owner as paused by the client, as it does for copied bodies.
 *   <li><b>Ending.</b> Every byte: the {@link Events#onEnded} callback. The owner closes before the
 *       end (a truncated body) or a read or write fails: {@link Events#onFailed}. The client goes:
 *       {@link Events#onClientGone} (the exchange is cancelled, as when a client goes during a
 *       copied body). Either way the owner connection is closed (its splice queue with it), never
 *       reused.
 *   <li><b>Bytes past the length.</b> The splice reads exactly the body's length. Bytes an owner
 *       sends after it meet the new codec when they are read, as bytes after any answer do: the
 *       connection closes when no exchange holds it ({@code OwnerChannelHandler}); an exchange that
 *       took it first (a pipelined request, dispatched in the task that ends the answer) reads them
 *       as the start of its answer. The copy path has the same window (the decoder reaches such
 *       bytes after the answer ended and the connection went back to its pool); nginx instead
 *       drops an upstream connection that sent more than its length.
 *   <li><b>The pipe's descriptors.</b> The pipe belongs to the client channel and is closed with
 *       it; its descriptor numbers may then be reused by the process at once. Netty's queued
 *       splice would still write into that number, so the client's close closes the owner
 *       connection in the same task (a close-future listener, which runs before the loop reads
 *       the owner again).
 * </ul>
 *
 * <p>Threading: confined to the loop of both channels.
 */
public final class ResponseSplice {

    /**
     * The smallest response {@code Content-Length} whose body is spliced: below it a body takes a
     * read or two and the pipe's set-up is not worth it (HAProxy splices from its first full
     * buffer, 16 KiB; its measurements and ours put the gain in bodies of hundreds of KiB).
     */
    public static final long MIN_LENGTH = 128 * 1024;

    /** The most bytes one {@code spliceTo} moves; the rest follows in further slices. */
    public static final int SLICE = 4 * 1024 * 1024;

    /** What a splice tells its attempt; every call runs on the channels' loop. */
    interface Events {
        /** {@code bytes} more body bytes reached the client's socket. */
        void onSliced(int bytes);

        /** Every byte of the body reached the client's socket. */
        void onEnded();

        /** The splice failed: the owner closed or failed, or a write to the client failed. */
        void onFailed(Throwable cause);

        /** The client's connection closed: the owner's is closed too, and nothing more is reported. */
        void onClientGone();
    }

    private final AbstractEpollStreamChannel owner;
    private final AbstractEpollStreamChannel client;
    private final Events events;
    private final ChannelFutureListener onClientClosed;
    private long left;
    private boolean active;

    private ResponseSplice(
            AbstractEpollStreamChannel owner, AbstractEpollStreamChannel client, long length, Events events) {
        this.owner = owner;
        this.client = client;
        this.left = length;
        this.events = events;
        this.onClientClosed = f -> onClientClosed();
    }

    /** Answers whether the kernel can splice from {@code owner} to {@code client}: epoll sockets on one loop. */
    static boolean possible(Channel owner, Channel client) {
        return owner instanceof AbstractEpollStreamChannel
                && client instanceof AbstractEpollStreamChannel
                && owner.eventLoop() == client.eventLoop()
                && owner.eventLoop().inEventLoop();
    }

    /**
     * Starts moving {@code length} (> 0) bytes from {@code owner} to {@code client}, which must be
     * {@link #possible}; the owner's codec must already be out of its pipeline.
     */
    static ResponseSplice start(Channel owner, Channel client, long length, Events events) {
        if (!possible(owner, client) || length <= 0) {
            throw new IllegalArgumentException("no splice of " + length + " bytes from " + owner + " to " + client);
        }
        ResponseSplice s = new ResponseSplice(
                (AbstractEpollStreamChannel) owner,
                (AbstractEpollStreamChannel) client,
                length,
                requireNonNull(events, "events"));
        s.active = true;
        s.client.closeFuture().addListener(s.onClientClosed); // runs at once if the client already closed
        if (s.active) {
            owner.config().setAutoRead(true);
            s.next();
        }
        return s;
    }

    /** Answers whether the splice still runs (and reports). */
    boolean isActive() {
        return active;
    }

    /** Stops reporting; the caller closes the owner connection, which drops what is queued. */
    void cancel() {
        end();
    }

    @SuppressWarnings("deprecation") // Netty 4.2 deprecates spliceTo: see the design notes
    private void next() {
        int n = (int) Math.min(left, SLICE);
        owner.spliceTo(client, n).addListener(f -> onSlice(f, n));
    }

    private void onSlice(Future<?> f, int n) {
        if (!active) {
            return;
        }
        if (!f.isSuccess()) {
            end();
            events.onFailed(f.cause());
            return;
        }
        left -= n;
        events.onSliced(n);
        if (!active) {
            return; // the callback ended it
        }
        if (left > 0) {
            next();
        } else {
            end();
            events.onEnded();
        }
    }

    /** The client closed: the owner closes in this task, before the loop reads it again (see the notes). */
    private void onClientClosed() {
        if (active) {
            end();
            owner.close();
            events.onClientGone();
        }
    }

    private void end() {
        if (active) {
            active = false;
            client.closeFuture().removeListener(onClientClosed);
        }
    }
}
