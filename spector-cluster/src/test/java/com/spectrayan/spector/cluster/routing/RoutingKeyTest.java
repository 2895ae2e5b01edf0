package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

final class RoutingKeyTest {

    @Test
    void ringKey_untenanted_isTheNamespace() {
        assertThat(RoutingKey.ofUntenanted("cell-1", "orders").ringKey()).isEqualTo("orders");
    }

    @Test
    void ringKey_tenanted_isTenantSlashNamespace() {
        RoutingKey key = RoutingKey.of("cell-1", "acme", "orders");

        assertThat(key.ringKey()).isEqualTo("acme/orders");
        assertThat(key.tenant()).isEqualTo("acme");
        assertThat(key).isEqualTo(RoutingKey.of("cell-1", "acme", "orders"));
        assertThat(key).isNotEqualTo(RoutingKey.ofUntenanted("cell-1", "orders"));
    }

    @Test
    void name_atSixtyThreeChars_isAccepted_andSixtyFour_isBadRequest() {
        String max = "a".repeat(63);
        assertThat(RoutingKey.ofUntenanted("c", max).namespace()).isEqualTo(max);

        assertThatThrownBy(() -> RoutingKey.ofUntenanted("c", max + "a"))
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining("namespace: 64 chars (expected: 1..63")
                .satisfies(e -> assertThat(((SpectorException) e).code()).isEqualTo(ErrorCode.BAD_REQUEST));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "Orders", "-orders", ".x", "_x", "a b", "a/b", "a%2Fb", "ü", "a\nb"})
    void name_outsideThePattern_isBadRequest(String bad) {
        assertThatThrownBy(() -> RoutingKey.of("cell", "acme", bad))
                .isInstanceOf(SpectorException.class)
                .hasMessageStartingWith("namespace: ")
                .satisfies(e -> assertThat(((SpectorException) e).code()).isEqualTo(ErrorCode.BAD_REQUEST));
    }

    @ParameterizedTest
    @ValueSource(strings = {"a", "0", "a.b_c-d", "9-lives"})
    void name_insideThePattern_isAccepted(String good) {
        assertThat(RoutingKey.of(good, good, good).ringKey()).isEqualTo(good + "/" + good);
    }

    @Test
    void tenant_badName_isBadRequestNamingTheTenant() {
        assertThatThrownBy(() -> RoutingKey.of("cell", "ACME", "orders")).hasMessageStartingWith("tenant: ");
    }
}
