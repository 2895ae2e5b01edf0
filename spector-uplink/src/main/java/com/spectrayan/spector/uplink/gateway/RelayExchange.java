package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.contract.DeclaredLength;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.gateway.Failures;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.internal.gateway.RelayHooks;
import com.spectrayan.spector.uplink.internal.v2.RequestHead;
import com.spectrayan.spector.uplink.internal.v2.ResponseHead;
import com.spectrayan.spector.uplink.internal.v2.V2Connection;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2Stream;
import com.spectrayan.spector.uplink.internal.v2.V2StreamHandler;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.internal.wire.RelayOutcome;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.Header;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import org.jspecify.annotations.Nullable;

/**
 * One relay on the gateway, from {@link GatewayRelay#relay} until it ends or fails: the wait for a
 * slot, {@code relay.request}, the request body as {@code relay.body} calls, the response from the
 * pushes, and the one ending.
 *
 * <p>The response: a head without a body ({@link ResponseFraming#bodyless}) resolves with a null
 * body, and any chunk after it is a protocol error. A head that declares a {@code length} holds
 * the worker to it: chunks that add up to more fail the body INTERNAL at once (the excess never
 * reaches the caller) and cancel the relay; a relay answered {@code {}} with fewer bytes fails the
 * body INTERNAL after the bytes that came. Either names the worker.
 *
 * <p>The request's declared length ({@link RelayedRequest#contentLength()}) goes out as the
 * head's {@code length} (v1's {@code relay.request}, v2's request head), and the caller's body is
 * held to it before anything of it is sent ({@code requestBroken}, the same shape as the response's
 * {@code admit}): a part past it, or an end short of it, fails the relay INTERNAL and cancels it,
 * so the worker never receives a body it would refuse.
 *
 * <p>Upgrades (v2 only, docs/PROTOCOL.md section 9.7; on a v1 link NOT_IMPLEMENTED before
 * anything is sent): the stream opens with the request head's {@code upgrade} and no END_STREAM,
 * and the caller's body is uploaded for as long as it flows. A {@code 101} resolves with the
 * worker's DATA as its body and no declared length, cancels the deadline (the caller bounds the
 * switched connection by idleness), and turns END_STREAM into a half close each way: the worker's
 * ends the body, the caller's body's end is sent as END_STREAM, and the relay succeeds once both
 * ended. A RESET either way, the caller's abort or the link's loss ends both. Anything but a
 * {@code 101} is an ordinary response (RFC 9110 §7.8: the server may ignore the upgrade).
 *
 * <p>The slot: a relay holds one of its worker's slots ({@link RelayLimiter}, {@code
 * spector.uplink.relay.max-per-worker}) from the permit until it ends, and a v2 relay with a body
 * until its caller has taken that body too: read to its end or its failure, cancelled, or dropped
 * (the caller's abort, the deadline). An open stream's unread bytes are bounded by its window, but
 * END_STREAM closes the stream and returns its credit while its last window's worth may still sit
 * unread in the {@link ResponseBody}; held to the body, a worker's slots bound what its ended
 * streams leave here as its open streams' windows bound the rest, so a worker answering callers
 * that do not read makes its next relay wait for a slot (within that relay's deadline), not the
 * gateway's heap grow. Until the body is done the deadline still runs (a switched relay's ended
 * at its 101: its caller bounds it by idleness) and the caller's abort still listens, each
 * dropping what is unread ({@link ResponseBody#abandon}): a caller that neither reads nor cancels
 * holds a slot no longer than the deadline. The link's running count and the stream's connection
 * credit are not held: the link holds nothing of an ended stream, and streams whose readers
 * stalled may keep at most half the link's window (docs/PROTOCOL.md section 9.5), which a closed
 * stream still charged to it would break. A v1 relay releases its slot when it ends: its unread
 * bytes are bounded by {@code maxUnreadBytes} and, across the gateway, {@code unreadAll}.
 *
 * <p>The upgrade permit: a switched relay holds no slot. An upgrade came with one of its worker's
 * upgrade permits ({@link GatewayRelay} took it without waiting, {@code
 * spector.uplink.relay.max-upgrades-per-worker}) and waits for a slot as any relay while its
 * request is set up; at its {@code 101} it hands the slot back ({@link #headArrived}, decided
 * under the lock as an ending is, released after) and keeps only the permit, so switched
 * WebSockets that idle for hours never make an ordinary relay to their worker wait, and at most
 * the share of them is open. The permit then follows the slot's rule: it goes back once, when the
 * relay ends, or for one that ended with its body not yet done, when that body is done ({@link
 * #bodyDone}); every ending of a switched stream (either side's half closes, a RESET either way,
 * the link's loss, the caller's abort) is one of the relay's endings, so none leaks it. An upgrade
 * answered anything but {@code 101} holds slot and permit to its end, as an ordinary relay. A
 * leaked permit would refuse every later upgrade to the worker, so both are released in the one
 * place each ending decides ({@link #finish}, {@link #bodyDone}).
 *
 * <p>Concurrency: events arrive on several threads at once: pushes and call answers on the
 * uplink's thread, body parts and the abort on the caller's, the deadline on the scheduler, the
 * permit on whichever thread released the slot, the body's last read on the caller's. Every
 * mutable field is guarded by {@code this}, and every event runs in the two steps of OkHttp's
 * {@code Http2Stream}: <em>1.</em> decide in a {@code synchronized (this)} block (is this the
 * first ending? which part goes next?) and copy what the decision needs into locals; <em>2.</em>
 * act outside it. The first ending wins; the slot an ended v2 relay kept goes back when its body
 * is done ({@link #bodyDone}), decided under the lock as the endings are, so once.
 *
 * <p>Never done while holding the lock: completing {@link #result} or any other future, calling
 * the worker client (a frame written to the uplink), reading or cancelling the caller's body,
 * offering to, ending or failing the {@link ResponseBody} (which has its own lock), releasing the
 * {@link RelayLimiter} slot (which hands it to the next waiter), cancelling the timer or the
 * permit wait, or touching the caller's {@link com.spectrayan.spector.uplink.AbortSignal}. Each of
 * those may run a callback synchronously that comes back into this exchange (a completed read
 * calls {@code partRead} on the same thread, a cancelled reader calls {@code fail}); with no lock
 * held across them, no two locks are ever nested and no callback runs under ours. The call-outs
 * assert it ({@code assertNoLock}, as OkHttp's {@code assertThreadDoesntHoldLock}).
 */
final class RelayExchange implements RelayHooks {
    private static final int CHUNK_BYTES = (int) Limits.CHUNK_BYTES.max();

    // Set at construction, read from any thread.
    private final String workerId;
    private final String relayId;
    private final RelayCall call;
    private final WorkerDirectory directory;
    private final RelayLimiter limiter;
    private final CompletableFuture<Void> permit;
    /** The worker's upgrade share this relay holds a permit of (an upgrade's), or null. */
    private final @Nullable RelayLimiter upgradeLimiter;

    private final Duration deadline;
    private final long maxUnreadBytes;
    /** Every v1 relay's unread response bytes together (the gateway's), and their bound. */
    private final AtomicLong unreadAll;

    private final long maxUnreadAll;
    private final Consumer<Throwable> onCallerAbort;
    private final ScheduledExecutorService scheduler;
    private final CompletableFuture<RelayedResponse> result = new CompletableFuture<>();

    // Internal state, guarded by this. Nothing below is read or written without the lock.

    /** The relay ended (completed or failed); every later event is ignored. Guarded by this. */
    private boolean finished;

    /**
     * This relay holds one of the worker's slots, to release once: when it ends, or, for a v2
     * relay with a body, once the body is done too ({@link #bodyDone}). Guarded by this.
     */
    private boolean permitHeld;

    /**
     * This relay (an upgrade) holds one of the worker's upgrade permits, released with the slot
     * would be (its ending, or its body's being done after it), once. From construction: {@link
     * GatewayRelay} took it. Guarded by this.
     */
    private boolean upgradeHeld;

    /**
     * The response body holds nothing and never will again (the caller took it all, or it was
     * dropped): a v2 relay that ended keeps its slot no longer. Guarded by this.
     */
    private boolean bodyDone;

    /** {@code relay.request} went out, so an ending sends {@code relay.cancel}. Guarded by this. */
    private boolean requestSent;

    /** The {@code relay-head} arrived; a failure now fails the body, not the stage. Guarded by this. */
    private boolean headSeen;

    /** The wait for a slot, cancelled by an ending that comes first. Guarded by this. */
    private @Nullable CompletableFuture<Void> permitWait;

    /** The deadline of the whole exchange, cancelled when it ends. Guarded by this. */
    private @Nullable ScheduledFuture<?> timer;

    /** The caller's view of the response body, null before the head or without one. Guarded by this. */
    private @Nullable ResponseBody body;

    /** The worker's client, set when {@code relay.request} goes out. Guarded by this. */
    private @Nullable RealGatewayWorkerClient client;

    /**
     * The link the relay runs on, set with {@link #client}; its running count is raised then and
     * lowered once, by whichever ending finds it set. Guarded by this.
     */
    private @Nullable WorkerLink link;

    /** The request body is still being sent (no ending, no failed relay.body). Guarded by this. */
    private boolean uploading;

    /** A {@link BodySource#next} of the caller's body is outstanding. Guarded by this. */
    private boolean reading;

    /**
     * A part of the caller's body was asked for: the request can no longer be started again on
     * another link. Guarded by this.
     */
    private boolean bodyAsked;

    /**
     * The links that refused this relay's stream ({@code REFUSED_STREAM}: nothing of it was
     * processed, RFC 9113 section 8.7), left out when it is started again on another. Guarded by this.
     */
    private final List<WorkerLink> refusedBy = new ArrayList<>(1);

    /** The caller's body ended, failed or was given up: never read or cancel it again. Guarded by this. */
    private boolean eof;

    /** The body's {@code relay.body} end went out. Guarded by this. */
    private boolean endSent;

    /** {@code relay.body} calls sent and not yet answered (at most UNANSWERED_BODIES). Guarded by this. */
    private int unanswered;

    /** A thread runs {@link #pump}; others only set {@link #pumpAgain}. Guarded by this. */
    private boolean pumping;

    /** An event came while another thread pumped: it loops once more. Guarded by this. */
    private boolean pumpAgain;

    /** The seq of the next {@code relay.body} chunk. Guarded by this. */
    private int seq;

    /** What is left of the caller's last part, sent in chunks of CHUNK_BYTES. Guarded by this. */
    private @Nullable ByteBuffer leftover;

    /** The response body's bytes, held to the length its head declared (unknown before it). Guarded by this. */
    private DeclaredLength responseLength = DeclaredLength.unknown();

    /**
     * The caller's body's bytes, held to the request's declared length before they are sent; counted
     * anew for a replay. Guarded by this.
     */
    private DeclaredLength requestLength;

    /**
     * The caller's body as this relay reads it: the request's, or its {@link BodySource#replay} once a
     * link refused the stream after parts of it went out ({@link #notStartedAgain}). Guarded by this.
     */
    private @Nullable BodySource requestBody;

    /**
     * A link refused the stream ({@code REFUSED_STREAM}) while a read of the caller's body was
     * outstanding: whether it goes to another link is decided when that read returns ({@link
     * V2Relay#refusedDuringRead}). Guarded by this.
     */
    private boolean refusedMidRead;

    RelayExchange(
            String workerId,
            String relayId,
            RelayCall call,
            WorkerDirectory directory,
            RelayLimiter limiter,
            CompletableFuture<Void> permit,
            @Nullable RelayLimiter upgradeLimiter,
            Duration deadline,
            long maxUnreadBytes,
            AtomicLong unreadAll,
            long maxUnreadAll,
            ScheduledExecutorService scheduler) {
        this.unreadAll = unreadAll;
        this.maxUnreadAll = maxUnreadAll;
        this.workerId = workerId;
        this.relayId = relayId;
        this.call = call;
        this.directory = directory;
        this.limiter = limiter;
        this.permit = permit;
        this.upgradeLimiter = upgradeLimiter;
        this.upgradeHeld = upgradeLimiter != null;
        this.deadline = deadline;
        this.maxUnreadBytes = maxUnreadBytes;
        this.onCallerAbort = this::callerAborted;
        this.scheduler = scheduler;
        this.requestLength = new DeclaredLength(call.request().contentLength());
        this.requestBody = call.request().body();
    }

    CompletionStage<RelayedResponse> result() {
        return result.minimalCompletionStage();
    }

    void start() {
        CompletableFuture<Void> wait = permit;
        synchronized (this) {
            permitWait = wait;
        }
        ScheduledFuture<?> t;
        try {
            t = scheduler.schedule(this::deadlinePassed, deadline.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            // The gateway stops (its scheduler is shut down): no relay may start without its
            // deadline. It fails, nothing sent, and gives back its upgrade permit here and its slot
            // in permitted(), which finds it finished when the slot is (or was) granted.
            fail(Failures.unreachable(workerId, "the gateway is stopping", e), false);
            whenPermitted(wait);
            return;
        }
        synchronized (this) {
            timer = t;
        }
        call.request().signal().onAbort(onCallerAbort);
        if (isFinished()) {
            // Ended while registering (an abort or the deadline): the listener must not outlive it.
            call.request().signal().removeOnAbort(onCallerAbort);
        }
        whenPermitted(wait);
    }

    /** Runs {@link #permitted} when the worker's slot is granted (a wait cancelled by an ending never is). */
    private void whenPermitted(CompletableFuture<Void> wait) {
        wait.whenComplete((v, error) -> {
            if (error == null) {
                permitted();
            }
        });
    }

    private void permitted() {
        boolean late;
        synchronized (this) {
            late = finished;
            if (!late) {
                permitHeld = true;
            }
        }
        assertNoLock();
        if (late) {
            limiter.release(); // The relay ended while it waited: hand the slot on.
            return;
        }
        WorkerLink link = directory.live(workerId, call.request().eventLoop());
        if (link == null) {
            fail(Failures.noLink(workerId), false);
            return;
        }
        startOn(link);
    }

    /** Sends the request on {@code link}: a v2 stream, or v1's {@code relay.request} and body calls. */
    private void startOn(WorkerLink link) {
        RelayedRequest request = call.request();
        boolean hasBody = request.body() != null;
        RealGatewayWorkerClient c = link.relayClient();
        V2Connection v2 = c.v2();
        if (v2 != null) {
            startV2(link, c, v2);
            return;
        }
        if (request.upgrade() != null) {
            fail(Failures.upgradeNeedsV2(workerId), false); // v1 has no two-way stream (section 9.7)
            return;
        }
        RelayRequest wire;
        try {
            wire = new RelayRequest(
                    relayId,
                    call.target(),
                    request.method(),
                    request.url().toString(),
                    request.headers(),
                    request.tenant(),
                    request.leaseId(),
                    hasBody,
                    request.contentLength());
        } catch (SpectorException e) {
            fail(e, false);
            return;
        }
        synchronized (this) {
            if (finished) {
                return;
            }
            client = c;
            this.link = link;
            link.relayStarted();
            requestSent = true;
            uploading = hasBody;
        }
        assertNoLock();
        c.relayRequest(wire, this).whenComplete(this::answered);
        if (hasBody) {
            pump();
        }
    }

    // ---- protocol v2: the relay as one stream (docs/PROTOCOL.md section 9.4) ----

    /**
     * Opens the relay's stream on a v2 link: the request head, then the body as DATA within the
     * stream's window; the response arrives through {@link V2Relay}. The endings stay this
     * exchange's (the deadline, the caller's abort, the first ending wins); a cancel is the
     * stream's RESET {@code CANCEL}.
     */
    private void startV2(WorkerLink link, RealGatewayWorkerClient c, V2Connection v2) {
        RelayedRequest request = call.request();
        boolean hasBody = request.body() != null;
        RequestHead head;
        try {
            head = new RequestHead(
                    call.target(),
                    request.method(),
                    request.url().toString(),
                    request.headers(),
                    request.tenant(),
                    request.leaseId(),
                    request.upgrade(),
                    request.contentLength());
            head.toFrame(1, !hasBody); // the END_STREAM rule (section 9.3), before anything is sent
        } catch (SpectorException e) {
            fail(e, false);
            return;
        }
        V2Relay relay = new V2Relay(v2);
        synchronized (this) {
            if (finished) {
                return;
            }
            client = c;
            this.link = link;
            link.relayStarted();
            requestSent = true;
            uploading = hasBody;
            v2Relay = relay;
        }
        assertNoLock();
        try {
            // Opened on the link's loop, so the stream is known before any callback of it runs
            // there (the worker's head arrives on that loop, after this task).
            v2.channel().eventLoop().execute(() -> {
                if (isFinished()) {
                    return; // ended while the task waited: nothing was sent
                }
                V2Stream opened = v2.openStream(head, !hasBody, relay);
                relay.stream = opened;
                if (isFinished()) {
                    opened.reset(V2ErrorCode.CANCEL, null); // ended while it opened: its ending saw no stream
                } else if (hasBody) {
                    relay.pump();
                }
            });
        } catch (RejectedExecutionException e) {
            fail(Failures.unreachable(workerId, "worker " + workerId + " uplink was lost during the relay", e), false);
        }
    }

    /**
     * A link refused the relay's stream ({@code REFUSED_STREAM}: the worker's 16 open streams on
     * that link, or the link going away), so nothing of it was processed (RFC 9113 section 8.7) and
     * it goes to another of the worker's links, as PROTOCOL section 9.4 says: each link once, while
     * no other ending came first, and while no part of the caller's body was asked for, or its
     * source can give it again from its first byte ({@link BodySource#replay}: a body read whole
     * before the relay started; one streaming from the client could not be sent again). A read of
     * a body that can be sent again ({@link BodySource#canReplay}) still outstanding is waited for:
     * the refusal is decided again when it returns ({@link V2Relay#refusedDuringRead}); it failed
     * the relay before, which a body in memory, whose read is a task on the link's loop, met
     * whenever the refusal came back first (a CI flake). Answers
     * why it was not started again, or null when it was (or waits for the read); the caller then
     * fails it {@code WORKER_UNREACHABLE}.
     */
    private @Nullable String notStartedAgain(V2Relay refused) {
        BodySource sent;
        boolean readOutstanding;
        synchronized (this) {
            if (v2Relay != refused) {
                return null; // a refusal of an earlier try: the relay runs on
            }
            if (finished || headSeen) {
                return "";
            }
            readOutstanding = bodyAsked && reading;
            sent = bodyAsked ? requestBody : null;
        }
        assertNoLock();
        if (readOutstanding) {
            if (sent == null || !sent.canReplay()) {
                return " after a part of its body was asked for (the body cannot be sent again)";
            }
            synchronized (this) {
                if (reading) { // the read's answer comes on this loop, after this: decided then
                    refusedMidRead = true;
                    return null;
                }
            }
        }
        BodySource again = sent == null ? null : sent.replay();
        if (sent != null && again == null) {
            return " after its body went out on it (the body cannot be sent again)";
        }
        WorkerLink from;
        List<WorkerLink> excluded;
        synchronized (this) {
            if (finished || headSeen || v2Relay != refused || reading) {
                return ""; // another ending, or a read begun since the first look: not on this loop
            }
            if (again != null) { // the body from its first byte, counted anew, as on a first try
                requestBody = again;
                requestLength = new DeclaredLength(call.request().contentLength());
                eof = false;
                endSent = false;
                leftover = null;
                bodyAsked = false;
            }
            from = link;
            if (from != null) {
                refusedBy.add(from);
            }
            excluded = List.copyOf(refusedBy);
            // As after permitted(): the slot held, nothing sent on any link.
            link = null;
            client = null;
            v2Relay = null;
            requestSent = false;
            uploading = false;
        }
        assertNoLock();
        if (from != null) {
            from.relayEnded();
        }
        WorkerLink next = directory.live(workerId, call.request().eventLoop(), excluded);
        if (next == null) {
            return " on every link it holds";
        }
        startOn(next);
        return null;
    }

    /**
     * The stream of one v2 relay: its handler (on the link's event loop) and the upload, which
     * also runs on that loop, where {@link V2Stream#isWritable()} is answered.
     */
    private final class V2Relay implements V2StreamHandler {
        private final V2Connection connection;

        /**
         * Set on the link's loop as the stream opens, before any of its callbacks can run there;
         * read there and by an ending on any thread (null: not opened, nothing to reset).
         */
        volatile @Nullable V2Stream stream;

        V2Relay(V2Connection connection) {
            this.connection = connection;
        }

        /** Whether {@link #pump} runs on the loop (a part handed over inline re-enters it: it loops). */
        private boolean pumping;

        private boolean pumpAgain;

        /**
         * On the loop: reads the caller's next part while the stream takes more. A caller's body on
         * this loop ({@link BodySource#nonBlocking()}) may hand its part over inline; the run then
         * loops rather than recursing.
         */
        private void pump() {
            if (pumping) {
                pumpAgain = true;
                return;
            }
            pumping = true;
            try {
                do {
                    pumpAgain = false;
                    pumpOnce();
                } while (pumpAgain);
            } finally {
                pumping = false;
            }
        }

        private void pumpOnce() {
            V2Stream s = stream;
            if (s == null || !s.isWritable()) {
                return;
            }
            BodySource source;
            synchronized (RelayExchange.this) {
                source = requestBody;
                if (source == null || finished || !uploading || endSent || reading || eof || v2Relay != this) {
                    return; // v2Relay: a stream refused and started again on another link pumps no more
                }
                reading = true;
                bodyAsked = true;
            }
            assertNoLock();
            source.nextBufOn(connection.channel().eventLoop(), (part, error) -> partRead(s, part, error));
        }

        private void partRead(V2Stream s, @Nullable ByteBuf part, @Nullable Throwable error) {
            if (refusedDuringRead(part, error)) {
                return;
            }
            boolean send;
            SpectorException broken = null;
            synchronized (RelayExchange.this) {
                reading = false;
                if (error != null || part == null) {
                    eof = true; // ended or failed: never read or cancel it again
                }
                if (error == null) {
                    broken = requestBroken(part == null ? -1 : part.readableBytes());
                }
                send = broken == null && !finished && uploading && !endSent;
                if (send && error == null && part == null) {
                    endSent = true;
                }
            }
            assertNoLock();
            if (error != null) {
                fail(Failures.unwrap(error), true);
                return;
            }
            if (broken != null) {
                if (part != null) {
                    part.release();
                }
                fail(broken, true); // reset CANCEL: nothing past the length, no END_STREAM short of it
                return;
            }
            if (!send) {
                if (part != null) {
                    part.release();
                }
                return;
            }
            if (part == null) {
                s.write(Unpooled.EMPTY_BUFFER, true);
                boolean bothEnded;
                synchronized (RelayExchange.this) {
                    bothEnded = switched && responseDone;
                }
                if (bothEnded) {
                    succeeded(); // the client's half close after the worker's: the switched stream is done
                }
                return;
            }
            s.write(part, false);
            pump();
        }

        /**
         * Answers whether the link refused the stream while this read was outstanding ({@link
         * #notStartedAgain}); if so, the part goes (the body is sent again from its first byte, or
         * not at all) and the refusal is decided now that no read is: the relay goes to another
         * link, or fails, the body's own failure first.
         */
        private boolean refusedDuringRead(@Nullable ByteBuf part, @Nullable Throwable error) {
            synchronized (RelayExchange.this) {
                if (!refusedMidRead) {
                    return false;
                }
                refusedMidRead = false;
                reading = false;
                if (error != null || part == null) {
                    eof = true;
                }
            }
            assertNoLock();
            if (part != null) {
                part.release();
            }
            if (error != null) {
                fail(Failures.unwrap(error), false); // the stream is gone already: nothing to cancel
                return true;
            }
            String why = notStartedAgain(this);
            if (why != null) {
                failRefused(why);
            }
            return true;
        }

        /** Fails the relay a link refused, for {@code why} it was not started again. */
        private void failRefused(String why) {
            fail(
                    Failures.unreachable(
                            workerId, "worker " + workerId + " refused the relay (REFUSED_STREAM)" + why, null),
                    false);
        }

        @Override
        public void onResponseHead(ResponseHead head, boolean endStream) {
            V2Stream s = stream;
            headArrived(head.status(), head.headers(), head.length(), n -> {
                if (s != null) {
                    s.consumed(n);
                }
            });
            if (endStream) {
                responseEnded();
            }
        }

        @Override
        public void onData(ByteBuf data, boolean endStream) {
            if (!dataArrived(data)) {
                return;
            }
            if (endStream) {
                responseEnded();
            }
        }

        @Override
        public void onReset(V2ErrorCode code, Frame.@Nullable ErrorFrame error) {
            boolean stopReading;
            synchronized (RelayExchange.this) {
                stopReading = code == V2ErrorCode.NO_ERROR && switched && responseDone;
            }
            if (stopReading) {
                // Section 9.7: the worker ended its side and stops reading ours (its upstream
                // closed), as an HTTP/2 server that answered in full (RFC 9113 §8.1).
                succeeded();
                return;
            }
            if (code == V2ErrorCode.RELAY_ERROR && error != null) {
                fail(error.toException(), false, true); // the worker's own error, behind what it sent
            } else if (code == V2ErrorCode.REFUSED_STREAM) {
                String why = notStartedAgain(this);
                if (why != null) {
                    failRefused(why);
                }
            } else {
                fail(
                        Failures.invalidResponse(
                                workerId, new IllegalStateException("the worker reset the relay " + code)),
                        false);
            }
        }

        @Override
        public void onLinkClosed(@Nullable Throwable cause) {
            fail(
                    Failures.unreachable(workerId, "worker " + workerId + " uplink was lost during the relay", cause),
                    false);
        }

        @Override
        public void onWritabilityChanged() {
            pump();
        }

        /** The response is complete (END_STREAM from the worker): the relay ends well, or short of its length. */
        private void responseEnded() {
            SpectorException shortBody = null;
            boolean uploadOpen;
            ResponseBody halfClosed = null;
            synchronized (RelayExchange.this) {
                if (finished) {
                    return;
                }
                if (switched) {
                    // Section 9.7: END_STREAM on a switched stream is a half close; the client's
                    // side goes on until it ends too.
                    responseDone = true;
                    if (!endSent) {
                        halfClosed = body;
                    }
                }
                if (body != null && responseLength.endsShort()) {
                    shortBody = Failures.lengthUnderrun(workerId, responseLength);
                }
                uploadOpen = uploading && !endSent;
            }
            if (halfClosed != null) {
                halfClosed.end(); // the caller reads the worker's end; the relay stays open
                return;
            }
            if (shortBody != null) {
                // Section 9.4: a declared length is a promise; its breach resets PROTOCOL_ERROR.
                failV2(shortBody, V2ErrorCode.PROTOCOL_ERROR, true);
                return;
            }
            V2Stream s = stream;
            if (uploadOpen && s != null) {
                s.reset(V2ErrorCode.NO_ERROR, null); // answered before the whole body: stop sending it
            }
            succeeded();
        }
    }

    /**
     * The worker answered {@code 101} (section 9.7): both directions stay open after the head, the
     * deadline no longer runs, and the relay ends when both have ended. Guarded by this.
     */
    private boolean switched;

    /** On a switched relay, the worker's END_STREAM arrived (its half close). Guarded by this. */
    private boolean responseDone;

    /** The v2 relay's stream, once it opened; null on v1. Guarded by this. */
    private @Nullable V2Relay v2Relay;

    // ---- the request body ----

    /**
     * Sends what the window allows, reading the caller's body as needed. One thread pumps at a
     * time, so relay.body calls go out in seq order; a call while another pumps makes it loop once
     * more.
     */
    private void pump() {
        synchronized (this) {
            if (pumping) {
                pumpAgain = true;
                return;
            }
            pumping = true;
        }
        boolean done = false;
        try {
            while (true) {
                if (pumpStep()) {
                    continue;
                }
                synchronized (this) {
                    if (pumpAgain) {
                        pumpAgain = false;
                        continue;
                    }
                    pumping = false;
                    done = true;
                    return;
                }
            }
        } finally {
            if (!done) {
                synchronized (this) {
                    pumping = false;
                }
            }
        }
    }

    /** Does one step of the upload; answers whether another step may follow at once. */
    private boolean pumpStep() {
        BodySource source;
        RelayBody part = null;
        RealGatewayWorkerClient c;
        synchronized (this) {
            source = requestBody;
            c = client;
            if (source == null || finished || !uploading || endSent || c == null) {
                return false;
            }
            if (unanswered >= Limits.UNANSWERED_BODIES) {
                return false;
            }
            ByteBuffer rest = leftover;
            if (rest != null && rest.hasRemaining()) {
                byte[] bytes = new byte[Math.min(rest.remaining(), CHUNK_BYTES)];
                rest.get(bytes);
                part = RelayBody.Chunk.of(relayId, seq++, bytes);
                unanswered++;
            } else if (eof) {
                part = new RelayBody.End(relayId);
                endSent = true;
                unanswered++;
            } else if (reading) {
                return false;
            } else {
                reading = true;
                bodyAsked = true;
            }
        }
        assertNoLock();
        if (part == null) {
            source.next().whenComplete(this::partRead);
            return false;
        }
        c.relayBody(part, this).whenComplete((v, error) -> bodyAnswered(error));
        return true;
    }

    private void partRead(@Nullable ByteBuffer part, @Nullable Throwable error) {
        if (error != null) {
            synchronized (this) {
                reading = false;
                eof = true; // The source failed: never read or cancel it again.
            }
            fail(Failures.unwrap(error), true);
            return;
        }
        SpectorException broken;
        synchronized (this) {
            reading = false;
            broken = requestBroken(part == null ? -1 : part.remaining());
            if (part == null) {
                eof = true;
            } else if (broken == null) {
                leftover = part;
            }
        }
        if (broken != null) {
            fail(broken, true); // nothing of the part past the length goes out
            return;
        }
        pump();
    }

    /**
     * Step 1 of a part of the caller's body, either version's ({@code bytes} -1 for its end): why it
     * breaks the request's declared length, counted here, or null. The worker would refuse it
     * (PROTOCOL section 3, 9.4); this side fails the relay before sending it.
     */
    private @Nullable SpectorException requestBroken(long bytes) {
        assert Thread.holdsLock(this);
        if (bytes < 0) {
            return requestLength.endsShort() ? Failures.requestLengthUnderrun(requestLength) : null;
        }
        return requestLength.admit(bytes) ? null : Failures.requestLengthOverrun(requestLength);
    }

    private void bodyAnswered(@Nullable Throwable error) {
        synchronized (this) {
            unanswered--;
            if (error != null) {
                // The relay.request answer decides how the relay ends; stop sending its body.
                uploading = false;
            }
        }
        pump();
    }

    // ---- the response ----

    @Override
    public void onRelayHead(RelayHead head) {
        headArrived(head.status(), head.headers(), head.length(), taken -> {});
    }

    /** The worker's response head (either version); {@code onTaken} hears each read of the body. */
    private void headArrived(int status, List<Header> headers, long length, IntConsumer onTaken) {
        RelayedResponse response;
        ScheduledFuture<?> deadlineTimer = null;
        boolean releaseSlot = false;
        synchronized (this) {
            if (finished) {
                return;
            }
            if (!headSeen) {
                headSeen = true;
                // A 101 reaches here only for a request that asked to upgrade (ResponseHead.parse).
                boolean switching = status == RelayedResponse.SWITCHING_PROTOCOLS;
                boolean noBody = !switching
                        && ResponseFraming.bodyless(call.request().method().equals("HEAD"), status);
                ResponseBody b = noBody
                        ? null
                        : new ResponseBody(
                                reason -> fail(reason, true),
                                onTaken,
                                v2Relay == null ? unreadAll : null,
                                this::bodyDone);
                body = b;
                responseLength = new DeclaredLength(length);
                if (switching && b != null) {
                    switched = true;
                    // As Envoy applies no request timeout to an upgraded WebSocket: the deadline
                    // covers the handshake, the caller bounds the switched connection by idleness.
                    deadlineTimer = timer;
                    timer = null;
                    // The switched relay keeps only its upgrade permit: its slot goes to the
                    // ordinary relays (the class notes' "upgrade permit").
                    releaseSlot = permitHeld;
                    permitHeld = false;
                    response = RelayedResponse.switching(headers, b);
                } else {
                    response = new RelayedResponse(status, headers, length, b);
                }
            } else {
                response = null;
            }
        }
        assertNoLock();
        if (deadlineTimer != null) {
            deadlineTimer.cancel(false);
        }
        if (releaseSlot) {
            limiter.release();
        }
        if (response == null) {
            fail(Failures.invalidResponse(workerId, null), true); // A second head.
            return;
        }
        result.complete(response);
    }

    @Override
    public void onRelayChunk(RelayChunk chunk) {
        ByteBuffer part = chunk.chunk();
        Admission a = admit(part.remaining(), "a relay-chunk");
        assertNoLock();
        ResponseBody b = a.body();
        if (b == null) {
            SpectorException broken = a.broken();
            if (broken != null) {
                fail(broken, true);
            }
            return;
        }
        long unread = b.offer(Unpooled.wrappedBuffer(part));
        if (unread > maxUnreadBytes) {
            fail(
                    SpectorException.of(
                            ErrorCode.PAYLOAD_TOO_LARGE,
                            "the reader of the relayed response from worker " + workerId + " fell behind: more than "
                                    + maxUnreadBytes + " bytes unread",
                            Map.of("limitBytes", maxUnreadBytes)),
                    true);
        } else if (unread > 0 && unreadAll.get() > maxUnreadAll) {
            fail(
                    SpectorException.of(
                            ErrorCode.PAYLOAD_TOO_LARGE,
                            "the reader of the relayed response from worker " + workerId + " fell behind while the"
                                    + " gateway's v1 relays together held more than " + maxUnreadAll + " bytes unread",
                            Map.of("limitBytes", maxUnreadAll)),
                    true);
        }
    }

    /**
     * A DATA frame's bytes (v2), owned from here: queued for the caller, or released. Answers
     * whether the relay goes on. The stream's window bounds what may queue, so unlike v1 a reader
     * that falls behind holds the worker back instead of failing.
     */
    private boolean dataArrived(ByteBuf data) {
        Admission a = admit(data.readableBytes(), "DATA");
        assertNoLock();
        ResponseBody b = a.body();
        if (b == null) {
            data.release();
            SpectorException broken = a.broken();
            if (broken != null) {
                failV2(broken, V2ErrorCode.PROTOCOL_ERROR, false);
            }
            return false;
        }
        b.offer(data);
        return true;
    }

    /**
     * Step 1 of a part of the response body, either version's: the body it goes to, or why it
     * breaks the relay (a part before the head or of a bodyless response, or one past the declared
     * length, counted here); neither when the relay ended.
     */
    private record Admission(
            @Nullable ResponseBody body, @Nullable SpectorException broken) {}

    private synchronized Admission admit(int bytes, String part) {
        if (finished) {
            return new Admission(null, null);
        }
        ResponseBody current = body;
        if (!headSeen || current == null) {
            String why = !headSeen ? part + " before the head" : part + " for a response without a body";
            return new Admission(null, Failures.invalidResponse(workerId, new IllegalStateException(why)));
        }
        if (!responseLength.admit(bytes)) {
            return new Admission(null, Failures.lengthOverrun(workerId, responseLength));
        }
        return new Admission(current, null);
    }

    /**
     * Ends a v2 relay the worker broke: the relay fails ({@code afterQueued}: behind the parts
     * already queued) and its stream is reset {@code code} (section 9.4).
     */
    private void failV2(SpectorException failure, V2ErrorCode code, boolean afterQueued) {
        V2Relay relay;
        synchronized (this) {
            relay = v2Relay;
        }
        V2Stream s = relay == null ? null : relay.stream;
        fail(failure, false, afterQueued);
        if (s != null) {
            s.reset(code, null); // nothing when the stream already ended both ways
        }
    }

    @Override
    public void onRelayInvalid(Throwable problem) {
        fail(Failures.invalidResponse(workerId, problem), true);
    }

    private void answered(@Nullable RelayOutcome outcome, @Nullable Throwable error) {
        if (error != null) {
            Throwable cause = Failures.unwrap(error);
            if (ErrorCode.isConnectionLost(cause)) {
                fail(
                        Failures.unreachable(
                                workerId, "worker " + workerId + " uplink was lost during the relay", cause),
                        false);
            } else {
                // The worker's own error follows the chunks it sent: they reach the caller first.
                fail(cause, false, true);
            }
            return;
        }
        if (outcome == null || outcome.cancelled() || !isHeadSeen()) {
            // {cancelled:true} while this side sent no cancel (it would have finished), or {}
            // before any head.
            fail(Failures.endedWithoutResponse(workerId), true);
            return;
        }
        SpectorException shortBody = null;
        synchronized (this) {
            if (body != null && responseLength.endsShort()) {
                shortBody = Failures.lengthUnderrun(workerId, responseLength);
            }
        }
        if (shortBody != null) {
            // The relay ended on the worker: nothing to cancel; the bytes that came reach the caller first.
            fail(shortBody, false, true);
            return;
        }
        succeeded();
    }

    /** The relay ended well: the body ends after what is queued. */
    private void succeeded() {
        Ending e = finish();
        if (e == null) {
            return;
        }
        callOut(
                e,
                () -> {
                    ResponseBody b = e.body();
                    if (b != null) {
                        b.end();
                    }
                },
                new CancellationException("the relay ended before the request body was read"));
    }

    private void callerAborted(Throwable reason) {
        if (!fail(reason, true, false)) {
            abandonHeldBody(reason); // ended, its body unread: the caller is gone, nobody takes it
        }
    }

    private synchronized boolean isFinished() {
        return finished;
    }

    private synchronized boolean isHeadSeen() {
        return headSeen;
    }

    private void deadlinePassed() {
        boolean ended = fail(
                Failures.unreachable(
                        workerId,
                        "worker " + workerId + " did not finish the relayed request within " + deadline.toMillis()
                                + " ms",
                        null),
                true,
                false);
        if (!ended) {
            abandonHeldBody(Failures.unreachable(
                    workerId,
                    "the caller did not take the relayed response of worker " + workerId + " within "
                            + deadline.toMillis() + " ms",
                    null));
        }
    }

    /**
     * A relay that ended while its body still holds its slot: drops what the caller has not taken
     * ({@code why} to the reader), which releases the slot through {@link #bodyDone}. Nothing for
     * a relay that holds no slot.
     */
    private void abandonHeldBody(Throwable why) {
        ResponseBody held;
        synchronized (this) {
            held = finished && (permitHeld || upgradeHeld) ? body : null;
        }
        assertNoLock();
        if (held != null) {
            held.abandon(why);
        }
    }

    /**
     * The response body is done (see {@link ResponseBody}), on the thread that made it so: a v2
     * relay that ended before it releases its slot now, with the deadline and the abort listener
     * it kept for the body. Once; before the relay ended it only notes it, for the ending.
     */
    private void bodyDone() {
        ScheduledFuture<?> t;
        boolean releaseSlot;
        boolean releaseUpgrade;
        synchronized (this) {
            bodyDone = true;
            if (!finished || !(permitHeld || upgradeHeld)) {
                return;
            }
            releaseSlot = permitHeld;
            releaseUpgrade = upgradeHeld;
            permitHeld = false;
            upgradeHeld = false;
            t = timer;
            timer = null;
        }
        assertNoLock();
        if (t != null) {
            t.cancel(false);
        }
        call.request().signal().removeOnAbort(onCallerAbort);
        release(releaseSlot, releaseUpgrade);
    }

    /** Hands back what an ending or a done body decided to, under the lock, with no lock held. */
    private void release(boolean slot, boolean upgrade) {
        assertNoLock();
        if (slot) {
            limiter.release();
        }
        RelayLimiter upgrades = upgradeLimiter;
        if (upgrade && upgrades != null) {
            upgrades.release();
        }
    }

    /**
     * Ends the relay with a failure (the first ending wins): before the head the stage fails,
     * after it the body. Sends relay.cancel when asked and the request went out.
     */
    private void fail(Throwable failure, boolean cancel) {
        fail(failure, cancel, false);
    }

    /**
     * As {@link #fail(Throwable, boolean)}; {@code afterQueued}: the body errors once the caller
     * has read the parts already queued (the failure came in order behind them), else at once.
     * Answers whether this was the relay's ending (false: another came first).
     */
    private boolean fail(Throwable failure, boolean cancel, boolean afterQueued) {
        Ending e = finish();
        if (e == null) {
            return false;
        }
        callOut(
                e,
                () -> {
                    CompletableFuture<Void> wait = e.permitWait();
                    if (wait != null) {
                        wait.cancel(false);
                    }
                    RealGatewayWorkerClient c = e.client();
                    V2Relay relay = e.v2Relay();
                    V2Stream s = relay == null ? null : relay.stream;
                    if (cancel && e.requestSent() && s != null) {
                        s.reset(V2ErrorCode.CANCEL, null); // section 9.4: the worker aborts the target
                    } else if (cancel && e.requestSent() && c != null && relay == null) {
                        c.relayCancel(relayId, this); // forgotten below, with the relay's other calls
                    }
                    ResponseBody b = e.body();
                    if (e.beforeHead()) {
                        result.completeExceptionally(failure);
                    } else if (b != null) {
                        if (afterQueued) {
                            b.failAfterQueued(failure);
                        } else {
                            b.fail(failure);
                        }
                    }
                },
                failure);
        return true;
    }

    /**
     * What the first ending read of the state in the step that marked the relay finished (step 1),
     * for the call-outs it makes after it (step 2).
     */
    private record Ending(
            boolean beforeHead,
            @Nullable ResponseBody body,
            @Nullable RealGatewayWorkerClient client,
            boolean requestSent,
            boolean releasePermit,
            boolean releaseUpgrade,
            boolean bodyHoldsPermit,
            @Nullable CompletableFuture<Void> permitWait,
            @Nullable ScheduledFuture<?> timer,
            @Nullable WorkerLink link,
            @Nullable V2Relay v2Relay) {}

    /**
     * Step 1 of an ending: marks the relay finished and takes the slot and the upgrade permit from
     * it, under the lock, unless a v2 relay's body not yet done keeps them (with the deadline;
     * {@link #bodyDone}). Returns null when another ending came first.
     */
    private synchronized @Nullable Ending finish() {
        if (finished) {
            return null;
        }
        finished = true;
        uploading = false;
        boolean bodyHolds = (permitHeld || upgradeHeld) && v2Relay != null && body != null && !bodyDone;
        boolean release = permitHeld && !bodyHolds;
        boolean releaseUpgrade = upgradeHeld && !bodyHolds;
        if (release) {
            permitHeld = false;
        }
        if (releaseUpgrade) {
            upgradeHeld = false;
        }
        return new Ending(
                !headSeen,
                body,
                client,
                requestSent,
                release,
                releaseUpgrade,
                bodyHolds,
                permitWait,
                bodyHolds ? null : timer,
                link,
                v2Relay);
    }

    /**
     * Step 2 of an ending, with no lock held, in this order: cancels the deadline and drops the
     * caller's abort listener (both kept while the body holds the slot); runs {@code settle} (what
     * this ending tells the worker and the caller: a body it ends or fails may be done at once,
     * and release its slot there); lowers the link's running count, hands the slot on and stops
     * reading the caller's body with {@code reason}.
     */
    private void callOut(Ending e, Runnable settle, Throwable reason) {
        assertNoLock();
        ScheduledFuture<?> t = e.timer();
        if (t != null) {
            t.cancel(false);
        }
        if (!e.bodyHoldsPermit()) {
            call.request().signal().removeOnAbort(onCallerAbort);
        }
        settle.run();
        RealGatewayWorkerClient c = e.client();
        if (c != null && e.v2Relay() == null) {
            c.forget(this); // a v1 worker that never answers holds nothing of this relay
        }
        WorkerLink l = e.link();
        if (l != null) {
            l.relayEnded();
        }
        release(e.releasePermit(), e.releaseUpgrade());
        stopReadingCallerBody(reason);
    }

    private void stopReadingCallerBody(Throwable reason) {
        BodySource source;
        boolean cancel;
        synchronized (this) {
            source = requestBody;
            cancel = source != null && !eof;
            eof = true;
            leftover = null;
        }
        assertNoLock();
        if (cancel && source != null) {
            source.cancel(reason);
        }
    }

    /** Fails (with assertions on, as in every test) when the thread holds this exchange's lock. */
    private void assertNoLock() {
        assert !Thread.holdsLock(this) : "a call-out of relay " + relayId + " under the exchange's lock";
    }
}
