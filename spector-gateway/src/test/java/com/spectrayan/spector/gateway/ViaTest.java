package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.owner.RecordedRequest;
import java.net.URI;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The cell's {@code Via} entry (RFC 9110 §7.6.3) and the loop it stops (RFC 5842 §7.2), over raw
 * sockets: what the client got, and what the owner received.
 */
final class ViaTest {
    private static final String PSEUDONYM = "spector-" + Cell.CELL_ID;
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder().owners(1).start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private static String get(String ns, String version, String extra) {
        return "GET /api/v1/namespaces/" + ns + "/echo " + version + "\r\nHost: gw\r\nAuthorization: Bearer "
                + Cell.token(Cell.TENANT) + "\r\n" + extra + "\r\n";
    }

    /** Returns the {@code Via} values the owner received with its request for namespace {@code ns}, joined. */
    private static String viaSeenFor(String ns) {
        RecordedRequest r = cell.owner("owner-0").requests().stream()
                .filter(q -> q.path().contains(ns))
                .findFirst()
                .orElseThrow();
        List<String> values = r.headers().entrySet().stream()
                .filter(e -> e.getKey().equalsIgnoreCase("Via"))
                .flatMap(e -> e.getValue().stream())
                .toList();
        return String.join(", ", values);
    }

    /**
     * RFC 9110 §7.6.3: a gateway sends Via in each inbound request, after the client's own entries,
     * naming the version the request came in with. RFC 9110 §7.6.1 lets a client nominate its own
     * fields as hop-by-hop, not the gateway's: with {@code Connection: via} the owner still gets the
     * cell's entry (the third review: it got no {@code Via} at all, and a loop went round once more).
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "the client's entries first|HTTP/1.1|Via: 1.1 edge-proxy|1.1 edge-proxy, 1.1 " + PSEUDONYM,
                "whatever Connection lists|HTTP/1.1|Connection: keep-alive, VIA\\r\\nVia: 1.1 a|1.1 a, 1.1 "
                        + PSEUDONYM,
                "HTTP/1.0 named as such|HTTP/1.0||1.0 " + PSEUDONYM
            })
    void shouldSendTheCellsEntryToTheOwner(String name, String version, @Nullable String fields, String expected)
            throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        String extra = fields == null ? "" : fields.replace("\\r\\n", "\r\n") + "\r\n";
        RawClient.Response r = RawClient.exchange(cell.gateway.port(), get(ns, version, extra));
        assertThat(r.status()).as(name).isEqualTo(200);
        assertThat(viaSeenFor(ns)).as(name).isEqualTo(expected);
    }

    /** RFC 5842 §7.2: a request that names this cell in its Via already is not forwarded again. */
    @Test
    void shouldAnswer508ToARequestThatAlreadyPassedThroughTheCell() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        int before = cell.owner("owner-0").requests().size();
        RawClient.Response r = RawClient.exchange(
                cell.gateway.port(), get(ns, "HTTP/1.1", "Via: 1.0 other, 1.1 Spector-Test:7070 (a comment)\r\n"));
        assertThat(r.status()).isEqualTo(508);
        assertThat(r.header("Content-Type")).isEqualTo("application/problem+json");
        assertThat(r.text()).contains("\"code\":\"GATEWAY_ROUTING_FAILURE\"", "\"reason\":\"loop-detected\"");
        RawClient.Response relay = RawClient.exchange(
                cell.gateway.port(),
                "GET /relay/w-1/app/x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT)
                        + "\r\nVia: 1.1 " + PSEUDONYM + "\r\n\r\n");
        assertThat(relay.status()).as("a relayed request too").isEqualTo(508);
        RawClient.Response anonymous = RawClient.exchange(
                cell.gateway.port(),
                "GET /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\nVia: 1.1 " + PSEUDONYM + "\r\n\r\n");
        assertThat(anonymous.status())
                .as("the check follows the token's: no 508 (nor the cell's id) for a client without one")
                .isEqualTo(401);
        assertThat(cell.owner("owner-0").requests())
                .as("nothing reached the owner")
                .hasSize(before);
    }

    /** Another cell's entry, or one that only starts like this cell's, is no loop. */
    @Test
    void shouldForwardARequestThatPassedThroughOtherCells() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        RawClient.Response r = RawClient.exchange(
                cell.gateway.port(),
                get(ns, "HTTP/1.1", "Via: 1.1 " + PSEUDONYM + "-2, 1.1 spector-tes\r\nVia: (spector-test)\r\n"));
        assertThat(r.status()).isEqualTo(200);
    }

    /**
     * The misconfiguration the second review found: a ring member pointing at the gateway turned
     * one request into hundreds of hops until the owner pools ran out. Here the member is a TCP
     * balancer in front of the gateway itself; the request goes round once and its return is
     * refused, so the client gets that 508 through the first hop, and the balancer saw one
     * connection.
     */
    @Test
    void shouldStopALoopThroughARingMemberThatPointsAtTheGateway() throws Exception {
        try (RoundRobinBalancer loop = RoundRobinBalancer.start(List.of());
                Cell looped = Cell.builder()
                        .owners(0)
                        .member("loop-0", URI.create("http://127.0.0.1:" + loop.port()))
                        .start()) {
            loop.add(looped.gateway.port());
            RawClient.Response r = RawClient.exchange(looped.gateway.port(), get("ns-1", "HTTP/1.1", ""));
            assertThat(r.status()).isEqualTo(508);
            assertThat(r.text()).contains("\"reason\":\"loop-detected\"");
            assertThat(loop.accepted()).as("one hop round, not hundreds").isEqualTo(1);
        }
    }

    /** {@link Via#names} finds the pseudonym as any entry's received-by, in any case, with or without a port. */
    @Property(tries = 500)
    void namesFindsThePseudonymExactlyWhenAnEntryCarriesIt(@ForAll("entries") List<Entry> entries) {
        String value = String.join(",", entries.stream().map(Entry::text).toList());
        boolean expected = entries.stream().anyMatch(e -> e.by().equalsIgnoreCase(PSEUDONYM));
        assertThat(Via.names(value, PSEUDONYM)).as(value).isEqualTo(expected);
    }

    /** One Via entry: protocol, received-by, and what may follow it. */
    record Entry(String protocol, String by, String port, String space, String comment) {
        String text() {
            return space + protocol + " " + by + port + (comment.isEmpty() ? "" : " (" + comment + ")") + space;
        }
    }

    @Provide
    Arbitrary<List<Entry>> entries() {
        Arbitrary<String> protocol = Arbitraries.of("1.1", "1.0", "HTTP/1.1", "2", "h2c/2");
        Arbitrary<String> by = Arbitraries.oneOf(
                Arbitraries.of(PSEUDONYM, "SPECTOR-TEST", PSEUDONYM + "x", "spector-tes", "spector", "proxy"),
                Arbitraries.strings()
                        .withCharRange('a', 'z')
                        .withChars('-', '.')
                        .ofMinLength(1)
                        .ofMaxLength(16));
        Arbitrary<String> port = Arbitraries.of("", ":7070", ":1");
        Arbitrary<String> space = Arbitraries.of("", " ", "\t ");
        Arbitrary<String> comment = Arbitraries.strings()
                .withCharRange('a', 'z')
                .withChars(' ', '-')
                .ofMaxLength(12);
        return Combinators.combine(protocol, by, port, space, comment)
                .as(Entry::new)
                .list()
                .ofMinSize(1)
                .ofMaxSize(6);
    }
}
