package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.jspecify.annotations.Nullable;

/**
 * The stored ring comes off a wire: anyone who can write to the cell's Redis can put any bytes in
 * its two fields. For every input, {@link RingCodec#decode} either returns a ring from {@code
 * redis} that obeys every bound, or throws a BAD_REQUEST {@link SpectorException}: nothing else
 * leaves it, so a hostile ring is one WARN and one counter at a gateway, never a crash. A ring the
 * publisher encodes decodes to the same ring.
 */
final class RingCodecPropertiesTest {
    @Property(tries = 2000)
    void decode_anyText_returnsAValidRingOrABadRequest(
            @ForAll("epochTexts") @Nullable String epoch, @ForAll("memberTexts") @Nullable String members) {
        checkDecode(epoch, members);
    }

    @Property(tries = 2000)
    void decode_anyBytesAsLettuceReadsThem_returnsAValidRingOrABadRequest(
            @ForAll byte[] epoch, @ForAll byte[] members) {
        // Lettuce's UTF-8 codec maps malformed sequences to U+FFFD rather than failing
        checkDecode(new String(epoch, StandardCharsets.UTF_8), new String(members, StandardCharsets.UTF_8));
    }

    @Property(tries = 500)
    void encodeThenDecode_aPublishedRing_isTheSameRing(@ForAll("rings") CellRing ring) {
        CellRing back = RingCodec.decode(RingCodec.epoch(ring), RingCodec.members(ring));

        assertThat(back.epoch()).isEqualTo(ring.epoch());
        assertThat(back.urls()).containsExactlyEntriesOf(ring.urls());
        assertThat(back.source()).isEqualTo(CellRing.Source.REDIS);
    }

    private static void checkDecode(@Nullable String epoch, @Nullable String members) {
        CellRing ring;
        try {
            ring = RingCodec.decode(epoch, members);
        } catch (SpectorException e) {
            assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
            return;
        }
        assertThat(ring.source()).isEqualTo(CellRing.Source.REDIS);
        assertThat(ring.epoch()).isNotNegative();
        assertThat(ring.urls()).isNotEmpty().hasSameSizeAs(ring.ketama().members());
        ring.urls().forEach((id, url) -> {
            assertThat(CellRing.checkId(id)).isEqualTo(id);
            assertThat(CellRing.ownerUrl(url.toString())).isEqualTo(url);
        });
        assertThat(ring.ketama().ownerOf("any/key")).isIn(ring.urls().keySet());
    }

    @Provide
    Arbitrary<@Nullable String> epochTexts() {
        return Arbitraries.oneOf(
                        Arbitraries.longs().greaterOrEqual(0).map(e -> Long.toString(e)),
                        Arbitraries.strings().numeric().ofMaxLength(25),
                        Arbitraries.strings().ofMaxLength(30),
                        Arbitraries.of("", "-1", "01", "9223372036854775807", "9223372036854775808", "1e3", " 1"))
                .injectNull(0.05);
    }

    @Provide
    Arbitrary<@Nullable String> memberTexts() {
        Arbitrary<String> id = Arbitraries.oneOf(
                Arbitraries.strings()
                        .alpha()
                        .numeric()
                        .withChars("-._")
                        .ofMinLength(1)
                        .ofMaxLength(12),
                Arbitraries.strings().ofMaxLength(6));
        Arbitrary<String> url = Arbitraries.oneOf(
                Arbitraries.integers().between(-1, 70000).map(p -> "http://h" + ":" + p),
                Arbitraries.of("http://h:1", "https://h:1", "http://[::1]:80", "http://h:1/x", "http://u@h:1", ""),
                Arbitraries.strings().ofMaxLength(20));
        Arbitrary<String> entry = Arbitraries.oneOf(
                Combinators.combine(id, url).as((i, u) -> i + "=" + u),
                id,
                Arbitraries.strings().ofMaxLength(10));
        return Arbitraries.oneOf(
                        entry.list().ofMinSize(0).ofMaxSize(6).map(l -> String.join(",", l)),
                        Arbitraries.strings().ofMaxLength(60),
                        Arbitraries.strings().withChars(",=").ofMaxLength(40))
                .injectNull(0.05);
    }

    @Provide
    Arbitrary<CellRing> rings() {
        Arbitrary<String> id = Arbitraries.strings()
                .alpha()
                .numeric()
                .withChars("-._:")
                .ofMinLength(1)
                .ofMaxLength(20);
        Arbitrary<URI> url = Combinators.combine(
                        Arbitraries.strings().alpha().ofMinLength(1).ofMaxLength(20),
                        Arbitraries.integers().between(1, 65535))
                .as((h, p) -> URI.create("http://" + h.toLowerCase(java.util.Locale.ROOT) + ":" + p));
        Arbitrary<Map<String, URI>> members = Arbitraries.maps(id, url)
                .ofMinSize(1)
                .ofMaxSize(8)
                .map(m -> {
                    Map<String, URI> ordered = new LinkedHashMap<>();
                    List.copyOf(m.keySet()).forEach(k -> ordered.put(k, m.get(k)));
                    return ordered;
                });
        return Combinators.combine(Arbitraries.longs().greaterOrEqual(0), members)
                .as((e, m) -> CellRing.of(e, m, CellRing.Source.REDIS));
    }
}
