package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.OwnershipResolver;
import com.spectrayan.spector.cluster.routing.RedisRouting;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.testkit.RedisServerExtension;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An owner with a real {@code redis-server}: moving ownership writes the new view to L2 and
 * publishes an invalidation that a gateway's resolver receives.
 */
final class RedisOwnershipTest {
    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final String CELL = "cell-a";
    private static final List<String> MEMBERS = List.of("owner-0", "owner-1");

    private ReferenceOwner owner;
    private RedisRouting gateway;
    private WaterfallRoutingResolver resolver;

    @BeforeEach
    void start() {
        owner = ReferenceOwner.start(OwnerSpec.builder("owner-0")
                .cellId(CELL)
                .ringMembers(MEMBERS)
                .redisUri(redis.uri())
                .build());
        gateway = RedisRouting.connect(redis.uri(), CELL, Limits.L2_TTL, Limits.L2_TIMEOUT);
        resolver = WaterfallRoutingResolver.builder(CELL, new OwnershipResolver(KetamaRing.of(1, MEMBERS)))
                .l2(gateway.cache())
                .build();
        gateway.subscribe(resolver);
        await("owner and gateway connected to Redis")
                .atMost(WAIT)
                .until(() -> owner.isRedisConnected() && gateway.isConnected() && gateway.isSubscribed());
    }

    @AfterEach
    void stop() {
        gateway.close();
        owner.close();
    }

    @Test
    void shouldPublishAnOverrideToL2AndTheInvalidationChannel() throws Exception {
        OwnerClient client = new OwnerClient(owner);

        HttpResponse<byte[]> r = client.postJson(
                "/admin/ownership", "{\"tenant\":\"acme\",\"namespace\":\"orders\",\"owner\":\"owner-1\",\"epoch\":4}");

        JsonNode view = OwnerClient.json(r);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(view.path("published").asBoolean())
                .as("stored and published before answering")
                .isTrue();
        Optional<RouteEntry> l2 = gateway.cache()
                .get(RoutingKey.of(CELL, "acme", "orders"))
                .toCompletableFuture()
                .get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(l2).as("the L2 entry a gateway reads").hasValue(new RouteEntry("owner-1", 4, 4));
        await("the gateway received the invalidation")
                .atMost(WAIT)
                .until(() -> resolver.metrics().invalidationsReceived() == 1);
    }

    @Test
    void shouldAnswerWithoutPublishingWhileRedisIsDown() throws Exception {
        redis.stop();
        await("the owner saw Redis go").atMost(WAIT).until(() -> !owner.isRedisConnected());

        HttpResponse<byte[]> r =
                new OwnerClient(owner).postJson("/admin/ownership", "{\"namespace\":\"orders\",\"owner\":\"owner-1\"}");

        assertThat(r.statusCode()).as("the override still applies locally").isEqualTo(200);
        assertThat(OwnerClient.json(r).path("published").asBoolean()).isFalse();
        assertThat(owner.guard().viewOf(RoutingKey.ofUntenanted(CELL, "orders")).owner())
                .isEqualTo("owner-1");
    }
}
