package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.gateway.HeaderFilter.NameSet;
import com.spectrayan.spector.contract.HeaderPolicy;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Predicate;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * {@link HeaderFilter}: what each filter leaves of a head that came off the wire is exactly the
 * contract's rule ({@link HeaderPolicy}) applied field by field, in order, values untouched (RFC
 * 9110 §7.6.1: hop-by-hop fields and the ones {@code Connection} lists never cross a proxy). The
 * heads are random bytes of fields decoded by Netty's decoder with the gateway's header map, names
 * drawn from every list of the policy in any case and from names of no list.
 */
final class HeaderFilterTest {

    /** Every name some filter drops, and names none drops. */
    private static final List<String> NAMES = names();

    private static List<String> names() {
        Set<String> all = new HashSet<>();
        all.addAll(HeaderPolicy.HOP_BY_HOP);
        all.addAll(HeaderPolicy.FRAMING);
        all.addAll(HeaderPolicy.GATEWAY_OWNED);
        all.addAll(HeaderPolicy.ROUTING);
        all.addAll(HeaderPolicy.SET_BY_GATEWAY);
        all.addAll(List.of("x-real-ip", "true-client-ip", "cf-connecting-ip", "x-original-url", "x-forwarded-ssl"));
        all.addAll(List.of("expect", "forwarded", "x-forwarded-port", "accept", "authorization", "idempotency-key"));
        all.addAll(List.of("user-agent", "x-custom", "cookie", "x-a", "te-x", "hostx", "content-lengt"));
        List<String> sorted = new ArrayList<>(all);
        sorted.sort(null);
        return List.copyOf(sorted);
    }

    /** A field: a name from {@link #NAMES} in a random case, and a value. */
    record Field(String name, String value) {}

    @Provide
    Arbitrary<List<Field>> heads() {
        Arbitrary<String> name = Arbitraries.of(NAMES)
                .flatMap(n -> Arbitraries.integers()
                        .between(0, 2)
                        .map(c -> c == 0 ? n : c == 1 ? n.toUpperCase(Locale.ROOT) : mixed(n)));
        Arbitrary<String> connection =
                Arbitraries.of(NAMES).list().ofMinSize(0).ofMaxSize(3).map(l -> String.join(", ", l));
        Arbitrary<Field> field = Arbitraries.frequencyOf(
                Tuple.of(
                        6,
                        Combinators.combine(
                                        name,
                                        Arbitraries.strings().alpha().numeric().ofMaxLength(6))
                                .as(Field::new)),
                Tuple.of(1, connection.map(v -> new Field("Connection", v))));
        return field.list().ofMaxSize(14);
    }

    private static String mixed(String n) {
        StringBuilder b = new StringBuilder(n.length());
        for (int i = 0; i < n.length(); i++) {
            char c = n.charAt(i);
            b.append(i % 2 == 0 ? Character.toUpperCase(c) : c);
        }
        return b.toString();
    }

    /** Decodes a request head of {@code fields} with the gateway's header map; null when Netty refuses it. */
    private static @Nullable HttpHeaders decode(List<Field> fields) {
        StringBuilder head = new StringBuilder("GET / HTTP/1.1\r\n");
        for (Field f : fields) {
            head.append(f.name()).append(": ").append(f.value()).append("\r\n");
        }
        return DecodedHeadersTest.decode(head.append("\r\n").toString(), DecodedHeaders.FACTORY);
    }

    /** {@link #decode}, a try skipped when Netty refuses the head (two lengths, say). */
    private static HttpHeaders decoded(List<Field> fields) {
        HttpHeaders h = decode(fields);
        Assume.that(h != null);
        return Objects.requireNonNull(h);
    }

    private static List<Map.Entry<String, String>> entries(HttpHeaders h) {
        List<Map.Entry<String, String>> out = new ArrayList<>();
        h.iteratorCharSequence()
                .forEachRemaining(e ->
                        out.add(Map.entry(e.getKey().toString(), e.getValue().toString())));
        return out;
    }

    /** The fields of {@code decoded}, in order, whose name {@code keep} accepts. */
    private static List<Map.Entry<String, String>> kept(HttpHeaders decoded, Predicate<String> keep) {
        List<Map.Entry<String, String>> out = new ArrayList<>();
        for (Map.Entry<String, String> e : entries(decoded)) {
            if (keep.test(e.getKey())) {
                out.add(e);
            }
        }
        return out;
    }

    private static Set<String> connectionTokens(HttpHeaders h) {
        return HeaderPolicy.connectionTokens(h.getAll(HttpHeaderNames.CONNECTION));
    }

    @Property(tries = 400)
    void toOwner_keepsExactlyWhatThePolicyForwards(@ForAll("heads") List<Field> fields) {
        HttpHeaders h = decoded(fields);
        Set<String> tokens = connectionTokens(h);
        List<Map.Entry<String, String>> expected =
                kept(h, n -> HeaderPolicy.forwardsToOwner(n, tokens) && !n.equalsIgnoreCase("expect"));

        HeaderFilter.toOwner(h);

        assertThat(entries(h)).isEqualTo(expected);
    }

    @Property(tries = 400)
    void toClient_dropsHopByHopFramingAndConnectionListed(@ForAll("heads") List<Field> fields) {
        HttpHeaders h = decoded(fields);
        Set<String> tokens = connectionTokens(h);
        List<Map.Entry<String, String>> expected = kept(
                h,
                n -> !HeaderPolicy.isHopByHop(n, tokens) && !HeaderPolicy.FRAMING.contains(n.toLowerCase(Locale.ROOT)));

        HeaderFilter.toClient(h);

        assertThat(entries(h)).isEqualTo(expected);
    }

    @Property(tries = 200)
    void dropForwardingFacts_dropsTheClientFacts_andNothingElse(@ForAll("heads") List<Field> fields) {
        HttpHeaders h = decoded(fields);
        Set<String> facts = Set.of( // written out, not the policy's own set: a name left out of it fails here
                "forwarded",
                "x-forwarded-for",
                "x-forwarded-proto",
                "x-forwarded-host",
                "x-forwarded-port",
                "x-forwarded-prefix",
                "x-forwarded-ssl",
                "x-forwarded-scheme",
                "x-forwarded-server",
                "x-real-ip",
                "true-client-ip",
                "x-client-ip",
                "x-cluster-client-ip",
                "cf-connecting-ip",
                "fastly-client-ip",
                "x-original-url",
                "x-rewrite-url",
                "front-end-https",
                "x-url-scheme");
        List<Map.Entry<String, String>> expected = kept(h, n -> !facts.contains(n.toLowerCase(Locale.ROOT)));

        HeaderFilter.dropForwardingFacts(h);

        assertThat(entries(h)).isEqualTo(expected);
    }

    /** The set matches a name in any case, and only the names it was built from (a prefix or a longer name is another name). */
    @Property(tries = 300)
    void nameSet_matchesItsNamesInAnyCase_only(@ForAll("heads") List<Field> fields) {
        NameSet set = new NameSet(HeaderPolicy.HOP_BY_HOP, HeaderPolicy.FRAMING);
        for (Field f : fields) {
            String lower = f.name().toLowerCase(Locale.ROOT);
            boolean in = HeaderPolicy.HOP_BY_HOP.contains(lower) || HeaderPolicy.FRAMING.contains(lower);
            assertThat(set.contains(f.name())).as(f.name()).isEqualTo(in);
            assertThat(set.contains(new AsciiString(f.name()))).as(f.name()).isEqualTo(in);
        }
    }

    @Test
    void nameSet_ofOneName_andOfNone() {
        NameSet one = new NameSet(Set.of("host"));
        assertThat(one.contains("HOST")).isTrue();
        assertThat(one.contains("hos")).isFalse();
        assertThat(one.contains("")).isFalse();
        NameSet none = new NameSet(Set.of());
        assertThat(none.contains("host")).isFalse();
    }

    /** Two fields of one name and several names to drop: every one goes, the rest stays in order. */
    @Test
    void toOwner_removesRepeatedAndSeveralNames() {
        HttpHeaders h = decoded(List.of(
                new Field("Host", "a"),
                new Field("X-Keep", "1"),
                new Field("host", "b"),
                new Field("Connection", "x-drop, keep-alive"),
                new Field("X-Drop", "z"),
                new Field("TE", "trailers"),
                new Field("Accept", "*/*")));

        HeaderFilter.toOwner(h);

        assertThat(entries(h)).containsExactly(Map.entry("X-Keep", "1"), Map.entry("Accept", "*/*"));
    }

    /**
     * A {@code Connection} field cannot take a field the gateway sets itself off a message (its own
     * request id, {@code Via}, the forwarding facts): one name alone, or among others.
     */
    @Test
    void connectionListingAGatewayName_leavesThatField() {
        HttpHeaders one = decoded(List.of(
                new Field("X-Request-Id", "abc"), new Field("Connection", "X-Request-Id"), new Field("Via", "1.1 a")));
        HeaderFilter.toClient(one);
        assertThat(entries(one)).containsExactly(Map.entry("X-Request-Id", "abc"), Map.entry("Via", "1.1 a"));

        HttpHeaders several = decoded(
                List.of(new Field("Via", "1.1 a"), new Field("Connection", "via, x-gone"), new Field("X-Gone", "1")));
        HeaderFilter.toOwner(several);
        assertThat(entries(several)).containsExactly(Map.entry("Via", "1.1 a"));
    }
}
