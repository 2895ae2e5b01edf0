package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/** The scrape's answers ({@link LocalEndpoints#scrapeAnswer}): the text, or a problem with its code. */
final class LocalEndpointsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void scrapeAnswer_text_is200PrometheusText() {
        FullHttpResponse r = LocalEndpoints.scrapeAnswer("a 1\n".getBytes(StandardCharsets.UTF_8), null, "id-1");
        try {
            assertThat(r.status().code()).isEqualTo(200);
            assertThat(r.headers().get(HttpHeaderNames.CONTENT_TYPE)).startsWith("text/plain; version=0.0.4");
            assertThat(r.content().toString(StandardCharsets.UTF_8)).isEqualTo("a 1\n");
        } finally {
            r.release();
        }
    }

    @Test
    void scrapeAnswer_pastTheDeadline_is503Problem() throws Exception {
        JsonNode problem = problem(LocalEndpoints.scrapeAnswer(null, new TimeoutException(), "id-1"), 503);
        assertThat(problem.path("code").asText()).isEqualTo("INTERNAL");
        assertThat(problem.path("detail").asText())
                .contains(Long.toString(LocalEndpoints.SCRAPE_DEADLINE.toMillis()) + " ms");
        assertThat(problem.path("requestId").asText()).isEqualTo("id-1");
    }

    @Test
    void scrapeAnswer_renderThrew_is500Problem() throws Exception {
        JsonNode problem = problem(
                LocalEndpoints.scrapeAnswer(
                        null, new CompletionException(new IllegalStateException("a meter broke")), null),
                500);
        assertThat(problem.path("code").asText()).isEqualTo("INTERNAL");
        assertThat(problem.path("detail").asText()).doesNotContain("a meter broke");
    }

    private static JsonNode problem(FullHttpResponse r, int status) throws Exception {
        try {
            assertThat(r.status().code()).isEqualTo(status);
            assertThat(r.headers().get(HttpHeaderNames.CONTENT_TYPE)).isEqualTo("application/problem+json");
            JsonNode body = JSON.readTree(r.content().toString(StandardCharsets.UTF_8));
            assertThat(body.path("status").asInt()).isEqualTo(status);
            return body;
        } finally {
            r.release();
        }
    }
}
