package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The ring against published libketama and spymemcached vectors (data, not code), and its
 * distribution and stability properties.
 */
final class KetamaRingTest {

    private static List<String> members(String host, int firstPort, int n) {
        return IntStream.range(0, n).mapToObj(i -> host + ":" + (firstPort + i)).toList();
    }

    @Test
    void hash_test_isLibketamasHashi() {
        assertThat(KetamaRing.hash("test")).as("python_ketama hashi(\"test\")").isEqualTo(3446378249L);
    }

    @Test
    void points_firstDigestOfALabel_areFourLittleEndianWords() {
        // MD5("10.0.1.1:11211-0") = 1387ed90033bcef5a68603067d362ba2
        assertThat(KetamaRing.pointsOf("10.0.1.1:11211").subList(0, 4))
                .containsExactly(2431485715L, 4123933443L, 100894374L, 2720740989L);
    }

    /** spymemcached's lookups on four nodes and its libketama-compat vectors on five. */
    @ParameterizedTest(name = "{0} nodes: {1} -> {2}")
    @CsvSource({
        "4, dustin, 127.0.0.1:10000",
        "4, noelani, 127.0.0.1:10002",
        "4, some other key, 127.0.0.1:10000",
        "5, some other key, 127.0.0.1:10004",
        "5, 36, 127.0.0.1:10002",
        "5, 10037, 127.0.0.1:10003",
        "5, 22051, 127.0.0.1:10001",
        "5, 49044, 127.0.0.1:10004"
    })
    void ownerOf_spymemcachedNodes_matchesItsVectors(int nodes, String key, String owner) {
        KetamaRing ring = KetamaRing.of(1, members("127.0.0.1", 10000, nodes));

        assertThat(ring.ownerOf(key)).isEqualTo(owner);
    }

    @Test
    void ownerOf_keysPastTheLastPoint_wrapToTheFirstPoint() {
        KetamaRing ring = KetamaRing.of(1, members("127.0.0.1", 10000, 4));

        assertThat(ring.maxPoint()).as("spymemcached getMaxKey()").isEqualTo(4294887009L);
        for (String key : List.of("V5XS8C8N", "8KR2DKR2", "L9KH6X4X")) {
            assertThat(KetamaRing.hash(key))
                    .as("%s hashes past the last point", key)
                    .isGreaterThan(ring.maxPoint());
            assertThat(ring.ownerOf(key)).as("%s wraps", key).isEqualTo("127.0.0.1:10003");
        }
    }

    @Test
    void ownerOf_eightLibketamaServers_matchesThePublishedTable() throws IOException {
        KetamaRing ring = KetamaRing.of(1, eightServers());
        Map<String, String> expected = readVectors("/ketama/spymemcached-libketama-compat-8-nodes.csv");

        assertThat(ring.pointCount()).isEqualTo(1280);
        assertThat(ring.minPoint()).isEqualTo(762113L);
        assertThat(ring.maxPoint()).isEqualTo(4293620028L);
        assertThat(expected).hasSizeGreaterThan(90);
        expected.forEach((key, owner) ->
                assertThat(ring.ownerOf(key)).as("owner of key %s", key).isEqualTo(owner));
    }

    @Test
    void ownerOf_memberOrder_doesNotChangeTheRing() {
        List<String> shuffled = new ArrayList<>(eightServers());
        Collections.reverse(shuffled);
        KetamaRing a = KetamaRing.of(1, eightServers());
        KetamaRing b = KetamaRing.of(1, shuffled);

        for (int i = 0; i < 10_000; i++) {
            String key = "k" + i;
            assertThat(b.ownerOf(key)).as(key).isEqualTo(a.ownerOf(key));
        }
    }

    @Test
    void distribution_100kKeysOverThreeMembers_givesEach33PercentWithin10() {
        KetamaRing ring = KetamaRing.of(1, List.of("owner-0", "owner-1", "owner-2"));
        Map<String, Integer> counts = new HashMap<>();
        int keys = 100_000;
        for (int i = 0; i < keys; i++) {
            counts.merge(ring.ownerOf("tenant-" + (i % 97) + "/ns-" + i), 1, Integer::sum);
        }

        assertThat(counts).hasSize(3);
        counts.forEach((member, n) ->
                assertThat(n * 100.0 / keys).as("share of %s", member).isBetween(100.0 / 3 - 10, 100.0 / 3 + 10));
    }

    @Test
    void removal_oneOfFourMembers_movesOnlyThatMembersKeys() {
        List<String> four = List.of("owner-0", "owner-1", "owner-2", "owner-3");
        KetamaRing before = KetamaRing.of(1, four);
        KetamaRing after = KetamaRing.of(2, four.subList(0, 3));
        int moved = 0;
        for (int i = 0; i < 50_000; i++) {
            String key = "ns-" + i;
            String was = before.ownerOf(key);
            String now = after.ownerOf(key);
            if (!was.equals("owner-3")) {
                assertThat(now).as("key %s of a remaining member stays", key).isEqualTo(was);
            } else {
                moved++;
            }
        }
        assertThat(moved).as("the removed member owned some keys").isPositive();
    }

    @Test
    void ownerOf_emptyRing_failsClosedWithGatewayRoutingFailure() {
        KetamaRing empty = KetamaRing.of(1, List.of());

        assertThat(empty.isEmpty()).isTrue();
        assertThatThrownBy(() -> empty.ownerOf("orders"))
                .isInstanceOf(SpectorException.class)
                .satisfies(e -> assertThat(((SpectorException) e).code()).isEqualTo(ErrorCode.GATEWAY_ROUTING_FAILURE));
    }

    @Test
    void of_duplicateOrMalformedLabel_isBadRequest() {
        assertThatThrownBy(() -> KetamaRing.of(1, List.of("a", "a"))).hasMessageContaining("listed twice");
        assertThatThrownBy(() -> KetamaRing.of(1, List.of("a,b"))).hasMessageContaining("comma");
        assertThatThrownBy(() -> KetamaRing.of(1, List.of("a".repeat(256)))).hasMessageContaining("ringMemberChars");
        assertThat(KetamaRing.of(1, List.of("a".repeat(255))).members()).hasSize(1);
    }

    @Test
    void of_tooManyMembers_isRefused_andTheLimitIsAccepted() {
        List<String> limit = IntStream.range(0, 4096).mapToObj(i -> "m" + i).toList();
        assertThat(KetamaRing.of(1, limit).pointCount()).isEqualTo(4096 * 160);

        List<String> onePast = IntStream.range(0, 4097).mapToObj(i -> "m" + i).toList();
        assertThatThrownBy(() -> KetamaRing.of(1, onePast)).hasMessageContaining("ringMembers: 4097");
    }

    private static List<String> eightServers() {
        return IntStream.rangeClosed(1, 8)
                .mapToObj(i -> "10.0.1." + i + ":11211")
                .toList();
    }

    private static Map<String, String> readVectors(String resource) throws IOException {
        Map<String, String> out = new HashMap<>();
        try (InputStream in = Objects.requireNonNull(KetamaRingTest.class.getResourceAsStream(resource), resource);
                BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                if (!line.isBlank() && !line.startsWith("#")) {
                    String[] kv = line.split(",", 2);
                    out.put(kv[0], kv[1]);
                }
            }
        }
        return out;
    }
}
