package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import java.io.IOException;
import java.net.ConnectException;
import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/** Each failure's problem, chosen by the failure's type, never its message. */
final class ForwardProblemsTest {
    private static final ForwarderSpec SPEC = new ForwarderSpec(
            2,
            1000,
            100,
            1000,
            Duration.ofSeconds(3),
            Duration.ofSeconds(9),
            Duration.ofSeconds(60),
            Duration.ofSeconds(300));

    private final ForwardProblems problems = new ForwardProblems(SPEC);

    @Test
    void tooLarge_pastTheCap_is413WithTheLimit() {
        SpectorException e = problems.tooLarge(1001);

        assertThat(e.code()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE);
        assertThat(e.code().httpStatus()).isEqualTo(413);
        assertThat(e.details()).containsEntry("limitBytes", 1000L);
    }

    @Test
    void attemptFailed_headTimeout_is504WithTheOwnerTimeout() {
        SpectorException e = problems.attemptFailed("owner-a", new HeadTimeoutException("owner-a"), false, 1);

        assertThat(e.code()).isEqualTo(ErrorCode.OWNER_TIMEOUT);
        assertThat(e.code().httpStatus()).isEqualTo(504);
        assertThat(e.details()).containsEntry("owner", "owner-a").containsEntry("timeoutMs", 3000L);
        assertThat(e.getMessage()).isEqualTo("owner owner-a sent no response head within 3000 ms");
    }

    @Test
    void attemptFailed_poolExhausted_is503ToRetryInASecond() {
        SpectorException e = problems.attemptFailed(
                "owner-a", new UpstreamHttpTransport.PoolExhaustedException("whatever it says"), false, 2);

        assertThat(e.code()).isEqualTo(ErrorCode.GATEWAY_ROUTING_FAILURE);
        assertThat(e.code().httpStatus()).isEqualTo(503);
        assertThat(e.details())
                .containsEntry("reason", "owner-pool-exhausted")
                .containsEntry("attempts", 2)
                .containsEntry("retryAfterSeconds", 1L);
    }

    @Test
    void attemptFailed_otherTypes_are502WhateverTheirMessageSays() {
        Throwable[] causes = {
            new ConnectException("Connection refused"),
            new ClosedChannelException(),
            new IOException("pool exhausted: timed out"), // the text of another failure, not its type
            new IllegalStateException("101 to a request that asked for none"),
        };
        for (Throwable cause : causes) {
            SpectorException e = problems.attemptFailed("owner-a", cause, false, 1);

            assertThat(e.code()).as("%s", cause).isEqualTo(ErrorCode.OWNER_UNREACHABLE);
            assertThat(e.code().httpStatus()).isEqualTo(502);
            assertThat(e.details()).containsEntry("owner", "owner-a");
            assertThat(e.getMessage())
                    .as("the owner's id, never its address or the socket's error (the fourth review)")
                    .isEqualTo("owner owner-a is unreachable");
        }
    }

    @Test
    void attemptFailed_afterTheHead_saysTheResponseBrokeOff() {
        SpectorException e = problems.attemptFailed("owner-a", new ClosedChannelException(), true, 1);

        assertThat(e.code()).isEqualTo(ErrorCode.OWNER_UNREACHABLE);
        assertThat(e.getMessage()).startsWith("owner owner-a broke off the response");
    }

    @Test
    void sendStalled_is504WithTheOwnerTimeout() {
        SpectorException e = problems.sendStalled("owner-a");

        assertThat(e.code()).isEqualTo(ErrorCode.OWNER_TIMEOUT);
        assertThat(e.details()).containsEntry("timeoutMs", 3000L);
    }

    @Test
    void headDeadline_is504WithTheDeadline() {
        SpectorException e = problems.headDeadline("(unresolved)", 0);

        assertThat(e.code()).isEqualTo(ErrorCode.OWNER_TIMEOUT);
        assertThat(e.details()).containsEntry("owner", "(unresolved)").containsEntry("timeoutMs", 9000L);
    }

    @Test
    void idle_is504WithTheIdleTimeout() {
        SpectorException e = ForwardProblems.idle("owner-a", Duration.ofMillis(1500));

        assertThat(e.code()).isEqualTo(ErrorCode.OWNER_TIMEOUT);
        assertThat(e.details()).containsEntry("timeoutMs", 1500L);
    }

    @Test
    void exhausted_ownerLearned_retriesAtOnce() {
        SpectorException e = ForwardProblems.exhausted(RetargetPolicy.BODY_NOT_REPLAYABLE, 1, true);

        assertThat(e.code().httpStatus()).isEqualTo(503);
        assertThat(e.details())
                .containsEntry("reason", "body-too-large-to-replay")
                .containsEntry("attempts", 1)
                .containsEntry("retryAfterSeconds", 0L);
    }

    @Test
    void exhausted_ownerNotLearned_retriesInASecond() {
        SpectorException e = ForwardProblems.exhausted(RetargetPolicy.NO_OWNER_HINT, 1, false);

        assertThat(e.details()).containsEntry("retryAfterSeconds", 1L);
    }

    @Test
    void unknownOwner_is503() {
        SpectorException e = ForwardProblems.unknownOwner("stranger", 0);

        assertThat(e.code()).isEqualTo(ErrorCode.GATEWAY_ROUTING_FAILURE);
        assertThat(e.details()).containsEntry("reason", "unknown-owner").containsEntry("retryAfterSeconds", 1L);
    }

    @Test
    void routingFailed_wrappedSpectorException_isItsOwnProblem() {
        SpectorException own = SpectorException.of(ErrorCode.OWNER_UNREACHABLE, "redis down");

        assertThat(ForwardProblems.routingFailed(new CompletionException(own))).isSameAs(own);
    }

    @Test
    void routingFailed_anythingElse_is503() {
        SpectorException e = ForwardProblems.routingFailed(new CompletionException(new IOException("x")));

        assertThat(e.code()).isEqualTo(ErrorCode.GATEWAY_ROUTING_FAILURE);
    }

    @Test
    void bodyFailed_spectorException_isItsOwnProblem() {
        SpectorException own = SpectorException.of(ErrorCode.REQUEST_TIMEOUT, "slow body");

        assertThat(ForwardProblems.bodyFailed(own)).isSameAs(own);
    }

    @Test
    void bodyFailed_anythingElse_is400() {
        assertThat(ForwardProblems.bodyFailed(new IOException("reset")).code()).isEqualTo(ErrorCode.BAD_REQUEST);
    }

    @Test
    void internal_is500() {
        assertThat(ForwardProblems.internal("illegal transition").code().httpStatus())
                .isEqualTo(500);
    }
}
