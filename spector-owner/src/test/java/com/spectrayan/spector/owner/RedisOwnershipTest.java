package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.OwnershipResolver;
import com.spectrayan.spector.cluster.routing.PublishedRing;
import com.spectrayan.spector.cluster.routing.RedisRouting;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.RedisCommands;
import com.spectrayan.spector.testkit.RedisServerExtension;
import java.net.URI;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
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

    /** How often the owners store their own routes in L2 again here, instead of 10 s. */
    private static final Duration ROUTE_REFRESH = Duration.ofMillis(100);

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

    /**
     * Defends review finding 2 end to end: after a namespace moved (here an override at epoch 2,
     * stored in L2 by the owner), a ring published at epoch 2 that maps the namespace elsewhere was
     * taken, and both the override's owner and the ring's served it. The publish is now refused, so
     * the override keeps the key; a ring at 3 is taken and outranks it.
     */
    @Test
    void shouldRefuseARingPublishedAtTheEpochOfAnOverride() throws Exception {
        HttpResponse<byte[]> r = new OwnerClient(owner)
                .postJson(
                        "/admin/ownership",
                        "{\"tenant\":\"acme\",\"namespace\":\"orders\",\"owner\":\"owner-1\",\"epoch\":2}");
        assertThat(OwnerClient.json(r).path("published").asBoolean()).isTrue();
        CellRing tie = CellRing.of(
                2,
                Map.of("owner-0", URI.create("http://127.0.0.1:1"), "owner-3", URI.create("http://127.0.0.1:3")),
                CellRing.Source.REDIS);

        assertThatThrownBy(() -> PublishedRing.publish(redis.uri(), CELL, tie, Clock.systemUTC()))
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST))
                .hasMessageContaining("expected: > 2, the epoch a namespace move or ownership override took");
        assertThat(owner.guard().viewOf(RoutingKey.of(CELL, "acme", "orders")))
                .as("the override still decides")
                .isEqualTo(new RouteEntry("owner-1", 2, 2));

        CellRing above = CellRing.of(3, tie.urls(), CellRing.Source.REDIS);
        PublishedRing.publish(redis.uri(), CELL, above, Clock.systemUTC());
        await("the owner took the ring above the floor")
                .atMost(WAIT)
                .until(() -> owner.guard().snapshot().epoch() == 3);
        assertThat(owner.guard().viewOf(RoutingKey.of(CELL, "acme", "orders")).epoch())
                .as("a ring above the floor outranks the override")
                .isEqualTo(3);
    }

    /**
     * Defends review finding 3: a moved namespace's L2 entry was written once, with the L2 TTL, so
     * once it lapsed gateways routed by the ring to the old owner, and with the old owner stopped
     * the namespace was down though its new owner was healthy. The new owner now stores the entry
     * again while it holds the key: here the entry is deleted (as its TTL would end it) after the
     * old owner stopped, and comes back naming the new owner.
     */
    @Test
    void shouldKeepAMovedNamespacesRouteInL2AfterItsOldOwnerStops() throws Exception {
        try (ReferenceOwner newOwner = ReferenceOwner.start(OwnerSpec.builder("owner-1")
                .cellId(CELL)
                .ringMembers(MEMBERS)
                .redisUri(redis.uri())
                .routeRefresh(ROUTE_REFRESH)
                .build())) {
            await("the new owner connected to Redis").atMost(WAIT).until(newOwner::isRedisConnected);
            String ns = namespaceOf("owner-0");
            RoutingKey key = RoutingKey.of(CELL, "acme", ns);
            HttpResponse<byte[]> moved = new OwnerClient(owner)
                    .postJson(
                            "/admin/move",
                            "{\"tenant\":\"acme\",\"namespace\":\"" + ns + "\",\"to\":\"owner-1\",\"toUrl\":\""
                                    + newOwner.baseUri() + "\"}");
            assertThat(moved.statusCode())
                    .as(new String(moved.body(), java.nio.charset.StandardCharsets.UTF_8))
                    .isEqualTo(200);
            owner.close(); // the old owner is gone (drained away, or dead)

            assertThat(RedisCommands.send(redis.server().port(), "DEL spector:" + CELL + ":route:" + key.ringKey()))
                    .as("the entry lapses, as its TTL ends it")
                    .isEqualTo(":1");

            await("the new owner stored its route again")
                    .atMost(WAIT)
                    .until(
                            () -> gateway.cache()
                                    .get(key)
                                    .toCompletableFuture()
                                    .get(WAIT.toMillis(), TimeUnit.MILLISECONDS),
                            l2 -> l2.equals(Optional.of(new RouteEntry("owner-1", 2, 2))));
        }
    }

    private static String namespaceOf(String node) {
        KetamaRing ring = KetamaRing.of(1, MEMBERS);
        for (int i = 0; ; i++) {
            if (ring.ownerOf("acme/ns-" + i).equals(node)) {
                return "ns-" + i;
            }
        }
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
