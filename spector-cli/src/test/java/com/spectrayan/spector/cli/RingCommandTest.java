package com.spectrayan.spector.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.routing.PublishedRing;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.testkit.RedisCommands;
import com.spectrayan.spector.testkit.RedisServerExtension;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code spector ring publish|show} against a real {@code redis-server}: exit codes and what they print. */
final class RingCommandTest {
    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static final String MEMBERS = "owner-0=http://127.0.0.1:7101,owner-1=http://127.0.0.1:7102";

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        return SpectorCli.run(new PrintWriter(out, true), new PrintWriter(err, true), args);
    }

    private int publish(long epoch, String members) {
        return run(
                "ring",
                "publish",
                "--redis",
                redis.uri(),
                "--cell",
                "c1",
                "--epoch",
                Long.toString(epoch),
                "--members",
                members);
    }

    @Test
    void publish_thenShow_printsTheEpochAndEachMember() {
        assertThat(publish(3, MEMBERS)).as(err.toString()).isZero();
        assertThat(out.toString()).contains("published ring epoch 3 for cell c1: 2 members [owner-0, owner-1]");

        out.getBuffer().setLength(0);
        assertThat(run("ring", "show", "--redis", redis.uri(), "--cell", "c1")).isZero();
        assertThat(out.toString().lines()).first().asString().startsWith("cell c1 epoch 3 published 20");
        assertThat(out.toString().lines().skip(1))
                .containsExactly("owner-0\thttp://127.0.0.1:7101", "owner-1\thttp://127.0.0.1:7102");
    }

    @Test
    void publish_anEqualOrOlderEpoch_exitsWithBadRequestsCodeAndNamesTheStoredEpoch() {
        assertThat(publish(5, MEMBERS)).isZero();

        assertThat(publish(5, MEMBERS)).isEqualTo(ErrorCode.BAD_REQUEST.cliExit());
        assertThat(err.toString()).contains("BAD_REQUEST: epoch: 5 (expected: > 5, the epoch of the ring published");
        err.getBuffer().setLength(0);
        assertThat(publish(4, "owner-9=http://127.0.0.1:1")).isEqualTo(2);
        assertThat(err.toString()).contains("epoch: 4 (expected: > 5");

        assertThat(RedisCommands.send(redis.server().port(), "HGET " + PublishedRing.key("c1") + " epoch"))
                .as("the stored ring is unchanged")
                .isEqualTo("$1");
    }

    /**
     * Defends review finding 2 at the CLI: a publish refused because its epoch is not above the
     * cell's epoch floor (raised by a namespace move's L2 put) exits 2 and prints why and what to
     * publish instead, and writes nothing.
     */
    @Test
    void publish_notAboveTheEpochFloor_exitsWithBadRequestsCodeAndNamesTheFloor() {
        assertThat(publish(1, MEMBERS)).isZero();
        assertThat(RedisCommands.send(redis.server().port(), "SET " + PublishedRing.floorKey("c1") + " 2"))
                .isEqualTo("+OK");

        assertThat(publish(2, MEMBERS)).isEqualTo(ErrorCode.BAD_REQUEST.cliExit());
        assertThat(err.toString())
                .contains("BAD_REQUEST: epoch: 2 (expected: > 2, the epoch a namespace move or ownership override took"
                        + " in cell c1 (spector:c1:epoch-floor)")
                .contains("publish at 3 or higher")
                .doesNotContain("\tat ");
        assertThat(RedisCommands.send(redis.server().port(), "HGET " + PublishedRing.key("c1") + " epoch"))
                .as("the stored ring is unchanged")
                .isEqualTo("$1");
        assertThat(publish(3, MEMBERS)).as(err.toString()).isZero();
    }

    @Test
    void publish_epochZero_isRefused() {
        assertThat(publish(0, MEMBERS)).isEqualTo(2);
        assertThat(err.toString()).contains("epoch: 0 (expected: >= 1)");
    }

    @Test
    void publish_malformedMembers_exit2WithoutWritingAnything() {
        assertThat(publish(1, "owner-0=ftp://h:1")).isEqualTo(2);
        assertThat(err.toString()).contains("BAD_REQUEST: ringMembers:");
        assertThat(run("ring", "show", "--redis", redis.uri(), "--cell", "c1")).isEqualTo(1);
    }

    @Test
    void show_nothingPublished_exits1AndSaysSo() {
        assertThat(run("ring", "show", "--redis", redis.uri(), "--cell", "c1"))
                .isEqualTo(ErrorCode.NOT_FOUND.cliExit());
        assertThat(err.toString()).contains("no ring is published for cell c1");
    }

    @Test
    void publish_redisDown_exits1WithoutAStackTrace() {
        redis.stop();

        assertThat(publish(1, MEMBERS)).isEqualTo(1);
        assertThat(err.toString())
                .contains("GATEWAY_ROUTING_FAILURE: Redis at redis://127.0.0.1:")
                .doesNotContain("\tat ");
    }

    @Test
    void ring_withoutASubcommand_printsUsageAndExits2() {
        assertThat(run("ring")).isEqualTo(2);
        assertThat(err.toString()).contains("publish").contains("show");
    }
}
