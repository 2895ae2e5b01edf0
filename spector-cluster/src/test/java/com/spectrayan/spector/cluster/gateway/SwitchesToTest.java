package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.util.Locale;
import java.util.Random;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.StringLength;
import org.junit.jupiter.api.Test;

/**
 * {@link RealExchange#switchesTo}: a {@code 101} is tunnelled only when its {@code Upgrade} names
 * the protocol the request asked for, and nothing else (RFC 9110 §7.8 and §15.2.2).
 */
final class SwitchesToTest {
    private static HttpResponse switching(String... upgrade) {
        // Unvalidated, as a value may come off the wire with the spaces a list allows inside it.
        HttpResponse r = new DefaultHttpResponse(
                HttpVersion.HTTP_1_1,
                HttpResponseStatus.SWITCHING_PROTOCOLS,
                DefaultHttpHeadersFactory.headersFactory().withValidation(false));
        for (String u : upgrade) {
            r.headers().add(HttpHeaderNames.UPGRADE, u);
        }
        return r;
    }

    @Test
    void theProtocolAskedFor_inAnyCase_withAVersion_switches() {
        assertThat(RealExchange.switchesTo(switching("websocket"), "websocket")).isTrue();
        assertThat(RealExchange.switchesTo(switching("WebSocket"), "websocket")).isTrue();
        assertThat(RealExchange.switchesTo(switching(" websocket ,"), "websocket"))
                .as("an empty list element is ignored (RFC 9110 §5.6.1)")
                .isTrue();
        assertThat(RealExchange.switchesTo(switching("websocket/13"), "websocket"))
                .isTrue();
    }

    @Test
    void noUpgrade_orAnotherProtocol_orOneMore_doesNotSwitch() {
        assertThat(RealExchange.switchesTo(switching(), "websocket"))
                .as("no Upgrade field")
                .isFalse();
        assertThat(RealExchange.switchesTo(switching(""), "websocket"))
                .as("an empty one")
                .isFalse();
        assertThat(RealExchange.switchesTo(switching("h2c"), "websocket")).isFalse();
        assertThat(RealExchange.switchesTo(switching("websocket, h2c"), "websocket"))
                .as("a protocol not asked for, beside the one asked")
                .isFalse();
        assertThat(RealExchange.switchesTo(switching("websocket", "h2c"), "websocket"))
                .as("in a second field")
                .isFalse();
        assertThat(RealExchange.switchesTo(switching("websockets"), "websocket"))
                .isFalse();
    }

    /** Any Upgrade value that does not name websocket: never a switch. */
    @Property(tries = 500)
    void anyValueNotNamingTheProtocol_doesNotSwitch(@ForAll @StringLength(max = 40) String value) {
        Assume.that(!value.toLowerCase(Locale.ROOT).contains("websocket"));
        HttpResponse r = switching();
        r.headers().add(HttpHeaderNames.UPGRADE, value);
        assertThat(RealExchange.switchesTo(r, "websocket")).isFalse();
    }

    /** The protocol asked for, once or more, in any case, with any spaces and empty elements: a switch. */
    @Property(tries = 200)
    void theProtocolInAnyListShape_switches(@ForAll @IntRange(min = 1, max = 4) int times, @ForAll Random random) {
        StringBuilder value = new StringBuilder();
        for (int i = 0; i < times; i++) {
            StringBuilder name = new StringBuilder();
            for (char c : "websocket".toCharArray()) {
                name.append(random.nextBoolean() ? Character.toUpperCase(c) : c);
            }
            value.append(" ".repeat(random.nextInt(3))).append(name).append(" ".repeat(random.nextInt(3)));
            value.append(random.nextBoolean() ? ", ," : ",");
        }
        assertThat(RealExchange.switchesTo(switching(value.toString()), "websocket"))
                .as("%s", value)
                .isTrue();
    }
}
