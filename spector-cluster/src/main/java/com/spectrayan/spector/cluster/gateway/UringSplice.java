package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPromise;
import io.netty.channel.IoEvent;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.Native;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.unix.FileDescriptor;
import io.netty.channel.unix.RawUnixChannelOption;
import io.netty.channel.unix.UnixChannel;
import io.netty.channel.uring.IoUringIoEvent;
import io.netty.channel.uring.IoUringIoHandle;
import io.netty.channel.uring.IoUringIoOps;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.Future;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.ArrayDeque;
import org.jspecify.annotations.Nullable;

/**
 * Moves the rest of a response body of known length from the owner's socket to the client's in
 * the kernel when both are io_uring connections: what {@link ResponseSplice} does on epoll, with
 * the same contract ({@link ResponseSplice.Events}, when it runs, the codec's removal, the ending).
 * Netty's io_uring transport splices only files to sockets, so this class drives the pipe itself.
 *
 * <pre>
 *   owner socket --splice(2), on the loop--> pipe --IORING_OP_SPLICE, the ring's worker--> client socket
 *        |  EAGAIN: POLL_ADD(POLLIN)              |  (a non-blocking client: EAGAIN, POLL_ADD(POLLOUT))
 *        |  POLL_ADD(POLLRDHUP) for the splice's life: the owner's FIN  -> draining
 *
 *   STARTING --(the client's earlier writes reached its socket)--> PUMPING --(left == 0)--> ended
 *   PUMPING --(a read of Netty's out, or its bytes held)--> the pipe first, then what Netty read, then PUMPING
 *   PUMPING --(the owner's FIN)--> DRAINING: the pipe first, then what Netty read, in order
 *   any --(failure, the client gone, cancel)--> ended
 * </pre>
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Into the pipe on the loop, out of it on the ring.</b> Netty connects its io_uring
 *       sockets non-blocking but accepts them blocking (io_uring needs neither), and {@code
 *       splice(2)} blocks on a blocking socket whatever its flags say. So the owner's side is a
 *       non-blocking {@code splice(2)} made on the loop (Netty's {@link Native#splice}), as epoll's
 *       {@code spliceTo} makes it, and a wait for it a {@code POLL_ADD(POLLIN)}; the client's side is
 *       an {@code IORING_OP_SPLICE}, which the kernel runs on a worker thread of the ring ({@code
 *       io-wq}): it may block there for a client that reads slowly, never on the loop (the first
 *       version spliced to the client on the loop, and a client that stopped reading stopped the
 *       loop: {@code EdgeSpliceTest} holds that). Its completion says how many bytes reached the
 *       client's socket. A worker must not wait long either: one thread per client that stopped
 *       reading would grow with them (up to the pipe budget, thousands), so the client's socket
 *       carries a send timeout of {@link #WORKER_WAIT} while the splice runs ({@code SO_SNDTIMEO},
 *       which only a blocking send waits on: Netty's own sends never block): a full socket
 *       answers {@code EAGAIN} after it, as a non-blocking one does at once, and the splice waits
 *       for a {@code POLL_ADD(POLLOUT)} on the loop with no thread held. Every op goes through
 *       this class's own registration with the loop's {@code IoUringIoHandler}, whose completions
 *       resume the pump.
 *   <li><b>Nobody else touches the sockets meanwhile.</b> The owner connection stops reading
 *       ({@code autoRead} off; the splice starts at the end of a read batch, when Netty has no
 *       read in flight), and the exchange writes nothing to the client until the splice ended. The
 *       splice starts only when everything written to the client before (the head, the first
 *       parts) reached its socket: an empty write queued behind them completes first.
 *   <li><b>Netty's reads meanwhile, and the owner's FIN.</b> Netty reads a connection whose peer
 *       half-closed (its {@code POLLRDHUP}) whether or not it was asked to, until the end of its
 *       input, so some of the body may go to Netty's buffers instead of the pipe. One rule keeps the
 *       order: the pump takes nothing from the socket while a read of Netty's is out (submitted and
 *       not completed, {@link ResponseSplice.ReadCount#readInFlight}: an io_uring read runs in the
 *       kernel after the loop submitted it) nor while bytes Netty read wait here ({@link Watch}
 *       holds them). So every byte Netty reads is newer than every byte in the pipe: the pipe goes
 *       to the client first, then those buffers, each when the one before reached the client, and
 *       then the pump splices again. (The first version relied instead on a poll of its own for
 *       {@code POLLRDHUP} completing in the same wake-up as Netty's, and failed the splice on a
 *       byte Netty read before it; that guard fired, rarely, for an owner closing right behind a
 *       body: the two completions need not arrive together.) That poll stays, armed for the
 *       splice's whole life: once the FIN is heard ({@code DRAINING}) nothing more is spliced from
 *       the socket, what is left is Netty's to read (half-closure is allowed meanwhile, so Netty
 *       shuts the input instead of closing), and the exchange is told. The connection is not
 *       pooled again (its input is shut). A read Netty cancels reports nothing, and would leave
 *       the pump waiting; Netty cancels one only when {@code autoRead} goes off with it out, which
 *       the splice's start at the end of a read batch rules out (were it to happen, the owner's
 *       idle timer would end the exchange: the pump's wait is the owner's).
 *   <li><b>Bounds.</b> One pipe per splice (64 KiB, the kernel's default), made at the start and
 *       closed at the end; the loop splices at most {@link #PIPE_BYTES} per completion it handles
 *       (one move into the pipe, then the pipe is the ring's). Backpressure is the pipe: nothing is
 *       spliced from the owner while the pipe holds bytes the client did not take.
 *   <li><b>Ending.</b> As {@link ResponseSplice}'s: every byte ({@link ResponseSplice.Events#onEnded}),
 *       a failure ({@code onFailed}: the owner closed before the end, a splice failed), the client
 *       gone ({@code onClientGone}; the owner is closed in the same task). The polls still out are
 *       cancelled (the splice to the client too, which interrupts a worker the client's socket
 *       blocks) and the registration with them. The pipe is closed then, or, with a splice to the
 *       client in flight, when that splice completed: the worker holds the pipe's lock while the
 *       client's socket blocks it, and closing the pipe's last descriptor takes that lock, which
 *       would stop the loop until the client read.
 * </ul>
 *
 * <p>Threading: confined to the loop of both channels.
 */
final class UringSplice implements KernelSplice, IoUringIoHandle {

    /** The splice running to a client connection, while it runs ({@link ResponseSplice#holdsBytesFor}). */
    static final AttributeKey<UringSplice> TO_CLIENT = AttributeKey.valueOf(UringSplice.class, "toClient");

    /** The most bytes one splice from the owner's socket asks for: a pipe's default capacity. */
    static final int PIPE_BYTES = 64 * 1024;

    /**
     * The longest the ring's worker waits for room in the client's socket before the splice to it
     * answers {@code EAGAIN} (the socket's {@code SO_SNDTIMEO} while the splice runs; the kernel
     * rounds it up to a clock tick).
     */
    static final Duration WORKER_WAIT = Duration.ofMillis(1);

    /** {@code setsockopt(SOL_SOCKET, SO_SNDTIMEO)} on Linux's 64-bit ABIs: a {@code struct timeval}, two longs. */
    private static final RawUnixChannelOption SEND_TIMEOUT = new RawUnixChannelOption("SO_SNDTIMEO", 1, 21, 16);

    // poll(2)'s bits, an errno, io_uring's opcodes and a splice flag (Linux), as Netty's io_uring
    // Native keeps them (package-private there).
    private static final int POLLIN = 0x1;
    private static final int POLLOUT = 0x4;
    private static final int POLLERR = 0x8;
    private static final int POLLHUP = 0x10;
    private static final int POLLRDHUP = 0x2000;
    private static final byte IORING_OP_POLL_ADD = 6;
    private static final byte IORING_OP_ASYNC_CANCEL = 14;
    private static final byte IORING_OP_SPLICE = 30;
    private static final int SPLICE_F_MOVE = 1;
    private static final int EAGAIN = 11;

    /** What a completion answers (the ops' user data). */
    private static final long OWNER_READABLE = 1;

    private static final long CLIENT_WRITABLE = 2;
    private static final long OWNER_FIN = 3;
    private static final long CANCELLED = 4;
    private static final long TO_CLIENT_DONE = 5;

    private final Channel owner;
    private final Channel client;
    private final int ownerFd;
    private final int clientFd;
    private final ResponseSplice.Events events;
    private final ResponseSplice.ReadCount reads;
    private final ChannelFutureListener onClientClosed = f -> onClientClosed();
    private final ChannelFutureListener onOwnerClosed = f -> fail(new ClosedChannelException());
    private final Watch watch = new Watch();
    /** Bytes Netty read from the owner, oldest first: all newer than the pipe's (see the notes). */
    private final ArrayDeque<ByteBuf> held = new ArrayDeque<>();

    private @Nullable IoRegistration registration;
    private FileDescriptor @Nullable [] pipe;
    /** Body bytes not yet reported to {@link ResponseSplice.Events#onSliced} (not yet in the client's socket). */
    private long left;
    /** Bytes in the pipe. */
    private int inPipe;

    private boolean active;
    /** The client's earlier writes reached its socket, and the pump may run. */
    private boolean pumpStarted;

    private boolean pumping;
    /** The owner's FIN arrived: nothing more is spliced from its socket. */
    private boolean draining;
    /** Netty read the owner's input to its end. */
    private boolean inputEnded;
    /** Netty read bytes past the body into a buffer held here: the connection must not be reused. */
    private boolean pastTheBody;
    /** A held buffer is on its way to the client. */
    private boolean writingHeld;

    private long ownerPoll;
    private long toClient; // the pipe's splice to the client's socket in flight (its op), else 0
    private long clientPoll;
    private long finPoll;

    private UringSplice(Channel owner, Channel client, long length, ResponseSplice.Events events) {
        this.owner = owner;
        this.client = client;
        this.ownerFd = ((UnixChannel) owner).fd().intValue();
        this.clientFd = ((UnixChannel) client).fd().intValue();
        this.left = length;
        this.events = events;
        this.reads = requireNonNull(ResponseSplice.ReadCount.of(owner), "the owner connection counts no reads");
    }

    /**
     * Answers whether this class can splice from {@code owner} to {@code client}: io_uring sockets
     * on one loop, called on it, and epoll's native library here (its {@code splice(2)}).
     */
    static boolean possible(Channel owner, Channel client) {
        return owner instanceof IoUringSocketChannel
                && client instanceof IoUringSocketChannel
                && ResponseSplice.ReadCount.of(owner) != null
                && owner.eventLoop() == client.eventLoop()
                && owner.eventLoop() instanceof IoEventLoop
                && owner.eventLoop().inEventLoop()
                && Epoll.isAvailable();
    }

    /**
     * Starts moving {@code length} (> 0) bytes from {@code owner} to {@code client}, which must be
     * {@link #possible}; the owner's codec must already be out of its pipeline. A splice that could
     * not start has failed already (and said so).
     */
    static UringSplice start(Channel owner, Channel client, long length, ResponseSplice.Events events) {
        if (!possible(owner, client) || length <= 0) {
            throw new IllegalArgumentException("no splice of " + length + " bytes from " + owner + " to " + client);
        }
        UringSplice s = new UringSplice(owner, client, length, requireNonNull(events, "events"));
        s.begin();
        return s;
    }

    private void begin() {
        active = true;
        owner.config().setAutoRead(false);
        owner.config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, true); // see "The owner's FIN mid-body"
        owner.pipeline().addFirst(watch);
        client.closeFuture().addListener(onClientClosed); // runs at once if the client already closed
        if (!active) {
            return;
        }
        owner.closeFuture().addListener(onOwnerClosed);
        if (!active) {
            return;
        }
        client.attr(TO_CLIENT).set(this);
        try {
            Future<IoRegistration> r = ((IoEventLoop) owner.eventLoop()).register(this);
            if (!r.isSuccess()) {
                throw new IOException("could not register with the loop", r.cause());
            }
            registration = r.getNow();
            pipe = FileDescriptor.pipe();
            client.config().setOption(SEND_TIMEOUT, timeval(WORKER_WAIT));
        } catch (IOException | RuntimeException e) {
            fail(e);
            return;
        }
        if (owner instanceof DuplexChannel d && d.isInputShutdown()) {
            finHeard(); // Netty read the input to its end before the splice: nothing is left in the socket
            inputEnded = true;
        } else {
            finPoll = poll(ownerFd, POLLRDHUP, OWNER_FIN);
        }
        // The head and the parts written before reach the client's socket first: an empty write behind them.
        ChannelPromise before = client.newPromise();
        client.unsafe().write(Unpooled.EMPTY_BUFFER, before);
        client.unsafe().flush();
        before.addListener(f -> {
            if (!f.isSuccess()) {
                fail(f.cause());
            } else {
                pumpStarted = true;
                pump();
            }
        });
    }

    @Override
    public boolean isActive() {
        return active;
    }

    /**
     * Draining, the client's earlier writes still going out, or bytes for the client in the pipe or
     * held: nothing is taken from the owner meanwhile.
     */
    @Override
    public boolean waitsForClient() {
        return draining || !pumpStarted || inPipe > 0 || writingHeld || !held.isEmpty();
    }

    @Override
    public void cancel() {
        end();
    }

    /** Moves what can move now: the pipe to the client, then the owner's socket into the pipe. */
    private void pump() {
        if (!active || pumping || !pumpStarted) {
            return;
        }
        pumping = true;
        try {
            pump0();
        } catch (IOException | RuntimeException e) {
            fail(e);
        } finally {
            pumping = false;
        }
    }

    private void pump0() throws IOException {
        FileDescriptor[] p = requireNonNull(pipe);
        while (active && toClient == 0 && clientPoll == 0) {
            if (inPipe > 0) {
                // The client's socket blocks (Netty accepts blocking sockets for io_uring): the ring's
                // worker waits for it, never the loop.
                toClient = submit(new IoUringIoOps(
                        IORING_OP_SPLICE,
                        (byte) 0,
                        (short) 0,
                        clientFd,
                        -1L,
                        -1L,
                        inPipe,
                        SPLICE_F_MOVE,
                        TO_CLIENT_DONE,
                        (short) 0,
                        (short) 0,
                        p[0].intValue(),
                        0L));
                return;
            }
            if (draining || writingHeld || !held.isEmpty()) {
                drainHeld(); // what Netty read goes before anything spliced next; draining, it is all that is left
                return;
            }
            if (ownerPoll != 0) {
                return; // waiting for the owner
            }
            if (reads.readInFlight()) {
                return; // Netty's read comes after the pipe's bytes (see the notes); its end pumps again (Watch)
            }
            // The owner's socket is non-blocking (Netty connects it so): EAGAIN when it holds nothing.
            int n = Native.splice(ownerFd, -1, p[1].intValue(), -1, Math.min(left, PIPE_BYTES));
            if (n == 0) { // EAGAIN, or the input's end: the poll says which
                ownerPoll = poll(ownerFd, POLLIN | POLLRDHUP, OWNER_READABLE);
                return;
            }
            inPipe += n;
        }
    }

    /** The pipe empty: the buffers Netty read go to the client in order. */
    private void drainHeld() {
        if (writingHeld) {
            return;
        }
        ByteBuf b = held.poll();
        if (b == null) {
            if (draining && inputEnded) {
                fail(new IOException("owner closed with " + left + " bytes of the body not sent"));
            }
            return; // Netty reads on to the input's end (Watch)
        }
        if (b.readableBytes() > left) {
            b.writerIndex(b.readerIndex() + (int) left); // bytes past the length: dropped
            pastTheBody = true; // and the connection with them
        }
        int n = b.readableBytes();
        writingHeld = true;
        ChannelPromise written = client.newPromise();
        client.unsafe().write(b, written);
        client.unsafe().flush();
        written.addListener(f -> {
            writingHeld = false;
            if (!active) {
                return;
            }
            if (!f.isSuccess()) {
                fail(f.cause());
                return;
            }
            report(n);
            pump();
        });
    }

    private void report(int n) {
        if (n <= 0 || !active) {
            return;
        }
        left -= n;
        events.onSliced(n);
        if (active && left == 0) {
            int after = pastTheBody || !held.isEmpty()
                    ? ResponseSplice.BYTES
                    : draining ? ResponseSplice.END : ResponseSplice.afterTheBody(owner);
            end();
            events.onEnded(after);
        }
    }

    @Override
    public void handle(IoRegistration r, IoEvent event) {
        IoUringIoEvent e = (IoUringIoEvent) event;
        long what = e.userData();
        if (!active) {
            if (what == TO_CLIENT_DONE) {
                toClient = 0;
                closePipe(); // the ring's worker let go of it (see end())
            }
            return;
        }
        int res = e.res();
        if (what == OWNER_READABLE) {
            ownerPoll = 0;
            if (res < 0) {
                fail(new IOException("poll of the owner's socket failed: " + res));
                return;
            }
            if ((res & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
                finHeard();
            }
            pump();
        } else if (what == TO_CLIENT_DONE) {
            toClient = 0;
            if (res == -EAGAIN) { // a non-blocking client socket, full
                clientPoll = poll(clientFd, POLLOUT, CLIENT_WRITABLE);
                return;
            }
            if (res <= 0) {
                fail(new IOException("splice to the client's socket failed: " + res));
                return;
            }
            inPipe -= res;
            report(res);
            pump();
        } else if (what == CLIENT_WRITABLE) {
            clientPoll = 0;
            if (res < 0) {
                fail(new IOException("poll of the client's socket failed: " + res));
                return;
            }
            pump();
        } else if (what == OWNER_FIN) {
            finPoll = 0;
            if (res >= 0) {
                finHeard();
                pump();
            }
        } // else a cancel's own completion
    }

    /** The owner's FIN arrived: what is still in its socket is Netty's to read (see the notes). */
    private void finHeard() {
        if (!draining) {
            draining = true;
            events.onDraining();
        }
    }

    /**
     * The loop's ring closes: the pipe goes with it, unless a splice to the client still holds it
     * (closing it would wait for that worker; the process is ending, and its descriptors with it).
     */
    @Override
    public void close() {
        if (toClient == 0) {
            closePipe();
        }
    }

    private long poll(int fd, int mask, long what) {
        return submit(new IoUringIoOps(
                IORING_OP_POLL_ADD, (byte) 0, (short) 0, fd, 0L, 0L, 0, mask, what, (short) 0, (short) 0, 0, 0L));
    }

    private long submit(IoUringIoOps op) {
        return requireNonNull(registration).submit(op);
    }

    private void cancel(IoRegistration r, long id) {
        if (id != 0) {
            r.submit(new IoUringIoOps(
                    IORING_OP_ASYNC_CANCEL,
                    (byte) 0,
                    (short) 0,
                    -1,
                    0L,
                    id,
                    0,
                    0,
                    CANCELLED,
                    (short) 0,
                    (short) 0,
                    0,
                    0L));
        }
    }

    /** The client closed: the owner closes in this task (the body is cut off), as on epoll. */
    private void onClientClosed() {
        if (active) {
            end();
            owner.close();
            events.onClientGone();
        }
    }

    private void fail(Throwable cause) {
        if (active) {
            end();
            events.onFailed(cause);
        }
    }

    private void end() {
        if (!active) {
            return;
        }
        active = false;
        client.attr(TO_CLIENT).compareAndSet(this, null);
        client.closeFuture().removeListener(onClientClosed);
        owner.closeFuture().removeListener(onOwnerClosed);
        for (ByteBuf b; (b = held.poll()) != null; ) {
            b.release();
        }
        if (owner.pipeline().context(watch) != null) {
            owner.pipeline().remove(watch);
        }
        if (owner.isOpen()) {
            owner.config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, false);
        }
        if (client.isOpen()) {
            try {
                client.config().setOption(SEND_TIMEOUT, timeval(Duration.ZERO)); // none, the socket's default
            } catch (RuntimeException e) {
                // the client's socket is closing: nothing else will send on it
            }
        }
        IoRegistration r = registration;
        // A splice to the client in flight holds the pipe's lock in the ring's worker, and closing the
        // pipe's last descriptor takes that lock: the pipe is closed when that splice completed
        // (cancelled just below), never on the loop while it runs.
        boolean pipeInUse = toClient != 0;
        if (r != null) {
            registration = null;
            cancel(r, ownerPoll);
            cancel(r, toClient); // interrupts the ring's worker if the client's socket blocks it
            cancel(r, clientPoll);
            cancel(r, finPoll);
            ownerPoll = clientPoll = finPoll = 0; // toClient stays set until its completion: the pipe is in use
            r.cancel(); // removed once the cancelled polls completed
        }
        if (!pipeInUse) {
            closePipe();
        }
    }

    private static ByteBuffer timeval(Duration d) {
        return ByteBuffer.allocate(16)
                .order(ByteOrder.nativeOrder())
                .putLong(d.toSeconds())
                .putLong(d.toNanosPart() / 1000)
                .flip();
    }

    private void closePipe() {
        FileDescriptor[] p = pipe;
        if (p != null) {
            pipe = null;
            closeQuietly(p[0]);
            closeQuietly(p[1]);
        }
    }

    private static void closeQuietly(FileDescriptor fd) {
        try {
            fd.close();
        } catch (IOException ignored) {
            // a pipe's close does not fail in a way that matters here
        }
    }

    /**
     * Sits first in the owner's pipeline while the splice runs (its codec is out): holds what
     * Netty reads after the FIN, and hears the input's end.
     */
    private final class Watch extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!active || !(msg instanceof ByteBuf b)) {
                ctx.fireChannelRead(msg);
                return;
            }
            // Newer than every byte in the pipe (the pump takes nothing from the socket while a read
            // of Netty's is out, nor while it holds bytes): they go to the client after the pipe's.
            held.add(b);
            pump();
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (active) {
                pump(); // a read that took nothing ended: the socket is the pump's again
            }
            ctx.fireChannelReadComplete();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (active && evt instanceof ChannelInputShutdownEvent) {
                finHeard();
                inputEnded = true;
                ctx.channel().eventLoop().execute(UringSplice.this::pump);
            }
            ctx.fireUserEventTriggered(evt);
        }
    }
}
