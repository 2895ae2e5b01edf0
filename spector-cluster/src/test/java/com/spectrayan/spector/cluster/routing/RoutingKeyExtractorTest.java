package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class RoutingKeyExtractorTest {
    private final RoutingKeyExtractor extractor = new RoutingKeyExtractor("cell-1");

    @Test
    void extract_headerNamespace_winsOverTheClaim_onAPathThatNamesNone() {
        RoutingKey key = extractor.extract("from-header", null, "/api/v1/commands", Map.of("namespace", "claim"));

        assertThat(key.namespace()).isEqualTo("from-header");
    }

    @Test
    void extract_headerNamespaceThatAgreesWithThePath_isTheKey() {
        RoutingKey key = extractor.extract("orders", null, "/api/v1/namespaces/orders/x", Map.of("namespace", "c"));

        assertThat(key.namespace()).isEqualTo("orders");
    }

    /**
     * The path names the data, the header the owner: one that contradicts the other would have
     * the header's owner write the path's namespace, which it does not own (single writer).
     * Regression (a review): the header won, and only the reference owner refused it.
     */
    @Test
    void extract_headerNamespaceThatContradictsThePath_isBadRequest() {
        assertThatThrownBy(() -> extractor.extract("a", null, "/api/v1/namespaces/b/objects/k", Map.of()))
                .isInstanceOfSatisfying(SpectorException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
                    assertThat(e.details()).containsEntry("field", "X-Spector-Namespace");
                });
    }

    @Test
    void extract_pathNamespace_winsOverClaim() {
        RoutingKey key = extractor.extract(null, null, "/api/v1/namespaces/orders/objects/1", Map.of("namespace", "c"));

        assertThat(key.namespace()).isEqualTo("orders");
    }

    @Test
    void extract_pathEndingAtTheNamespace_usesIt() {
        assertThat(extractor
                        .extract(null, null, "/api/v1/namespaces/orders", Map.of())
                        .namespace())
                .isEqualTo("orders");
    }

    @Test
    void extract_claimNamespace_isUsedWhenHeaderAndPathAreSilent() {
        assertThat(extractor
                        .extract(null, null, "/api/v1/events", Map.of("namespace", "claimed"))
                        .namespace())
                .isEqualTo("claimed");
    }

    @Test
    void extract_nothingNamed_isTheUntenantedDefault() {
        RoutingKey key = extractor.extract(null, null, "/api/v1/auth/token", Map.of());

        assertThat(key).isEqualTo(RoutingKey.ofUntenanted("cell-1", "default"));
    }

    @Test
    void extract_emptyPathSegment_fallsThroughToDefault() {
        assertThat(extractor
                        .extract(null, null, "/api/v1/namespaces/", Map.of())
                        .namespace())
                .isEqualTo("default");
    }

    @Test
    void extract_tenantFromTheTokenClaim_whenNoHeader() {
        assertThat(extractor
                        .extract(null, null, "/api/v1/x", Map.of("tenant", "acme"))
                        .tenant())
                .isEqualTo("acme");
    }

    @Test
    void extract_headerTenantMatchingTheToken_isAccepted() {
        assertThat(extractor
                        .extract(null, "acme", "/api/v1/x", Map.of("tenant", "acme"))
                        .ringKey())
                .isEqualTo("acme/default");
    }

    @Test
    void extract_headerTenantContradictingTheToken_isForbidden() {
        assertThatThrownBy(() -> extractor.extract(null, "other", "/api/v1/x", Map.of("tenant", "acme")))
                .isInstanceOf(SpectorException.class)
                .satisfies(e -> {
                    SpectorException se = (SpectorException) e;
                    assertThat(se.code()).isEqualTo(ErrorCode.FORBIDDEN);
                    assertThat(se.details()).containsEntry("reason", "tenant-mismatch");
                });
    }

    /** A token that names no tenant grants none: a header tenant with it is forbidden. */
    @Test
    void extract_headerTenantWithATokenThatNamesNone_isForbidden() {
        assertThatThrownBy(() -> extractor.extract(null, "acme", "/api/v1/x", Map.of("sub", "alice")))
                .isInstanceOf(SpectorException.class)
                .satisfies(e -> {
                    SpectorException se = (SpectorException) e;
                    assertThat(se.code()).isEqualTo(ErrorCode.FORBIDDEN);
                    assertThat(se.details()).containsEntry("reason", "tenant-mismatch");
                    assertThat(se.getMessage()).contains("the token names none");
                });
    }

    /** Without a token (edge auth off, or a route it skips) the header names the tenant alone. */
    @Test
    void extract_headerTenantWithoutAToken_isTheTenant() {
        assertThat(extractor.extract(null, "acme", "/api/v1/x", Map.of()).tenant())
                .isEqualTo("acme");
    }

    @Test
    void extract_malformedPathNamespace_isBadRequest() {
        assertThatThrownBy(() -> extractor.extract(null, null, "/api/v1/namespaces/Bad%20Name/x", Map.of()))
                .isInstanceOf(SpectorException.class)
                .satisfies(e -> assertThat(((SpectorException) e).code()).isEqualTo(ErrorCode.BAD_REQUEST));
    }

    @Test
    void extract_nonStringClaim_isBadRequest() {
        assertThatThrownBy(() -> extractor.extract(null, null, "/api/v1/x", Map.of("tenant", 7)))
                .hasMessageContaining("claim tenant: not a string");
    }
    /** The thread's last key is reused only for the same tenant and namespace, never for another. */
    @Test
    void extract_sameNames_reuseTheKey_otherNamesNever() {
        RoutingKey first = extractor.extract(null, null, "/api/v1/namespaces/orders/1", Map.of("tenant", "acme"));
        RoutingKey again = extractor.extract(null, "acme", "/api/v1/namespaces/orders/2", Map.of());
        assertThat(again).isSameAs(first);

        RoutingKey untenanted = extractor.extract(null, null, "/api/v1/namespaces/orders/1", Map.of());
        assertThat(untenanted.tenant()).isNull();
        assertThat(untenanted).isEqualTo(RoutingKey.ofUntenanted("cell-1", "orders"));
        RoutingKey otherTenant = extractor.extract(null, "beta", "/api/v1/namespaces/orders/1", Map.of());
        assertThat(otherTenant).isEqualTo(RoutingKey.of("cell-1", "beta", "orders"));
        RoutingKey otherNamespace = extractor.extract(null, "beta", "/api/v1/namespaces/order/1", Map.of());
        assertThat(otherNamespace).isEqualTo(RoutingKey.of("cell-1", "beta", "order"));
        assertThatThrownBy(() -> extractor.extract(null, "beta", "/api/v1/namespaces/Order/1", Map.of()))
                .isInstanceOf(SpectorException.class);

        RoutingKeyExtractor otherCell = new RoutingKeyExtractor("cell-2");
        assertThat(otherCell
                        .extract(null, "beta", "/api/v1/namespaces/order/1", Map.of())
                        .cellId())
                .isEqualTo("cell-2");
    }
}
