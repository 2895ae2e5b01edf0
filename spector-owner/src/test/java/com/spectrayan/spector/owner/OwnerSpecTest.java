package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.SpectorException;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link OwnerSpec}'s defaults and validation. */
final class OwnerSpecTest {
    @Test
    void build_withOnlyANodeId_hasTheDocumentedDefaults() {
        OwnerSpec spec = OwnerSpec.builder("owner-0").build();

        assertThat(spec.bindHost()).isEqualTo("127.0.0.1");
        assertThat(spec.port()).isZero();
        assertThat(spec.cellId()).isEqualTo("default");
        assertThat(spec.ringMembers()).containsExactly("owner-0");
        assertThat(spec.ringEpoch()).isEqualTo(1);
        assertThat(spec.dataDir()).isNull();
        assertThat(spec.redisUri()).isNull();
        assertThat(spec.hmacSecret()).hasSize(OwnerLimits.MIN_HMAC_SECRET_BYTES);
        assertThat(spec.adminToken())
                .as("no admin token: loopback admin callers only")
                .isNull();
    }

    @Test
    void adminToken_atItsBoundsIsTaken_andOnePastIsRefusedWithoutShowingIt() {
        String min = "t".repeat(OwnerLimits.MIN_ADMIN_TOKEN_BYTES);
        String max = "T".repeat(OwnerLimits.MAX_ADMIN_TOKEN_BYTES);

        assertThat(OwnerSpec.builder("n").adminToken(min).build().adminToken()).isEqualTo(min);
        assertThat(OwnerSpec.builder("n").adminToken(max).build().adminToken()).isEqualTo(max);
        assertThatThrownBy(() -> OwnerSpec.builder("n").adminToken(min.substring(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("adminToken: 15 bytes (expected: 16..256 bytes)");
        assertThatThrownBy(() -> OwnerSpec.builder("n").adminToken(max + "T"))
                .hasMessage("adminToken: 257 bytes (expected: 16..256 bytes)");
    }

    @Test
    void adminToken_ofToken68IsTaken_andAnyOtherCharIsRefusedByItsIndexOnly() {
        String everyClass = "AZaz09-._~+/AZaz"; // RFC 9110 §11.2 token68: each class of its chars
        String base64 = Base64.getEncoder().encodeToString(new byte[32]);
        String base64url = Base64.getUrlEncoder().encodeToString(new byte[20]);

        for (String token : List.of(everyClass, everyClass + "==", base64, base64url, "f".repeat(64))) {
            assertThat(OwnerSpec.builder("n").adminToken(token).build().adminToken())
                    .as(token)
                    .isEqualTo(token);
        }
        String expected = " (expected: A-Za-z0-9-._~+/ with '=' only at the end)";
        for (String[] bad : new String[][] {
            {"abcdefgh=ijklmnop", "8"}, // '=' is padding: only at the end
            {"abcdefgh ijklmnop", "8"},
            {"abcdefghijklmno\"", "15"},
            {"abcdefgh\tijklmnop", "8"},
            {"abcdefghijklmnop\u00e9", "16"}, // not ASCII
            {"abc,defghijklmnop", "3"}
        }) {
            assertThatThrownBy(() -> OwnerSpec.builder("n").adminToken(bad[0]))
                    .as(bad[0])
                    .hasMessage("adminToken: a character outside token68 at index " + bad[1] + expected)
                    .message()
                    .doesNotContain(bad[0]);
        }
        assertThatThrownBy(() -> OwnerSpec.builder("n").adminToken("=".repeat(16)))
                .hasMessage("adminToken: only '='" + expected.replace(" (expected: ", " (expected: token68, "));
        assertThat(OwnerSpec.adminTokenProblem(everyClass)).isNull();
        assertThat(OwnerSpec.adminTokenProblem("short")).isEqualTo("5 bytes (expected: 16..256 bytes)");
    }

    @Test
    void toString_saysWhetherThereIsAnAdminToken_neverTheToken() {
        String token = "secret-admin-token-0123456789";

        assertThat(OwnerSpec.builder("n").adminToken(token).build().toString())
                .contains("adminToken=true")
                .doesNotContain(token);
        assertThat(OwnerSpec.builder("n").build().toString()).contains("adminToken=false");
    }

    @Test
    void hmacSecret_atThirtyTwoBytesIsTaken_andOneShortIsRefused() {
        assertThat(OwnerSpec.builder("n").hmacSecret(new byte[32]).build().hmacSecret())
                .hasSize(32);
        assertThatThrownBy(() -> OwnerSpec.builder("n").hmacSecret(new byte[31]))
                .hasMessage("hmacSecret: 31 bytes (expected: >= 32)");
    }

    @Test
    void port_atItsBoundsIsTaken_andOnePastIsRefused() {
        assertThat(OwnerSpec.builder("n").port(65535).build().port()).isEqualTo(65535);
        assertThatThrownBy(() -> OwnerSpec.builder("n").port(65536)).hasMessage("port: 65536 (expected: 0..65535)");
        assertThatThrownBy(() -> OwnerSpec.builder("n").port(-1)).hasMessage("port: -1 (expected: 0..65535)");
    }

    @Test
    void build_withBadRingOrIds_isRefusedNamingTheValue() {
        assertThatThrownBy(() ->
                        OwnerSpec.builder("n").ringMembers(List.of("a", "a")).build())
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining("'a' is listed twice");
        assertThatThrownBy(() -> OwnerSpec.builder("bad id").build()).hasMessageContaining("nodeId");
        assertThatThrownBy(() -> OwnerSpec.builder("n").cellId("Cell")).hasMessageContaining("cellId");
        assertThatThrownBy(() -> OwnerSpec.builder("n").ringEpoch(-1)).hasMessage("ringEpoch: -1 (expected: >= 0)");
    }

    @Test
    void hmacSecret_isCopiedInAndOut() {
        byte[] secret = new byte[32];
        OwnerSpec spec = OwnerSpec.builder("n").hmacSecret(secret).build();
        secret[0] = 1;
        spec.hmacSecret()[1] = 1;

        assertThat(spec.hmacSecret()).containsOnly(0);
    }
}
