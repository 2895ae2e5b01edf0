package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.testkit.FakeClock;
import com.spectrayan.spector.testkit.RedisCommands;
import com.spectrayan.spector.testkit.RedisServerExtension;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The registry of uplink holders on a real {@code redis-server}, two replicas (two clients) on
 * clocks the test moves: a field is believed until its {@code until} and not a millisecond longer,
 * a reader deletes what it finds stale or unreadable, the key expires on its own, and a registry
 * whose Redis is down fails at once.
 */
final class UplinkHoldersTest {
    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static final String CELL = "cell-a";
    private static final String A = "10.0.0.7:7090";
    private static final String B = "10.0.0.8:7090";

    private final FakeClock clock = FakeClock.at(Instant.parse("2026-01-01T00:00:00Z"));
    private RedisRouting writer;
    private RedisRouting reader;
    private UplinkHolders atA;
    private UplinkHolders atB;

    @BeforeEach
    void connect() {
        writer = RedisRouting.connect(redis.uri(), CELL, Limits.L2_TTL, Limits.L2_TIMEOUT);
        reader = RedisRouting.connect(redis.uri(), CELL, Limits.L2_TTL, Limits.L2_TIMEOUT);
        atA = writer.uplinkHolders(clock);
        atB = reader.uplinkHolders(clock);
        await("both connected").atMost(Duration.ofSeconds(10)).until(() -> atA.isConnected() && atB.isConnected());
    }

    @AfterEach
    void close() {
        writer.close();
        reader.close();
    }

    @Test
    void put_byTwoReplicas_bothAreHolders_andTheKeyExpiresWithinKeyTtl() throws Exception {
        get(atA.put("w1", A, 2));
        get(atB.put("w1", B, 1));

        assertThat(get(atB.holders("w1")))
                .extracting(UplinkHolders.Holder::address, UplinkHolders.Holder::links)
                .containsExactlyInAnyOrder(
                        org.assertj.core.groups.Tuple.tuple(A, 2), org.assertj.core.groups.Tuple.tuple(B, 1));
        assertThat(get(atA.holders("w1")).get(0).untilMillis())
                .as("until = now + FIELD_TTL")
                .isEqualTo(clock.millis() + UplinkHolders.FIELD_TTL.toMillis());
        long pttl = Long.parseLong(RedisCommands.send(redis.server().port(), "PTTL " + atA.key("w1"))
                .substring(1));
        assertThat(pttl).isBetween(1L, UplinkHolders.KEY_TTL.toMillis());
        assertThat(get(atB.holders("w2"))).as("a worker nobody holds").isEmpty();
    }

    @Test
    void holders_atUntil_isBelieved_oneMillisecondPast_isLeftOutAndDeleted() throws Exception {
        get(atA.put("w1", A, 1));
        get(atB.put("w1", B, 3));
        clock.advance(UplinkHolders.FIELD_TTL);

        assertThat(get(atB.holders("w1"))).as("at until").hasSize(2);

        clock.advance(Duration.ofMillis(1));
        get(atA.put("w1", A, 1)); // A refreshed; B did not

        List<UplinkHolders.Holder> live = get(atB.holders("w1"));
        assertThat(live).extracting(UplinkHolders.Holder::address).containsExactly(A);
        await("the stale field is deleted by its reader")
                .atMost(Duration.ofSeconds(5))
                .until(() -> hexists("w1", B).equals(":0"));
        assertThat(hexists("w1", A)).isEqualTo(":1");
    }

    @Test
    void holders_unreadableField_isLeftOutAndDeleted() throws Exception {
        get(atA.put("w1", A, 1));
        RedisCommands.send(redis.server().port(), "HSET " + atA.key("w1") + " " + B + " not-json");

        assertThat(get(atB.holders("w1")))
                .extracting(UplinkHolders.Holder::address)
                .containsExactly(A);
        await("the unreadable field is deleted")
                .atMost(Duration.ofSeconds(5))
                .until(() -> hexists("w1", B).equals(":0"));
    }

    @Test
    void deleteIfUnchanged_fieldRewrittenSinceTheRead_isKept() {
        String key = atA.key("w1");
        int port = redis.server().port();
        RedisCommands.send(port, "HSET " + key + " " + A + " new");

        String reply = RedisCommands.send(
                port,
                "EVAL \"" + UplinkHolders.DELETE_IF_UNCHANGED.replace("\n", " ") + "\" 1 " + key + " " + A + " old");

        assertThat(reply).isEqualTo(":0");
        assertThat(hexists("w1", A)).isEqualTo(":1");
    }

    @Test
    void moving_isAFieldWithNoLinks_believedForMovingTtl_thenLeftOutAndDeleted() throws Exception {
        get(atA.put("w1", A, 2));
        get(atA.moving("w1", A));

        List<UplinkHolders.Holder> seen = get(atB.holders("w1"));
        assertThat(seen).singleElement().satisfies(h -> {
            assertThat(h.moving()).as("links 0: moving").isTrue();
            assertThat(h.untilMillis()).isEqualTo(clock.millis() + UplinkHolders.MOVING_TTL.toMillis());
        });
        clock.advance(UplinkHolders.MOVING_TTL);
        assertThat(get(atB.holders("w1"))).as("at until").hasSize(1);
        clock.advance(Duration.ofMillis(1));
        assertThat(get(atB.holders("w1"))).as("one millisecond past MOVING_TTL").isEmpty();
        await("the stale moving field is deleted by its reader")
                .atMost(Duration.ofSeconds(5))
                .until(() -> hexists("w1", A).equals(":0"));
    }

    @Test
    void remove_theField_isGone() throws Exception {
        get(atA.put("w1", A, 1));
        get(atA.remove("w1", A));

        assertThat(get(atB.holders("w1"))).isEmpty();
    }

    @Test
    void parse_valuesThisClassDoesNotWrite_areNotHolders() {
        assertThat(UplinkHolders.parse(A, "{\"links\":1,\"until\":5}")).isNotNull();
        assertThat(UplinkHolders.parse(A, "{\"links\":0,\"until\":5}"))
                .as("a moving field")
                .extracting(UplinkHolders.Holder::moving)
                .isEqualTo(true);
        assertThat(UplinkHolders.parse(A, "{\"links\":-1,\"until\":5}")).isNull();
        assertThat(UplinkHolders.parse(A, "{\"links\":\"1\",\"until\":5}")).isNull();
        assertThat(UplinkHolders.parse(A, "{\"links\":1.5,\"until\":5}")).isNull();
        assertThat(UplinkHolders.parse(A, "{\"links\":1}")).isNull();
        assertThat(UplinkHolders.parse(A, null)).isNull();
        String empty = "{\"links\":1,\"until\":5,\"x\":\"\"}";
        String atLimit = "{\"links\":1,\"until\":5,\"x\":\""
                + "y".repeat(UplinkHolders.MAX_VALUE_CHARS - empty.length()) + "\"}";
        assertThat(atLimit).hasSize(UplinkHolders.MAX_VALUE_CHARS);
        assertThat(UplinkHolders.parse(A, atLimit)).as("at MAX_VALUE_CHARS").isNotNull();
        assertThat(UplinkHolders.parse(
                        A, "{\"links\":1,\"until\":5,\"x\":\"" + "y".repeat(UplinkHolders.MAX_VALUE_CHARS) + "\"}"))
                .as("past MAX_VALUE_CHARS")
                .isNull();
    }

    @Test
    void holders_redisDown_failsWithinTheCommandTimeout() {
        redis.stop();
        await("the registry saw Redis go").atMost(Duration.ofSeconds(10)).until(() -> !atB.isConnected());
        long started = System.nanoTime();

        assertThatThrownBy(() -> get(atB.holders("w1"))).isInstanceOf(ExecutionException.class);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started))
                .isLessThanOrEqualTo(Limits.L2_TIMEOUT.toMillis() + 500);
    }

    private String hexists(String worker, String field) {
        return RedisCommands.send(redis.server().port(), "HEXISTS " + atA.key(worker) + " " + field);
    }

    private static <T> T get(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(5, TimeUnit.SECONDS);
    }
}
