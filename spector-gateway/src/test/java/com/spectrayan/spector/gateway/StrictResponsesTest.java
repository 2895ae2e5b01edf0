package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The fuzz test's strict response parser: what it accepts, and each rule it reports. */
final class StrictResponsesTest {
    private static final StrictResponses.Asked GET = new StrictResponses.Asked("GET", false);
    private static final StrictResponses.Asked HEAD = new StrictResponses.Asked("HEAD", false);
    private static final StrictResponses.Asked GET_10 = new StrictResponses.Asked("GET", true);

    private static StrictResponses.Result parse(String bytes, StrictResponses.Asked... asked) {
        return StrictResponses.parse(bytes.getBytes(StandardCharsets.ISO_8859_1), false, List.of(asked), 0);
    }

    @Test
    void parse_lengthAndChunkedResponsesInOrder_areBothRead() {
        StrictResponses.Result r = parse(
                "HTTP/1.1 100 Continue\r\n\r\n"
                        + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                        + "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=1\r\nab\r\n0\r\nT: 1\r\n\r\n",
                GET,
                GET);

        assertThat(r.violations()).isEmpty();
        assertThat(r.responses()).extracting(StrictResponses.Response::text).containsExactly("ok", "ab");
        assertThat(r.responses().get(0).interim()).isEqualTo(1);
    }

    @Test
    void parse_headResponse_hasNoBodyWhateverItsLength() {
        StrictResponses.Result r = parse("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", HEAD);

        assertThat(r.violations()).isEmpty();
        assertThat(r.responses()).hasSize(1);
    }

    @Test
    void parse_bodyOnHead_isTheStartOfABrokenResponse() {
        StrictResponses.Result r = parse("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nok\r\n", HEAD);

        assertThat(r.violations()).singleElement().asString().contains("not a status line");
    }

    @Test
    void parse_chunkedToHttp10_isReported() {
        StrictResponses.Result r = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", GET_10);

        assertThat(r.violations()).singleElement().asString().contains("HTTP/1.0");
    }

    @Test
    void parse_moreResponsesThanRequests_isReported() {
        StrictResponses.Result r =
                parse("HTTP/1.1 400 Bad\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", GET);

        assertThat(r.violations()).singleElement().asString().contains("more responses than requests");
    }

    @Test
    void parse_bytesAfterConnectionClose_areReported() {
        StrictResponses.Result r =
                parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n", GET, GET);

        assertThat(r.violations()).singleElement().asString().contains("Connection: close");
    }

    @Test
    void parse_bareLfObsFoldAndBothFramings_areEachReported() {
        assertThat(parse("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", GET).violations())
                .singleElement()
                .asString()
                .contains("bare LF");
        assertThat(parse("HTTP/1.1 200 OK\r\nA: b\r\n c\r\nContent-Length: 0\r\n\r\n", GET)
                        .violations())
                .singleElement()
                .asString()
                .contains("obs-fold");
        assertThat(parse("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", GET)
                        .violations())
                .singleElement()
                .asString()
                .contains("both Content-Length and Transfer-Encoding");
    }

    @Test
    void parse_finInsideABody_isReportedButAResetIsNot() {
        byte[] cut = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok".getBytes(StandardCharsets.ISO_8859_1);

        assertThat(StrictResponses.parse(cut, false, List.of(GET), 0).violations())
                .singleElement()
                .asString()
                .contains("FIN inside a response");
        assertThat(StrictResponses.parse(cut, true, List.of(GET), 0).violations())
                .isEmpty();
    }
}
