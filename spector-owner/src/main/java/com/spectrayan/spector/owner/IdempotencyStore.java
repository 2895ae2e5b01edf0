package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Responses stored per {@code (tenant, idempotency key)} with the fingerprint of the request that
 * produced them (DESIGN.md section 4): the same key and fingerprint replays the stored response, a
 * different fingerprint is a conflict (422), and a repeat while the first still runs is 409.
 *
 * <p>Bounded: {@link OwnerLimits#IDEMPOTENCY_MAX_ENTRIES} entries for {@link
 * OwnerLimits#IDEMPOTENCY_TTL}. Thread-safe: each key's state changes atomically.
 */
final class IdempotencyStore {
    /** A response kept for replay; immutable. */
    static final class StoredResponse {
        private final int status;
        private final String contentType;
        private final byte[] body;

        StoredResponse(int status, String contentType, byte[] body) {
            this.status = status;
            this.contentType = requireNonNull(contentType, "contentType");
            this.body = body.clone();
        }

        /** Returns its status. */
        int status() {
            return status;
        }

        /** Returns its content type. */
        String contentType() {
            return contentType;
        }

        /** Returns a copy of its body. */
        byte[] body() {
            return body.clone();
        }
    }

    /** What to do with a request that carries a key. */
    enum Verdict {
        /** First seen (or its earlier run was abandoned): run it, then {@link #complete}. */
        EXECUTE,
        /** Seen and answered with the same fingerprint: replay {@link Claim#stored()}. */
        REPLAY,
        /** Seen with a different fingerprint: 422. */
        MISMATCH,
        /** Seen with the same fingerprint and still running: 409. */
        IN_FLIGHT
    }

    /**
     * The verdict on a claim, and the stored response to replay.
     *
     * @param verdict what to do
     * @param stored the response to replay, for {@link Verdict#REPLAY} only
     */
    record Claim(Verdict verdict, @Nullable StoredResponse stored) {}

    private record Key(String tenant, String key) {}

    private record Entry(String fingerprint, @Nullable StoredResponse response, String namespace) {}

    /**
     * An answered key of one namespace, as a move copies it to the new owner.
     *
     * @param key the idempotency key
     * @param fingerprint the fingerprint of the request that produced the response
     * @param response the stored response
     */
    record Answered(String key, String fingerprint, StoredResponse response) {}

    private final Cache<Key, Entry> entries = Caffeine.newBuilder()
            .maximumSize(OwnerLimits.IDEMPOTENCY_MAX_ENTRIES)
            .expireAfterWrite(OwnerLimits.IDEMPOTENCY_TTL)
            .executor(Runnable::run)
            .build();

    /**
     * Claims a key for a request with a fingerprint; on {@link Verdict#EXECUTE} the key is held as
     * in flight until {@link #complete} or {@link #abandon}.
     *
     * @param tenant the routing key's tenant, {@code ""} when untenanted
     */
    Claim claim(String tenant, String namespace, String key, String fingerprint) {
        Verdict[] verdict = {Verdict.EXECUTE};
        Entry held = entries.asMap().compute(new Key(tenant, key), (k, old) -> {
            if (old == null) {
                return new Entry(fingerprint, null, namespace);
            }
            if (!old.fingerprint().equals(fingerprint)) {
                verdict[0] = Verdict.MISMATCH;
            } else if (old.response() == null) {
                verdict[0] = Verdict.IN_FLIGHT;
            } else {
                verdict[0] = Verdict.REPLAY;
            }
            return old;
        });
        return new Claim(
                verdict[0], verdict[0] == Verdict.REPLAY ? requireNonNull(held).response() : null);
    }

    /** Stores the response of a claimed key's run. */
    void complete(String tenant, String namespace, String key, String fingerprint, StoredResponse response) {
        entries.put(new Key(tenant, key), new Entry(fingerprint, response, namespace));
    }

    /** Returns the answered keys of a tenant's namespace, a snapshot (keys still running are not in it). */
    List<Answered> answered(String tenant, String namespace) {
        List<Answered> out = new ArrayList<>();
        entries.asMap().forEach((k, e) -> {
            StoredResponse r = e.response();
            if (r != null && k.tenant().equals(tenant) && e.namespace().equals(namespace)) {
                out.add(new Answered(k.key(), e.fingerprint(), r));
            }
        });
        return out;
    }

    /** Releases a claimed key whose run did not happen, so a retry runs it. */
    void abandon(String tenant, String key, String fingerprint) {
        entries.asMap()
                .computeIfPresent(
                        new Key(tenant, key),
                        (k, old) -> old.fingerprint().equals(fingerprint) && old.response() == null ? null : old);
    }

    /** Returns how many keys are held, answered or in flight. */
    long size() {
        return entries.estimatedSize();
    }
}
