package com.spectrayan.spector.uplink.transport;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.testkit.NettyLeakExtension;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.handler.codec.http.HttpRequest;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.jspecify.annotations.Nullable;

/**
 * Uplink handshakes off the wire, each of its parts valid or broken, as a hostile or merely odd
 * client writes them (raw bytes on a socket): RFC 6455 section 4.2.1 (an opening handshake is a
 * GET with {@code Upgrade: websocket}, {@code Connection} naming {@code upgrade}, a {@code
 * Sec-WebSocket-Key} of 16 bytes in base64 and {@code Sec-WebSocket-Version: 13}, else the server
 * answers an HTTP error), section 4.4 (a version it does not speak is answered with the versions it
 * does), then the uplink's own checks (worker, token, subprotocol; docs/PROTOCOL.md section 1).
 *
 * <p>Whatever is sent, the client gets an answer, never silence: a {@code 101} exactly when every
 * part is valid, else the status and problem of the first check that fails, in the acceptor's
 * order. Both ends agree: the id the acceptor's {@link UplinkAcceptor.Handshakes} gave is the one
 * in the answer's {@code X-Request-Id} (and a refusal's {@code requestId}), and what it was told
 * (refused with that status, code and body length, or accepted and switched) is what the client
 * got.
 */
final class UplinkHandshakePropertiesTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String VALID_KEY = "dGhlIHNhbXBsZSBub25jZQ==";

    static {
        // Installs the recording detector before a buffer class loads: jqwik runs no Jupiter
        // extension, and a buffer class loaded first would keep Netty's own detector for this JVM.
        NettyLeakExtension.collectLeaks();
    }

    private static @Nullable EventLoopGroup group;
    private static @Nullable TestGateway gateway;
    private static final Told told = new Told();
    private static int accepted;
    private static int refused;

    /** What the acceptor told: each handshake's id, and how each ended. */
    static final class Told implements UplinkAcceptor.Handshakes {
        private final AtomicInteger next = new AtomicInteger();
        final BlockingQueue<String> ends = new LinkedBlockingQueue<>();

        @Override
        public UplinkAcceptor.Handshake begin(Channel channel, HttpRequest request) {
            String id = "hs-" + next.incrementAndGet();
            return new UplinkAcceptor.Handshake() {
                @Override
                public String requestId() {
                    return id;
                }

                @Override
                public void refused(int status, ErrorCode code, int bodyBytes, ChannelFuture written) {
                    written.addListener(f -> ends.add(id + " refused " + status + " " + code + " " + bodyBytes + " "
                            + (f.isSuccess() ? "written" : "unwritten")));
                }

                @Override
                public void accepted(String workerId, int slot, ChannelFuture switched) {
                    switched.addListener(f -> ends.add(
                            id + " accepted " + workerId + " " + slot + " " + (f.isSuccess() ? "switched" : "failed")));
                }
            };
        }
    }

    /**
     * One part of a handshake: its header line (null: left out) and, when it is broken, what the
     * acceptor checks of it (the status and the words its refusal's detail starts with).
     */
    record Part(@Nullable String line, @Nullable Check broken) {
        static Part ok(@Nullable String line) {
            return new Part(line, null);
        }

        static Part bad(@Nullable String line, Check check) {
            return new Part(line, check);
        }
    }

    /** A check of the acceptor, in its order (RFC 6455 first, then the uplink's own). */
    enum Check {
        SHAPE(400, "expected a WebSocket upgrade", "Upgrade"),
        VERSION(400, "unsupported WebSocket version", "Sec-WebSocket-Version"),
        KEY(400, "malformed Sec-WebSocket-Key", "Sec-WebSocket-Key"),
        WORKER(401, "missing or malformed X-Spector-Worker", "malformed-worker"),
        TOKEN_FORM(401, "missing bearer token", "missing-token"),
        TOKEN(401, "invalid worker token", "bad-token"),
        SUBPROTOCOL(400, "no common uplink protocol", "Sec-WebSocket-Protocol");

        final int status;
        final String detail;
        /** What the problem's details say: the header refused ({@code field}, 400) or why ({@code reason}, 401). */
        final String named;

        Check(int status, String detail, String named) {
            this.status = status;
            this.detail = detail;
            this.named = named;
        }
    }

    /**
     * A whole handshake: the request line's method and version, and each header part, in the order
     * written.
     */
    record Handshake(String method, String version, List<Part> parts) {
        @Nullable
        Check firstBroken() {
            // RFC 9110 section 7.8: the Upgrade of an HTTP/1.0 request is ignored
            Check first = method.equals("GET") && version.equals("HTTP/1.1") ? null : Check.SHAPE;
            for (Part p : parts) {
                Check c = p.broken();
                if (c != null && (first == null || c.compareTo(first) < 0)) {
                    first = c;
                }
            }
            return first;
        }

        String wire() {
            StringBuilder b = new StringBuilder(method + " /uplink " + version + "\r\nHost: 127.0.0.1\r\n");
            for (Part p : parts) {
                if (p.line() != null) {
                    b.append(p.line()).append("\r\n");
                }
            }
            return b.append("\r\n").toString();
        }
    }

    @BeforeContainer
    static void start() {
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        gateway = TestGateway.telling(group, told);
    }

    @AfterContainer
    static void stop() {
        requireNonNull(gateway).close();
        requireNonNull(group).shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(10_000);
        // The generator is not lopsided: both answers were tried.
        assertThat(accepted).as("handshakes accepted").isPositive();
        assertThat(refused).as("handshakes refused").isPositive();
        assertThat(NettyLeakExtension.collectLeaks())
                .as("buffers never released (PARANOID)")
                .isEmpty();
    }

    @Provide
    Arbitrary<Handshake> handshakes() {
        Arbitrary<String> method = Arbitraries.frequency(Tuple.of(8, "GET"), Tuple.of(1, "POST"), Tuple.of(1, "PUT"));
        Arbitrary<String> version = Arbitraries.frequency(Tuple.of(9, "HTTP/1.1"), Tuple.of(1, "HTTP/1.0"));
        Arbitrary<Part> upgrade = parts(
                Part.ok("Upgrade: websocket"),
                Part.ok("Upgrade: WebSocket"),
                Part.bad(null, Check.SHAPE),
                Part.bad("Upgrade: h2c", Check.SHAPE));
        Arbitrary<Part> connection = parts(
                Part.ok("Connection: Upgrade"),
                Part.ok("Connection: keep-alive, upgrade"),
                Part.bad(null, Check.SHAPE),
                Part.bad("Connection: keep-alive", Check.SHAPE));
        Arbitrary<Part> websocketVersion = parts(
                Part.ok("Sec-WebSocket-Version: 13"),
                Part.bad(null, Check.VERSION),
                Part.bad("Sec-WebSocket-Version: 8", Check.VERSION),
                Part.bad("Sec-WebSocket-Version: 13, 8", Check.VERSION));
        Arbitrary<Part> key = parts(
                Part.ok("Sec-WebSocket-Key: " + VALID_KEY),
                Part.ok("Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA=="),
                Part.bad(null, Check.KEY),
                // 15 bytes, 17 bytes, unpadded, not base64
                Part.bad("Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAA", Check.KEY),
                Part.bad("Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAAA=", Check.KEY),
                Part.bad("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ", Check.KEY),
                Part.bad("Sec-WebSocket-Key: !!!!!!!!!!!!!!!!!!!!!!==", Check.KEY));
        Arbitrary<Part> worker = parts(
                Part.ok("X-Spector-Worker: w1"),
                Part.bad(null, Check.WORKER),
                Part.bad("X-Spector-Worker: bad id", Check.WORKER),
                Part.bad("X-Spector-Worker: -w1", Check.WORKER));
        Arbitrary<Part> token = parts(
                Part.ok("Authorization: Bearer " + TestGateway.TOKEN),
                Part.ok("Authorization: bearer " + TestGateway.TOKEN),
                Part.bad(null, Check.TOKEN_FORM),
                Part.bad("Authorization: Basic " + TestGateway.TOKEN, Check.TOKEN_FORM),
                Part.bad("Authorization: Bearer nope", Check.TOKEN),
                // the decoder trims the space: "Bearer" alone
                Part.bad("Authorization: Bearer ", Check.TOKEN_FORM),
                Part.bad("Authorization: Bearer " + TestGateway.TOKEN + "x", Check.TOKEN));
        Arbitrary<Part> subprotocol = parts(
                Part.ok("Sec-WebSocket-Protocol: " + FrameCodec.SUBPROTOCOL),
                Part.ok("Sec-WebSocket-Protocol: " + V2Limits.SUBPROTOCOL),
                Part.ok("Sec-WebSocket-Protocol: chat, " + FrameCodec.SUBPROTOCOL),
                Part.bad(null, Check.SUBPROTOCOL),
                Part.bad("Sec-WebSocket-Protocol: spector-uplink.v0", Check.SUBPROTOCOL));
        return Combinators.combine(
                        method,
                        version,
                        Combinators.combine(upgrade, connection, websocketVersion, key, worker, token, subprotocol)
                                .as(List::of))
                .as(Handshake::new);
    }

    /** The first part is valid; valid and broken ones are drawn about as often. */
    private static Arbitrary<Part> parts(Part... choices) {
        List<Part> valid = new ArrayList<>();
        List<Part> broken = new ArrayList<>();
        for (Part p : choices) {
            (p.broken() == null ? valid : broken).add(p);
        }
        // Mostly valid: with seven parts, a fair coin each would leave almost no 101 to check.
        return Arbitraries.frequencyOf(Tuple.of(6, Arbitraries.of(valid)), Tuple.of(1, Arbitraries.of(broken)));
    }

    @Property(tries = 120)
    void everyHandshake_isAnswered_101ExactlyWhenEveryPartIsValid_elseTheFirstCheckThatFails(
            @ForAll("handshakes") Handshake h) throws IOException {
        TestGateway g = requireNonNull(gateway);
        String answer = RawUpgrade.sendRaw(g.port(), h.wire());
        assertThat(answer).as("an answer, never silence, to:\n%s", h.wire()).startsWith("HTTP/1.1 ");
        Response r = Response.parse(answer);
        String id = requireNonNull(r.headers.get("x-request-id"), "X-Request-Id");
        String end = Waits.take(told.ends, "the acceptor tells how " + id + " ended", TestGateway.WAIT);
        Check expected = h.firstBroken();
        if (expected == null) {
            accepted++;
            assertThat(r.status).as("a valid handshake switches:\n%s", h.wire()).isEqualTo(101);
            assertThat(end).isEqualTo(id + " accepted w1 0 switched");
            g.nextUplink("the valid handshake " + id);
            return;
        }
        refused++;
        assertThat(r.status).as("%s is refused:\n%s", expected, h.wire()).isEqualTo(expected.status);
        assertThat(r.headers.get("x-spector-refusal")).startsWith(expected.detail);
        assertThat(r.headers.get("content-type")).isEqualTo("application/problem+json");
        assertThat(r.headers.get("connection")).isEqualTo("close");
        assertThat(r.headers.get("sec-websocket-version"))
                .as("section 4.4: the versions this server speaks")
                .isEqualTo("13");
        JsonNode problem = JSON.readTree(r.body);
        ErrorCode code = expected.status == 401 ? ErrorCode.UNAUTHENTICATED : ErrorCode.BAD_REQUEST;
        assertThat(problem.get("code").asText()).isEqualTo(code.name());
        assertThat(problem.get("type").asText()).isEqualTo("urn:spector:error:" + code.name());
        assertThat(problem.get("status").asInt()).isEqualTo(expected.status);
        assertThat(problem.get("requestId").asText())
                .as("the body names the exchange")
                .isEqualTo(id);
        assertThat(problem.get("instance").asText()).isEqualTo(UplinkAcceptor.PATH);
        assertThat(problem.path("details")
                        .path(expected.status == 401 ? "reason" : "field")
                        .asText())
                .isEqualTo(expected.named);
        assertThat(end)
                .as("the acceptor told what the client got")
                .isEqualTo(id + " refused " + expected.status + " " + code + " " + r.body.length() + " written");
        assertThat(g.uplinks).as("no uplink handed over").isEmpty();
    }

    /**
     * Regression: a handshake that passed the acceptor's own checks but not Netty's (no {@code
     * Connection: upgrade}) made the handshaker throw after the pipeline had changed, and the client
     * got no answer at all.
     */
    @Example
    void noConnectionUpgrade_withAValidToken_isAnswered400_notLeftHanging() throws IOException {
        String answer = RawUpgrade.sendRaw(
                requireNonNull(gateway).port(),
                "GET /uplink HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nSec-WebSocket-Key: " + VALID_KEY
                        + "\r\nSec-WebSocket-Version: 13\r\nX-Spector-Worker: w1\r\nAuthorization: Bearer "
                        + TestGateway.TOKEN + "\r\nSec-WebSocket-Protocol: " + FrameCodec.SUBPROTOCOL + "\r\n\r\n");
        assertThat(answer).startsWith("HTTP/1.1 400 ");
        Waits.take(told.ends, "the refusal is told", TestGateway.WAIT);
    }

    /** A parsed answer: the status, the headers by lowercase name, and the body. */
    record Response(int status, Map<String, String> headers, String body) {
        static Response parse(String text) {
            int end = text.indexOf("\r\n\r\n");
            assertThat(end).as("a whole head:\n%s", text).isPositive();
            String[] lines = text.substring(0, end).split("\r\n", -1);
            Map<String, String> headers = new LinkedHashMap<>();
            for (int i = 1; i < lines.length; i++) {
                int colon = lines[i].indexOf(':');
                headers.put(
                        lines[i].substring(0, colon).toLowerCase(Locale.ROOT),
                        lines[i].substring(colon + 1).trim());
            }
            return new Response(Integer.parseInt(lines[0].substring(9, 12)), headers, text.substring(end + 4));
        }
    }
}
