package com.spectrayan.spector.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * A WebSocket echo through {@code /relay} against the same echo direct (issue 12: "a websocket
 * client, 10 000 messages each way: every message arrives in order; the added round-trip time over
 * direct is reported"). The upstream is the reference owner's {@code /api/v1/namespaces/{ns}/ws}
 * (spector-owner {@code WebSocketEcho}); the relayed URL is the same path through the gateway's
 * {@code /relay/WORKER/TARGET/ws}. For each of direct and relay, on one connection:
 *
 * <ol>
 *   <li>ping-pong: {@code --messages} text messages one at a time, each awaited before the next:
 *       the round-trip time, p50/p99/max;
 *   <li>a burst: {@code --messages} messages sent back to back while the echoes are read: every echo
 *       must come back in order; messages per second.
 * </ol>
 *
 * <p>Without {@code --direct} and {@code --relay} it starts, in this process, a reference owner, a
 * gateway (uplink v2, edge auth off) and a worker with one link whose target {@code echo} is that
 * owner, each on a free loopback port, and measures through them; with them it measures the given
 * URLs ({@code --token}: a bearer token for both, e.g. the demo's).
 *
 * <p>A relayed handshake answered 501 (a build whose relay has no two-way streams yet, {@code
 * Upgrades.relayRefusal}) prints "relayed upgrades not available on this build" and exits 0. Any
 * other failure (a lost, duplicated or reordered echo, a timeout) exits 1. Bounded: each echo is
 * awaited at most {@value #ECHO_TIMEOUT_SECONDS} s and a watchdog ends the run after {@value
 * #WATCHDOG_MINUTES} minutes. Run it with {@code bench/uplink-websocket.sh}.
 */
public final class UplinkWebSocketMain {
    static final long ECHO_TIMEOUT_SECONDS = 10;
    static final long WATCHDOG_MINUTES = 5;
    static final int MAX_MESSAGES = 1_000_000;
    static final int PAYLOAD_CHARS = 64;
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);

    private UplinkWebSocketMain() {}

    /**
     * Runs the bench.
     *
     * @param args {@code [--direct WS_URI --relay WS_URI [--token BEARER]] [--messages N]}
     */
    public static void main(String[] args) throws Exception {
        @Nullable String direct = null;
        @Nullable String relay = null;
        @Nullable String token = null;
        int messages = 10_000;
        for (int i = 0; i < args.length; i += 2) {
            String value = i + 1 < args.length ? args[i + 1] : "";
            switch (args[i]) {
                case "--direct" -> direct = value;
                case "--relay" -> relay = value;
                case "--token" -> token = value;
                case "--messages" -> messages = Integer.parseInt(value);
                default ->
                    throw new IllegalArgumentException(
                            "unknown argument " + args[i] + " (expected --direct, --relay, --token, --messages)");
            }
        }
        if ((direct == null) != (relay == null) || messages < 1 || messages > MAX_MESSAGES) {
            throw new IllegalArgumentException(
                    "--direct and --relay together or neither; --messages 1.." + MAX_MESSAGES);
        }
        RelayStack.watchdog(WATCHDOG_MINUTES);

        if (direct != null && relay != null) {
            measure(direct, relay, token, messages);
            return;
        }
        // In-process: a reference owner as the upstream, a gateway (v2) and a worker with one link.
        try (RelayStack stack = RelayStack.start(true, 1)) {
            measure(
                    stack.directBase().replaceFirst("^http:", "ws:") + "/ws",
                    stack.relayBase().replaceFirst("^http:", "ws:") + "/ws",
                    null,
                    messages);
        }
    }

    private static void measure(String direct, String relay, @Nullable String token, int messages)
            throws InterruptedException, WebSocketHandshakeException {
        HttpClient client =
                HttpClient.newBuilder().connectTimeout(CONNECT_TIMEOUT).build();
        Echo relayed;
        try {
            relayed = Echo.open(client, URI.create(relay), token);
        } catch (WebSocketHandshakeException e) {
            int status = e.getResponse().statusCode();
            if (status == 501) {
                System.out.println("relayed upgrades not available on this build (" + relay + " answered 501)");
                return;
            }
            throw new IllegalStateException("the relayed handshake was answered HTTP " + status, e);
        }
        Echo straight = Echo.open(client, URI.create(direct), token);
        // Warm-up on both, then measure: direct, relay, so that both see the same JIT state.
        straight.pingPong(Math.min(1000, messages));
        relayed.pingPong(Math.min(1000, messages));
        long[] rttDirect = straight.pingPong(messages);
        long[] rttRelay = relayed.pingPong(messages);
        double burstDirect = straight.burst(messages);
        double burstRelay = relayed.burst(messages);
        straight.close();
        relayed.close();

        System.out.printf(
                Locale.ROOT,
                "WebSocket echo, %d text messages of %d chars each way, in order (ping-pong, then a burst)%n",
                messages,
                PAYLOAD_CHARS);
        System.out.printf(
                Locale.ROOT,
                "%-22s %8s %8s %8s %8s %12s%n",
                "round trip (ms)",
                "p50",
                "p90",
                "p99",
                "max",
                "burst msg/s");
        row("direct", rttDirect, burstDirect);
        row("through /relay", rttRelay, burstRelay);
        Arrays.sort(rttDirect);
        Arrays.sort(rttRelay);
        System.out.printf(
                Locale.ROOT,
                "added by the relay: p50 %+.3f ms, p99 %+.3f ms; burst rate x%.2f of direct%n",
                (UplinkLatencyMain.percentile(rttRelay, 50) - UplinkLatencyMain.percentile(rttDirect, 50)) / 1e6,
                (UplinkLatencyMain.percentile(rttRelay, 99) - UplinkLatencyMain.percentile(rttDirect, 99)) / 1e6,
                burstRelay / burstDirect);
        System.out.println("every echo arrived, in order, on both paths");
    }

    private static void row(String name, long[] nanos, double burst) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        System.out.printf(
                Locale.ROOT,
                "%-22s %8.3f %8.3f %8.3f %8.3f %12.0f%n",
                name,
                UplinkLatencyMain.percentile(s, 50) / 1e6,
                UplinkLatencyMain.percentile(s, 90) / 1e6,
                UplinkLatencyMain.percentile(s, 99) / 1e6,
                s[s.length - 1] / 1e6,
                burst);
    }

    /** One WebSocket to an echo: whole text messages are queued as they arrive. */
    private static final class Echo implements WebSocket.Listener {
        private final BlockingQueue<Object> received = new LinkedBlockingQueue<>();
        private final StringBuilder partial = new StringBuilder();
        private final String name;

        @SuppressWarnings("NullAway.Init") // set by open() before any use
        private WebSocket socket;

        private int next;

        private Echo(String name) {
            this.name = name;
        }

        static Echo open(HttpClient client, URI uri, @Nullable String token)
                throws InterruptedException, WebSocketHandshakeException {
            Echo echo = new Echo(uri.toString());
            WebSocket.Builder b = client.newWebSocketBuilder().connectTimeout(CONNECT_TIMEOUT);
            if (token != null) {
                b.header("Authorization", "Bearer " + token);
            }
            try {
                echo.socket = b.buildAsync(uri, echo).get(CONNECT_TIMEOUT.toSeconds() + 5, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof WebSocketHandshakeException h) {
                    throw h;
                }
                throw new IllegalStateException("cannot open " + uri + ": " + e.getCause(), e.getCause());
            } catch (TimeoutException e) {
                throw new IllegalStateException("cannot open " + uri + " within " + CONNECT_TIMEOUT, e);
            }
            return echo;
        }

        @Override
        public void onOpen(WebSocket webSocket) {
            webSocket.request(1);
        }

        @Override
        public @Nullable CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
            partial.append(data);
            if (last) {
                received.add(partial.toString());
                partial.setLength(0);
            }
            webSocket.request(1);
            return null;
        }

        @Override
        public @Nullable CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
            received.add(new IllegalStateException("closed by the peer: " + statusCode + " " + reason));
            return null;
        }

        @Override
        public void onError(WebSocket webSocket, Throwable error) {
            received.add(error);
        }

        private static String payload(int i) {
            String head = "m" + i + ":";
            StringBuilder b = new StringBuilder(PAYLOAD_CHARS).append(head);
            while (b.length() < PAYLOAD_CHARS) {
                b.append('x');
            }
            return b.toString();
        }

        private void send(String text) {
            try {
                socket.sendText(text, true).get(ECHO_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            } catch (ExecutionException | TimeoutException | CompletionException e) {
                throw new IllegalStateException(name + ": send failed: " + e, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }

        private void expect(String text) throws InterruptedException {
            Object got = received.poll(ECHO_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            if (got == null) {
                throw new IllegalStateException(
                        name + ": no echo of '" + text + "' within " + ECHO_TIMEOUT_SECONDS + " s");
            }
            if (got instanceof Throwable t) {
                throw new IllegalStateException(name + ": " + t, t);
            }
            if (!text.equals(got)) {
                throw new IllegalStateException(name + ": expected '" + text + "', got '" + got + "' (out of order)");
            }
        }

        /** {@code n} round trips, one at a time; nanoseconds each. */
        long[] pingPong(int n) throws InterruptedException {
            long[] rtt = new long[n];
            for (int i = 0; i < n; i++) {
                String text = payload(next++);
                long t0 = System.nanoTime();
                send(text);
                expect(text);
                rtt[i] = System.nanoTime() - t0;
            }
            return rtt;
        }

        /** {@code n} messages sent back to back, each echo checked in order; messages per second. */
        double burst(int n) throws InterruptedException {
            int first = next;
            List<String> sent = new ArrayList<>(n);
            long t0 = System.nanoTime();
            Thread sender = new Thread(() -> {
                for (int i = 0; i < n; i++) {
                    send(payload(first + i));
                }
            });
            sender.setDaemon(true);
            sender.start();
            for (int i = 0; i < n; i++) {
                sent.add(payload(first + i));
                expect(sent.get(i));
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            sender.join(TimeUnit.SECONDS.toMillis(ECHO_TIMEOUT_SECONDS));
            next = first + n;
            return n / seconds;
        }

        void close() {
            try {
                socket.sendClose(WebSocket.NORMAL_CLOSURE, "done").get(ECHO_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            } catch (ExecutionException | TimeoutException e) {
                System.err.println(name + ": close: " + e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
