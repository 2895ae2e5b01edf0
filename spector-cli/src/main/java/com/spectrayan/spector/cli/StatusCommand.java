package com.spectrayan.spector.cli;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.gateway.UplinkWorkerClient;
import com.spectrayan.spector.uplink.gateway.WorkerAdminClient;
import com.spectrayan.spector.uplink.transport.UplinkDialer;
import com.spectrayan.spector.uplink.wire.StatusReport;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.io.PrintWriter;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code spector status --worker-admin PORT}: asks a worker on this machine for its status over its
 * loopback admin port. The client it uses is a {@link WorkerAdminClient}: it has no relay methods.
 */
@Command(
        name = "status",
        mixinStandardHelpOptions = true,
        description = "Print a worker's status from its loopback admin port.")
final class StatusCommand implements java.util.concurrent.Callable<Integer> {
    /** Longest wait for the admin connection and the answer. */
    static final Duration TIMEOUT = Duration.ofSeconds(10);

    @Spec
    @SuppressWarnings("NullAway.Init") // injected by picocli before call()
    CommandSpec spec;

    @Option(names = "--worker-admin", required = true, paramLabel = "PORT", description = "The worker's admin port.")
    int port;

    @Override
    public Integer call() throws InterruptedException {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        CompletableFuture<StatusReport> report = new CompletableFuture<>();
        UplinkDialer dialer = UplinkDialer.builder(
                        URI.create("ws://127.0.0.1:" + port + "/uplink"), "status-cli", "local", group)
                .onConnected(channel -> {
                    WorkerAdminClient admin = UplinkWorkerClient.over("status-cli", channel);
                    admin.statusGet().whenComplete((r, e) -> {
                        if (e != null) {
                            report.completeExceptionally(e);
                        } else {
                            report.complete(r);
                        }
                    });
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
