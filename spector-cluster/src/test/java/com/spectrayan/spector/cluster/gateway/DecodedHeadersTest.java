package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
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
    static @Nullable HttpHeaders decode(String head, HttpHeadersFactory factory) {
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
}
