package com.spectrayan.spector.contract;

/**
 * One body's bytes counted against the length its head declared, for a side that passes a body
 * on and must never pass more than that length, nor end it short as if it were complete (RFC 9110
 * §8.6: a Content-Length is exactly the number of bytes that follow; RFC 9112 §6.3). The relay
 * holds each body to its declared length this way: the gateway a worker's response, the worker
 * the gateway's request, each side the producer it declared a length for, and {@code http-forward}
 * the request body it framed with {@code Content-Length}.
 *
 * <p>A side asks in the order the bytes come: {@link #admit} for each part, then {@link
 * #endsShort} at the end. An unknown length ({@link ResponseFraming#UNKNOWN_LENGTH}) admits any
 * bytes and never ends short.
 *
 * <p>Not thread-safe: its owner guards it (a lock, or confinement to an event loop).
 */
public final class DeclaredLength {
    private final long declared;
    private long counted;

    /**
     * Holds a body to {@code declared} bytes.
     *
     * @param declared the declared length, 0..{@link Limits#RELAY_LENGTH_BYTES}, or {@link
     *     ResponseFraming#UNKNOWN_LENGTH}
     * @throws IllegalArgumentException for any other value
     */
    public DeclaredLength(long declared) {
        if (declared != ResponseFraming.UNKNOWN_LENGTH && !Limits.RELAY_LENGTH_BYTES.allows(declared)) {
            throw new IllegalArgumentException(
                    "declared: " + declared + " (expected: -1 or 0.." + Limits.RELAY_LENGTH_BYTES.max() + ")");
        }
        this.declared = declared;
    }

    /** Returns a body whose length is unknown: every part is admitted. */
    public static DeclaredLength unknown() {
        return new DeclaredLength(ResponseFraming.UNKNOWN_LENGTH);
    }

    /** Returns the declared length, or {@link ResponseFraming#UNKNOWN_LENGTH}. */
    public long declared() {
        return declared;
    }

    /** Returns the bytes counted so far, those of a part that ran past the length included. */
    public long counted() {
        return counted;
    }

    /** Answers whether a length was declared. */
    public boolean isKnown() {
        return declared != ResponseFraming.UNKNOWN_LENGTH;
    }

    /**
     * Counts a part of {@code bytes} and answers whether the body is still within its length; false
     * means this part ran past it, and none of it may be passed on.
     *
     * @throws IllegalArgumentException for a negative {@code bytes}
     */
    public boolean admit(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
        }
        counted += bytes;
        return !isKnown() || counted <= declared;
    }

    /**
     * Answers whether every declared byte has been counted: the next part, unless it is the end,
     * runs past. A side that must not let its reader take a complete body the sender then breaks
     * holds the part that made it so until the end is seen.
     */
    public boolean isComplete() {
        return isKnown() && counted == declared;
    }

    /** Answers whether a body that ends now ends short of its declared length. */
    public boolean endsShort() {
        return isKnown() && counted < declared;
    }

    @Override
    public String toString() {
        return counted + " of " + (isKnown() ? declared : "unknown") + " bytes";
    }
}
