package com.spectrayan.spector.gateway;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.gateway.WireClient.Framing;
import com.spectrayan.spector.gateway.WireClient.Response;
import com.spectrayan.spector.gateway.config.ServerSettings.Transport;
import java.io.ByteArrayOutputStream;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The gateway on each transport it runs on ({@code spector.server.transport}, {@link IoTransport}):
 * the same bytes reach the owner and come back on io_uring, epoll and NIO. Raw sockets against a
 * real gateway and reference owner; what the owner stored is read back through the gateway.
 */
final class TransportTest {
    private static final String TOKEN = Cell.token(Cell.TENANT);

    /**
     * A chunked upload (RFC 9112 §7.1), split across many writes, reaches the owner whole (its
     * {@code 201}), and the object read back on the same connection is the same bytes, framed by
     * length: each transport's reads, writes and keep-alive carry a request body and a response body.
     */
    @ParameterizedTest
    @EnumSource(
            value = Transport.class,
            names = {"IO_URING", "EPOLL", "NIO"})
    void eachTransport_carriesAChunkedUploadToTheOwner_andItsBytesBack(Transport transport) throws Exception {
        try (Cell cell = Cell.builder()
                        .owners(1)
                        .set("spector.server.transport", transport.label())
                        .start();
                WireClient c = new WireClient(cell.gateway.port())) {
            assertThat(cell.gateway.ioTransport().transport()).isEqualTo(transport);
            byte[] body = new byte[200 * 1024 + 17];
            new Random(transport.label().hashCode()).nextBytes(body);
            String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/objects/t-" + transport.label();

            c.send(WireClient.head("PUT", path, TOKEN, "Transfer-Encoding: chunked"));
            for (int off = 0; off < body.length; off += 7000) {
                int n = Math.min(7000, body.length - off);
                ByteArrayOutputStream chunk = new ByteArrayOutputStream();
                chunk.write((Integer.toHexString(n) + "\r\n").getBytes(US_ASCII));
                chunk.write(body, off, n);
                chunk.write("\r\n".getBytes(US_ASCII));
                c.send(chunk.toByteArray());
            }
            c.send("0\r\n\r\n");
            Response put = c.readFinal();
            assertThat(put.status()).as("%s", put).isEqualTo(201);
            assertThat(put.closed()).isFalse();

            c.send(WireClient.head("GET", path, TOKEN));
            Response get = c.readFinal();
            assertThat(get.status()).as("%s", get).isEqualTo(200);
            assertThat(get.framing()).isEqualTo(Framing.LENGTH);
            assertThat(get.body()).isEqualTo(body);
        }
    }

    /**
     * Through a worker's uplink on io_uring: a 300 KiB upload (framed by its length) relayed to the
     * worker's {@code http-forward} target (the reference owner) is stored whole, and read back
     * through the relay is the same bytes. The uplink's frames, masked by the worker, are read on
     * io_uring.
     */
    @Test
    void ioUring_relaysAnUploadThroughAnUplink_andItsBytesBack() throws Exception {
        try (RelayCell relay = RelayCell.start(
                Cell.builder().owners(1).set("spector.server.transport", "io_uring"),
                "uring-worker",
                (c, httpForward) ->
                        Map.of("owner", httpForward.apply(c.owners.get(0).baseUri())))) {
            Cell cell = relay.cell;
            assertThat(cell.gateway.ioTransport().transport()).isEqualTo(Transport.IO_URING);
            byte[] body = new byte[300 * 1024 + 5];
            new Random(7).nextBytes(body);
            String path = "/relay/uring-worker/owner/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0")
                    + "/objects/relayed";
            try (WireClient c = new WireClient(cell.gateway.port())) {
                c.send(WireClient.head("PUT", path, TOKEN, "Content-Length: " + body.length));
                c.send(body);
                Response put = c.readFinal();
                assertThat(put.status()).as("%s", put).isEqualTo(201);

                c.send(WireClient.head("GET", path, TOKEN));
                Response get = c.readFinal();
                assertThat(get.status()).as("%s", get).isEqualTo(200);
                assertThat(get.body()).isEqualTo(body);
            }
        }
    }

    /** {@code auto}, the default, takes epoll on Linux, and splices; io_uring is asked for by name. */
    @Test
    void auto_takesEpoll_andSplices() throws Exception {
        try (Cell cell = Cell.builder().owners(1).start()) {
            assertThat(cell.gateway.ioTransport().transport()).isEqualTo(Transport.EPOLL);
            assertThat(cell.gateway.ioTransport().splices()).isTrue();
        }
    }

    /** Splicing needs native sockets: epoll's {@code spliceTo}, or UringSplice on io_uring; NIO has neither. */
    @Test
    void nativeTransports_splice_nioDoesNot() {
        assertThat(IoTransport.of(Transport.EPOLL).splices()).isTrue();
        assertThat(IoTransport.of(Transport.IO_URING).splices()).isTrue();
        assertThat(IoTransport.of(Transport.NIO).splices()).isFalse();
    }
}
