package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.epoll.AbstractEpollStreamChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.util.UncheckedBooleanSupplier;
import io.netty.util.concurrent.Future;
import java.io.IOException;
import java.util.ArrayDeque;
import org.jspecify.annotations.Nullable;

/**
 * Moves the rest of a response body of known length from the owner's socket to the client's in
 * the kernel on epoll ({@link UringSplice} does it on io_uring): {@code splice(2)} through a pipe (Netty's {@link
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
 *   <li><b>The owner's FIN mid-body.</b> A keep-alive owner may close right after a body it framed
 *       by length (RFC 9112 §9.6: a graceful shutdown, its keep-alive timeout), so its FIN can
 *       arrive with a socket buffer of the body still unread behind a client slower than the
 *       owner. Netty's splice then closes the connection at once and drops those bytes (it reads
 *       to the end only into buffers). So the owner connection allows half-closure while a splice
 *       runs: at the FIN Netty shuts its input instead of closing (Linux keeps every byte that
 *       arrived before the FIN readable), the splice turns half-closure off again so Netty reads
 *       that input no more ({@link Watch} says why autoRead stays on), and it <b>drains</b>: it
 *       waits until the pipe's bytes reached the client
 *       (an empty write queued behind them), then reads the rest from the socket itself, one
 *       {@link #DRAIN_CHUNK} at a time, each written when the one before reached the client. How
 *       much is left is exact: the connection counts every byte read from its socket, spliced
 *       ones included ({@link ReadCount}). Bytes Netty reads into buffers at the FIN (it does
 *       when no slice was queued) wait for their turn behind the pipe's: at most the socket's
 *       receive buffer, as the copy path holds at a FIN. The connection is closed
 *       after the body, never pooled again.
 *   <li><b>Ending.</b> Every byte: the {@link Events#onEnded} callback. The owner closes before the
 *       end (a truncated body) or a read or write fails: {@link Events#onFailed}. The client goes:
 *       {@link Events#onClientGone} (the exchange is cancelled, as when a client goes during a
 *       copied body). Either way the owner connection is closed (its splice queue with it), never
 *       reused.
 *   <li><b>Bytes past the length.</b> The splice reads exactly the body's length, so bytes an
 *       owner sent after it stay in its socket, where the pool's look at the codec cannot see
 *       them. At the end the splice reads one byte of the socket, without waiting ({@link
 *       #afterTheBody}): anything there (or bytes Netty read into buffers past the body) and
 *       the connection is closed, never pooled, as nginx drops an upstream connection that sent
 *       more than its length. It was pooled before (found by a review): a pipelined request, or
 *       another client's waiting for a connection, took it in the same task and read those bytes
 *       as its answer. Bytes that arrive after that look meet the new codec, as after any answer.
 *   <li><b>The pipe's descriptors.</b> The pipe belongs to the client channel and is closed with
 *       it; its descriptor numbers may then be reused by the process at once. Netty's queued
 *       splice would still write into that number, so the client's close closes the owner
 *       connection in the same task (a close-future listener, which runs before the loop reads
 *       the owner again).
 * </ul>
 *
 * <p>Threading: confined to the loop of both channels.
 */
public final class ResponseSplice implements KernelSplice {

    /**
     * The smallest response {@code Content-Length} whose body is spliced: below it a body takes a
     * read or two and the pipe's set-up is not worth it (HAProxy splices from its first full
     * buffer, 16 KiB; its measurements and ours put the gain in bodies of hundreds of KiB).
     */
    public static final long MIN_LENGTH = 128 * 1024;

    /** The most bytes one {@code spliceTo} moves; the rest follows in further slices. */
    public static final int SLICE = 4 * 1024 * 1024;

    /**
     * The most bytes a draining splice (the owner's FIN arrived mid-body) reads from the owner's
     * socket into one buffer; one such buffer is on its way to the client at a time.
     */
    static final int DRAIN_CHUNK = 64 * 1024;

    /**
     * Answers whether a splice to {@code client} holds body bytes the client has not taken, outside
     * the connection's outbound buffer: {@link UringSplice}'s pipe (the client's send clock counts
     * them as waiting, as it counts epoll's spliced parts, which wait in that buffer). Call on the
     * client's loop.
     */
    public static boolean holdsBytesFor(Channel client) {
        UringSplice s = client.attr(UringSplice.TO_CLIENT).get();
        return s != null && s.isActive() && s.waitsForClient();
    }

    /** What a splice tells its attempt; every call runs on the channels' loop. */
    interface Events {
        /** {@code bytes} more body bytes reached the client's socket. */
        void onSliced(int bytes);

        /**
         * Every byte of the body reached the client's socket. {@code after}: what the owner's
         * socket held behind it ({@link #NOTHING}, {@link #BYTES}: it sent more, read, held or
         * waiting, {@link #END}: its input ended); the connection carries another exchange only
         * after {@link #NOTHING}.
         */
        void onEnded(int after);

        /** The splice failed: the owner closed or failed, or a write to the client failed. */
        void onFailed(Throwable cause);

        /** The client's connection closed: the owner's is closed too, and nothing more is reported. */
        void onClientGone();

        /** The owner's input ended mid-body: the rest is read out of its socket (see the notes). */
        void onDraining();
    }

    private final AbstractEpollStreamChannel owner;
    private final AbstractEpollStreamChannel client;
    private final Events events;
    private final ChannelFutureListener onClientClosed;
    private final ReadCount count;
    /** The body bytes to move, and the owner socket's read count when the splice began. */
    private final long length;

    private final long readAtStart;
    /** Body bytes not yet reported to {@link Events#onSliced} (they have not all reached the client). */
    private long left;

    private boolean active;
    /** The owner's input ended mid-body: the rest moves by {@link #drain}, and slices report no more. */
    private boolean draining;
    /** Bytes Netty read into buffers from the owner while the splice ran (at its FIN), oldest first. */
    private final ArrayDeque<ByteBuf> held = new ArrayDeque<>();

    private long heldBytes;
    private final Watch watch = new Watch();

    private ResponseSplice(
            AbstractEpollStreamChannel owner, AbstractEpollStreamChannel client, long length, Events events) {
        this.owner = owner;
        this.client = client;
        this.length = length;
        this.left = length;
        this.events = events;
        this.onClientClosed = f -> onClientClosed();
        this.count = requireNonNull(ReadCount.of(owner), "the owner connection counts no reads");
        this.readAtStart = count.bytes;
    }

    /** Answers whether the kernel can splice from {@code owner} to {@code client}: epoll sockets on one loop. */
    static boolean possible(Channel owner, Channel client) {
        return owner instanceof AbstractEpollStreamChannel
                && client instanceof AbstractEpollStreamChannel
                && ReadCount.of(owner) != null
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
            owner.config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, true); // see "The owner's FIN mid-body"
            owner.pipeline().addFirst(s.watch);
            owner.config().setAutoRead(true);
            s.next();
        }
        return s;
    }

    @Override
    public boolean isActive() {
        return active;
    }

    /**
     * The owner's input ended and the rest of the body is read out of its socket (see the notes), or
     * Netty paused the owner while a spliced part waits for the client's socket.
     */
    @Override
    public boolean waitsForClient() {
        return draining || !owner.config().isAutoRead();
    }

    @Override
    public void cancel() {
        end();
    }

    @SuppressWarnings("deprecation") // Netty 4.2 deprecates spliceTo: see the design notes
    private void next() {
        int n = (int) Math.min(left, SLICE);
        owner.spliceTo(client, n).addListener(f -> onSlice(f, n));
    }

    private void onSlice(Future<?> f, int n) {
        if (!active || draining) {
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
            int after = heldBytes > 0 ? BYTES : afterTheBody(owner);
            end();
            events.onEnded(after);
        }
    }

    /** What an owner's socket held after a spliced body: nothing ({@link #afterTheBody}). */
    static final int NOTHING = 0;

    /** What an owner's socket held after a spliced body: bytes, which belong to no answer. */
    static final int BYTES = 1;

    /** What an owner's socket held after a spliced body: its input's end (a close after the answer). */
    static final int END = -1;

    /**
     * Returns what {@code owner}'s socket holds after a spliced body: {@link #NOTHING}, {@link
     * #BYTES} or {@link #END}. Reads at most one byte, without waiting (the socket is
     * non-blocking), and what it read is dropped, as the connection is then closed. A splice moves
     * exactly the body's length, so an owner's bytes past it stay in the kernel, where the pool's
     * look at the codec cannot see them; pooled, the next exchange on the connection (a pipelined
     * request, another client's waiting for one) read them as the start of its answer (a response
     * desync, found by a review). A FIN (an owner that closes after its answer) is no such bytes,
     * only no reuse. Bytes that arrive later meet the codec, as after any answer ({@link
     * OwnerCodec}'s notes).
     */
    static int afterTheBody(Channel owner) {
        if (!(owner instanceof io.netty.channel.unix.UnixChannel u) || !owner.isOpen()) {
            return END;
        }
        ByteBuf one = owner.alloc().directBuffer(1);
        try {
            int n;
            if (one.hasMemoryAddress()) {
                n = u.fd().readAddress(one.memoryAddress(), 0, 1);
            } else {
                java.nio.ByteBuffer nio = one.internalNioBuffer(0, 1);
                n = u.fd().read(nio, nio.position(), nio.limit());
            }
            return n > 0 ? BYTES : n < 0 ? END : NOTHING; // 0: EAGAIN
        } catch (IOException e) {
            return END;
        } finally {
            one.release();
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

    /**
     * The owner's input ended (its FIN, or a read's end) while the splice ran. Runs in a task of
     * its own, after the read that saw it: Netty may splice more in that read, never after it.
     */
    private void onInputEnded() {
        if (!active || draining) {
            return;
        }
        draining = true;
        events.onDraining();
        // Every byte read since the start went into the pipe or into a held buffer; the slices
        // never splice past the length, and what they spliced before the held bytes came first.
        long spliced = count.bytes - readAtStart - heldBytes;
        long pipeUnreported = spliced - (length - left);
        // What the pipe holds reaches the client before anything else: an empty write behind its tasks.
        ChannelPromise behindPipe = client.newPromise();
        client.unsafe().write(Unpooled.EMPTY_BUFFER, behindPipe);
        client.unsafe().flush();
        whenWritten(behindPipe, pipeUnreported);
    }

    /** Moves the rest of a draining body: held buffers first, then the owner's socket, one chunk at a time. */
    private void drain() {
        if (!active) {
            return;
        }
        if (left == 0) {
            end();
            events.onEnded(END); // its input ended: the connection is closed after it
            return;
        }
        ByteBuf chunk = held.poll();
        if (chunk != null) {
            heldBytes -= chunk.readableBytes();
            if (chunk.readableBytes() > left) {
                chunk.writerIndex(chunk.readerIndex() + (int) left); // bytes past the length: dropped
            }
        } else {
            chunk = readOwner();
            if (chunk == null) {
                return; // failed, and said so
            }
        }
        int n = chunk.readableBytes();
        ChannelPromise written = client.newPromise();
        client.unsafe().write(chunk, written);
        client.unsafe().flush();
        whenWritten(written, n);
    }

    /** When {@code write} reached the client's socket: reports {@code bytes} and drains on. */
    private void whenWritten(ChannelPromise write, long bytes) {
        write.addListener(f -> {
            if (!active) {
                return;
            }
            if (!f.isSuccess()) {
                fail(f.cause());
                return;
            }
            report(bytes);
            drain();
        });
    }

    /**
     * Reads up to {@link #DRAIN_CHUNK} of the body's rest from the owner's shut input (the kernel
     * keeps what arrived before the FIN); null after reporting a failure when it ended first.
     */
    private @Nullable ByteBuf readOwner() {
        int want = (int) Math.min(left, DRAIN_CHUNK);
        ByteBuf buf = client.alloc().directBuffer(want);
        try {
            int w = buf.writerIndex();
            int n;
            if (buf.hasMemoryAddress()) {
                n = owner.fd().readAddress(buf.memoryAddress(), w, w + want);
            } else {
                java.nio.ByteBuffer nio = buf.internalNioBuffer(w, want);
                n = owner.fd().read(nio, nio.position(), nio.limit());
            }
            if (n <= 0) {
                buf.release();
                fail(new IOException("owner closed with " + left + " bytes of the body not sent"));
                return null;
            }
            return buf.writerIndex(w + n);
        } catch (IOException | RuntimeException e) {
            buf.release();
            fail(e);
            return null;
        }
    }

    private void report(long bytes) {
        int n = Math.toIntExact(Math.min(bytes, left)); // at most two slices: a pipe's and one read
        if (n > 0) {
            left -= n;
            events.onSliced(n);
        }
    }

    private void fail(Throwable cause) {
        if (active) {
            end();
            events.onFailed(cause);
        }
    }

    private void end() {
        if (active) {
            active = false;
            client.closeFuture().removeListener(onClientClosed);
            for (ByteBuf b; (b = held.poll()) != null; ) {
                b.release();
            }
            heldBytes = 0;
            if (owner.pipeline().context(watch) != null) {
                owner.pipeline().remove(watch);
            }
            if (owner.isOpen()) {
                owner.config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, false);
            }
        }
    }

    /**
     * Sits first in the owner's pipeline while the splice runs (its codec is out): holds the bytes
     * Netty reads into buffers at the owner's FIN, and hears the input's end.
     */
    private final class Watch extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (active && !draining && msg instanceof ByteBuf b) {
                held.add(b);
                heldBytes += b.readableBytes();
                return;
            }
            ctx.fireChannelRead(msg);
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                // Two things keep Netty's hands off the rest of the body in the socket. Half-closure
                // off again: Netty reads a shut input no more (it would splice more into the pipe
                // on the next read event, behind this splice's back). And autoRead on: Netty 4.2
                // takes a connection out of epoll once nothing is asked of it (its input shut,
                // EPOLLRDHUP cleared) yet keeps it marked registered, so its own later
                // setAutoRead(true), when a spliced part reached the client, would fail
                // epoll_ctl(MOD) with ENOENT and close the connection; on already, that call does
                // nothing. What Netty reads in the rest of this read event is counted (and held),
                // so the drain starts in a task of its own, after it.
                ctx.channel().config().setAutoRead(true);
                ctx.channel().config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, false);
                ctx.channel().eventLoop().execute(ResponseSplice.this::onInputEnded);
            }
            ctx.fireUserEventTriggered(evt);
        }
    }

    /**
     * Counts the bytes read from a connection's socket, into buffers or spliced into a pipe: Netty
     * reports both to its read handle ({@code lastBytesRead}), and this handle adds them up. A
     * splice that drains after the owner's FIN knows from it how much of the body is still in
     * the socket. One per connection ({@link #install}); confined to its loop.
     */
    static final class ReadCount implements RecvByteBufAllocator {
        private final RecvByteBufAllocator allocator;
        /** Bytes read from the socket since the connection opened. */
        long bytes;
        /** Whether the read batch in progress ends after its current read ({@link #endBatch}). */
        private boolean endBatch;
        /** A read Netty submitted has not completed ({@link #readInFlight}). */
        private boolean reading;

        private ReadCount(RecvByteBufAllocator allocator) {
            this.allocator = allocator;
        }

        /** Makes {@code ch} count its reads; before its first read. */
        static void install(Channel ch) {
            ch.config().setRecvByteBufAllocator(new ReadCount(ch.config().getRecvByteBufAllocator()));
        }

        /** Returns {@code ch}'s count, or null when it keeps none. */
        static @Nullable ReadCount of(Channel ch) {
            return ch.config().getRecvByteBufAllocator() instanceof ReadCount c ? c : null;
        }

        /**
         * Ends the read batch in progress after the read being handled: Netty's read loop asks
         * {@code continueReading} next and is told no, so the batch completes (the channel's
         * {@code channelReadComplete}) with the rest of the socket's bytes still in the kernel,
         * where a splice started at that completion takes them. Without it a response head that
         * arrives with its body behind it in the socket had up to 16 reads of the body copied
         * before the splice began (about a quarter of every 1 MiB body, measured in
         * bench/README.md). Netty goes on reading after the batch by itself (it queues the next
         * read as a task when the socket may hold more: {@code ResponseSpliceTest} holds that), so
         * nothing waits on this. The next batch reads as usual.
         */
        void endBatch() {
            endBatch = true;
        }

        /**
         * Answers whether a read of Netty's on this connection was submitted and has not completed.
         * On io_uring a read takes its buffer from the handle when it is submitted, on the loop,
         * and runs in the kernel later (at the loop's next {@code io_uring_enter}); its result
         * comes back through the handle ({@code lastBytesRead}, whatever it read: bytes, nothing,
         * the input's end). {@link UringSplice} takes nothing from the socket meanwhile, so every
         * byte such a read takes comes after every byte spliced before it. On epoll a read starts
         * and completes in one call, and this answers false between reads.
         */
        boolean readInFlight() {
            return reading;
        }

        @Override
        @SuppressWarnings("deprecation") // the interface's own return type; the handle is an ExtendedHandle
        public Handle newHandle() {
            return new Counting((ExtendedHandle) allocator.newHandle());
        }

        private final class Counting extends DelegatingHandle implements ExtendedHandle {
            Counting(ExtendedHandle handle) {
                super(handle);
            }

            @Override
            public ByteBuf allocate(ByteBufAllocator alloc) {
                ByteBuf b = super.allocate(alloc);
                reading = true;
                return b;
            }

            @Override
            public void lastBytesRead(int n) {
                reading = false;
                if (n > 0) {
                    bytes += n;
                }
                super.lastBytesRead(n);
            }

            @Override
            public void reset(ChannelConfig config) {
                endBatch = false;
                super.reset(config);
            }

            @Override
            public boolean continueReading() {
                return !endBatch && super.continueReading();
            }

            @Override
            public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
                return !endBatch && ((ExtendedHandle) delegate()).continueReading(maybeMoreDataSupplier);
            }
        }
    }
}
