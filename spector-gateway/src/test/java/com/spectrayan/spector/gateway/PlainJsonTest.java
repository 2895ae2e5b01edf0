package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link PlainJson} writes what Jackson's default {@code ObjectMapper} wrote for the same plain
 * values (the health, status and worker bodies were Jackson's before), and RFC 8259 JSON.
 */
final class PlainJsonTest {
    private static final ObjectMapper JACKSON = new ObjectMapper();

    private static void assertLikeJackson(Object value) throws Exception {
        assertThat(PlainJson.write(value)).isEqualTo(JACKSON.writeValueAsString(value));
    }

    @Test
    void write_everyControlCharacterQuoteAndBackslash_escapedAsJacksonDoes() throws Exception {
        // RFC 8259 section 7: '"', '\' and U+0000..U+001F must be escaped; everything else may be as is.
        StringBuilder all = new StringBuilder();
        for (char c = 0; c < 0x80; c++) {
            all.append(c);
        }
        assertLikeJackson(all.toString());
        assertLikeJackson("say \"hi\" \\ back/slash");
        assertThat(PlainJson.write("a\nb\u0001")).isEqualTo("\"a\\nb\\u0001\"");
    }

    @Test
    void write_nonAsciiAndSurrogatePairs_keptAsTheyAre() throws Exception {
        assertLikeJackson("é ü 漢字 \u2028 \u2029 \uD83D\uDE00 \u007F");
    }

    @Test
    void write_numbersAndBooleans_likeJackson() throws Exception {
        List<Object> values = new ArrayList<>(Arrays.asList(
                0,
                -1,
                Integer.MAX_VALUE,
                Long.MIN_VALUE,
                1.5,
                -0.0,
                1e-7,
                1e21,
                3.25f,
                new BigDecimal("12.500"),
                true,
                false,
                null));
        assertLikeJackson(values);
    }

    @Test
    void write_nonFiniteDoubles_asStringsLikeJackson() throws Exception {
        assertLikeJackson(List.of(Double.NaN, Double.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY));
    }

    @Test
    void write_nestedMapsAndLists_inIterationOrder() throws Exception {
        Map<String, Object> inner = new LinkedHashMap<>();
        inner.put("z", 1);
        inner.put("a", List.of());
        inner.put("none", null);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("status", "UP");
        body.put("components", Map.of("ring", inner));
        body.put("groups", List.of("liveness", "readiness"));
        body.put("empty", Map.of());
        body.put("rows", List.of(List.of(1, 2), List.of(Map.of("k", "v"))));
        assertLikeJackson(body);
        assertThat(PlainJson.write(body))
                .isEqualTo("{\"status\":\"UP\",\"components\":{\"ring\":{\"z\":1,\"a\":[],\"none\":null}},"
                        + "\"groups\":[\"liveness\",\"readiness\"],\"empty\":{},\"rows\":[[1,2],[{\"k\":\"v\"}]]}");
    }

    @Test
    void write_valueThatIsNotPlain_isRefused() {
        assertThatThrownBy(() -> PlainJson.write(Map.of("when", java.time.Instant.EPOCH)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("java.time.Instant");
        assertThatThrownBy(() -> PlainJson.write(Map.of(1, "one")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key must be a string");
    }
}
