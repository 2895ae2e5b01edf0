package com.spectrayan.spector.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.owner.OwnerSpec;
import com.spectrayan.spector.owner.ReferenceOwner;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code spector move} against two real reference owners on loopback. */
final class MoveCommandTest {
    private static final List<String> MEMBERS = List.of("owner-a", "owner-b");
    private static final ObjectMapper JSON = new ObjectMapper();

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();
    private ReferenceOwner a;
    private ReferenceOwner b;

    @BeforeEach
    void start() {
        a = ReferenceOwner.start(
                OwnerSpec.builder("owner-a").ringMembers(MEMBERS).build());
        b = ReferenceOwner.start(
                OwnerSpec.builder("owner-b").ringMembers(MEMBERS).build());
    }

    @AfterEach
    void stop() {
        a.close();
        b.close();
    }

    private int run(String... args) {
        return SpectorCli.run(new PrintWriter(out, true), new PrintWriter(err, true), args);
    }

    private String members() {
        return "owner-a=" + a.baseUri() + ",owner-b=" + b.baseUri();
    }

    @Test
    void move_findsTheCurrentOwner_movesThenMovesBack() throws Exception {
        String ns = namespaceOf("owner-a");

        assertThat(run("move", "--namespace", ns, "--tenant", "acme", "--to", "owner-b", "--members", members()))
                .as(err.toString())
                .isZero();
        JsonNode first = JSON.readTree(out.toString());
        assertThat(first.path("from").asText()).isEqualTo("owner-a");
        assertThat(first.path("to").asText()).isEqualTo("owner-b");
        assertThat(first.path("epoch").asLong()).isEqualTo(2);
        assertThat(first.has("handoffMs")).isTrue();

        out.getBuffer().setLength(0);
        assertThat(run("move", "--namespace", ns, "--tenant", "acme", "--to", "owner-a", "--members", members()))
                .as("back: the newest view names owner-b now; %s", err)
                .isZero();
        JsonNode back = JSON.readTree(out.toString());
        assertThat(back.path("from").asText()).isEqualTo("owner-b");
        assertThat(back.path("epoch").asLong()).isEqualTo(3);
    }

    @Test
    void move_toTheOwnerAlready_isExit2() {
        String ns = namespaceOf("owner-a");

        assertThat(run("move", "--namespace", ns, "--tenant", "acme", "--to", "owner-a", "--members", members()))
                .isEqualTo(2);
        assertThat(err.toString()).contains("owned by owner-a already");
    }

    @Test
    void move_toANonMember_isExit2() {
        assertThat(run("move", "--namespace", "ns", "--to", "owner-z", "--members", members()))
                .isEqualTo(2);
        assertThat(err.toString()).contains("not among --members");
    }

    private static String namespaceOf(String owner) {
        KetamaRing ring = KetamaRing.of(1, MEMBERS);
        for (int i = 0; ; i++) {
            if (ring.ownerOf("acme/ns-" + i).equals(owner)) {
                return "ns-" + i;
            }
        }
    }
}
