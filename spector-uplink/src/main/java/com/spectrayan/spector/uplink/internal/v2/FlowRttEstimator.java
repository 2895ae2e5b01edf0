package com.spectrayan.spector.uplink.internal.v2;

import static java.util.Objects.requireNonNull;

import io.netty.util.concurrent.Ticker;
import java.util.OptionalLong;

/**
 * Measures the link's round trip with PING for the windows' growth (docs/PROTOCOL.md section 9.5):
 * at most one probe in flight, at most one every {@link V2Limits#RTT_PROBE_INTERVAL_NANOS}, and
 * only while DATA flows (a DATA frame arrived since the last probe was sent).
 *
 * <pre>
 *   dataReceived() ... pingDue() -&gt; payload      probe sent: the clock starts
 *   onPingAck(payload)           -&gt; true         the round trip is now - sent
 *   pingDue() before the interval since the last send, or with no DATA since: empty
 * </pre>
 *
 * <p>Each payload is {@link #PING_TAG} plus a sequence number, so the acks of this estimator's
 * pings are told from those of other PINGs on the link (a keepalive's): an ack that does not
 * answer the probe in flight is ignored. The clock starts when {@link #pingDue} hands the payload
 * out: the caller queues the PING as a control frame at once, and control frames go before any
 * DATA, so the round trip measured is the socket's.
 *
 * <p>Time is the injected {@link Ticker} (the channel's event loop's in production, a fake in
 * tests); no wall clock. Concurrency: none, confined to the link channel's event loop.
 */
final class FlowRttEstimator {
    /** The high 32 bits of every probe's payload ("SPRT"); the low 32 are the probe's number. */
    static final long PING_TAG = 0x5350_5254_0000_0000L;

    private final Ticker ticker;

    /** Whether a DATA frame arrived since the last probe was sent. */
    private boolean dataSinceProbe;

    /** Whether a probe is in flight (sent, not answered). */
    private boolean probing;

    /** Whether any probe was sent yet (the interval counts from the last one). */
    private boolean probedBefore;

    /** The payload of the probe in flight, or of the last one. */
    private long probePayload;

    /** When the probe in flight, or the last one, was sent (the ticker's nanos). */
    private long probeSentAt;

    /** Probes sent so far (the low 32 bits of the next payload). */
    private int sequence;

    /** The last round trip measured, in nanos; -1 before the first. */
    private long rttNanos = -1;

    FlowRttEstimator(Ticker ticker) {
        this.ticker = requireNonNull(ticker, "ticker");
    }

    /** Notes that a DATA frame arrived: a probe may be due. */
    void dataReceived() {
        dataSinceProbe = true;
    }

    /**
     * Returns the payload of a PING to send now, or empty: a probe is due when DATA arrived since
     * the last one was sent, none is in flight, and at least the probe interval passed since the
     * last was sent. The probe counts as sent from this call.
     */
    OptionalLong pingDue() {
        if (probing || !dataSinceProbe) {
            return OptionalLong.empty();
        }
        long now = ticker.nanoTime();
        if (probedBefore && now - probeSentAt < V2Limits.RTT_PROBE_INTERVAL_NANOS) {
            return OptionalLong.empty();
        }
        probing = true;
        probedBefore = true;
        dataSinceProbe = false;
        probeSentAt = now;
        probePayload = PING_TAG | (++sequence & 0xFFFF_FFFFL);
        return OptionalLong.of(probePayload);
    }

    /**
     * Takes a PING with ACK: returns true when it answers the probe in flight (the round trip is
     * measured and the probe ends), false for any other payload (ignored).
     */
    boolean onPingAck(long payload) {
        if (!probing || payload != probePayload) {
            return false;
        }
        probing = false;
        rttNanos = ticker.nanoTime() - probeSentAt;
        return true;
    }

    /** Returns true while a probe is in flight. */
    boolean probing() {
        return probing;
    }

    /** Returns the last round trip measured, in nanos, or -1 before the first. */
    long rttNanos() {
        return rttNanos;
    }
}
