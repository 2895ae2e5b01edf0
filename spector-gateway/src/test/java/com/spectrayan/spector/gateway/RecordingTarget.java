package com.spectrayan.spector.gateway;

import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.wire.Header;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * A relay target on a worker that reads each request's whole body as it arrives and records how
 * the body ended: completed (its size and SHA-256), failed, or aborted by the request's signal. A
 * completed body is answered 200 with {@code {"bytes":n,"sha256":"..."}}; otherwise the answer
 * fails. Calls are kept by the relayed URL's path. Thread-safe.
 */
final class RecordingTarget implements RelayTarget {
    /** How a request's body ended, as the target saw it first. */
    enum Outcome {
        /** The body's end arrived: the target took it for a whole body. */
        COMPLETED,
        /** Reading the body failed. */
        FAILED,
        /** The request's signal aborted. */
        ABORTED
    }

    /** One relayed request and what its body did. */
    static final class Call {
        final String method;
        final String path;
        final CompletableFuture<Outcome> outcome = new CompletableFuture<>();
        final AtomicBoolean sawEnd = new AtomicBoolean();
        final AtomicLong bytes = new AtomicLong();
        private final MessageDigest sha256 = sha256();

        Call(String method, String path) {
            this.method = method;
            this.path = path;
        }

        /** Returns how the body ended, waiting at most {@code within}. */
        Outcome outcome(Duration within) {
            try {
                return outcome.get(within.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError(
                        "the body of " + method + " " + path + " neither ended, failed nor aborted within " + within,
                        e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            } catch (ExecutionException e) {
                throw new AssertionError(e);
            }
        }

        synchronized String sha256Hex() {
            try {
                return HexFormat.of().formatHex(((MessageDigest) sha256.clone()).digest());
            } catch (CloneNotSupportedException e) {
                throw new IllegalStateException(e);
            }
        }

        synchronized void add(ByteBuffer part) {
            bytes.addAndGet(part.remaining());
            sha256.update(part);
        }

        @Override
        public String toString() {
            return method + " " + path + ": " + bytes + " bytes, " + (outcome.isDone() ? outcome.join() : "running")
                    + (sawEnd.get() ? ", saw the end" : "");
        }
    }

    private final Map<String, Call> calls = new ConcurrentHashMap<>();

    @Override
    public CompletionStage<RelayedResponse> handle(RelayedRequest request) {
        Call call = new Call(request.method(), request.url().getRawPath());
        calls.put(call.path, call);
        request.signal().onAbort(why -> call.outcome.complete(Outcome.ABORTED));
        CompletableFuture<RelayedResponse> response = new CompletableFuture<>();
        BodySource body = request.body();
        if (body == null) {
            call.sawEnd.set(true);
            call.outcome.complete(Outcome.COMPLETED);
            response.complete(answer(call));
        } else {
            pull(body, call, response);
        }
        return response;
    }

    private static void pull(BodySource body, Call call, CompletableFuture<RelayedResponse> response) {
        body.next().whenComplete((part, error) -> {
            if (error != null) {
                call.outcome.complete(Outcome.FAILED);
                response.completeExceptionally(error);
            } else if (part == null) {
                call.sawEnd.set(true);
                call.outcome.complete(Outcome.COMPLETED);
                response.complete(answer(call));
            } else {
                call.add(part);
                pull(body, call, response);
            }
        });
    }

    private static RelayedResponse answer(Call call) {
        String json = "{\"bytes\":" + call.bytes.get() + ",\"sha256\":\"" + call.sha256Hex() + "\"}";
        return new RelayedResponse(
                200,
                List.of(new Header("Content-Type", "application/json")),
                DialedWorker.body(json.getBytes(StandardCharsets.UTF_8)));
    }

    /** Returns the call for a relayed path, waiting (bounded) until the target received it. */
    Call awaitCall(String path, Duration within) {
        await("the relay target received " + path).atMost(within).until(() -> calls.containsKey(path));
        Call c = calls.get(path);
        if (c == null) {
            throw new IllegalStateException("no call for " + path);
        }
        return c;
    }

    /** Returns the call for a relayed path, or null when the target never received it. */
    @Nullable
    Call call(String path) {
        return calls.get(path);
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Returns the SHA-256 of bytes, lower-case hex. */
    static String sha256Hex(byte[] bytes) {
        return HexFormat.of().formatHex(sha256().digest(bytes));
    }
}
