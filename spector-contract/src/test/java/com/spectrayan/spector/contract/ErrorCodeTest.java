package com.spectrayan.spector.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

final class ErrorCodeTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "BAD_REQUEST, VALIDATION, 400, 2",
        "UNAUTHENTICATED, AUTH, 401, 3",
        "FORBIDDEN, AUTH, 403, 3",
        "NOT_FOUND, DOMAIN, 404, 1",
        "REQUEST_TIMEOUT, VALIDATION, 408, 2",
        "PAYLOAD_TOO_LARGE, VALIDATION, 413, 2",
        "GATEWAY_ROUTING_FAILURE, DOMAIN, 503, 1",
        "OWNER_UNREACHABLE, TRANSPORT, 502, 1",
        "OWNER_TIMEOUT, TRANSPORT, 504, 1",
        "WORKER_UNREACHABLE, TRANSPORT, 503, 1",
        "RELAY_TARGET_MISSING, DOMAIN, 503, 1",
        "DAEMON_STOPPING, TRANSPORT, 503, 1",
        "DAEMON_CONNECTION_LOST, TRANSPORT, 503, 1",
        "NOT_IMPLEMENTED, DOMAIN, 501, 1",
        "UPLINK_LIMIT, DOMAIN, 409, 1",
        "OWNER_DOWN, TRANSPORT, 503, 1",
        "INTERNAL, INTERNAL, 500, 1",
    })
    void registry_row_matchesTheDesignTable(String name, ErrorKind kind, int http, int exit) {
        ErrorCode code = ErrorCode.valueOf(name);

        assertThat(code.kind()).as("kind of %s", name).isEqualTo(kind);
        assertThat(code.httpStatus()).as("HTTP status of %s", name).isEqualTo(http);
        assertThat(code.cliExit()).as("CLI exit of %s", name).isEqualTo(exit);
        assertThat(ErrorCode.fromWire(name)).isSameAs(code);
    }

    @Test
    void registry_hasExactlyTheDesignCodes() {
        assertThat(ErrorCode.values()).hasSize(17);
        assertThat(ErrorCode.fromWire("NOPE")).isNull();
    }

    @Test
    void relayTargetMissing_detailsNameTheTarget() {
        assertThat(ErrorCode.RELAY_TARGET_MISSING.details()).containsOnlyKeys("target");
    }

    @Test
    void isConnectionLost_transportKind_isTrue() {
        assertThat(ErrorCode.isConnectionLost(SpectorException.of(ErrorCode.DAEMON_STOPPING, "stopping")))
                .as("DAEMON_STOPPING reads as a lost uplink")
                .isTrue();
        assertThat(ErrorCode.isConnectionLost(SpectorException.of(ErrorCode.WORKER_UNREACHABLE, "gone")))
                .isTrue();
    }

    @Test
    void isConnectionLost_otherKindsAndPlainErrors_isFalse() {
        assertThat(ErrorCode.isConnectionLost(SpectorException.of(ErrorCode.INTERNAL, "bug")))
                .isFalse();
        assertThat(ErrorCode.isConnectionLost(SpectorException.of(ErrorCode.RELAY_TARGET_MISSING, "x")))
                .isFalse();
        assertThat(ErrorCode.isConnectionLost(new IOException("connection reset")))
                .as("classified by type, never by message text")
                .isFalse();
        assertThat(ErrorCode.isConnectionLost(null)).isFalse();
    }

    @Test
    void isConnectionLost_wrappedTransportFailure_isFoundInTheCauseChain() {
        Exception wrapped = new IllegalStateException(
                "outer", new RuntimeException(SpectorException.of(ErrorCode.DAEMON_CONNECTION_LOST, "lost")));

        assertThat(ErrorCode.isConnectionLost(wrapped)).isTrue();
    }

    @Test
    void exception_detailOutsideTheShape_isRefused() {
        assertThatThrownBy(() -> SpectorException.of(ErrorCode.OWNER_UNREACHABLE, "x", Map.of("workerId", "w1")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("details.workerId")
                .hasMessageContaining("[owner]");
        assertThatThrownBy(() -> SpectorException.of(ErrorCode.PAYLOAD_TOO_LARGE, "x", Map.of("limitBytes", "ten")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("details.limitBytes: String (expected: Long)");
    }

    @Test
    void exception_expectedKinds_carryNoStackTrace() {
        assertThat(SpectorException.of(ErrorCode.OWNER_TIMEOUT, "slow").getStackTrace())
                .isEmpty();
        assertThat(SpectorException.of(ErrorCode.INTERNAL, "bug").getStackTrace())
                .isNotEmpty();
    }
}
