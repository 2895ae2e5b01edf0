package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * {@link DecodedHeaders}: names are checked as Netty checks them while a decoder fills them, not
 * after the seal; values always.
 */
final class DecodedHeadersTest {

    /** Decodes one request head with {@code factory}; returns its headers, or null when malformed. */
    private static @Nullable HttpHeaders decode(String head, HttpHeadersFactory factory) {
        EmbeddedChannel ch =
                new EmbeddedChannel(new HttpRequestDecoder(new HttpDecoderConfig().setHeadersFactory(factory)));
        try {
            ch.writeInbound(Unpooled.copiedBuffer(head, StandardCharsets.ISO_8859_1));
            Object msg = ch.readInbound();
            try {
                return msg instanceof HttpRequest r && r.decoderResult().isSuccess() ? r.headers() : null;
            } finally {
                ReferenceCountUtil.release(msg);
            }
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    /** RFC 9110 §5.1, §5.6.2: a field name is a token; one with a space or a control byte is malformed. */
    @Test
    void decoding_checksEveryName() {
        assertThat(decode("GET / HTTP/1.1\r\nHost: a\r\nX-Ok: 1\r\n\r\n", DecodedHeaders.FACTORY))
                .isInstanceOf(DecodedHeaders.class);
        assertThat(decode("GET / HTTP/1.1\r\nHost: a\r\nX Bad: 1\r\n\r\n", DecodedHeaders.FACTORY))
                .isNull();
        assertThat(decode("GET / HTTP/1.1\r\nHost: a\r\nX\u0001: 1\r\n\r\n", DecodedHeaders.FACTORY))
                .isNull();
    }

    @Test
    void sealed_namesAreNoLongerChecked_valuesAlways() {
        DecodedHeaders h = (DecodedHeaders) DecodedHeaders.FACTORY.newHeaders();
        assertThat(h.checksNames()).isTrue();
        assertThatThrownBy(() -> h.set("bad name", "v")).isInstanceOf(IllegalArgumentException.class);

        DecodedHeaders.seal(h);

        assertThat(h.checksNames()).isFalse();
        h.set(AsciiString.cached("X-Forwarded-Host"), "api.example.com");
        assertThat(h.get("x-forwarded-host")).isEqualTo("api.example.com");
        // CWE-113: a value with CR or LF would split the message, sealed or not
        assertThatThrownBy(() -> h.set(HttpHeaderNames.HOST, "a\r\nX-Injected: 1"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> h.add(HttpHeaderNames.HOST, "a\nb")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void seal_leavesOtherHeadersChecking() {
        HttpHeaders plain = DefaultHttpHeadersFactory.headersFactory().newHeaders();
        DecodedHeaders.seal(plain);
        assertThatThrownBy(() -> plain.set("bad name", "v")).isInstanceOf(IllegalArgumentException.class);
    }

    /** Off the wire, the gate decides every head exactly as Netty's default headers do. */
    @Property(tries = 2000)
    void decoding_agreesWithNettysDefault(@ForAll("names") String name) {
        String head = "GET / HTTP/1.1\r\nHost: a\r\n" + name + ": v\r\n\r\n";
        HttpHeaders ours = decode(head, DecodedHeaders.FACTORY);
        HttpHeaders netty = decode(head, DefaultHttpHeadersFactory.headersFactory());
        assertThat(ours == null).as("malformed: %s", name).isEqualTo(netty == null);
        if (ours != null && netty != null) {
            assertThat(ours.entries().toString()).isEqualTo(netty.entries().toString());
        }
    }

    @Provide
    Arbitrary<String> names() {
        Arbitrary<Character> any = Arbitraries.chars().range((char) 0, (char) 255);
        Arbitrary<Character> token = Arbitraries.chars()
                .with("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".toCharArray());
        return Arbitraries.frequencyOf(Tuple.of(3, token), Tuple.of(1, any))
                .list()
                .ofMinSize(0)
                .ofMaxSize(12)
                .map(cs -> {
                    StringBuilder b = new StringBuilder();
                    cs.forEach(b::append);
                    return b.toString().replace("\r", "").replace("\n", "").replace(":", "");
                });
    }

    /** One edit of a header map, applied alike to ours and to Netty's. */
    record Op(int kind, CharSequence name, String value) {
        void apply(HttpHeaders h) {
            switch (kind) {
                case 0, 1, 2 -> h.add(name, value);
                case 3 -> h.set(name, value);
                case 4 -> h.remove(name);
                case 5 -> h.set(name, java.util.List.of(value, value + "2"));
                case 6 -> h.addInt(name, value.length());
                default -> h.clear();
            }
        }
    }

    /**
     * The flat map answers every question as Netty's {@code DefaultHttpHeaders} does, after any
     * sequence of edits: the same fields in the same order, the same first value, the same lists,
     * and the same {@code Connection: close} / {@code Transfer-Encoding: chunked} answers that
     * Netty's codecs ask of it (RFC 9110 §5.3: a field's lines form one comma-separated list).
     */
    @Property(tries = 3000)
    void everyAnswer_isNettysAnswer(@ForAll("ops") java.util.List<Op> ops) {
        HttpHeaders ours = DecodedHeaders.FACTORY.newHeaders();
        HttpHeaders netty = DefaultHttpHeadersFactory.headersFactory().newHeaders();
        for (Op op : ops) {
            String oursRefused = refusal(() -> op.apply(ours));
            String nettyRefused = refusal(() -> op.apply(netty));
            assertThat(oursRefused).as("%s", op).isEqualTo(nettyRefused);
            assertThat(ours.size()).isEqualTo(netty.size());
            assertThat(ours.isEmpty()).isEqualTo(netty.isEmpty());
            assertThat(ours.entries().toString()).isEqualTo(netty.entries().toString());
            // as strings (Netty's set keeps a String and an AsciiString of one name apart)
            assertThat(ours.names()).isEqualTo(new java.util.LinkedHashSet<>(netty.names()));
            java.util.List<String> oursIterated = new java.util.ArrayList<>();
            ours.iteratorCharSequence().forEachRemaining(e -> oursIterated.add(e.getKey() + "=" + e.getValue()));
            java.util.List<String> nettyIterated = new java.util.ArrayList<>();
            netty.iteratorCharSequence().forEachRemaining(e -> nettyIterated.add(e.getKey() + "=" + e.getValue()));
            assertThat(oursIterated).isEqualTo(nettyIterated);
            for (CharSequence name : NAMES) {
                assertThat(ours.get(name)).as("get %s", name).isEqualTo(netty.get(name));
                assertThat(ours.getAll(name)).as("getAll %s", name).isEqualTo(netty.getAll(name));
                assertThat(ours.contains(name)).isEqualTo(netty.contains(name));
                assertThat(ours.getInt(name)).isEqualTo(netty.getInt(name));
                for (CharSequence value : PROBES) {
                    for (boolean ignoreCase : new boolean[] {true, false}) {
                        assertThat(ours.containsValue(name, value, ignoreCase))
                                .as("containsValue(%s, %s, %s) in %s", name, value, ignoreCase, netty)
                                .isEqualTo(netty.containsValue(name, value, ignoreCase));
                        assertThat(ours.contains(name, value, ignoreCase))
                                .as("contains(%s, %s, %s) in %s", name, value, ignoreCase, netty)
                                .isEqualTo(netty.contains(name, value, ignoreCase));
                    }
                }
            }
        }
    }

    /** What {@code edit} threw (its type), or null. */
    private static @Nullable String refusal(Runnable edit) {
        try {
            edit.run();
            return null;
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName();
        }
    }

    private static final java.util.List<CharSequence> NAMES = java.util.List.of(
            HttpHeaderNames.CONNECTION,
            "connection",
            "CONNECTION",
            HttpHeaderNames.TRANSFER_ENCODING,
            "x-a",
            AsciiString.of("X-A"),
            "x-ab",
            HttpHeaderNames.CONTENT_LENGTH);

    private static final java.util.List<CharSequence> PROBES =
            java.util.List.of(HttpHeaderValues.CLOSE, "Close", HttpHeaderValues.CHUNKED, "", "\u00e9", "a b", "12");

    @Provide
    Arbitrary<java.util.List<Op>> ops() {
        Arbitrary<CharSequence> names = Arbitraries.of(NAMES);
        Arbitrary<String> values = Arbitraries.of(
                "close",
                " Close ",
                "a, close",
                "close,",
                ",close",
                "chunked",
                "gzip,chunked",
                "gzip , CHUNKED ",
                "",
                ",",
                " ",
                "keep-alive ,",
                "\u00e9",
                "\u00c9",
                "a b",
                "12",
                " 12",
                "x,,y",
                "\tclose\t");
        return net.jqwik.api.Combinators.combine(Arbitraries.integers().between(0, 7), names, values)
                .as(Op::new)
                .list()
                .ofMaxSize(14);
    }
}
