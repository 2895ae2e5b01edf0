package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.SpectorException;
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
