package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/**
 * {@link FieldNames}: the owner codec's decoder hands out names made once, and only for the exact
 * bytes: what the client gets is the owner's names byte for byte (RFC 9110 §5.1).
 */
final class FieldNamesTest {

    /** The names of one response as the owner codec decodes them, in order. */
    private static List<CharSequence> decodedNames(String head) {
        EmbeddedChannel ch =
                new EmbeddedChannel(new OwnerCodec(new HttpDecoderConfig().setHeadersFactory(DecodedHeaders.FACTORY)));
        try {
            ch.writeOutbound(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/"));
            ch.releaseOutbound();
            ch.writeInbound(Unpooled.copiedBuffer(head, StandardCharsets.ISO_8859_1));
            Object msg = ch.readInbound();
            try {
                assertThat(msg).isInstanceOf(HttpResponse.class);
                assertThat(((HttpResponse) msg).decoderResult().isSuccess()).isTrue();
                List<CharSequence> names = new ArrayList<>();
                for (Map.Entry<CharSequence, CharSequence> e : (Iterable<Map.Entry<CharSequence, CharSequence>>)
                        ((HttpResponse) msg).headers()::iteratorCharSequence) {
                    names.add(e.getKey());
                }
                return names;
            } finally {
                ReferenceCountUtil.release(msg);
            }
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    @Test
    void aCommonName_isTheOneMadeOnce_inTheCaseItCameIn() {
        String head = String.join(
                "\r\n",
                "HTTP/1.1 200 OK",
                "Content-Type: a",
                "content-type: b",
                "CONTENT-TYPE: c",
                "X-Own: d",
                "Content-Length: 0",
                "",
                "");
        List<CharSequence> names = decodedNames(head);

        assertThat(names)
                .extracting(CharSequence::toString)
                .containsExactly("Content-Type", "content-type", "CONTENT-TYPE", "X-Own", "Content-Length");
        assertThat((Object) names.get(0)).isSameAs(FieldNames.known(bytes("Content-Type"), 0, 12));
        assertThat((Object) names.get(1)).isSameAs(FieldNames.known(bytes("content-type"), 0, 12));
        assertThat((Object) FieldNames.known(bytes("CONTENT-TYPE"), 0, 12)).isNull(); // made as it came
        assertThat((Object) FieldNames.known(bytes("X-Own"), 0, 5)).isNull();
    }

    /**
     * RFC 9112 §5.1: whitespace between a response's field name and its colon is removed by a
     * proxy before it forwards the field; the name without it is the one made once, and a name the
     * list only starts with is not taken for it.
     */
    @Test
    void anOwnersOddSpacing_orALongerName_isNotTheKeptName() {
        String head = String.join("\r\n", "HTTP/1.1 200 OK", "Server \t: odd", "Dates: 2", "Content-Length: 0", "", "");
        List<CharSequence> names = decodedNames(head);

        assertThat(names).extracting(CharSequence::toString).containsExactly("Server", "Dates", "Content-Length");
        assertThat((Object) names.get(0)).isSameAs(FieldNames.known(bytes("Server"), 0, 6));
        assertThat((Object) FieldNames.known(bytes("Dates"), 0, 5)).isNull();
    }

    @Test
    void aNameInsideLongerBytes_isFoundByItsRangeOnly() {
        byte[] line = bytes("xxDatexx");
        assertThat((Object) FieldNames.known(line, 2, 4)).hasToString("Date");
        assertThat((Object) FieldNames.known(line, 1, 4)).isNull();
        assertThat((Object)
                        FieldNames.known(bytes("D".repeat(FieldNames.MAX_LENGTH + 1)), 0, FieldNames.MAX_LENGTH + 1))
                .isNull();
    }

    /** Whatever the bytes, a name handed out is exactly those bytes, or none is. */
    @Property(tries = 3000)
    void aNameHandedOut_isExactlyTheBytes(@ForAll("names") String name) {
        byte[] b = bytes("::" + name + "::");
        AsciiString known = FieldNames.known(b, 2, name.length());
        if (known != null) {
            assertThat(known.toString()).isEqualTo(name);
        }
        if (KEPT.contains(name)) {
            assertThat((Object) known).as(name).isNotNull();
        }
    }

    /** Names kept as written and in lower case; their other spellings ("DATE", "eTag") are not. */
    private static final List<String> KEPT = List.of(
            "Date",
            "date",
            "Server",
            "ETag",
            "Etag",
            "etag",
            "Content-Length",
            "content-length",
            "Vary",
            "vary",
            "Keep-Alive",
            "Traceparent");

    @Provide
    Arbitrary<String> names() {
        Arbitrary<String> common = Arbitraries.of(
                "Date",
                "date",
                "DATE",
                "Server",
                "ETag",
                "Etag",
                "etag",
                "eTag",
                "Content-Length",
                "content-length",
                "Content-length",
                "Vary",
                "vary",
                "Keep-Alive",
                "Traceparent");
        Arbitrary<String> random = Arbitraries.strings()
                .withChars("DdAaTtEeSsVvRr-")
                .ofMinLength(0)
                .ofMaxLength(6);
        return Arbitraries.oneOf(common, random);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }
}
