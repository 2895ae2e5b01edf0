package com.spectrayan.spector.uplink.worker;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.DeclaredLength;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.v2.RequestHead;
import com.spectrayan.spector.uplink.internal.v2.ResponseHead;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.v2.V2Stream;
import com.spectrayan.spector.uplink.internal.v2.V2StreamHandler;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoop;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One relay the worker serves on a v2 stream (docs/PROTOCOL.md section 9.4), from the gateway's
 * request head until it settles: the target's call, the request body fed by the stream's DATA
 * ({@link StreamBody}), the response head and the response body pumped into the stream under its
 * writability. It is the stream's {@link V2StreamHandler}.
 *
 * <p>Design notes.
 *
 * <ul>
 *   <li><b>Concurrency: confinement to the link's event loop.</b> Every field is read and written
 *       on the stream's event loop ({@link V2Stream#eventLoop()}) only, where the handler's
 *       callbacks arrive; the session's requests ({@link #start}, {@link #refuse}, {@link
 *       #connectionLost}) and every completion from the target hop onto it. Target code (the call,
 *       each read and the cancel of the response body, the abort signal's listeners, the
 *       completion of the request body's reads) runs on {@link WorkerOptions#executor()}, never on
 *       the loop, with one exception: bodies that declare {@link BodySource#nonBlocking()} (a
 *       socket's, like {@code http-forward}'s). The response body's reads are then made from the
 *       loop, and a reader of the request body on the loop gets its parts there. The request carries
 *       the loop ({@link RelayedRequest#eventLoop()}), so such a target can run the exchange on it:
 *       each part is then handed over inline, with no thread hop, and {@link #writeOut} loops over
 *       parts that come inline rather than recursing. {@link #isSettled()} is the one field read
 *       across threads (volatile). No lock.
 *   <li><b>States</b> (one per relay, forward only):
 *       <pre>
 *   HELD ---start---&gt; CALLED ---head sent, body follows---&gt; STREAMING ---END_STREAM---&gt; SETTLED
 *                                                     (a 101: END_STREAM sent and the gateway's end read)
 *     |                 |  \---head with END_STREAM----------------------------------&gt; SETTLED
 *     +-----------------+--------------+--- refused, failed, reset, link closed -------&gt; SETTLED
 * </pre>
 *       HELD: accepted by the link, its DATA queued (bounded by the stream window), waiting for
 *       the session's checks (the startup gate, the slot, the target). SETTLED: nothing more is
 *       sent or read on the stream, though the slot may stay taken (next).
 *   <li><b>The slot</b> (one of the session's {@code Limits.ACTIVE_RELAYS_PER_CONNECTION}) is
 *       held until the target's work is over, not only until the relay settled. A reset aborts
 *       the request's signal and cancels the response body at once, but the slot goes back
 *       ({@link UplinkSession#streamEnded}, by {@link #releaseIfOver}) only once the relay settled,
 *       the stage {@code handle} returned completed ({@code calling}), no read of the response
 *       body is outstanding ({@code reading}: a cancel fails it) and each cancel of that body
 *       returned ({@code cancelling}). A peer that opens and resets streams in a loop otherwise
 *       keeps any number of exchanges running upstream, the link's own count of 16 open streams
 *       leaving each at its reset (HTTP/2's rapid reset, CVE-2023-44487; nginx and Envoy count a
 *       stream until its upstream request ended). A target that ignores the abort keeps its slot:
 *       past the limit streams are refused {@code REFUSED_STREAM}.
 *   <li><b>Credit.</b> The request body queues DATA buffers as they arrive, never more than the
 *       stream window the link grants (256 KiB at first); {@link V2Stream#consumed} returns their
 *       credit only when the target takes them, so a target that stops reading holds back its own
 *       stream and nothing fails for being slow.
 *   <li><b>The request's length.</b> A request head's {@code length} is a promise the gateway is
 *       held to (section 9.4), as {@code RelayExchange} holds the worker to the response's: DATA
 *       that runs past it, or END_STREAM short of it, resets the stream {@code PROTOCOL_ERROR} and
 *       aborts the target, whose body read fails (never an end). The DATA that completes the length
 *       is kept from the target until END_STREAM comes, so a target (an upstream framed with {@code
 *       Content-Length}) never holds the whole of a body that then runs past.
 *   <li><b>The response.</b> The head goes out with END_STREAM when the response has no body
 *       ({@link ResponseFraming#bodyless} for the method, a null body, or a declared length of 0).
 *       Otherwise each part of the body ({@link BodySource#nextBuf()}) is read only while the
 *       stream is writable, written in pieces of at most {@link #WRITE_BYTES}, and resumed at
 *       {@link V2StreamHandler#onWritabilityChanged}; its end is an empty DATA with END_STREAM. A
 *       declared length is a promise (section 9.4): a part past it, or an end short of it, resets
 *       the stream {@code RELAY_ERROR} INTERNAL instead of sending what the gateway would refuse.
 *   <li><b>Failures.</b> Before the head the stream is reset {@code RELAY_ERROR} with the
 *       target's {@link SpectorException}, or INTERNAL for any other failure; after it, {@code
 *       RELAY_ERROR} INTERNAL (the gateway then resets its client, as in v1). A peer reset or the
 *       link's loss aborts the request's {@link AbortSignal} and cancels the response body.
 *   <li><b>Switched streams</b> (section 9.7). A request head with {@code upgrade} reaches the
 *       target as {@link RelayedRequest#upgrade()} with the stream's DATA as its body. A {@code
 *       101} answer goes out as a head without END_STREAM, its body is pumped as any other (no
 *       declared length), and its end is a half close (END_STREAM) that leaves the gateway's
 *       direction open: the relay settles once the target also had the gateway's END_STREAM or
 *       stopped reading (then RESET {@code NO_ERROR} tells the gateway to stop sending). A 101 to
 *       a head that named no upgrade is INTERNAL. A reset either way aborts both directions.
 *   <li><b>After it settled</b> the stream may still be open in the gateway's direction (the
 *       target answered without reading the whole request): its DATA is released and credited at
 *       once, so the gateway's upload ends and the stream closes.
 * </ul>
 *
 * <p>Deadlines: as v1's worker side, none of its own; the gateway's relay deadline resets the
 * stream {@code CANCEL}, and the link's keepalive closes a link that went silent, either of which
 * ends the relay here.
 */
final class V2ServedRelay implements V2StreamHandler {
    private static final Logger log = LoggerFactory.getLogger(V2ServedRelay.class);

    /**
     * Bytes of one response write at most: the room the stream's queue has past its high-water
     * mark ({@link V2Limits#STREAM_QUEUE_MAX_BYTES} minus {@link V2Limits#STREAM_QUEUE_HIGH_WATER},
     * 1 MiB), so a write made while the stream is writable never breaks the queue's bound.
     */
    static final int WRITE_BYTES = V2Limits.STREAM_QUEUE_MAX_BYTES - V2Limits.STREAM_QUEUE_HIGH_WATER;

    /** The relay's states (see the class's drawing). */
    private enum State {
        HELD,
        CALLED,
        STREAMING,
        SETTLED
    }

    private final UplinkSession session;
    private final V2Stream stream;
    private final RequestHead head;
    private final EventLoop loop;
    private final Executor executor;
    private final AbortSignal signal = new AbortSignal();
    private final @Nullable StreamBody body;

    // Event-loop state (see the class's design notes).
    private State state = State.HELD;
    /** The target's response body while this relay reads it or may still have to cancel it. */
    private @Nullable BodySource responseBody;
    /** The response body's bytes taken from the target, held to the length its head declared. */
    private DeclaredLength responseLength = DeclaredLength.unknown();
    /** Whether a read of the response body is outstanding. */
    private boolean reading;
    /** Whether {@link #writeOut} runs (a part read inline re-enters it: it loops instead). */
    private boolean writing;
    /** Whether something changed while {@link #writeOut} ran that it must look at again. */
    private boolean writeAgain;
    /** The rest of the part read last, not yet written (the stream turned unwritable). */
    private @Nullable ByteBuf pending;

    /** The target answered 101: the stream carries the switched connection (section 9.7). */
    private boolean switched;

    /** On a switched stream, the response body ended and END_STREAM was written. */
    private boolean responseEnded;

    /** Whether the target's call ran and the stage it returned has not completed yet. */
    private boolean calling;

    /** Cancels of the target's response body handed to the executor that have not returned yet. */
    private int cancelling;

    /** Whether the slot went back to the session ({@link #releaseIfOver}): once. */
    private boolean released;

    /** Written on the loop when the relay settles; read by the session on its executor. */
    private volatile boolean settled;

    /**
     * Creates the relay of a stream the link accepted; called on the loop, by the session as it takes the stream.
     *
     * @param endStream whether the request has no body (END_STREAM on its head)
     */
    V2ServedRelay(UplinkSession session, V2Stream stream, RequestHead head, boolean endStream) {
        this.session = session;
        this.stream = stream;
        this.head = head;
        this.loop = stream.eventLoop();
        this.executor = session.executor();
        this.body = endStream ? null : new StreamBody(new DeclaredLength(head.length()));
    }

    /** Returns the request head the gateway opened the stream with. */
    RequestHead head() {
        return head;
    }

    /** Answers whether the relay settled (read across threads, may lag by one hop). */
    boolean isSettled() {
        return settled;
    }

    @Override
    public String toString() {
        return "relay on stream " + stream.id();
    }

    // ---- what the session asks (from its executor) ----

    /** Calls the target with the relayed request; its response is sent when it arrives. */
    void start(RelayTarget target, URI url) {
        if (!onLoop(() -> call(target, url))) {
            loopGone(lost("the link's event loop is gone"));
        }
    }

    /** Resets the stream {@code RELAY_ERROR} with {@code failure}, before any target was called. */
    void refuse(SpectorException failure) {
        onLoop(() -> {
            if (state != State.SETTLED) {
                stream.resetRelayError(failure);
                settle(failure);
            }
        });
    }

    /** Resets the stream with {@code code} and no error object, before any target was called. */
    void refuse(V2ErrorCode code, String why) {
        onLoop(() -> {
            if (state != State.SETTLED) {
                stream.reset(code, null);
                settle(new CancellationException(toString() + " refused " + code + ": " + why));
            }
        });
    }

    /** Ends the relay because the session saw the connection close: the target is aborted. */
    void connectionLost(SpectorException lost) {
        if (!onLoop(() -> settle(lost))) {
            loopGone(lost);
        }
    }

    /**
     * Ends the relay whose loop no longer runs tasks: the loop took every buffer with it, and the
     * slot goes back now, as nothing learns on it when the target's work ends (the link is gone).
     */
    private void loopGone(SpectorException lost) {
        settled = true;
        session.streamEnded(this);
        signal.abort(lost);
    }

    // ---- the stream's callbacks (on the loop) ----

    @Override
    public void onData(ByteBuf data, boolean endStream) {
        StreamBody b = body;
        if (b == null) {
            data.release(); // the link refuses DATA after END_STREAM; never here
            return;
        }
        b.offer(data, endStream);
    }

    @Override
    public void onReset(V2ErrorCode code, Frame.@Nullable ErrorFrame error) {
        Throwable reason = code == V2ErrorCode.CANCEL
                ? new CancellationException(toString() + " cancelled by the gateway")
                : lost("stream " + stream.id() + " reset " + code);
        log.debug("{}: reset {} ({})", this, code, state);
        settle(reason);
    }

    @Override
    public void onLinkClosed(@Nullable Throwable cause) {
        settle(lost("uplink connection closed" + (cause == null ? "" : ": " + UplinkSession.message(cause))));
    }

    @Override
    public void onWritabilityChanged() {
        if (state == State.STREAMING) {
            writeOut();
        }
    }

    // ---- the call and the head ----

    private void call(RelayTarget target, URI url) {
        if (state != State.HELD) {
            return;
        }
        state = State.CALLED;
        calling = true;
        RelayedRequest request = new RelayedRequest(
                head.method(),
                url,
                head.headers(),
                head.tenant(),
                head.leaseId(),
                body,
                signal,
                head.upgrade(),
                loop,
                head.length());
        try {
            CompletableFuture.supplyAsync(
                            () -> {
                                Throwable cancelled = signal.reason(); // settled while this waited
                                if (cancelled != null) {
                                    throw new java.util.concurrent.CompletionException(cancelled);
                                }
                                return target.handle(request);
                            },
                            executor)
                    .thenCompose(Function.identity())
                    .whenComplete((response, failure) -> {
                        if (!onLoop(() -> answered(response, failure)) && response != null) {
                            BodySource b = response.body();
                            if (b != null) {
                                cancelOnExecutor(b, lost("the link's event loop is gone"), () -> {});
                            }
                        }
                    });
        } catch (RejectedExecutionException e) {
            calling = false;
            failedBeforeHead(internal("failed: " + UplinkSession.message(e)), e);
        }
    }

    /** Takes the target's answer: the stage its call returned completed (the slot may go back). */
    private void answered(@Nullable RelayedResponse response, @Nullable Throwable failure) {
        calling = false;
        responded(response, failure);
        releaseIfOver();
    }

    private void responded(@Nullable RelayedResponse response, @Nullable Throwable failure) {
        if (state != State.CALLED) {
            if (response != null) {
                cancelAsync(response.body(), new CancellationException(toString() + " already ended"));
            }
            return;
        }
        if (failure != null || response == null) {
            Throwable cause = failure == null
                    ? new IllegalStateException("the target answered no response")
                    : UplinkSession.unwrap(failure);
            SpectorException answer = cause instanceof SpectorException spector
                    ? spector
                    : internal("failed: " + UplinkSession.message(cause));
            failedBeforeHead(answer, cause);
            return;
        }
        BodySource responseBody = response.body();
        int status = response.status();
        boolean bodyless = ResponseFraming.bodyless(head.method().equals("HEAD"), status);
        ResponseHead responseHead;
        boolean switching = status == RelayHead.SWITCHING_PROTOCOLS;
        try {
            if (switching && head.upgrade() == null) {
                throw SpectorException.badRequest(
                        "status", "101 (expected: not 101, the request asked for no upgrade)");
            }
            responseHead = new ResponseHead(
                    status, response.headers(), ResponseFraming.contentLength(status, response.contentLength()));
        } catch (SpectorException e) {
            cancelAsync(responseBody, e);
            failedBeforeHead(internal("answered a response outside the bounds: " + e.getMessage()), e);
            return;
        }
        if (switching) {
            // Section 9.7: the head goes out without END_STREAM; the stream carries the switched
            // connection both ways from now on.
            stream.sendHeaders(responseHead, false);
            state = State.STREAMING;
            this.switched = true;
            this.responseBody = requireNonNull(responseBody, "a 101's body (RelayedResponse checks it)");
            writeOut();
            return;
        }
        long length = responseHead.length();
        if (!bodyless && responseBody == null && length > 0) {
            SpectorException e = internal("declared " + length + " bytes and answered no body");
            failedBeforeHead(e, e);
            return;
        }
        boolean endStream = bodyless || responseBody == null || length == 0;
        stream.sendHeaders(responseHead, endStream);
        if (endStream) {
            cancelAsync(
                    responseBody,
                    new CancellationException("a " + status + " response to " + head.method() + " with length " + length
                            + " carries no body"));
            settle(null);
            return;
        }
        state = State.STREAMING;
        this.responseBody = responseBody;
        this.responseLength = new DeclaredLength(length);
        writeOut();
    }

    private void failedBeforeHead(SpectorException answer, Throwable cause) {
        log.warn("{}: target '{}' failed before its response: {}", this, head.target(), UplinkSession.message(cause));
        stream.resetRelayError(answer);
        settle(cause);
    }

    // ---- the response body ----

    /**
     * Writes what is pending while the stream is writable, then reads the next part; a part a
     * {@link BodySource#nonBlocking()} body hands over inline is written by the same run (a loop,
     * never a recursion).
     */
    private void writeOut() {
        if (writing) {
            writeAgain = true;
            return;
        }
        writing = true;
        try {
            do {
                writeAgain = false;
                ByteBuf p;
                while ((p = pending) != null && stream.isWritable()) {
                    if (p.readableBytes() <= WRITE_BYTES) {
                        pending = null;
                        stream.write(p, false);
                    } else {
                        stream.write(p.readRetainedSlice(WRITE_BYTES), false);
                    }
                }
                if (pending == null && !reading && state == State.STREAMING && stream.isWritable()) {
                    read(requireNonNull(responseBody, "responseBody"));
                }
            } while (writeAgain);
        } finally {
            writing = false;
        }
    }

    private void read(BodySource source) {
        reading = true;
        if (source.nonBlocking()) {
            // A body that lives on an event loop (http-forward's socket, on this loop when it took
            // the request's hint): read from here, no hop through the executor.
            source.nextBufOn(loop, this::pulled);
            return;
        }
        try {
            executor.execute(() -> {
                CompletionStage<@Nullable ByteBuf> part;
                try {
                    part = source.nextBuf();
                } catch (RuntimeException e) {
                    part = CompletableFuture.failedFuture(e);
                }
                part.whenComplete((buf, failure) -> {
                    if (!onLoop(() -> pulled(buf, failure)) && buf != null) {
                        buf.release();
                    }
                });
            });
        } catch (RejectedExecutionException e) {
            reading = false;
            failedAfterHead("response body could not be read: " + UplinkSession.message(e), e, true);
        }
    }

    private void pulled(@Nullable ByteBuf part, @Nullable Throwable failure) {
        reading = false;
        if (state != State.STREAMING) {
            if (part != null) {
                part.release();
            }
            releaseIfOver(); // the read a reset left outstanding came back: the target's body stopped
            return;
        }
        if (failure != null) {
            Throwable cause = UplinkSession.unwrap(failure);
            responseBody = null; // it failed: nothing to cancel
            failedAfterHead("response body failed: " + UplinkSession.message(cause), cause, false);
            return;
        }
        if (part == null) {
            responseBody = null;
            if (responseLength.endsShort()) {
                String message = "response body ended after " + responseLength.counted() + " of the "
                        + responseLength.declared() + " bytes it declared";
                failedAfterHead(message, internal(message), false); // failedAfterHead names the target
                return;
            }
            stream.write(Unpooled.EMPTY_BUFFER, true);
            if (switched) {
                responseEnded = true; // a half close: the gateway's side may still be flowing
                settleIfBothEnded();
                return;
            }
            settle(null);
            return;
        }
        int n = part.readableBytes();
        if (!responseLength.admit(n)) {
            part.release();
            String message = "response body ran past the " + responseLength.declared() + " bytes it declared (at least "
                    + responseLength.counted() + ")";
            failedAfterHead(message, internal(message), true); // failedAfterHead names the target
            return;
        }
        if (n == 0) {
            part.release();
        } else {
            pending = part;
        }
        writeOut();
    }

    private void failedAfterHead(String message, Throwable cause, boolean cancelBody) {
        log.warn("{}: target '{}' failed after its response head: {}", this, head.target(), message);
        if (!cancelBody) {
            responseBody = null;
        }
        stream.resetRelayError(internal(message));
        settle(cause);
    }

    /**
     * The gateway broke the request's declared length (section 9.4): the stream is reset {@code
     * PROTOCOL_ERROR} and the relay settles, aborting the target with {@code broken}.
     */
    private void requestLengthBroken(SpectorException broken) {
        log.debug("{}: reset PROTOCOL_ERROR: {}", this, broken.getMessage());
        stream.reset(V2ErrorCode.PROTOCOL_ERROR, null);
        settle(broken);
    }

    // ---- a switched stream's two ends (section 9.7) ----

    /**
     * Settles a switched relay once both directions ended: the target read the gateway's
     * END_STREAM, or stopped reading (its upstream closed), and the response body ended. A
     * gateway that is still sending is told to stop with RESET {@code NO_ERROR}, as an HTTP/2
     * server that answered before the whole request (RFC 9113 §8.1).
     */
    private void settleIfBothEnded() {
        StreamBody b = body;
        if (state != State.STREAMING || !switched || !responseEnded || b == null || !b.isOver()) {
            return;
        }
        if (!b.endSeen) {
            stream.reset(V2ErrorCode.NO_ERROR, null);
        }
        settle(null);
    }

    // ---- settling ----

    /**
     * Ends the relay once: closes the request body (releasing what it queued), releases the
     * unwritten part, and, when {@code abort} is given, aborts the request's signal and cancels
     * the response body; frees its slot when the target's work is over too ({@link #releaseIfOver}).
     */
    private void settle(@Nullable Throwable abort) {
        if (state == State.SETTLED) {
            return;
        }
        state = State.SETTLED;
        settled = true;
        Throwable reason = abort != null ? abort : new CancellationException(toString() + " ended");
        StreamBody b = body;
        if (b != null) {
            b.close(reason);
        }
        ByteBuf p = pending;
        pending = null;
        if (p != null) {
            p.release();
        }
        if (abort != null) {
            signal.abortVia(executor, abort); // its reason at once, its listeners on the executor
            BodySource source = responseBody;
            responseBody = null;
            cancelAsync(source, abort);
        }
        releaseIfOver();
    }

    /**
     * Gives the slot back once the relay settled and the target's work is over (the design
     * notes, "The slot"): its call's stage completed, no read of its response body outstanding,
     * every cancel of that body returned. Called at each of those ends; frees the slot once.
     */
    private void releaseIfOver() {
        if (state == State.SETTLED && !released && !calling && !reading && cancelling == 0) {
            released = true;
            session.streamEnded(this);
        }
    }

    /** Cancels the target's response body on the executor; the slot waits until the cancel returned. */
    private void cancelAsync(@Nullable BodySource source, Throwable reason) {
        if (source == null) {
            return;
        }
        cancelling++;
        boolean ran = cancelOnExecutor(
                source,
                reason,
                () -> onLoop(() -> {
                    cancelling--;
                    releaseIfOver();
                }));
        if (!ran) {
            cancelling--; // the executor is gone, and the target's code with it: no wait for it
        }
    }

    /** {@link UplinkSession#cancelOnExecutor} on this relay's executor. */
    private boolean cancelOnExecutor(BodySource source, Throwable reason, Runnable then) {
        return UplinkSession.cancelOnExecutor(executor, source, reason, this, then);
    }

    private boolean onLoop(Runnable task) {
        if (loop.inEventLoop()) {
            task.run();
            return true;
        }
        try {
            loop.execute(task);
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    private SpectorException internal(String message) {
        return SpectorException.of(ErrorCode.INTERNAL, "relay target '" + head.target() + "' " + message);
    }

    private static SpectorException lost(String message) {
        return SpectorException.of(ErrorCode.DAEMON_CONNECTION_LOST, message);
    }

    /**
     * The relayed request's body, fed by the stream's DATA and pulled by the target: buffers are
     * queued as they arrive and handed out as they are ({@link #nextBuf()}, the reader owns each)
     * or copied ({@link #next()}); their credit returns when the reader takes them. Its state is
     * the relay's, on the loop; the reads complete on the executor.
     */
    final class StreamBody implements BodySource {
        private final ArrayDeque<ByteBuf> queued = new ArrayDeque<>();
        /** The body's bytes as they arrive, held to the request's declared length. */
        private final DeclaredLength length;
        /** The DATA that completed the declared length, kept from the reader until END_STREAM. */
        private @Nullable ByteBuf held;

        boolean endSeen;
        private boolean endDelivered;
        private @Nullable Throwable failure;
        private @Nullable Read reader;

        /** Bytes queued and not yet taken. */
        private long queuedCount;

        /** {@link #queuedCount} as last written, for a reader on another thread (tests). */
        private volatile long queuedBytes;

        StreamBody(DeclaredLength length) {
            this.length = length;
        }

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            CompletableFuture<@Nullable ByteBuffer> read = new CompletableFuture<>();
            return startRead(read, new Read(null, read, null));
        }

        @Override
        public CompletionStage<@Nullable ByteBuf> nextBuf() {
            CompletableFuture<@Nullable ByteBuf> read = new CompletableFuture<>();
            return startRead(read, new Read(read, null, null));
        }

        /** The stream's DATA lives on the link's loop: reading it never blocks. */
        @Override
        public boolean nonBlocking() {
            return true;
        }

        /**
         * A reader on the link's own loop (a target that took the request's event-loop hint) gets
         * each part there, inline when one is queued: no hop through the executor or the loop's
         * task queue. Any other reader is served as {@link BodySource#nextBufOn} says.
         */
        @Override
        public void nextBufOn(Executor on, BiConsumer<@Nullable ByteBuf, @Nullable Throwable> then) {
            BodySource.nextBufOnLoop(this, loop, on, then, reader -> read(new Read(null, null, reader)));
        }

        private <T> CompletionStage<T> startRead(CompletableFuture<T> read, Read r) {
            if (!onLoop(() -> read(r))) {
                read.completeExceptionally(lost("the link's event loop is gone"));
            }
            return read;
        }

        @Override
        public void cancel(Throwable reason) {
            onLoop(() -> {
                close(reason);
                settleIfBothEnded(); // a switched target stopped reading: its side is over
            });
        }

        /** Answers whether the reader has had the end, or stopped reading (loop only). */
        boolean isOver() {
            return endDelivered || failure != null;
        }

        /** Returns the bytes that arrived and the reader has not taken (across threads, may lag). */
        long queuedBytes() {
            return queuedBytes;
        }

        private void read(Read read) {
            ByteBuf part;
            if (endDelivered) {
                deliver(read, null, null);
            } else if (failure != null) {
                deliver(read, null, failure);
            } else if (reader != null) {
                deliver(read, null, new IllegalStateException("one read at a time"));
            } else if ((part = queued.poll()) != null) {
                count(-part.readableBytes());
                take(read, part);
            } else if (endSeen) {
                endDelivered = true;
                deliver(read, null, null);
                settleIfBothEnded();
            } else {
                reader = read;
            }
        }

        /**
         * Takes one DATA frame's bytes (the relay owns them), END_STREAM when {@code end}, held to
         * the declared length first (the relay's design notes, "The request's length").
         */
        void offer(ByteBuf data, boolean end) {
            int n = data.readableBytes();
            if (failure != null) {
                data.release(); // the relay ended or the reader stopped: drained, credited at once
                stream.consumed(n);
                return;
            }
            SpectorException broken = !length.admit(n)
                    ? UplinkSession.requestLengthOverrun(length)
                    : end && length.endsShort() ? UplinkSession.requestLengthUnderrun(length) : null;
            if (broken != null) {
                data.release();
                stream.consumed(n);
                requestLengthBroken(broken); // closes this body: what it holds is released
                return;
            }
            if (length.isComplete() && !end) {
                if (n > 0) {
                    held = data; // none held before: any byte after a held part runs past
                    count(n);
                } else {
                    data.release();
                }
                return;
            }
            ByteBuf last = held;
            held = null;
            if (last != null) {
                count(-last.readableBytes());
                arrived(last);
            }
            arrived(data);
            if (end) {
                endSeen = true;
                // The reader now waiting: the one that came with empty DATA, or one a reader on the
                // loop placed inline while it took the part above.
                Read r = reader;
                if (r != null) {
                    reader = null;
                    endDelivered = true;
                    deliver(r, null, null);
                    settleIfBothEnded();
                }
            }
        }

        /** Hands a part to the waiting reader, or queues it. */
        private void arrived(ByteBuf data) {
            int n = data.readableBytes();
            Read waiting = reader;
            if (n == 0) {
                data.release();
            } else if (waiting != null) {
                reader = null;
                take(waiting, data);
            } else {
                queued.add(data);
                count(n);
            }
        }

        private void count(int bytes) {
            queuedCount += bytes;
            queuedBytes = queuedCount;
        }

        private void take(Read read, ByteBuf part) {
            stream.consumed(part.readableBytes()); // the target took it: the gateway's window moves on
            deliver(read, part, null);
        }

        /** The relay settled or the reader stopped: releases and credits what is queued. */
        void close(Throwable reason) {
            if (failure == null) {
                failure = reason;
            }
            int released = 0;
            ByteBuf last = held;
            held = null;
            if (last != null) {
                released += last.readableBytes();
                last.release();
            }
            ByteBuf part;
            while ((part = queued.poll()) != null) {
                released += part.readableBytes();
                part.release();
            }
            queuedCount = 0;
            queuedBytes = 0;
            if (released > 0) {
                stream.consumed(released);
            }
            Read waiting = reader;
            reader = null;
            if (waiting != null) {
                deliver(waiting, null, endDelivered ? null : reason);
            }
        }

        /** Completes a read on the executor (inline for a reader on the loop); a part nobody takes is released. */
        private void deliver(Read read, @Nullable ByteBuf part, @Nullable Throwable error) {
            if (read.onLoop != null) {
                read.onLoop.accept(part, error);
                return;
            }
            try {
                executor.execute(() -> read.complete(part, error));
            } catch (RejectedExecutionException e) {
                if (part != null) {
                    part.release();
                }
                read.complete(null, e);
            }
        }
    }

    /**
     * One outstanding read of the request body: as a buffer ({@code buf}), as a copy ({@code
     * heap}), or handed to a reader on the link's loop ({@code onLoop}, called there, inline).
     */
    private record Read(
            @Nullable CompletableFuture<@Nullable ByteBuf> buf,
            @Nullable CompletableFuture<@Nullable ByteBuffer> heap,
            @Nullable BiConsumer<@Nullable ByteBuf, @Nullable Throwable> onLoop) {
        void complete(@Nullable ByteBuf part, @Nullable Throwable error) {
            CompletableFuture<@Nullable ByteBuf> b = buf;
            CompletableFuture<@Nullable ByteBuffer> h = heap;
            if (error != null) {
                if (b != null) {
                    b.completeExceptionally(error);
                } else if (h != null) {
                    h.completeExceptionally(error);
                }
                return;
            }
            if (b != null) {
                if (!b.complete(part) && part != null) {
                    part.release(); // the reader gave up on the read
                }
                return;
            }
            ByteBuffer copy = null;
            if (part != null) {
                try {
                    copy = ByteBuffer.allocate(part.readableBytes());
                    part.readBytes(copy);
                    copy.flip();
                } finally {
                    part.release();
                }
            }
            if (h != null) {
                h.complete(copy);
            }
        }
    }
}
