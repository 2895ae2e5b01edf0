package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.gateway.EdgeSpliceTest.Wire;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.jspecify.annotations.Nullable;

/**
 * An owner that sends more than its response (RFC 9112 §6.3: a message's body ends at its {@code
 * Content-Length}; what follows is the next message, and a client must not take it for one): the
 * gateway must never hand those bytes to the next exchange, another client's, on a pooled
 * connection ({@code OwnerCodec}'s notes, nginx's "upstream sent more data than specified"). Raw
 * sockets on both sides: a scripted owner whose answer to {@code /overrun?extra=...} carries
 * extra bytes after its body (a whole forged response, or the start of one), and raw clients.
 * Each try checks what both clients got and what the owner saw: the connection that overran is
 * closed, the next request arrives on a new one, and its answer is the owner's real one.
 */
final class OwnerOverrunTest {
    private static final Duration BOUND = Duration.ofSeconds(10);

    /** What the owner may append after its body: a whole forged response, its start, or a stray line end. */
    private static final List<String> EXTRAS = List.of(
            "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged",
            "HTTP/1.1 200 OK\r\nX-Forged: 1\r\n",
            "HTTP/1.1 2",
            "\r\n",
            "x");

    private static @Nullable ScriptedOwner owner;
    private static @Nullable Cell cell;

    @BeforeContainer
    static void start() throws IOException {
        owner = new ScriptedOwner();
        cell = Cell.builder().owners(1).member("scripted-0", owner().uri()).start();
    }

    @AfterContainer
    static void stop() {
        if (cell != null) {
            cell.close();
        }
        if (owner != null) {
            owner.close();
        }
    }

    /**
     * Each extra after a whole body: the first client gets exactly the body, the owner's
     * connection is closed by the gateway, and the next client's request reaches the owner on a
     * new connection and gets the owner's real answer, never the extra.
     */
    @Property(tries = 25)
    void bytesPastTheLength_neverReachTheNextExchange(
            @ForAll @IntRange(min = 0, max = 4) int which, @ForAll @IntRange(min = 1, max = 64) int bodyLen)
            throws Exception {
        Cell c = requireNonNull(cell);
        String ns = c.namespaceOwnedBy("scripted-0");
        int ended = owner().ended.get();
        int seen = owner().requests.size();

        try (Wire first = new Wire(c.gateway.port())) {
            first.send(get(ns, "/overrun?extra=" + which + "&len=" + bodyLen));
            assertThat(first.readHead()).containsEntry("content-length", String.valueOf(bodyLen));
            assertThat(text(first.readNBytes(bodyLen))).isEqualTo("a".repeat(bodyLen));
        }
        await().atMost(BOUND).until(() -> owner().ended.get() > ended);

        try (Wire second = new Wire(c.gateway.port())) {
            second.send(get(ns, "/plain"));
            assertThat(second.readHead()).doesNotContainKey("x-forged").containsEntry("content-length", "5");
            assertThat(text(second.readNBytes(5))).isEqualTo("plain");
        }
        List<Served> served = owner().requests.subList(seen, owner().requests.size());
        assertThat(served).extracting(Served::target).hasSize(2);
        assertThat(served.get(1).connection())
                .as("the overrun connection was not reused")
                .isNotEqualTo(served.get(0).connection());
    }

    /**
     * The same past a spliced body (a length of 128 KiB or more goes from the owner's socket to the
     * client's in the kernel, exactly its length), with the next request pipelined behind it, so it
     * wants an owner connection in the very task that ends the first answer. The bytes past the
     * body stayed in the owner's socket, unseen, and that connection was pooled and given to the
     * pipelined request, which got the forged answer (found by a review). RFC 9112 §6.3.
     */
    @Property(tries = 5)
    void bytesPastASplicedBody_neverReachThePipelinedRequest(@ForAll @IntRange(min = 0, max = 4) int which)
            throws Exception {
        Cell c = requireNonNull(cell);
        String ns = c.namespaceOwnedBy("scripted-0");
        int len = 200_000;
        int seen = owner().requests.size();

        try (Wire client = new Wire(c.gateway.port())) {
            client.send(get(ns, "/overrun?extra=" + which + "&len=" + len) + get(ns, "/plain"));
            assertThat(client.readHead()).containsEntry("content-length", String.valueOf(len));
            assertThat(text(client.readNBytes(len))).isEqualTo("a".repeat(len));
            assertThat(client.readHead()).doesNotContainKey("x-forged").containsEntry("content-length", "5");
            assertThat(text(client.readNBytes(5))).isEqualTo("plain");
        }
        List<Served> served = owner().requests.subList(seen, owner().requests.size());
        assertThat(served).extracting(Served::target).hasSize(2);
        assertThat(served.get(1).connection())
                .as("the overrun connection was not reused")
                .isNotEqualTo(served.get(0).connection());
    }

    /**
     * The codec still pairs answers with their requests: a HEAD's answer, whose Content-Length
     * announces a body it does not carry (RFC 9110 §9.3.2), leaves a clean connection that carries
     * the next exchange.
     */
    @Property(tries = 3)
    void headAnswer_withALength_leavesTheConnectionReusable(@ForAll @IntRange(min = 1, max = 100_000) int len)
            throws Exception {
        Cell c = requireNonNull(cell);
        String ns = c.namespaceOwnedBy("scripted-0");
        int seen = owner().requests.size();
        try (Wire client = new Wire(c.gateway.port())) {
            client.send("HEAD /api/v1/namespaces/" + ns + "/head?len=" + len + " HTTP/1.1\r\nHost: gateway\r\n"
                    + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n");
            assertThat(client.readHead()).containsEntry("content-length", String.valueOf(len));
            client.send(get(ns, "/plain"));
            assertThat(client.readHead()).containsEntry("content-length", "5");
            assertThat(text(client.readNBytes(5))).isEqualTo("plain");
        }
        List<Served> served = owner().requests.subList(seen, owner().requests.size());
        assertThat(served).hasSize(2);
        assertThat(served.get(1).connection())
                .as("one owner connection, reused after the HEAD")
                .isEqualTo(served.get(0).connection());
    }

    private static String text(byte[] b) {
        return new String(b, StandardCharsets.ISO_8859_1);
    }

    private static String get(String ns, String pathAndQuery) {
        return "GET /api/v1/namespaces/" + ns + pathAndQuery + " HTTP/1.1\r\nHost: gateway\r\n"
                + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n";
    }

    private static ScriptedOwner owner() {
        return requireNonNull(owner);
    }

    /** A request the owner served: the ordinal of its connection, and its target. */
    record Served(int connection, String target) {}

    /**
     * An owner on a raw socket that answers each request's target with the bytes {@code answer}
     * makes of it, in one write, and never closes a connection itself. Here: {@code
     * .../overrun?extra=K&len=N} answers N bytes of {@code a} and then {@link #EXTRAS}[K];
     * {@code .../head?len=N} answers a HEAD with that length and no body; anything else {@code
     * plain}. Connections are counted as they open and end.
     */
    static final class ScriptedOwner implements AutoCloseable {
        final AtomicInteger connections = new AtomicInteger();
        final AtomicInteger ended = new AtomicInteger();
        /** Every request served, in order, with the ordinal of the connection it came on. */
        final List<Served> requests = new CopyOnWriteArrayList<>();

        private final SilentServer server;
        private final Function<String, String> answer;

        ScriptedOwner() throws IOException {
            this(ScriptedOwner::answer);
        }

        /** An owner answering each target with {@code answer}'s bytes (ISO-8859-1). */
        ScriptedOwner(Function<String, String> answer) throws IOException {
            this.answer = answer;
            server = SilentServer.serving("scripted-owner", this::serve);
        }

        URI uri() {
            return URI.create("http://127.0.0.1:" + server.port());
        }

        private void serve(Socket s) {
            int connection = connections.incrementAndGet();
            try (s) {
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream();
                for (MockOwner.Request r = MockOwner.readRequest(in); r != null; r = MockOwner.readRequest(in)) {
                    requests.add(new Served(connection, r.target()));
                    out.write(answer.apply(r.target()).getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                }
            } catch (IOException e) {
                // the gateway closed the connection
            } finally {
                ended.incrementAndGet();
            }
        }

        private static String answer(String target) {
            int len = target.contains("len=") ? Integer.parseInt(target.replaceAll(".*len=(\\d+).*", "$1")) : 0;
            if (target.contains("/overrun")) {
                int which = Integer.parseInt(target.replaceAll(".*extra=(\\d+).*", "$1"));
                return "HTTP/1.1 200 OK\r\nContent-Length: " + len + "\r\n\r\n" + "a".repeat(len) + EXTRAS.get(which);
            }
            if (target.contains("/head")) {
                return "HTTP/1.1 200 OK\r\nContent-Length: " + len + "\r\n\r\n";
            }
            return "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nplain";
        }

        @Override
        public void close() {
            server.close();
        }
    }
}
