package com.spectrayan.spector.uplink.worker;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.DeclaredLength;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.internal.wire.RelayOutcome;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.wire.Frame;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One relay the worker serves, from its {@code relay.request} until it settles: the target's
 * call, the request body fed by {@code relay.body} calls ({@link FedBody}), the response pulled
 * part by part from the target and sent as {@code relay-head} and {@code relay-chunk} pushes under
 * the call's id, and the one answer that ends it.
 *
 * <p>The head's {@code length} is the target's {@link RelayedResponse#contentLength()} as {@link
 * ResponseFraming#contentLength} allows it for the status; a response without a body ({@link
 * ResponseFraming#bodyless}: HEAD, 1xx, 204, 205, 304) gets no chunk, and the body its target
 * offered is cancelled. The next part is read only once the previous push was written, in pushes
 * of at most {@link Limits#CHUNK_BYTES}.
 *
 * <p>The request's {@code length}, when declared, is a promise the gateway is held to, as the
 * gateway holds the worker to the response's: a chunk that runs past it, or an {@code end} short
 * of it, is refused BAD_REQUEST ({@code length}) and aborts the relay, so the target's body fails
 * and never ends as if complete. The chunk that completes the length reaches the target only with
 * the {@code end}: a body that then runs past is refused before the target holds all of it.
 *
 * <p>Its slot outlives it: settling (the answer, a failure, {@code relay.cancel}, the connection's
 * close) frees the relay id and aborts the target at once, but the slot goes back ({@link
 * UplinkSession#released}) only when the target's work is over too: the stage its call returned
 * completed, no read of its response body is outstanding, and each cancel of that body returned.
 * A gateway that cancels relays in a loop so never has more than 16 running here (HTTP/2's rapid
 * reset, CVE-2023-44487, in v1's terms); a target that ignores the abort keeps its slot.
 *
 * <p>Threading: every field is touched on the session's serial executor only ({@link
 * UplinkSession#serial()}); target code (the call, its body reads and cancels, the abort signal's
 * listeners, the completion of the request body's reads) runs on {@link WorkerOptions#executor()}.
 * No lock is held anywhere.
 */
final class ServedRelay {
    private static final Logger log = LoggerFactory.getLogger(ServedRelay.class);

    /** Bytes of one {@code relay-chunk} push: the protocol's chunk bound. */
    private static final int CHUNK_BYTES = (int) Limits.CHUNK_BYTES.max();

    private final UplinkSession session;
    private final Executor serial;
    private final Executor executor;
    private final long callId;
    private final String relayId;
    private final String target;
    private final String method;
    private final AbortSignal signal = new AbortSignal();
    private final @Nullable FedBody body;

    /** The target's response body while this relay may still have to cancel it. */
    private @Nullable BodySource responseBody;

    private boolean settled;

    /** Whether the target's call ran and the stage it returned has not completed yet. */
    private boolean calling;

    /** Whether a read of the target's response body is outstanding. */
    private boolean reading;

    /** Cancels of the target's response body handed to the executor that have not returned yet. */
    private int cancelling;

    /** Whether the slot went back to the session ({@link #releaseIfOver}): once. */
    private boolean released;

    /**
     * Creates the relay of a {@code relay.request} call the session checked (its id unused, a slot
     * free, the target known).
     */
    ServedRelay(UplinkSession session, long callId, RelayRequest request) {
        this.session = session;
        this.serial = session.serial();
        this.executor = session.executor();
        this.callId = callId;
        this.relayId = request.relayId();
        this.target = request.target();
        this.method = request.method();
        this.body = request.hasBody() ? new FedBody(new DeclaredLength(request.length())) : null;
    }

    /** Returns the relay id the gateway gave it. */
    String relayId() {
        return relayId;
    }

    /** Calls the target with the relayed request; its response is sent when it arrives. */
    void start(RelayTarget relayTarget, RelayRequest input, URI url) {
        RelayedRequest request = new RelayedRequest(
                input.method(),
                url,
                input.headers(),
                input.tenant(),
                input.leaseId(),
                body,
                signal,
                null,
                null,
                input.length());
        calling = true;
        try {
            CompletableFuture.supplyAsync(() -> relayTarget.handle(request), executor)
                    .thenCompose(Function.identity())
                    .whenCompleteAsync(this::answered, serial);
        } catch (RejectedExecutionException e) {
            // The worker stops (the targets' executor is shut down): the target is never called,
            // and the relay is answered and its slot freed here, on the serial executor, as its
            // answer would be (it kept the slot for the connection's life, found by a review).
            answered(null, e);
        }
    }

    /** Takes the target's answer: the stage its call returned completed (the slot may go back). */
    private void answered(@Nullable RelayedResponse response, @Nullable Throwable failure) {
        calling = false;
        responded(response, failure);
        releaseIfOver();
    }

    // ---- the response ----

    private void responded(@Nullable RelayedResponse response, @Nullable Throwable failure) {
        if (settled) {
            if (response != null && response.body() != null) {
                cancelAsync(response.body(), new CancellationException("relay " + relayId + " already ended"));
            }
            return;
        }
        if (failure != null || response == null) {
            Throwable cause = failure == null
                    ? new IllegalStateException("the target answered no response")
                    : UplinkSession.unwrap(failure);
            log.warn(
                    "relay {}: target '{}' failed before its response: {}",
                    relayId,
                    target,
                    UplinkSession.message(cause));
            settle(internal("relay target '" + target + "' failed: " + UplinkSession.message(cause)), cause);
            return;
        }
        BodySource responseBody = response.body();
        this.responseBody = responseBody;
        RelayHead head;
        try {
            head = new RelayHead(
                    response.status(),
                    response.headers(),
                    ResponseFraming.contentLength(response.status(), response.contentLength()));
        } catch (SpectorException e) {
            log.warn(
                    "relay {}: target '{}' answered a response outside the relay's bounds: {}",
                    relayId,
                    target,
                    e.getMessage());
            settle(
                    internal("relay target '" + target + "' answered a response outside the bounds: " + e.getMessage()),
                    e);
            return;
        }
        session.send(new Frame.Push(callId, RelayHead.PUSH, head.toJson()));
        if (responseBody == null || ResponseFraming.bodyless(method.equals("HEAD"), head.status())) {
            if (responseBody != null) {
                this.responseBody = null;
                cancelAsync(
                        responseBody,
                        new CancellationException(
                                "a " + head.status() + " response to " + method + " carries no body"));
            }
            settle(new Frame.Result(callId, RelayOutcome.COMPLETED.toJson()), null);
            return;
        }
        pull(responseBody);
    }

    private void pull(BodySource source) {
        reading = true;
        CompletableFuture.supplyAsync(source::next, executor)
                .thenCompose(Function.identity())
                .whenCompleteAsync((part, failure) -> pulled(source, part, failure), serial);
    }

    private void pulled(BodySource source, @Nullable ByteBuffer part, @Nullable Throwable failure) {
        reading = false;
        if (settled) {
            releaseIfOver(); // the read a cancel left outstanding came back: the target's body stopped
            return;
        }
        if (failure != null) {
            Throwable cause = UplinkSession.unwrap(failure);
            log.warn(
                    "relay {}: target '{}'s response body failed after the head: {}",
                    relayId,
                    target,
                    UplinkSession.message(cause));
            responseBody = null;
            settle(
                    internal("relay target '" + target + "' response body failed: " + UplinkSession.message(cause)),
                    cause);
            return;
        }
        if (part == null) {
            responseBody = null;
            settle(new Frame.Result(callId, RelayOutcome.COMPLETED.toJson()), null);
            return;
        }
        sendChunks(source, part.slice());
    }

    /** Sends the part as pushes of at most 256 KiB, each once the previous one was written. */
    private void sendChunks(BodySource source, ByteBuffer part) {
        if (!part.hasRemaining()) {
            pull(source);
            return;
        }
        int size = Math.min(part.remaining(), CHUNK_BYTES);
        ByteBuffer chunk = part.slice().limit(size);
        part.position(part.position() + size);
        session.send(new Frame.Push(callId, RelayChunk.PUSH, new RelayChunk(chunk).toJson()))
                .whenCompleteAsync(
                        (v, failure) -> {
                            if (settled) {
                                return;
                            }
                            if (failure != null) {
                                settle(null, UplinkSession.unwrap(failure));
                            } else {
                                sendChunks(source, part);
                            }
                        },
                        serial);
    }

    // ---- relay.body, relay.cancel, the connection's close ----

    /**
     * Takes a {@code relay.body} call for this relay: the part goes to the target's body (the call
     * is answered once the target took it); a part out of order, after the end, past or short of
     * the declared length, or for a relay without a body is refused BAD_REQUEST and aborts the relay.
     */
    void bodyCalled(long bodyCallId, RelayBody input) {
        FedBody fed = body;
        SpectorException refusal = null;
        if (fed == null) {
            refusal = SpectorException.badRequest(
                    "relayId", "relay '" + relayId + "' has no request body (it was opened with hasBody: false)");
        } else if (fed.endSeen) {
            refusal = input instanceof RelayBody.End
                    ? SpectorException.badRequest("end", "the request body already ended (expected: one end)")
                    : SpectorException.badRequest("seq", "a chunk after the request body's end (expected: none)");
        } else if (input instanceof RelayBody.Chunk chunk && chunk.seq() != fed.nextSeq) {
            refusal = SpectorException.badRequest(
                    "seq",
                    chunk.seq() + (chunk.seq() < fed.nextSeq ? " repeated" : " out of order") + " (expected: "
                            + fed.nextSeq + ")");
        } else if (fed.unanswered() >= Limits.UNANSWERED_BODIES) {
            // PROTOCOL.md section 3: at most this many relay.body calls wait for their answers. A
            // gateway that sends more without waiting (the third review's: 800 calls of 256 KiB
            // to a target that did not read) would fill the heap with parts nobody takes.
            refusal = SpectorException.badRequest(
                    "relay.body",
                    "more than " + Limits.UNANSWERED_BODIES + " calls unanswered (expected: at most "
                            + Limits.UNANSWERED_BODIES + ", each answered once the target took it)");
        } else if (input instanceof RelayBody.Chunk chunk
                && !fed.length.admit(chunk.chunk().remaining())) {
            refusal = UplinkSession.requestLengthOverrun(fed.length);
        } else if (input instanceof RelayBody.End && fed.length.endsShort()) {
            refusal = UplinkSession.requestLengthUnderrun(fed.length);
        }
        if (refusal != null || fed == null) {
            SpectorException failure = requireNonNull(refusal);
            session.send(Frame.ErrorFrame.of(bodyCallId, failure));
            settle(
                    Frame.ErrorFrame.of(
                            callId,
                            SpectorException.of(
                                    ErrorCode.BAD_REQUEST,
                                    "relay '" + relayId + "' aborted: " + failure.getMessage(),
                                    failure.details())),
                    failure);
            return;
        }
        if (input instanceof RelayBody.Chunk chunk) {
            fed.nextSeq++;
            if (fed.length.isComplete() && fed.failure == null) {
                fed.held = new Part(bodyCallId, chunk.chunk()); // the target takes it with the end
            } else {
                fed.offer(bodyCallId, chunk.chunk());
            }
        } else {
            fed.endSeen = true;
            Part last = fed.held;
            fed.held = null;
            if (last != null) {
                fed.offer(last.callId(), last.data());
            }
            fed.offer(bodyCallId, null);
        }
    }

    /** Ends the relay on the gateway's {@code relay.cancel}: answered {@code {cancelled: true}}. */
    void cancelled() {
        settle(
                new Frame.Result(callId, RelayOutcome.CANCELLED.toJson()),
                new CancellationException("relay '" + relayId + "' cancelled by the gateway"));
    }

    /** Ends the relay because its connection closed: nothing is answered. */
    void connectionLost(SpectorException lost) {
        settle(null, lost);
    }

    // ---- settling ----

    /**
     * Ends the relay once: frees its id, answers every relay.body still unanswered, aborts the
     * request's signal and stops the response body when {@code abort} is given, and sends the
     * answer (none after the connection closed); frees its slot when the target's work is over
     * too ({@link #releaseIfOver}).
     */
    private void settle(@Nullable Frame answer, @Nullable Throwable abort) {
        if (settled) {
            return;
        }
        settled = true;
        session.ended(this);
        Throwable reason = abort != null ? abort : new CancellationException("relay '" + relayId + "' ended");
        if (body != null) {
            body.close(reason);
        }
        if (abort != null) {
            signal.abortVia(executor, abort); // its reason at once, its listeners on the executor
            BodySource b = responseBody;
            responseBody = null;
            if (b != null) {
                cancelAsync(b, abort);
            }
        }
        if (answer != null && !session.isClosed()) {
            session.send(answer);
        }
        releaseIfOver();
    }

    /**
     * Gives the slot back once the relay settled and the target's work is over (the class's
     * notes): its call's stage completed, no read of its response body outstanding, every cancel
     * of that body returned. Called at each of those ends; frees the slot once.
     */
    private void releaseIfOver() {
        if (settled && !released && !calling && !reading && cancelling == 0) {
            released = true;
            session.released(this);
        }
    }

    /** Cancels the target's response body on the executor; the slot waits until the cancel returned. */
    private void cancelAsync(BodySource source, Throwable reason) {
        cancelling++;
        boolean ran = UplinkSession.cancelOnExecutor(
                executor,
                source,
                reason,
                "relay " + relayId,
                () -> serial.execute(() -> {
                    cancelling--;
                    releaseIfOver();
                }));
        if (!ran) {
            cancelling--; // the executor is gone, and the target's code with it: no wait for it
        }
    }

    private Frame.ErrorFrame internal(String message) {
        return Frame.ErrorFrame.of(callId, SpectorException.of(ErrorCode.INTERNAL, message));
    }

    /** A relayed request's body, fed by relay.body calls and pulled by the target. */
    private final class FedBody implements BodySource {
        private final ArrayDeque<Part> queued = new ArrayDeque<>();
        /** The body's bytes, held to the request's declared length. */
        final DeclaredLength length;
        /** The chunk that completed the declared length, kept from the target until the end comes. */
        @Nullable
        Part held;

        int nextSeq;
        boolean endSeen;
        private boolean endDelivered;
        private @Nullable Throwable failure;
        private @Nullable CompletableFuture<@Nullable ByteBuffer> reader;

        FedBody(DeclaredLength length) {
            this.length = length;
        }

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            CompletableFuture<@Nullable ByteBuffer> read = new CompletableFuture<>();
            serial.execute(() -> read(read));
            return read;
        }

        @Override
        public void cancel(Throwable reason) {
            serial.execute(() -> close(reason));
        }

        private void read(CompletableFuture<@Nullable ByteBuffer> read) {
            Part part;
            if (endDelivered) {
                deliver(read, null, null);
            } else if (failure != null) {
                deliver(read, null, failure);
            } else if (reader != null) {
                deliver(read, null, new IllegalStateException("one next() at a time"));
            } else if ((part = queued.poll()) != null) {
                hand(read, part);
            } else {
                reader = read;
            }
        }

        /** Returns the relay.body calls taken and not yet answered: queued, or held for the end. */
        int unanswered() {
            return queued.size() + (held != null ? 1 : 0);
        }

        /** A relay.body call's part (null for the end), already checked for order. */
        void offer(long bodyCallId, @Nullable ByteBuffer data) {
            Part part = new Part(bodyCallId, data);
            CompletableFuture<@Nullable ByteBuffer> waiting = reader;
            if (failure != null) {
                session.reply(bodyCallId, UplinkSession.empty()); // the target stopped reading
            } else if (waiting != null) {
                reader = null;
                hand(waiting, part);
            } else {
                queued.add(part);
            }
        }

        private void hand(CompletableFuture<@Nullable ByteBuffer> read, Part part) {
            if (part.data == null) {
                endDelivered = true;
            }
            session.reply(part.callId, UplinkSession.empty()); // the target took it: the gateway's window moves on
            deliver(read, part.data, null);
        }

        /** The relay settled or the target stopped reading: answers what is unanswered. */
        void close(Throwable reason) {
            if (failure == null) {
                failure = reason;
            }
            Part last = held;
            held = null;
            if (last != null) {
                session.reply(last.callId, UplinkSession.empty());
            }
            Part part;
            while ((part = queued.poll()) != null) {
                session.reply(part.callId, UplinkSession.empty());
            }
            CompletableFuture<@Nullable ByteBuffer> waiting = reader;
            reader = null;
            if (waiting != null) {
                deliver(waiting, null, endDelivered ? null : reason);
            }
        }

        private void deliver(
                CompletableFuture<@Nullable ByteBuffer> read, @Nullable ByteBuffer data, @Nullable Throwable error) {
            executor.execute(() -> {
                if (error != null) {
                    read.completeExceptionally(error);
                } else {
                    read.complete(data);
                }
            });
        }
    }

    private record Part(long callId, @Nullable ByteBuffer data) {}
}
