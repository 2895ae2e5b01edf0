package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.gateway.WireClient.Response;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Request bodies that end badly never end well upstream (issue 9, section 3): a malformed chunked
 * body, or a client that goes away mid-body, aborts the owner's or the worker's request instead of
 * completing it, so nothing partial is ever stored. Raw sockets only; each test checks what the
 * client got and what the upstream kept: the reference owner's objects (a later GET is 404, not a
 * short object) and its uploads in progress (a temporary file, gone once the upload is aborted), or
 * the worker's {@link RecordingTarget} (its body never reached an end).
 *
 * <p>Regression, for every test here: a broken chunk (or an early close) ended the owner's request
 * cleanly, so {@code PUT .../objects/k} answered 201 and stored the first 5 bytes; the same through
 * the relay.
 */
final class EdgeBodyTest {
    private static final String WORKER = "bw";
    private static final Duration WITHIN = OwnerUploads.WITHIN;

    private static final RecordingTarget target = new RecordingTarget();
    private static RelayCell relayCell;
    private static Cell cell;
    private static OwnerUploads uploads;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        relayCell = RelayCell.start(
                // every body streams (request-buffer-bytes 0): what is tested here is a streamed
                // body that ends badly; a small one read first never reaches the upstream at all
                // (RequestBufferingTest)
                Cell.builder().owners(1).set("spector.routing.gateway.request-buffer-bytes", "0"),
                WORKER,
                (c, httpForward) -> Map.of(
                        "record",
                        target,
                        "owner",
                        httpForward.apply(c.owners.get(0).baseUri())));
        cell = relayCell.cell;
        token = Cell.token(Cell.TENANT);
        uploads = new OwnerUploads(cell, cell.owners.get(0), token);
    }

    @AfterAll
    static void stop() {
        relayCell.close();
    }

    /** Chunked bodies whose first chunk ({@code 5\r\nhello\r\n}) is good and whose rest is not. */
    static Stream<Arguments> brokenChunks() {
        return Stream.of(
                Arguments.of("zz as a chunk size", "zz\r\nworld\r\n0\r\n\r\n"),
                Arguments.of("a chunk size of 20 hex digits", "FFFFFFFFFFFFFFFFFFFF\r\nworld\r\n0\r\n\r\n"),
                Arguments.of("a size line ended by a bare LF", "5\nworld\r\n0\r\n\r\n"),
                Arguments.of("a chunk missing its CRLF", "5\r\nworld0\r\n\r\n"),
                Arguments.of("a trailer that is not a field", "0\r\nBad Trailer: x\r\n\r\n"));
    }

    /**
     * A chunked upload whose framing breaks after a good first chunk is answered 400 BAD_REQUEST and
     * the connection closes; the owner's request is aborted, so no object is stored (RFC 9112 §7.1,
     * §7.1.2; an incomplete message must not be taken for a complete one, §8).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("brokenChunks")
    void shouldAnswer400AndAbortTheOwnersUploadForABrokenChunk(String broken, String rest) {
        String path = objectPath(broken);
        Set<Path> before = uploads.inProgress();
        try (WireClient c = client()) {
            c.send(WireClient.head("PUT", path, token, "Transfer-Encoding: chunked") + "5\r\nhello\r\n");
            Path upload = uploads.awaitNew(before);

            Response r = c.send(rest).read();

            assertBadRequestAndClose(c, r, broken);
            uploads.awaitAborted(upload);
        }
        uploads.assertNotStored(path);
    }

    /**
     * A relayed chunked upload whose framing breaks is answered 400 and the connection closes; the
     * worker's target sees its request aborted or failed, never a body that ended (RFC 9112 §7.1,
     * §8), and the relay slot is released.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("brokenChunks")
    void shouldAbortTheRelayedRequestForABrokenChunk(String broken, String rest) {
        String relayed = "/broken-" + slug(broken);
        try (WireClient c = client()) {
            c.send(WireClient.head("PUT", "/relay/" + WORKER + "/record" + relayed, token, "Transfer-Encoding: chunked")
                    + "5\r\nhello\r\n");
            RecordingTarget.Call call = target.awaitCall(relayed, WITHIN);

            Response r = c.send(rest).read();

            assertBadRequestAndClose(c, r, broken);
            assertThat(call.outcome(WITHIN))
                    .as("the target's request after %s: %s", broken, call)
                    .isNotEqualTo(RecordingTarget.Outcome.COMPLETED);
            assertThat(call.sawEnd)
                    .as("the target never saw the body end: %s", call)
                    .isFalse();
        }
        awaitRelaysReleased();
    }

    /**
     * The same through the worker's {@code http-forward} target to the owner: the owner's upload is
     * aborted, and a later GET through the relay is 404 (RFC 9112 §7.1, §8).
     */
    @Test
    void shouldAbortTheOwnersUploadForABrokenChunkThroughTheRelay() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/objects/relayed-broken";
        Set<Path> before = uploads.inProgress();
        try (WireClient c = client()) {
            c.send(WireClient.head("PUT", "/relay/" + WORKER + "/owner" + path, token, "Transfer-Encoding: chunked")
                    + "5\r\nhello\r\n");
            Path upload = uploads.awaitNew(before);

            Response r = c.send("zz\r\nworld\r\n0\r\n\r\n").read();

            assertBadRequestAndClose(c, r, "zz as a chunk size");
            uploads.awaitAborted(upload);
        }
        try (WireClient c = client()) {
            Response get = c.send(WireClient.head("GET", "/relay/" + WORKER + "/owner" + path, token))
                    .read();
            assertThat(get.status())
                    .as("no object after a broken relayed upload: %s", get)
                    .isEqualTo(404);
        }
        awaitRelaysReleased();
    }

    /**
     * A client that closes its connection before its body is complete aborts the owner's request:
     * no object is stored (RFC 9112 §8: an incomplete message; §6.3 rule 5 for a short
     * Content-Length, past the request buffer: the owner has begun the upload when the client goes).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"Content-Length", "Transfer-Encoding"})
    void shouldAbortTheOwnersUploadWhenTheClientClosesMidBody(String framing) {
        String path = objectPath("early-close-" + framing);
        Set<Path> before = uploads.inProgress();
        WireClient c = client();
        c.send(WireClient.head("PUT", path, token, framing(framing)) + firstPart(framing));
        Path upload = uploads.awaitNew(before);

        c.close();

        uploads.awaitAborted(upload);
        uploads.assertNotStored(path);
    }

    /**
     * A client that closes before its relayed body is complete aborts the worker's request: the
     * target never sees the body end, and the relay slot is released (RFC 9112 §8).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"Content-Length", "Transfer-Encoding"})
    void shouldAbortTheRelayedRequestWhenTheClientClosesMidBody(String framing) {
        String relayed = "/early-close-" + slug(framing);
        WireClient c = client();
        c.send(WireClient.head("PUT", "/relay/" + WORKER + "/record" + relayed, token, framing(framing))
                + firstPart(framing));
        RecordingTarget.Call call = target.awaitCall(relayed, WITHIN);

        c.close();

        assertThat(call.outcome(WITHIN))
                .as("the target's request after the client's close: %s", call)
                .isNotEqualTo(RecordingTarget.Outcome.COMPLETED);
        assertThat(call.sawEnd)
                .as("the target never saw the body end: %s", call)
                .isFalse();
        awaitRelaysReleased();
    }

    /**
     * RFC 9112 §6.1: a transfer coding the gateway does not understand is a 501, and the
     * connection closes (its body's framing is one the gateway does not read); nginx answers the
     * same ("client sent unknown Transfer-Encoding"). Regression: Netty's decoder takes a list
     * whose last coding is chunked, and the body went to the owner still gzip-coded, re-framed as
     * plain chunked with no word of the coding.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "Transfer-Encoding: gzip, chunked",
                "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked",
                "Transfer-Encoding: x-custom ,Chunked"
            })
    void shouldAnswer501AndCloseForATransferCodingOtherThanChunked(String field) throws Exception {
        int before = cell.owners.get(0).requests().size();
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("POST " + objectPath("coded") + " HTTP/1.1\r\nHost: gw\r\n"
                            + "Authorization: Bearer " + token + "\r\n" + field + "\r\n\r\n"
                            + "5\r\nhello\r\n0\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(501);
            JsonNode problem = new ObjectMapper().readTree(r.body());
            assertThat(problem.get("code").asText()).isEqualTo("NOT_IMPLEMENTED");
            assertThat(problem.at("/details/feature").asText()).startsWith("Transfer-Encoding: ");
            assertThat(r.header("Connection")).isEqualToIgnoringCase("close");
            assertThat(c.closedByServer()).as("the close follows").isTrue();
        }
        assertThat(cell.owners.get(0).requests())
                .as("nothing reached the owner")
                .hasSize(before);
    }

    // ---- helpers ----

    private static WireClient client() {
        return new WireClient(cell.gateway.port());
    }

    private static String objectPath(String name) {
        return "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/objects/" + slug(name);
    }

    private static String slug(String name) {
        return name.replaceAll("[^A-Za-z0-9]+", "-");
    }

    private static String framing(String name) {
        // past the request buffer (64 KiB): the body streams, and the upstream hears of it at once
        return name.equals("Content-Length") ? "Content-Length: 100000" : "Transfer-Encoding: chunked";
    }

    private static String firstPart(String framing) {
        return framing.equals("Content-Length") ? "0123456789" : "5\r\nhello\r\n";
    }

    private static void assertBadRequestAndClose(WireClient c, Response r, String broken) {
        assertThat(r.status()).as("the answer to %s: %s", broken, r).isEqualTo(400);
        assertThat(r.header("Content-Type")).as("%s", r).startsWith("application/problem+json");
        assertThat(r.code()).as("%s", r).isEqualTo("BAD_REQUEST");
        assertThat(r.closed() || c.closedByServer())
                .as("the connection closes after the 400 for %s: %s", broken, r)
                .isTrue();
    }

    private static void awaitRelaysReleased() {
        await("the worker's relay slots are released")
                .atMost(WITHIN)
                .until(() -> cell.gateway.relay().running(WORKER) == 0);
    }
}
