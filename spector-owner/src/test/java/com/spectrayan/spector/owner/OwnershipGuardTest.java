package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** Every rule of {@link OwnershipGuard}, each at its limit and one past it. */
final class OwnershipGuardTest {
    private static final List<String> MEMBERS = List.of("owner-0", "owner-1", "owner-2");
    private static final KetamaRing RING = KetamaRing.of(1, MEMBERS);
    private static final RoutingKey KEY = RoutingKey.of("cell", "acme", "orders");
    private static final String OWNER = RING.ownerOf(KEY.ringKey());
    private static final String OTHER =
            MEMBERS.stream().filter(m -> !m.equals(OWNER)).findFirst().orElseThrow();

    private static final OptionalLong NONE = OptionalLong.empty();

    private final OwnershipGuard owner = OwnershipGuard.of(OWNER, RING);
    private final OwnershipGuard other = OwnershipGuard.of(OTHER, RING);

    private static OptionalLong of(long v) {
        return OptionalLong.of(v);
    }

    @Test
    void viewOf_withoutOverride_isTheRingOwnerAtTheRingEpochWithNoFence() {
        assertThat(owner.viewOf(KEY)).isEqualTo(new RouteEntry(OWNER, 1, RouteEntry.NO_FENCE));
    }

    @Test
    void decide_ringOwnerWithoutRoutingHeaders_serves() {
        OwnershipDecision read = owner.decide(KEY, NONE, NONE, false);
        OwnershipDecision write = owner.decide(KEY, NONE, NONE, true);

        assertThat(read.outcome()).as("a read with no headers on the owner").isEqualTo(OwnershipDecision.Outcome.SERVE);
        assertThat(write.outcome())
                .as("a write with no fence while the key has none")
                .isEqualTo(OwnershipDecision.Outcome.SERVE);
        assertThat(read.headers()).isEmpty();
        assertThat(read.status()).isEqualTo(200);
    }

    @Test
    void decide_anotherNodeOwnsTheKey_isMisdirectedWithTheView() throws Exception {
        OwnershipDecision d = other.decide(KEY, of(1), of(0), false);

        assertThat(d.outcome()).as("not-owner rule").isEqualTo(OwnershipDecision.Outcome.MISDIRECTED);
        assertThat(d.reason()).isEqualTo(OwnershipDecision.REASON_NOT_OWNER);
        assertThat(d.status()).isEqualTo(421);
        assertThat(d.headers())
                .containsEntry(SpectorHeaders.OWNER, OWNER)
                .containsEntry(SpectorHeaders.EPOCH, "1")
                .containsEntry(SpectorHeaders.FENCE, "0")
                .containsEntry("Cache-Control", "no-store");
        JsonNode problem = OwnerClient.JSON.readTree(d.problemJson("/api/v1/namespaces/orders/echo"));
        assertThat(problem.path("type").asText()).isEqualTo("urn:spector:error:MISDIRECTED");
        assertThat(problem.path("status").asInt()).isEqualTo(421);
        assertThat(problem.path("code").asText()).isEqualTo("MISDIRECTED");
        assertThat(problem.path("details").path("owner").asText()).isEqualTo(OWNER);
        assertThat(problem.path("instance").asText()).isEqualTo("/api/v1/namespaces/orders/echo");
    }

    @Test
    void decide_notOwnerAndNewerEpoch_isMisdirectedFirst() {
        OwnershipDecision d = other.decide(KEY, of(9), NONE, true);

        assertThat(d.reason())
                .as("the not-owner rule runs before the epoch rules")
                .isEqualTo(OwnershipDecision.REASON_NOT_OWNER);
    }

    @Test
    void decide_requestEpochOlder_isMisdirectedWithTheNewerView() {
        owner.setOverride(KEY, OWNER, 5, 5);

        OwnershipDecision older = owner.decide(KEY, of(4), of(5), false);
        OwnershipDecision equal = owner.decide(KEY, of(5), of(5), false);

        assertThat(older.outcome()).as("epoch one below the view").isEqualTo(OwnershipDecision.Outcome.MISDIRECTED);
        assertThat(older.reason()).isEqualTo(OwnershipDecision.REASON_STALE_EPOCH);
        assertThat(older.headers())
                .containsEntry(SpectorHeaders.OWNER, OWNER)
                .containsEntry(SpectorHeaders.EPOCH, "5")
                .containsEntry(SpectorHeaders.FENCE, "5");
        assertThat(equal.outcome()).as("epoch equal to the view").isEqualTo(OwnershipDecision.Outcome.SERVE);
    }

    @Test
    void decide_requestEpochNewer_isLaggingWithRetryAfter() throws Exception {
        OwnershipDecision newer = owner.decide(KEY, of(2), NONE, false);
        OwnershipDecision equal = owner.decide(KEY, of(1), NONE, false);

        assertThat(newer.outcome()).as("epoch one above the view").isEqualTo(OwnershipDecision.Outcome.LAGGING);
        assertThat(newer.status()).isEqualTo(503);
        assertThat(newer.headers()).containsEntry("Retry-After", "1").doesNotContainKey(SpectorHeaders.OWNER);
        assertThat(newer.headers())
                .as("the owner's own epoch, older than the request's: the gateway holds the request on it")
                .containsEntry(SpectorHeaders.EPOCH, "1");
        JsonNode problem = OwnerClient.JSON.readTree(newer.problemJson(null));
        assertThat(problem.path("code").asText()).isEqualTo(ErrorCode.GATEWAY_ROUTING_FAILURE.name());
        assertThat(problem.path("details").path("reason").asText()).isEqualTo("owner-lagging");
        assertThat(equal.outcome()).as("epoch equal to the view").isEqualTo(OwnershipDecision.Outcome.SERVE);
    }

    @Test
    void decide_writeFenceLowerThanTheView_isMisdirectedBeforeAnySideEffect() {
        owner.setOverride(KEY, OWNER, 2, 7);

        OwnershipDecision lower = owner.decide(KEY, of(2), of(6), true);
        OwnershipDecision equal = owner.decide(KEY, of(2), of(7), true);
        OwnershipDecision higher = owner.decide(KEY, of(2), of(8), true);
        OwnershipDecision absent = owner.decide(KEY, of(2), NONE, true);
        OwnershipDecision read = owner.decide(KEY, of(2), of(6), false);

        assertThat(lower.outcome()).as("write fence one below").isEqualTo(OwnershipDecision.Outcome.MISDIRECTED);
        assertThat(lower.reason()).isEqualTo(OwnershipDecision.REASON_STALE_FENCE);
        assertThat(lower.headers()).containsEntry(SpectorHeaders.FENCE, "7");
        assertThat(equal.outcome()).as("write fence equal").isEqualTo(OwnershipDecision.Outcome.SERVE);
        assertThat(higher.outcome()).as("write fence above").isEqualTo(OwnershipDecision.Outcome.SERVE);
        assertThat(absent.outcome())
                .as("a write without a fence counts as fence 0")
                .isEqualTo(OwnershipDecision.Outcome.MISDIRECTED);
        assertThat(read.outcome()).as("reads are not fenced").isEqualTo(OwnershipDecision.Outcome.SERVE);
    }

    @Test
    void decide_fromHeaders_parsesEpochFenceAndMethod() {
        owner.setOverride(KEY, OWNER, 1, 3);

        assertThat(owner.decide(KEY, "PUT", "1", "2").reason()).isEqualTo(OwnershipDecision.REASON_STALE_FENCE);
        assertThat(owner.decide(KEY, "GET", "1", "2").serves()).isTrue();
        assertThat(owner.decide(KEY, "delete", null, " 3 ").serves()).isTrue();
        assertThat(owner.decide(KEY, "POST", "2", null).outcome()).isEqualTo(OwnershipDecision.Outcome.LAGGING);
    }

    @Test
    void parseToken_atAndPastTheLongRange_refusesWhatIsNotADecimal() {
        assertThat(OwnershipGuard.parseToken("X-Spector-Epoch", null)).isEmpty();
        assertThat(OwnershipGuard.parseToken("X-Spector-Epoch", "0")).hasValue(0);
        assertThat(OwnershipGuard.parseToken("X-Spector-Epoch", "9223372036854775807"))
                .hasValue(Long.MAX_VALUE);
        for (String bad : List.of("9223372036854775808", "-1", "", "1e3", "0x10", "abc")) {
            assertThatThrownBy(() -> OwnershipGuard.parseToken("X-Spector-Epoch", bad))
                    .as("'%s' is not an epoch", bad)
                    .isInstanceOfSatisfying(
                            SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST))
                    .hasMessageContaining("X-Spector-Epoch");
        }
    }

    @Test
    void setOverride_movingBackwards_isRefused() {
        owner.setOverride(KEY, OTHER, 5, 5);

        assertThatThrownBy(() -> owner.setOverride(KEY, OWNER, 4, 9))
                .as("older epoch")
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining("older");
        assertThatThrownBy(() -> owner.setOverride(KEY, OWNER, 5, 4))
                .as("same epoch, lower fence")
                .isInstanceOf(SpectorException.class);
        assertThatThrownBy(() -> owner.setOverride(KEY, OWNER, 5, 5))
                .as("same version, another owner")
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining("already names");
        assertThat(owner.setOverride(KEY, OTHER, 5, 5))
                .as("same version, same owner")
                .isEqualTo(new RouteEntry(OTHER, 5, 5));
        assertThat(owner.setOverride(KEY, OWNER, 5, 6))
                .as("same epoch, fence one up")
                .isEqualTo(new RouteEntry(OWNER, 5, 6));
        assertThat(owner.viewOf(KEY)).isEqualTo(new RouteEntry(OWNER, 5, 6));
    }

    @Test
    void setOverride_belowTheRingView_isRefused() {
        OwnershipGuard guard = OwnershipGuard.of(OWNER, KetamaRing.of(3, MEMBERS));

        assertThatThrownBy(() -> guard.setOverride(KEY, OTHER, 2, 100))
                .as("epoch below the ring's")
                .isInstanceOf(SpectorException.class);
        assertThatThrownBy(() -> guard.setOverride(KEY, OTHER, 3, 0))
                .as("the ring's version, another owner")
                .isInstanceOf(SpectorException.class);
        assertThat(guard.setOverride(KEY, OTHER, 3, 1)).isEqualTo(new RouteEntry(OTHER, 3, 1));
        assertThat(guard.decide(KEY, NONE, NONE, false).reason()).isEqualTo(OwnershipDecision.REASON_NOT_OWNER);
    }

    @Test
    void offerRing_aKeyWhoseOwnerChanged_isMisdirectedToTheNewOwnerAtTheNewEpoch() {
        String newcomer = newcomerOwning(KEY);
        CellRing next = CellRing.ofIds(KetamaRing.of(2, withNewcomer(newcomer)), CellRing.Source.REDIS);

        assertThat(owner.offerRing(next)).isTrue();

        OwnershipDecision d = owner.decide(KEY, of(1), NONE, false);
        assertThat(d.outcome()).isEqualTo(OwnershipDecision.Outcome.MISDIRECTED);
        assertThat(d.view()).isEqualTo(new RouteEntry(newcomer, 2, RouteEntry.NO_FENCE));
        assertThat(owner.snapshot().source()).isEqualTo(CellRing.Source.REDIS);
    }

    @Test
    void offerRing_anOlderOrEqualEpoch_isIgnored() {
        assertThat(owner.offerRing(CellRing.ofIds(KetamaRing.of(1, List.of(OTHER)), CellRing.Source.CONFIG)))
                .isFalse();
        assertThat(owner.offerRing(CellRing.ofIds(KetamaRing.of(0, List.of(OTHER)), CellRing.Source.REDIS)))
                .isFalse();

        assertThat(owner.viewOf(KEY)).isEqualTo(new RouteEntry(OWNER, 1, RouteEntry.NO_FENCE));
    }

    @Test
    void offerRing_atAHigherEpoch_outranksAnOlderOverride_andNotANewerOne() {
        RoutingKey second = RoutingKey.of("cell", "acme", "second");
        owner.setOverride(KEY, OTHER, 2, 1);
        owner.setOverride(second, OTHER, 4, 1);

        owner.offerRing(CellRing.ofIds(KetamaRing.of(3, MEMBERS), CellRing.Source.REDIS));

        assertThat(owner.viewOf(KEY)).as("override of epoch 2 < ring 3").isEqualTo(new RouteEntry(OWNER, 3, 0));
        assertThat(owner.viewOf(second)).as("override of epoch 4 >= ring 3").isEqualTo(new RouteEntry(OTHER, 4, 1));
    }

    /** Returns a fourth member that takes {@code key} from its owner on a ring of epoch 2. */
    private static String newcomerOwning(RoutingKey key) {
        for (int i = 3; i < 1000; i++) {
            String id = "owner-" + i;
            if (KetamaRing.of(2, withNewcomer(id)).ownerOf(key.ringKey()).equals(id)) {
                return id;
            }
        }
        throw new IllegalStateException("no newcomer takes " + key);
    }

    private static List<String> withNewcomer(String id) {
        List<String> ids = new java.util.ArrayList<>(MEMBERS);
        ids.add(id);
        return ids;
    }

    @Test
    void setOverride_negativeOrMalformed_isBadRequest() {
        assertThatThrownBy(() -> owner.setOverride(KEY, OWNER, -1, 0)).hasMessageContaining("epoch: -1");
        assertThatThrownBy(() -> owner.setOverride(KEY, OWNER, 2, -1)).hasMessageContaining("fence: -1");
        assertThatThrownBy(() -> owner.setOverride(KEY, "a,b", 2, 2)).hasMessageContaining("owner");
        assertThatThrownBy(() -> owner.setOverride(KEY, "", 2, 2)).hasMessageContaining("owner");
    }

    @Test
    void decide_emptyRing_failsClosedWith503() {
        OwnershipGuard guard = OwnershipGuard.of("owner-0", KetamaRing.of(1, List.of()));

        assertThatThrownBy(() -> guard.decide(KEY, NONE, NONE, false))
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.GATEWAY_ROUTING_FAILURE));
    }

    @Test
    void isWrite_postPutPatchDelete_areWrites() {
        for (String m : List.of("POST", "PUT", "PATCH", "DELETE", "post")) {
            assertThat(OwnershipGuard.isWrite(m)).as(m).isTrue();
        }
        for (String m : List.of("GET", "HEAD", "OPTIONS", "TRACE")) {
            assertThat(OwnershipGuard.isWrite(m)).as(m).isFalse();
        }
    }

    @Test
    void problemJson_ofServe_isIllegal() {
        OwnershipDecision serve = owner.decide(KEY, NONE, NONE, false);

        assertThatThrownBy(() -> serve.problemJson(null)).isInstanceOf(IllegalStateException.class);
    }
}
