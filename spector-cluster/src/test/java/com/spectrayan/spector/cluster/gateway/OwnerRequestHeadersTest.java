package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import java.net.URI;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

final class OwnerRequestHeadersTest {
    private static final URI OWNER = URI.create("http://10.0.0.7:8081");
    private static final RouteEntry ENTRY = new RouteEntry("owner-a", 5, 2);
    private static final RequestBody SOME_BODY = new RecordingRequestBody();

    private static ForwardRequest request(
            HttpHeaders headers, RequestBody body, long length, boolean trusted, @Nullable String upgrade) {
        return new ForwardRequest(
                HttpMethod.POST,
                "/api/v1/x",
                headers,
                RoutingKey.of("cell", "acme", "orders"),
                body,
                length,
                "192.0.2.1",
                trusted,
                "https",
                "api.example.com",
                upgrade,
                null);
    }

    @Test
    void forAttempt_idempotencyKey_isCopiedByteForByte() {
        HttpHeaders in = new DefaultHttpHeaders()
                .add(SpectorHeaders.IDEMPOTENCY_KEY, "Key-aBc 42 /+=;,")
                .add(SpectorHeaders.X_IDEMPOTENCY_KEY, "legacy");

        HttpHeaders out =
                new OwnerRequestHeaders(request(in, RequestBody.EMPTY, -1, false, null)).forAttempt(OWNER, ENTRY, 1);

        assertThat(out.getAll(SpectorHeaders.IDEMPOTENCY_KEY)).containsExactly("Key-aBc 42 /+=;,");
        assertThat(out.get(SpectorHeaders.X_IDEMPOTENCY_KEY)).isEqualTo("legacy");
    }

    @Test
    void forAttempt_routingHeaders_areTheGatewaysNotTheClients() {
        HttpHeaders in = new DefaultHttpHeaders()
                .add(SpectorHeaders.NAMESPACE, "forged")
                .add(SpectorHeaders.TENANT, "forged")
                .add(SpectorHeaders.EPOCH, "999")
                .add(SpectorHeaders.ATTEMPT, "9")
                .add(HttpHeaderNames.HOST, "api.example.com");

        HttpHeaders out =
                new OwnerRequestHeaders(request(in, RequestBody.EMPTY, -1, false, null)).forAttempt(OWNER, ENTRY, 2);

        assertThat(out.get(HttpHeaderNames.HOST)).isEqualTo("10.0.0.7:8081");
        assertThat(out.get(SpectorHeaders.NAMESPACE)).isEqualTo("orders");
        assertThat(out.get(SpectorHeaders.TENANT)).isEqualTo("acme");
        assertThat(out.get(SpectorHeaders.EPOCH)).isEqualTo("5");
        assertThat(out.get(SpectorHeaders.FENCE)).isEqualTo("2");
        assertThat(out.get(SpectorHeaders.ATTEMPT)).isEqualTo("2");
    }

    @Test
    void forAttempt_noFence_sendsNone() {
        HttpHeaders in = new DefaultHttpHeaders().add(SpectorHeaders.FENCE, "7");

        HttpHeaders out = new OwnerRequestHeaders(request(in, RequestBody.EMPTY, -1, false, null))
                .forAttempt(OWNER, new RouteEntry("owner-a", 5, RouteEntry.NO_FENCE), 1);

        assertThat(out.contains(SpectorHeaders.FENCE)).isFalse();
    }

    @Test
    void forAttempt_secondAttempt_updatesTheRouteAndKeepsTheForwardingFactsOnce() {
        HttpHeaders in = new DefaultHttpHeaders().add("X-Forwarded-For", "198.51.100.9");
        OwnerRequestHeaders headers = new OwnerRequestHeaders(request(in, RequestBody.EMPTY, -1, true, null));
        headers.forAttempt(OWNER, ENTRY, 1);

        HttpHeaders out = headers.forAttempt(URI.create("http://owner-b"), new RouteEntry("owner-b", 6, 0), 2);

        assertThat(out.get(HttpHeaderNames.HOST)).isEqualTo("owner-b");
        assertThat(out.get(SpectorHeaders.EPOCH)).isEqualTo("6");
        assertThat(out.contains(SpectorHeaders.FENCE)).isFalse();
        assertThat(out.get(SpectorHeaders.ATTEMPT)).isEqualTo("2");
        assertThat(out.getAll("X-Forwarded-For")).containsExactly("198.51.100.9, 192.0.2.1");
    }

    @Test
    void forAttempt_untrustedClient_forwardingFactsAreTheGateways() {
        HttpHeaders in = new DefaultHttpHeaders()
                .add("X-Forwarded-For", "198.51.100.9")
                .add("X-Forwarded-Proto", "gopher")
                .add("X-Forwarded-Host", "evil.example")
                .add("Forwarded", "for=1.2.3.4");

        HttpHeaders out =
                new OwnerRequestHeaders(request(in, RequestBody.EMPTY, -1, false, null)).forAttempt(OWNER, ENTRY, 1);

        assertThat(out.getAll("X-Forwarded-For")).containsExactly("192.0.2.1");
        assertThat(out.get("X-Forwarded-Proto")).isEqualTo("https");
        assertThat(out.get("X-Forwarded-Host")).isEqualTo("api.example.com");
        assertThat(out.contains("Forwarded")).isFalse();
    }

    @Test
    void forAttempt_trustedProxy_keepsItsForwardingFacts() {
        HttpHeaders in = new DefaultHttpHeaders()
                .add("X-Forwarded-For", "198.51.100.9")
                .add("X-Forwarded-Proto", "http")
                .add("X-Forwarded-Host", "front.example");

        HttpHeaders out =
                new OwnerRequestHeaders(request(in, RequestBody.EMPTY, -1, true, null)).forAttempt(OWNER, ENTRY, 1);

        assertThat(out.getAll("X-Forwarded-For")).containsExactly("198.51.100.9, 192.0.2.1");
        assertThat(out.get("X-Forwarded-Proto")).isEqualTo("http");
        assertThat(out.get("X-Forwarded-Host")).isEqualTo("front.example");
    }

    @Test
    void forAttempt_hopByHopAndConnectionListed_areDropped() {
        HttpHeaders in = new DefaultHttpHeaders()
                .add(HttpHeaderNames.CONNECTION, "keep-alive, X-Private")
                .add("X-Private", "secret")
                .add("Keep-Alive", "timeout=5")
                .add(HttpHeaderNames.EXPECT, "100-continue")
                .add(HttpHeaderNames.TRANSFER_ENCODING, "chunked")
                .add("X-End-To-End", "kept");

        HttpHeaders out = new OwnerRequestHeaders(request(in, SOME_BODY, 12, false, null)).forAttempt(OWNER, ENTRY, 1);

        assertThat(out.contains(HttpHeaderNames.CONNECTION)).isFalse();
        assertThat(out.contains("X-Private")).isFalse();
        assertThat(out.contains("Keep-Alive")).isFalse();
        assertThat(out.contains(HttpHeaderNames.EXPECT)).isFalse();
        assertThat(out.contains(HttpHeaderNames.TRANSFER_ENCODING)).isFalse();
        assertThat(out.get("X-End-To-End")).isEqualTo("kept");
    }

    /** RFC 9110 §7.6.1: one name alone in Connection (the short path) is dropped too, in any case. */
    @Test
    void forAttempt_oneConnectionListedName_isDropped() {
        HttpHeaders in = new DefaultHttpHeaders()
                .add(HttpHeaderNames.CONNECTION, "x-PRIVATE")
                .add("X-Private", "secret")
                .add("X-End-To-End", "kept");

        HttpHeaders out = new OwnerRequestHeaders(request(in, SOME_BODY, 12, false, null)).forAttempt(OWNER, ENTRY, 1);

        assertThat(out.contains(HttpHeaderNames.CONNECTION)).isFalse();
        assertThat(out.contains("X-Private")).isFalse();
        assertThat(out.get("X-End-To-End")).isEqualTo("kept");
    }

    @Test
    void forAttempt_upgrade_asksTheOwnerAgain() {
        HttpHeaders in = new DefaultHttpHeaders()
                .add(HttpHeaderNames.CONNECTION, "Upgrade")
                .add(HttpHeaderNames.UPGRADE, "websocket")
                .add(HttpHeaderNames.SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ==");

        HttpHeaders out = new OwnerRequestHeaders(request(in, RequestBody.EMPTY, -1, false, "websocket"))
                .forAttempt(OWNER, ENTRY, 1);

        assertThat(out.get(HttpHeaderNames.CONNECTION)).isEqualTo("upgrade");
        assertThat(out.get(HttpHeaderNames.UPGRADE)).isEqualTo("websocket");
        assertThat(out.get(HttpHeaderNames.SEC_WEBSOCKET_KEY)).isEqualTo("dGhlIHNhbXBsZSBub25jZQ==");
    }

    @Test
    void forAttempt_declaredLength_framesByContentLength() {
        HttpHeaders in = new DefaultHttpHeaders().add(HttpHeaderNames.CONTENT_LENGTH, "12");

        HttpHeaders out = new OwnerRequestHeaders(request(in, SOME_BODY, 12, false, null)).forAttempt(OWNER, ENTRY, 1);

        assertThat(out.get(HttpHeaderNames.CONTENT_LENGTH)).isEqualTo("12");
        assertThat(out.contains(HttpHeaderNames.TRANSFER_ENCODING)).isFalse();
    }

    @Test
    void forAttempt_undeclaredLength_framesChunked() {
        HttpHeaders in = new DefaultHttpHeaders().add(HttpHeaderNames.TRANSFER_ENCODING, "chunked");

        HttpHeaders out = new OwnerRequestHeaders(request(in, SOME_BODY, -1, false, null)).forAttempt(OWNER, ENTRY, 1);

        assertThat(out.get(HttpHeaderNames.TRANSFER_ENCODING)).isEqualTo("chunked");
        assertThat(out.contains(HttpHeaderNames.CONTENT_LENGTH)).isFalse();
    }

    /** RFC 9110 §8.6: a POST with no content normally says so with Content-Length: 0; it passes on. */
    @Test
    void forAttempt_noBodyDeclaredZero_sendsContentLengthZero() {
        HttpHeaders in = new DefaultHttpHeaders().add(HttpHeaderNames.CONTENT_LENGTH, "0");

        HttpHeaders out =
                new OwnerRequestHeaders(request(in, RequestBody.EMPTY, 0, false, null)).forAttempt(OWNER, ENTRY, 1);

        assertThat(out.getAll(HttpHeaderNames.CONTENT_LENGTH)).containsExactly("0");
        assertThat(out.contains(HttpHeaderNames.TRANSFER_ENCODING)).isFalse();
    }

    @Test
    void forAttempt_noBodyNoLength_sendsNoFraming() {
        HttpHeaders out = new OwnerRequestHeaders(request(new DefaultHttpHeaders(), RequestBody.EMPTY, -1, false, null))
                .forAttempt(OWNER, ENTRY, 1);

        assertThat(out.contains(HttpHeaderNames.CONTENT_LENGTH)).isFalse();
        assertThat(out.contains(HttpHeaderNames.TRANSFER_ENCODING)).isFalse();
    }

    @Test
    void forAttempt_ownerWithoutPort_hostIsTheName() {
        HttpHeaders out = new OwnerRequestHeaders(request(new DefaultHttpHeaders(), RequestBody.EMPTY, -1, false, null))
                .forAttempt(URI.create("http://owner-c"), ENTRY, 1);

        assertThat(out.get(HttpHeaderNames.HOST)).isEqualTo("owner-c");
    }

    @Test
    void forAttempt_pinned_noRoutingNoForwardingFactsOfItsOwn_theTargetsHeadersAfterTheFilter() {
        HttpHeaders in = new DefaultHttpHeaders()
                .add("X-Forwarded-For", "198.51.100.9")
                .add(SpectorHeaders.TENANT, "forged")
                .add(SpectorHeaders.PEER_MAC, "forged")
                .add(SpectorHeaders.PEER_TENANT, "forged")
                .add(HttpHeaderNames.CONTENT_LENGTH, "12")
                .add("X-End-To-End", "kept");
        HttpHeaders peer =
                new DefaultHttpHeaders().set(SpectorHeaders.PEER_MAC, "signed").set(SpectorHeaders.PEER_TENANT, "acme");
        ForwardRequest pinned = ForwardRequest.pinned(
                HttpMethod.PUT,
                "/relay/w/app/x",
                in,
                SOME_BODY,
                12,
                "192.0.2.1",
                new PinnedTarget(
                        "peer",
                        URI.create("http://10.0.0.8:7090"),
                        peer,
                        Duration.ofSeconds(5),
                        Duration.ofSeconds(1)));

        HttpHeaders out = new OwnerRequestHeaders(pinned).forAttempt(URI.create("http://10.0.0.8:7090"), ENTRY, 1);

        assertThat(out.get(HttpHeaderNames.HOST)).isEqualTo("10.0.0.8:7090");
        assertThat(out.getAll("X-Forwarded-For"))
                .as("the client's forwarding facts as they came, none added")
                .containsExactly("198.51.100.9");
        assertThat(out.contains("X-Forwarded-Proto")).isFalse();
        assertThat(out.getAll(SpectorHeaders.PEER_MAC))
                .as("the client's copy dropped")
                .containsExactly("signed");
        assertThat(out.getAll(SpectorHeaders.PEER_TENANT)).containsExactly("acme");
        for (String routing : new String[] {
            SpectorHeaders.TENANT, SpectorHeaders.NAMESPACE, SpectorHeaders.EPOCH, SpectorHeaders.ATTEMPT
        }) {
            assertThat(out.contains(routing)).as(routing).isFalse();
        }
        assertThat(out.get(HttpHeaderNames.CONTENT_LENGTH)).isEqualTo("12");
        assertThat(out.get("X-End-To-End")).isEqualTo("kept");
    }

    /**
     * The texts kept between attempts (issue 14): each epoch, attempt number and owner is sent as
     * its own, when epochs alternate, past the kept attempt numbers, and past {@link
     * OwnerRequestHeaders#MAX_HOSTS} owners.
     */
    @Test
    void forAttempt_keptTexts_areEachAttemptsOwn() {
        long[] epochs = {5, 6, 5, 0, Long.MAX_VALUE, 5};
        for (int i = 0; i < epochs.length; i++) {
            int number = i + 1;
            HttpHeaders out = new OwnerRequestHeaders(
                            request(new DefaultHttpHeaders(), RequestBody.EMPTY, -1, false, null))
                    .forAttempt(OWNER, new RouteEntry("owner-a", epochs[i], 0), number);
            assertThat(out.get(SpectorHeaders.EPOCH)).isEqualTo(Long.toString(epochs[i]));
            assertThat(out.get(SpectorHeaders.ATTEMPT)).isEqualTo(Integer.toString(number));
        }
        for (int port = 1; port <= OwnerRequestHeaders.MAX_HOSTS * 2 + 1; port++) {
            URI owner = URI.create("http://10.0.0.9:" + port);
            assertThat(OwnerRequestHeaders.hostOf(owner)).isEqualTo("10.0.0.9:" + port);
            assertThat(OwnerRequestHeaders.hostOf(OWNER)).isEqualTo("10.0.0.7:8081");
        }
    }
}
