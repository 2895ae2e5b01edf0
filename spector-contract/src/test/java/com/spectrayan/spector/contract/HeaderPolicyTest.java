package com.spectrayan.spector.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

final class HeaderPolicyTest {

    @ParameterizedTest
    @ValueSource(
            strings = {
                "Connection",
                "Keep-Alive",
                "Proxy-Authenticate",
                "Proxy-Authorization",
                "TE",
                "Trailer",
                "Transfer-Encoding",
                "Upgrade"
            })
    void forwardsToOwner_hopByHopName_isDroppedInAnyCase(String name) {
        assertThat(HeaderPolicy.forwardsToOwner(name, Set.of())).as(name).isFalse();
        assertThat(HeaderPolicy.forwardsToOwner(name.toUpperCase(java.util.Locale.ROOT), Set.of()))
                .isFalse();
        assertThat(HeaderPolicy.forwardsToClient(name, Set.of())).isFalse();
        assertThat(HeaderPolicy.forwardsOverUplink(name, Set.of())).isFalse();
    }

    /**
     * RFC 9110 §7.6.1 drops what the sender nominated; X-Request-Id the gateway itself sets on the
     * next hop, so a client's {@code Connection: X-Request-Id} cannot keep the id from the owner.
     */
    /**
     * An underscore spelling of a name the gateway owns, sets or drops is one a CGI or WSGI owner
     * would merge with the gateway's own (HTTP_X_SPECTOR_TENANT): dropped. Other underscores pass.
     */
    @ParameterizedTest
    @ValueSource(
            strings = {
                "X_Spector_Tenant", "x_spector_namespace", "X-Spector_Tenant", "X_SPECTOR_EPOCH", "X_Spector_Fence",
                "X_Forwarded_For", "x-forwarded_host", "X_Forwarded_Proto", "X_Forwarded_Port", "X_Request_Id",
                "X_Spector_Lease", "X_Spector_Peer_Mac", "X_Real_IP", "True_Client_IP", "CF_Connecting_IP",
                "Fastly_Client_IP", "Front_End_Https", "x_original_url"
            })
    void anUnderscoreSpellingOfAGatewayName_isOneInDisguise(String name) {
        assertThat(HeaderPolicy.isGatewayNameInDisguise(name)).isTrue();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "X-Spector-Tenant",
                "X_Custom",
                "X-Forwarded-For",
                "Idempotency_Key",
                "x_",
                "x",
                "",
                "Y_Spector_Tenant",
                "True-Client-IP",
                "Content_Type",
                "Cache_Control"
            })
    void otherNames_areNot(String name) {
        assertThat(HeaderPolicy.isGatewayNameInDisguise(name)).isFalse();
    }

    @Test
    void connectionTokens_neverListTheRequestId() {
        Set<String> tokens = HeaderPolicy.connectionTokens(List.of("X-Request-Id, x-other", "x-request-id"));

        assertThat(tokens).containsExactly("x-other");
        assertThat(HeaderPolicy.forwardsToOwner("X-Request-Id", tokens)).isTrue();
        assertThat(HeaderPolicy.forwardsOverUplink("x-request-id", tokens)).isTrue();
    }

    /** RFC 9112 §6.1, §7: only chunked is undone; any other coding is named (at most 40 chars). */
    @Test
    void unknownTransferCoding_namesTheFirstCodingOtherThanChunked() {
        assertThat(HeaderPolicy.unknownTransferCoding(List.of("chunked"))).isNull();
        assertThat(HeaderPolicy.unknownTransferCoding(List.of(" Chunked "))).isNull();
        assertThat(HeaderPolicy.unknownTransferCoding(List.of())).isNull();
        assertThat(HeaderPolicy.unknownTransferCoding(List.of("gzip, chunked"))).isEqualTo("gzip");
        assertThat(HeaderPolicy.unknownTransferCoding(List.of("chunked", "br"))).isEqualTo("br");
        assertThat(HeaderPolicy.unknownTransferCoding(List.of("chunked,"))).isEqualTo("");
        assertThat(HeaderPolicy.unknownTransferCoding(List.of("x".repeat(40) + ",chunked")))
                .isEqualTo("x".repeat(40));
        assertThat(HeaderPolicy.unknownTransferCoding(List.of("x".repeat(41)))).isEqualTo("x".repeat(40) + "...");
    }

    @Test
    void forwardsToOwner_nameListedByConnection_isDropped() {
        Set<String> tokens = HeaderPolicy.connectionTokens(List.of("keep-alive, X-Secret-Hop", "close"));

        assertThat(tokens).containsExactlyInAnyOrder("keep-alive", "x-secret-hop", "close");
        assertThat(HeaderPolicy.forwardsToOwner("X-Secret-Hop", tokens)).isFalse();
        assertThat(HeaderPolicy.forwardsToClient("x-secret-hop", tokens)).isFalse();
        assertThat(HeaderPolicy.forwardsToOwner("X-Other", tokens)).isTrue();
    }

    @Test
    void forwardsToOwner_framingAndGatewayOwnedNames_areDropped() {
        for (String name : List.of(
                "Host",
                "Content-Length",
                SpectorHeaders.EPOCH,
                SpectorHeaders.FENCE,
                SpectorHeaders.OWNER,
                SpectorHeaders.ATTEMPT,
                SpectorHeaders.PEER_TIME,
                SpectorHeaders.PEER_TENANT,
                SpectorHeaders.PEER_LEASE,
                SpectorHeaders.PEER_MAC,
                SpectorHeaders.NAMESPACE,
                SpectorHeaders.TENANT)) {
            assertThat(HeaderPolicy.forwardsToOwner(name, Set.of()))
                    .as("%s is re-created by the gateway", name)
                    .isFalse();
        }
    }

    @Test
    void forwardsToOwner_idempotencyKeysAndAuthorization_areKept() {
        assertThat(HeaderPolicy.forwardsToOwner(SpectorHeaders.IDEMPOTENCY_KEY, Set.of()))
                .isTrue();
        assertThat(HeaderPolicy.forwardsToOwner(SpectorHeaders.X_IDEMPOTENCY_KEY, Set.of()))
                .isTrue();
        assertThat(HeaderPolicy.forwardsToOwner("Authorization", Set.of())).isTrue();
    }

    @Test
    void forwardsOverUplink_peerHopHeaders_neverCross() {
        for (String name : List.of(
                SpectorHeaders.PEER_TIME,
                SpectorHeaders.PEER_TENANT,
                SpectorHeaders.PEER_LEASE,
                "x-spector-peer-mac")) {
            assertThat(HeaderPolicy.forwardsOverUplink(name, Set.of()))
                    .as("%s authenticates one hop between gateways only", name)
                    .isFalse();
        }
    }

    @Test
    void forwardsOverUplink_credentials_neverCross() {
        assertThat(HeaderPolicy.forwardsOverUplink("Authorization", Set.of())).isFalse();
        assertThat(HeaderPolicy.forwardsOverUplink("X-Agent-Device-Token", Set.of()))
                .isFalse();
        assertThat(HeaderPolicy.forwardsOverUplink("Accept", Set.of())).isTrue();
    }

    @Test
    void forwardsToClient_ownerNodeHeader_isKept() {
        assertThat(HeaderPolicy.forwardsToClient(SpectorHeaders.NODE, Set.of())).isTrue();
        assertThat(HeaderPolicy.forwardsToClient("Content-Length", Set.of())).isFalse();
    }

    @Test
    void connectionTokens_atTheLimit_areAccepted_andOnePast_isBadRequest() {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < HeaderPolicy.MAX_CONNECTION_TOKENS; i++) {
            names.add("x-" + i);
        }
        assertThat(HeaderPolicy.connectionTokens(List.of(String.join(",", names))))
                .hasSize(HeaderPolicy.MAX_CONNECTION_TOKENS);

        names.add("x-one-more");
        assertThatThrownBy(() -> HeaderPolicy.connectionTokens(List.of(String.join(",", names))))
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining("more than 32")
                .satisfies(e -> assertThat(((SpectorException) e).code()).isEqualTo(ErrorCode.BAD_REQUEST));
    }
}
