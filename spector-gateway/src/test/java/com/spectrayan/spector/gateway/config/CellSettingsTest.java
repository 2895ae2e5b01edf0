package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsFixtures.refused;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.refusedExactly;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.required;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.withProps;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Validation of the {@code spector.cell.*} keys: the role, the cell id and the ring members. */
final class CellSettingsTest {
    // ---- Ring members ----

    @Test
    void ringMembers_bareAndExplicit_keepTheirOrder() {
        GatewaySettings s =
                withProps(Map.of("spector.cell.ring-members", " owner-2 , owner-0=http://10.0.0.1:9000 ,owner-1"));

        assertThat(s.cell().ringMembers())
                .as("a bare id is http://<id>:7070; order is kept")
                .containsExactly(
                        Map.entry("owner-2", URI.create("http://owner-2:7070")),
                        Map.entry("owner-0", URI.create("http://10.0.0.1:9000")),
                        Map.entry("owner-1", URI.create("http://owner-1:7070")));
    }

    @Test
    void ringMembers_duplicateId_isRefused() {
        assertThat(refused(Map.of("spector.cell.ring-members", "owner-0,owner-0=http://h:1"))
                        .problems())
                .singleElement()
                .asString()
                .startsWith("spector.cell.ring-members: owner-0=http://h:1 (expected: each id once");
    }

    @Test
    void ringMembers_badUrls_areRefusedEachByName() {
        SettingsException e = refused(Map.of(
                "spector.cell.ring-members",
                "a=https://h:1,b=http://h,c=ftp://h:21,d=http://h:1/path,e=http://u@h:1,f=not a url,g_h"));

        assertThat(e.problems())
                .as("https, no port, another scheme, a path, userinfo, spaces, a non-host bare id")
                .hasSize(7)
                .allSatisfy(p -> assertThat(p).startsWith("spector.cell.ring-members: "));
    }

    @Test
    void ringMembers_missingOrEmptyEntry_isRefused() {
        Map<String, String> props = required();
        props.remove("spector.cell.ring-members");
        assertThat(refusedExactly(props).problems())
                .singleElement()
                .asString()
                .startsWith("spector.cell.ring-members: <unset> (expected: ");
        assertThat(refused(Map.of("spector.cell.ring-members", "a,,b")).getMessage())
                .contains("without empty entries");
    }

    @Test
    void ringMembers_idOf255Chars_isAcceptedAnd256IsRefused() {
        String id255 = "o".repeat(255);
        assertThat(withProps(Map.of("spector.cell.ring-members", id255 + "=http://h:1"))
                        .cell()
                        .ringMembers())
                .containsOnlyKeys(id255);
        assertThat(refused(Map.of("spector.cell.ring-members", "o".repeat(256) + "=http://h:1"))
                        .getMessage())
                .contains("spector.cell.ring-members: ");
    }

    // ---- Role and cell ----

    @Test
    void role_missing_isRefusedNamingTheKey() {
        Map<String, String> props = required();
        props.remove("spector.cell.role");

        assertThat(refusedExactly(props).problems())
                .singleElement()
                .asString()
                .as("the refusal names spector.cell.role and says it must be gateway")
                .isEqualTo("spector.cell.role: <unset> (expected: gateway; the gateway refuses to start unless"
                        + " spector.cell.role=gateway)");
    }

    @Test
    void role_notGateway_isRefusedNamingTheKey() {
        assertThat(refused(Map.of("spector.cell.role", "owner")).getMessage())
                .contains("spector.cell.role: owner (expected: gateway");
    }

    @Test
    void cellId_notARoutingName_isRefused() {
        assertThat(withProps(Map.of("spector.cell.id", "eu-1.a_b")).cell().id()).isEqualTo("eu-1.a_b");
        assertThat(refused(Map.of("spector.cell.id", "EU")).getMessage())
                .contains("spector.cell.id: EU (expected: a routing name [a-z0-9][a-z0-9._-]{0,62})");
        assertThat(refused(Map.of("spector.cell.id", "a".repeat(64))).getMessage())
                .as("64 chars is one past a routing name")
                .contains("spector.cell.id: ");
    }
}
