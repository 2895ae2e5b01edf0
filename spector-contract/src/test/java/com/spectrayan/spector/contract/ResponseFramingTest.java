package com.spectrayan.spector.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

final class ResponseFramingTest {

    /** RFC 9110 §9.3.2, §6.4.1: a response to HEAD has no content, whatever its status. */
    @ParameterizedTest
    @ValueSource(ints = {100, 200, 204, 205, 206, 304, 404, 500, 599})
    void bodyless_headRequest_isTrueForEveryStatus(int status) {
        assertThat(ResponseFraming.bodyless(true, status))
                .as("HEAD answered %d", status)
                .isTrue();
    }

    /**
     * RFC 9110 §6.4.1 and §15 (1xx, 204, 304), RFC 9112 §6.3 rule 1, and RFC 9110 §15.3.6 (205
     * carries no content): the statuses without a body, and the 1xx range at both ends.
     */
    @ParameterizedTest
    @ValueSource(ints = {100, 102, 103, 199, 204, 205, 304})
    void bodyless_getAnsweredWithAStatusWithoutContent_isTrue(int status) {
        assertThat(ResponseFraming.bodyless(false, status))
                .as("GET answered %d", status)
                .isTrue();
    }

    /** RFC 9110 §6.4.1: every other status to a GET has a body (possibly empty); 200 is one past 1xx. */
    @ParameterizedTest
    @ValueSource(ints = {99, 200, 201, 203, 206, 299, 300, 303, 305, 404, 421, 500, 599})
    void bodyless_getAnsweredWithAnyOtherStatus_isFalse(int status) {
        assertThat(ResponseFraming.bodyless(false, status))
                .as("GET answered %d", status)
                .isFalse();
    }

    /**
     * RFC 9110 §8.6: no Content-Length in a 1xx or 204; a HEAD's or a 304's is the GET's (kept);
     * RFC 9110 §15.3.6: a 205 declares zero.
     */
    @ParameterizedTest(name = "{0} declaring {1} may declare {2}")
    @CsvSource({
        "100, 5, -1",
        "199, 0, -1",
        "204, 0, -1",
        "204, -1, -1",
        "205, -1, 0",
        "205, 7, 0",
        "200, 246, 246",
        "200, -1, -1",
        "200, 0, 0",
        "304, 246, 246",
        "304, -1, -1",
        "404, 9007199254740991, 9007199254740991"
    })
    void contentLength_statusAndDeclaredLength_givesWhatTheResponseMayDeclare(int status, long declared, long may) {
        assertThat(ResponseFraming.contentLength(status, declared)).isEqualTo(may);
    }

    @ParameterizedTest
    @ValueSource(longs = {-2, Long.MIN_VALUE})
    void contentLength_declaredBelowUnknown_isRefused(long declared) {
        assertThatThrownBy(() -> ResponseFraming.contentLength(200, declared))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("declared: " + declared + " (expected: >= -1)");
    }
}
