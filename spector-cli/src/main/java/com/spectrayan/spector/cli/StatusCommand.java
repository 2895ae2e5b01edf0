package com.spectrayan.spector.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.gateway.auth.Claims;
import com.spectrayan.spector.uplink.gateway.GatewayWorkerClient;
import com.spectrayan.spector.uplink.gateway.WorkerAdminClient;
import com.spectrayan.spector.uplink.transport.UplinkDialer;
import com.spectrayan.spector.uplink.wire.StatusReport;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code spector status --gateway URL} prints a gateway's ring, routing cache per level, Redis,
 * workers and active relays from its {@code /gateway/v1/status} (a bearer token from {@code
 * --token-file} or {@code SPECTOR_TOKEN}). {@code spector status --worker-admin PORT} asks a worker
 * on this machine for its status over its loopback admin port; the client it uses is a {@link
 * WorkerAdminClient}: it has no relay methods.
 */
@Command(
        name = "status",
        mixinStandardHelpOptions = true,
        description =
                "Print a gateway's status (--gateway) or a worker's, from its loopback admin port (--worker-admin).")
final class StatusCommand implements java.util.concurrent.Callable<Integer> {
    /** Longest wait for the admin connection and the answer. */
    static final Duration TIMEOUT = Duration.ofSeconds(10);

    /** The environment variable read for the gateway's bearer token when no file is given. */
    static final String TOKEN_ENV = "SPECTOR_TOKEN";

    private static final ObjectMapper JSON = new ObjectMapper();

    @Spec
    @SuppressWarnings("NullAway.Init") // injected by picocli before call()
    CommandSpec spec;

    @ArgGroup(exclusive = true, multiplicity = "1")
    @SuppressWarnings("NullAway.Init") // injected by picocli before call()
    Which which;

    static final class Which {
        @Option(
                names = "--gateway",
                paramLabel = "URL",
                description = "The gateway's base URL, e.g. http://127.0.0.1:7070.")
        @Nullable
        URI gateway;

        @Option(names = "--worker-admin", paramLabel = "PORT", description = "The worker's loopback admin port.")
        @Nullable
        Integer workerAdminPort;
    }

    @Option(
            names = "--token-file",
            paramLabel = "FILE",
            description = "A JWT for the gateway (default: $" + TOKEN_ENV + ").")
    @Nullable
    Path tokenFile;

    @Option(names = "--json", description = "Print the gateway's status JSON as it came.")
    boolean json;

    @Override
    public Integer call() throws InterruptedException, IOException {
        URI g = which.gateway;
        if (g != null) {
            return gateway(g);
        }
        Integer port = which.workerAdminPort;
        return worker(port == null ? 0 : port);
    }

    private int gateway(URI base) throws IOException, InterruptedException {
        String token = tokenFile != null ? Secrets.read(tokenFile) : System.getenv(TOKEN_ENV);
        HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve("/gateway/v1/status"))
                .timeout(TIMEOUT)
                .header("Accept", "application/json");
        if (token != null && !token.isBlank()) {
            request.header("Authorization", "Bearer " + token.strip());
        }
        HttpResponse<String> r;
        HttpClient http = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
        try {
            r = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw SpectorException.of(
                    ErrorCode.OWNER_UNREACHABLE,
                    "no answer from the gateway at " + base + ": " + e,
                    Map.of("owner", String.valueOf(base)));
        }
        if (r.statusCode() != 200) {
            throw refusal(r);
        }
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(r.body());
        } else {
            print(out, base, JSON.readTree(r.body()));
        }
        out.flush();
        return 0;
    }

    /** The gateway's problem+json answer as the error it names, so the exit code follows the contract. */
    private static SpectorException refusal(HttpResponse<String> r) {
        String detail = r.body();
        ErrorCode code = ErrorCode.INTERNAL;
        try {
            JsonNode problem = JSON.readTree(r.body());
            detail = problem.path("detail").asText(detail);
            for (ErrorCode c : ErrorCode.values()) {
                if (c.name().equals(problem.path("code").asText())) {
                    code = c;
                }
            }
        } catch (IOException e) {
            // not problem+json: keep the raw body as the detail
        }
        String hint = code == ErrorCode.UNAUTHENTICATED
                ? " (pass --token-file FILE or set " + TOKEN_ENV + ")"
                : code == ErrorCode.FORBIDDEN
                        ? " (mint one with: spector token --secret-file FILE --tenant T --scope " + Claims.ADMIN_SCOPE
                                + ")"
                        : "";
        return SpectorException.of(code, "gateway answered " + r.statusCode() + ": " + detail + hint, Map.of());
    }

    static void print(PrintWriter out, URI base, JsonNode s) {
        out.printf(
                "gateway    %s  cell %s%s%n",
                base, s.path("cell").asText(), s.path("draining").asBoolean() ? "  DRAINING" : "");
        JsonNode ring = s.path("ring");
        out.printf(
                "ring       epoch %d, %d members%n",
                ring.path("epoch").asLong(), ring.path("members").size());
        for (JsonNode m : ring.path("members")) {
            out.printf("  %-22s %s%n", m.path("id").asText(), m.path("url").asText());
        }
        JsonNode routing = s.path("routing");
        JsonNode l1 = routing.path("l1");
        JsonNode l2 = routing.path("l2");
        out.printf(
                "cache      L1 %d entries, %d hits%s | L2 %s | L3 %d hits%n",
                l1.path("entries").asLong(),
                l1.path("hits").asLong(),
                l1.path("bypassed").asBoolean() ? " (bypassed)" : "",
                l2.path("enabled").asBoolean()
                        ? l2.path("hits").asLong() + " hits, "
                                + l2.path("errors").asLong() + " errors"
                        : "off",
                routing.path("l3").path("hits").asLong());
        out.printf(
                "           invalidations %d received, %d published; %d misdirected (421)%n",
                routing.path("invalidations").path("received").asLong(),
                routing.path("invalidations").path("published").asLong(),
                routing.path("misdirected").asLong());
        JsonNode redis = s.path("redis");
        out.printf(
                "redis      %s%n",
                !redis.path("enabled").asBoolean()
                        ? "off"
                        : (redis.path("connected").asBoolean() ? "connected" : "DISCONNECTED")
                                + (redis.path("subscribed").asBoolean() ? ", subscribed" : ", NOT subscribed"));
        out.printf(
                "exchanges  %d in flight on %d client connections, %d owner connections (%d event streams)%n",
                s.path("exchangesInFlight").asLong(),
                s.path("clientConnections").asLong(),
                s.path("ownerConnections").asLong(),
                s.path("ownerStreams").asLong());
        JsonNode workers = s.path("workers");
        out.printf(
                "workers    %d connected, %d active relays%n",
                workers.size(), s.path("activeRelays").asLong());
        for (JsonNode w : workers) {
            List<String> targets = new ArrayList<>();
            w.path("targets").forEach(t -> targets.add(t.asText()));
            out.printf(
                    "  %-22s targets %s, %d relays, %d status misses%n",
                    w.path("id").asText(),
                    targets.isEmpty() ? "(none yet)" : String.join(",", targets),
                    w.path("activeRelays").asLong(),
                    w.path("statusMisses").asLong());
            for (JsonNode l : w.path("links")) {
                out.printf(
                        "    link %-2d from %-22s since %s, %d relays, %d status misses%n",
                        l.path("slot").asInt(),
                        l.path("remote").asText(),
                        l.path("connectedAt").asText(),
                        l.path("activeRelays").asLong(),
                        l.path("statusMisses").asLong());
            }
        }
    }

    private int worker(int port) throws InterruptedException {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        CompletableFuture<StatusReport> report = new CompletableFuture<>();
        UplinkDialer dialer = UplinkDialer.builder(
                        URI.create("ws://127.0.0.1:" + port + "/uplink"), "status-cli", "local", group)
                .onConnected(channel -> {
                    GatewayWorkerClient client = GatewayWorkerClient.over("status-cli", channel);
                    WorkerAdminClient admin = client;
                    admin.statusGet().whenComplete((r, e) -> {
                        if (e != null) {
                            report.completeExceptionally(e);
                        } else {
                            report.complete(r);
                        }
                    });
                    return client;
                })
                .onAttemptFailed(report::completeExceptionally)
                .build();
        try {
            dialer.start();
            StatusReport r = report.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            PrintWriter out = spec.commandLine().getOut();
            out.println("worker        " + r.workerId());
            out.println("targets       " + String.join(", ", r.targets()));
            out.println("activeRelays  " + r.activeRelays());
            out.println("startedAt     " + r.startedAt());
            out.flush();
            return 0;
        } catch (ExecutionException | TimeoutException e) {
            throw SpectorException.of(
                    ErrorCode.DAEMON_CONNECTION_LOST,
                    "no status from the worker admin port " + port + ": " + e.getMessage(),
                    Map.of());
        } finally {
            dialer.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }
}
