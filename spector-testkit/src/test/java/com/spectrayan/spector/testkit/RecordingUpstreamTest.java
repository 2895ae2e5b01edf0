package com.spectrayan.spector.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link RecordingUpstream} over a raw client socket: each framing of RFC 9112 §6.3 as it came. */
final class RecordingUpstreamTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final RecordingUpstream upstream = startUpstream();

    private static RecordingUpstream startUpstream() {
        try {
            return RecordingUpstream.start();
        } catch (IOException e) {
            throw new AssertionError("a loopback port", e);
        }
    }

    @AfterEach
    void close() {
        upstream.close();
    }

    private Socket connect() throws IOException {
        return new Socket(upstream.uri().getHost(), upstream.uri().getPort());
    }

    private static String answer(InputStream in) throws IOException {
        String expected = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ";
        byte[] head = in.readNBytes(expected.length());
        assertThat(new String(head, StandardCharsets.US_ASCII)).isEqualTo(expected);
        StringBuilder length = new StringBuilder();
        for (int b; (b = in.read()) != '\r'; ) {
            length.append((char) b);
        }
        in.readNBytes(3); // \n\r\n
        return new String(in.readNBytes(Integer.parseInt(length.toString())), StandardCharsets.US_ASCII);
    }

    @Test
    void takeRequest_contentLengthThenChunked_onOneConnection_recordsEachAsItCame() throws IOException {
        try (Socket s = connect()) {
            OutputStream out = s.getOutputStream();
            out.write(
                    "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello".getBytes(StandardCharsets.US_ASCII));
            assertThat(answer(s.getInputStream()))
                    .isEqualTo("5 " + RecordingUpstream.sha256("hello".getBytes(StandardCharsets.US_ASCII)));
            out.write(
                    "PUT /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n"
                            .getBytes(StandardCharsets.US_ASCII));
            assertThat(answer(s.getInputStream())).startsWith("5 ");
        }

        RecordingUpstream.Recorded a = upstream.takeRequest(WAIT);
        assertThat(a.requestLine()).isEqualTo("PUT /a HTTP/1.1");
        assertThat(a.headers("content-length")).containsExactly("5");
        assertThat(a.framing()).isEqualTo(RecordingUpstream.Framing.CONTENT_LENGTH);
        assertThat(a.wire()).isEqualTo("hello".getBytes(StandardCharsets.US_ASCII));
        assertThat(a.complete()).isTrue();
        RecordingUpstream.Recorded b = upstream.takeRequest(WAIT);
        assertThat(b.framing()).isEqualTo(RecordingUpstream.Framing.CHUNKED);
        assertThat(b.header("Transfer-Encoding")).isEqualTo("chunked");
        assertThat(b.body()).isEqualTo("abcde".getBytes(StandardCharsets.US_ASCII));
        assertThat(new String(b.wire(), StandardCharsets.US_ASCII))
                .isEqualTo("3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n");
        assertThat(b.connection()).as("the same connection").isEqualTo(a.connection());
        assertThat(upstream.connections()).isEqualTo(1);
        assertThat(upstream.takeHead(WAIT)).isEqualTo("PUT /a HTTP/1.1");
    }

    @Test
    void takeRequest_connectionClosedMidBody_isIncomplete_withTheBytesThatCame() throws IOException {
        try (Socket s = connect()) {
            s.getOutputStream()
                    .write("POST /c HTTP/1.1\r\nContent-Length: 10\r\n\r\nabcd".getBytes(StandardCharsets.US_ASCII));
            assertThat(upstream.takeHead(WAIT)).isEqualTo("POST /c HTTP/1.1");
        }

        RecordingUpstream.Recorded c = upstream.takeRequest(WAIT);
        assertThat(c.complete()).isFalse();
        assertThat(c.wire()).isEqualTo("abcd".getBytes(StandardCharsets.US_ASCII));
        assertThat(c.header("Content-Length")).isEqualTo("10");
    }
}
