package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import java.net.URI;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@code --members} parsing (shared by {@code spector ring publish} and the stored ring) and the swap rule. */
final class CellRingTest {
    private static final int MAX_MEMBERS = (int) Limits.RING_MEMBERS.max();
    private static final int MAX_ID_CHARS = (int) Limits.RING_MEMBER_CHARS.max();

    @Test
    void parseMembers_idsAndUrls_keepsTheOrderGiven() {
        Map<String, URI> members = CellRing.parseMembers("owner-1=http://10.0.0.2:7071, owner-0=http://10.0.0.1:7070/");

        assertThat(members.keySet()).containsExactly("owner-1", "owner-0");
        assertThat(members.get("owner-0")).isEqualTo(URI.create("http://10.0.0.1:7070/"));
    }

    @Test
    void parseMembers_bareId_isDialledOnTheDefaultPort() {
        assertThat(CellRing.parseMembers("owner-0"))
                .containsExactly(Map.entry("owner-0", URI.create("http://owner-0:" + CellRing.DEFAULT_OWNER_PORT)));
    }

    @Test
    void parseMembers_atTheMemberLimit_isTaken_andOnePast_isRefused() {
        assertThat(CellRing.parseMembers(members(MAX_MEMBERS))).hasSize(MAX_MEMBERS);

        assertThatThrownBy(() -> CellRing.parseMembers(members(MAX_MEMBERS + 1)))
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining("ringMembers: " + (MAX_MEMBERS + 1))
                .hasMessageContaining("1.." + MAX_MEMBERS + " members");
    }

    @Test
    void parseMembers_idAtTheCharLimit_isTaken_andOnePast_isRefused() {
        String id = "o".repeat(MAX_ID_CHARS);
        assertThat(CellRing.parseMembers(id + "=http://h:1")).containsKey(id);

        assertThatThrownBy(() -> CellRing.parseMembers(id + "o=http://h:1"))
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining("ringMemberChars: " + (MAX_ID_CHARS + 1));
    }

    @Test
    void parseMembers_urlAtTheCharLimit_isTaken_andOnePast_isRefused() {
        String url = urlOfLength(CellRing.MAX_URL_CHARS);
        assertThat(url).hasSize(CellRing.MAX_URL_CHARS);
        assertThat(CellRing.parseMembers("o=" + url)).containsEntry("o", URI.create(url));

        String longer = urlOfLength(CellRing.MAX_URL_CHARS + 1);
        assertThatThrownBy(() -> CellRing.parseMembers("o=" + longer))
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining("at most " + CellRing.MAX_URL_CHARS + " chars");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "o=https://h:1", // not http
                "o=http://h", // no port
                "o=http://h:0",
                "o=http://user@h:1",
                "o=http://h:1/path",
                "o=http://h:1?q",
                "o=http://h:1#f",
                "o=h:1",
                "o=",
                "=http://h:1", // no id
                "o p=http://h:1", // a space in the id
                "o\u0001=http://h:1", // a control char
                "ö=http://h:1", // not ASCII
                "a=http://h:1,,b=http://h:2", // an empty entry
                "" // no member
            })
    void parseMembers_malformedEntry_isABadRequest(String text) {
        assertThatThrownBy(() -> CellRing.parseMembers(text))
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST));
    }

    @Test
    void parseMembers_duplicateId_isRefused() {
        assertThatThrownBy(() -> CellRing.parseMembers("a=http://h:1,a=http://h:2"))
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining("'a' is listed twice");
    }

    @Test
    void supersedes_higherEpoch_wins_andAnEqualOrLowerOne_doesNot() {
        CellRing config1 = ring(1, CellRing.Source.CONFIG);
        CellRing redis1 = ring(1, CellRing.Source.REDIS);
        CellRing redis2 = ring(2, CellRing.Source.REDIS);
        CellRing config3 = ring(3, CellRing.Source.CONFIG);

        assertThat(redis2.supersedes(redis1)).isTrue();
        assertThat(redis1.supersedes(redis2)).as("older").isFalse();
        assertThat(redis1.supersedes(redis1)).as("the same ring again").isFalse();
        assertThat(redis1.supersedes(config1))
                .as("a tie: the published ring over the configured one")
                .isTrue();
        assertThat(config1.supersedes(redis1)).isFalse();
        assertThat(redis2.supersedes(config3))
                .as("a configured ring at a higher epoch stays")
                .isFalse();
    }

    @Test
    void offer_swapsTheWholeSnapshot_onlyForward() {
        OwnershipResolver resolver = new OwnershipResolver(ring(1, CellRing.Source.CONFIG));
        CellRing next =
                CellRing.of(2, CellRing.parseMembers("owner-0=http://h:1,owner-3=http://h:4"), CellRing.Source.REDIS);

        assertThat(resolver.offer(next)).isTrue();
        assertThat(resolver.snapshot()).isSameAs(next);
        assertThat(resolver.ring().members()).containsExactly("owner-0", "owner-3");
        assertThat(resolver.offer(ring(2, CellRing.Source.REDIS)))
                .as("same epoch")
                .isFalse();
        assertThat(resolver.offer(ring(1, CellRing.Source.REDIS))).as("older").isFalse();
        assertThat(resolver.snapshot()).isSameAs(next);
    }

    private static CellRing ring(long epoch, CellRing.Source source) {
        return CellRing.of(epoch, CellRing.parseMembers("owner-0=http://h:1,owner-1=http://h:2"), source);
    }

    private static String members(int n) {
        return IntStream.range(0, n).mapToObj(i -> "o" + i + "=http://h:1").collect(Collectors.joining(","));
    }

    /** An {@code http://host:7070} URL of exactly {@code n} chars, its host made of 50-char labels. */
    static String urlOfLength(int n) {
        int hostChars = n - "http://".length() - ":7070".length();
        StringBuilder host = new StringBuilder();
        while (host.length() < hostChars) {
            if (host.length() > 0 && host.length() % 51 == 50) {
                host.append('.');
            } else {
                host.append('a');
            }
        }
        if (host.charAt(host.length() - 1) == '.') {
            host.setCharAt(host.length() - 1, 'a');
        }
        return "http://" + host + ":7070";
    }
    /** The last answer is remembered per ring: members asked in turn each get their own URL. */
    @Test
    void url_membersAskedInTurn_eachGetTheirOwn() {
        CellRing ring = CellRing.of(
                3,
                CellRing.parseMembers("owner-0=http://10.0.0.1:7070, owner-1=http://10.0.0.2:7071"),
                CellRing.Source.CONFIG);
        for (int i = 0; i < 3; i++) {
            assertThat(ring.url("owner-0")).isEqualTo(URI.create("http://10.0.0.1:7070"));
            assertThat(ring.url(new String("owner-0".toCharArray()))).isEqualTo(URI.create("http://10.0.0.1:7070"));
            assertThat(ring.url("owner-1")).isEqualTo(URI.create("http://10.0.0.2:7071"));
            assertThat(ring.url("owner-2")).isNull();
        }
    }
}
