package com.spectrayan.spector.gateway.config;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.gateway.ForwarderSpec;
import com.spectrayan.spector.cluster.gateway.TransportSpec;
import java.time.Duration;

/**
 * Maps the settings onto the Spring-free specs of the forwarder and its owner transport; what no
 * key sets keeps the spec's own default. The one place where a setting turns into a forwarder
 * limit, so that the rules derived from several keys are written (and tested) once.
 */
public final class Specs {
    private Specs() {}

    /**
     * Returns the forwarder's limits from {@code spector.routing.gateway.*}.
     *
     * <ul>
     *   <li>the head deadline across attempts is {@code owner-timeout x (retry-max + 1)}: every
     *       attempt may use its whole owner timeout;
     *   <li>the gateway-wide replay budget is {@link ForwarderSpec#DEFAULT_REPLAY_BUDGET_BYTES},
     *       or one replay buffer when that is larger, so a single request can always keep its copy;
     *   <li>the request buffer is {@code request-buffer-bytes}, or {@code replay-buffer-bytes} when
     *       that is smaller: a buffered body is read into its replay copy;
     *   <li>the response idle timeout is {@link ForwarderSpec#DEFAULT_RESPONSE_IDLE_TIMEOUT} (no key).
     * </ul>
     */
    public static ForwarderSpec forwarder(GatewaySettings settings) {
        RoutingSettings.Gateway g =
                requireNonNull(settings, "settings").routing().gateway();
        return new ForwarderSpec(
                g.retryMax(),
                g.maxBufferedBodyBytes(),
                g.replayBufferBytes(),
                replayBudget(g.replayBufferBytes()),
                g.ownerTimeout(),
                headDeadline(g.ownerTimeout(), g.retryMax()),
                ForwarderSpec.DEFAULT_RESPONSE_IDLE_TIMEOUT,
                g.streamIdleTimeout(),
                g.ownerDownAfter(),
                g.ownerDownBackoff(),
                g.ownerDownBackoffMax(),
                g.handoffHold(),
                g.handoffMaxHeld(),
                g.handoffMaxHeldBytes(),
                Math.min(g.requestBufferBytes(), g.replayBufferBytes()));
    }

    /**
     * Returns the owner connection pools' limits: {@code owner-connections} and {@code
     * owner-streams} per owner per event loop, the rest the design's defaults.
     */
    public static TransportSpec transport(GatewaySettings settings) {
        TransportSpec d = TransportSpec.defaults();
        RoutingSettings.Gateway g =
                requireNonNull(settings, "settings").routing().gateway();
        return new TransportSpec(
                d.connectTimeout(),
                g.ownerConnections(),
                d.maxPendingAcquires(),
                d.acquireTimeout(),
                d.maxIdleTime(),
                d.maxResponseHeaderBytes(),
                d.maxInitialLineBytes(),
                g.ownerStreams());
    }

    /** The wait for a response head across the first attempt and every retarget. */
    static Duration headDeadline(Duration ownerTimeout, int retryMax) {
        return ownerTimeout.multipliedBy(retryMax + 1L);
    }

    /** The replay bytes the whole gateway holds at once: never less than one request's buffer. */
    static long replayBudget(long replayBufferBytes) {
        return Math.max(ForwarderSpec.DEFAULT_REPLAY_BUDGET_BYTES, replayBufferBytes);
    }
}
