package com.spectrayan.spector.cli;

import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.cluster.routing.PublishedRing;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import java.io.PrintWriter;
import java.net.URI;
import java.time.Clock;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code spector ring publish|show}: the cell's live ring in Redis ({@link PublishedRing}). Every
 * gateway and reference owner of the cell with Redis follows it: a publish reaches them through
 * the announcement channel within a second, or through their 30 s re-read.
 *
 * <pre>
 * spector ring publish --redis redis://10.0.0.5:6379 --cell default --epoch 2 \
 *     --members owner-0=http://10.0.1.1:7070,owner-1=http://10.0.1.2:7070
 * spector ring show --redis redis://10.0.0.5:6379 --cell default
 * </pre>
 */
@Command(
        name = "ring",
        mixinStandardHelpOptions = true,
        description = "Publish or show the cell's ring in Redis, which every gateway and owner of the cell follows.",
        subcommands = {RingCommand.Publish.class, RingCommand.Show.class})
final class RingCommand implements Callable<Integer> {
    /** The smallest epoch a publish takes: gateways and owners start at epoch 1 by default. */
    static final long MIN_EPOCH = 1;

    @Spec
    @SuppressWarnings("NullAway.Init") // injected by picocli before call()
    CommandSpec spec;

    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return ErrorCode.BAD_REQUEST.cliExit();
    }

    /** The options both subcommands take. */
    static class Target {
        @Spec
        @SuppressWarnings("NullAway.Init") // injected by picocli before call()
        CommandSpec spec;

        @Option(
                names = "--redis",
                required = true,
                paramLabel = "URI",
                description = "The cell's Redis, redis://host:port (the gateways' spector.routing.redis.uri).")
        String redis = "";

        @Option(
                names = "--cell",
                paramLabel = "ID",
                description = "The cell id, spector.cell.id (default: ${DEFAULT-VALUE}).")
        String cell = "default";

        void check() {
            RoutingKey.checkName("cell", cell);
            if (!redis.startsWith("redis://") && !redis.startsWith("rediss://")) {
                throw SpectorException.badRequest(
                        "redis", "not a redis:// or rediss:// URI (expected: redis://host:port)");
            }
        }
    }

    /** {@code spector ring publish}: writes a ring at a higher epoch and announces it. */
    @Command(
            name = "publish",
            mixinStandardHelpOptions = true,
            description = {
                "Publish the cell's ring: refused unless --epoch is higher than the published one",
                "and than every epoch a namespace move took (the cell's epoch floor).",
                "Gateways and owners of the cell swap to it within a second."
            })
    static final class Publish extends Target implements Callable<Integer> {
        @Option(
                names = "--epoch",
                required = true,
                paramLabel = "N",
                description = "The ring's epoch: higher than the published one and the epoch floor (and >= 1).")
        long epoch;

        @Option(
                names = "--members",
                required = true,
                paramLabel = "ID=URL,...",
                description = "The members, as spector.cell.ring-members: id=http://host:port, comma-separated.")
        String members = "";

        @Override
        public Integer call() {
            check();
            if (epoch < MIN_EPOCH) {
                throw SpectorException.badRequest("epoch", epoch + " (expected: >= " + MIN_EPOCH + ")");
            }
            Map<String, URI> parsed = CellRing.parseMembers(members);
            CellRing ring = CellRing.of(epoch, parsed, CellRing.Source.REDIS);
            long receivers = PublishedRing.publish(redis, cell, ring, Clock.systemUTC());
            PrintWriter out = spec.commandLine().getOut();
            out.println("published ring epoch " + epoch + " for cell " + cell + ": " + parsed.size() + " members "
                    + parsed.keySet() + "; announced to " + receivers + " subscribers"
                    + (receivers == 0 ? " (none listening: gateways and owners read it at start or within 30 s)" : ""));
            out.flush();
            return 0;
        }
    }

    /** {@code spector ring show}: prints the published ring. */
    @Command(
            name = "show",
            mixinStandardHelpOptions = true,
            description = {
                "Print the cell's published ring: its epoch, then ID<TAB>URL per member.",
                "Exits 1 when none is published (gateways then route on spector.cell.ring-members)."
            })
    static final class Show extends Target implements Callable<Integer> {
        @Override
        public Integer call() {
            check();
            Optional<PublishedRing.Stored> stored = PublishedRing.read(redis, cell);
            if (stored.isEmpty()) {
                throw SpectorException.of(
                        ErrorCode.NOT_FOUND,
                        "no ring is published for cell " + cell + " (at " + PublishedRing.key(cell)
                                + "); its gateways route on spector.cell.ring-members",
                        Map.of("path", PublishedRing.key(cell)));
            }
            CellRing ring = stored.get().ring();
            PrintWriter out = spec.commandLine().getOut();
            out.println("cell " + cell + " epoch " + ring.epoch() + " published "
                    + (stored.get().publishedAt() == null
                            ? "(unknown)"
                            : stored.get().publishedAt()));
            ring.urls().forEach((id, url) -> out.println(id + "\t" + url));
            out.flush();
            return 0;
        }
    }
}
