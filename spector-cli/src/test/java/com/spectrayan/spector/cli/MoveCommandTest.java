package com.spectrayan.spector.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.owner.OwnerSpec;
import com.spectrayan.spector.owner.ReferenceOwner;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code spector move} against two real reference owners on loopback. */
final class MoveCommandTest {
    private static final List<String> MEMBERS = List.of("owner-a", "owner-b");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOKEN = "move-command-admin-token-0123456789";

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

    /**
     * {@code --to-url} is the address the current owner reaches the new one at: here the new
     * owner's --members address is one nothing answers on (as a port-forward's would be from the
     * owner's side), and the move still goes through on --to-url.
     */
    @Test
    void move_withToUrl_sendsThatAddressToTheCurrentOwner() throws Exception {
        String ns = namespaceOf("owner-a");
        String unreachableB = "owner-a=" + a.baseUri() + ",owner-b=http://127.0.0.1:1";

        assertThat(run(
                        "move",
                        "--namespace",
                        ns,
                        "--tenant",
                        "acme",
                        "--to",
                        "owner-b",
                        "--members",
                        unreachableB,
                        "--to-url",
                        b.baseUri().toString()))
                .as(err.toString())
                .isZero();

        assertThat(JSON.readTree(out.toString()).path("to").asText()).isEqualTo("owner-b");
        assertThat(ownerSeenBy(b, ns, null)).isEqualTo("owner-b");
        assertThat(err.toString()).as("the member it could not ask").contains("owner-b did not answer");
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

    @Test
    void move_withTheAdminToken_againstOwnersWithOne_movesTheNamespace() throws Exception {
        restartWithToken(TOKEN);
        String ns = namespaceOf("owner-a");

        int code = run(moveToB(ns, "--admin-token", TOKEN));

        assertThat(code).as(err.toString()).isZero();
        JsonNode moved = JSON.readTree(out.toString());
        assertThat(moved.path("from").asText()).isEqualTo("owner-a");
        assertThat(moved.path("to").asText()).isEqualTo("owner-b");
        assertThat(moved.path("epoch").asLong()).isEqualTo(2);
        assertThat(ownerSeenBy(b, ns, TOKEN)).isEqualTo("owner-b");
    }

    @Test
    void move_withoutTheAdminToken_againstOwnersWithOne_printsEachMemberThatRefusedAndExits1() throws Exception {
        assumeThat(System.getenv(OwnerCommand.ADMIN_TOKEN_ENV))
                .as("--admin-token defaults to $%s: it must be unset here", OwnerCommand.ADMIN_TOKEN_ENV)
                .isNull();

        assertThat(refusedMove())
                .contains("spector move: owner-a refused the admin call (401 Bearer realm=\"spector-admin\")")
                .contains("spector move: owner-b refused the admin call (401")
                .contains("give --admin-token or set SPECTOR_OWNER_ADMIN_TOKEN");
    }

    @Test
    void move_withAWrongAdminToken_printsTheMembersThatRefusedItAndExits1() throws Exception {
        assertThat(refusedMove("--admin-token", "not-the-cells-admin-token"))
                .contains("spector move: owner-a refused the admin call (401 Bearer realm=\"spector-admin\","
                        + " error=\"invalid_token\"): not its admin token")
                .contains("spector move: owner-b refused the admin call")
                .doesNotContain("not-the-cells-admin-token");
    }

    /**
     * Runs a move of an owner-a namespace to owner-b, owners with {@link #TOKEN}, that they refuse;
     * checks exit 1 and that nothing moved, and returns what it printed on stderr.
     */
    private String refusedMove(String... extra) throws Exception {
        restartWithToken(TOKEN);
        String ns = namespaceOf("owner-a");

        int code = run(moveToB(ns, extra));

        assertThat(code).as(err.toString()).isEqualTo(1);
        assertThat(out.toString()).isEmpty();
        assertThat(ownerSeenBy(a, ns, TOKEN)).as("nothing moved").isEqualTo("owner-a");
        return err.toString();
    }

    /** Returns the arguments of {@code spector move} of {@code acme/ns} to owner-b, then {@code extra}. */
    private String[] moveToB(String ns, String... extra) {
        List<String> args = new ArrayList<>(
                List.of("move", "--namespace", ns, "--tenant", "acme", "--to", "owner-b", "--members", members()));
        args.addAll(List.of(extra));
        return args.toArray(String[]::new);
    }

    @Test
    void move_withAnAdminTokenOutsideItsBounds_isExit2WithoutShowingIt() {
        int code = run(
                "move",
                "--namespace",
                "ns",
                "--to",
                "owner-b",
                "--members",
                members(),
                "--admin-token",
                "fifteen-bytes-x");

        assertThat(code).isEqualTo(2);
        assertThat(err.toString())
                .contains("--admin-token: 15 bytes (expected: 16..256 bytes)")
                .doesNotContain("fifteen-bytes-x");
    }

    @Test
    void move_asAProcess_takesTheAdminTokenFromTheOwnersVariable() throws Exception {
        restartWithToken(TOKEN);
        String ns = namespaceOf("owner-a");
        ProcessBuilder pb = new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx64m",
                "-cp",
                System.getProperty("java.class.path"),
                SpectorCli.class.getName(),
                "move",
                "--namespace",
                ns,
                "--tenant",
                "acme",
                "--to",
                "owner-b",
                "--members",
                members());
        pb.environment().put(OwnerCommand.ADMIN_TOKEN_ENV, TOKEN);
        pb.redirectErrorStream(true);
        Process move = pb.start();
        try {
            CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
                try (InputStream in = move.getInputStream()) {
                    return new String(in.readAllBytes(), StandardCharsets.UTF_8);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });

            assertThat(move.waitFor(30, TimeUnit.SECONDS)).as("the move ends").isTrue();
            String printed = output.get(10, TimeUnit.SECONDS);
            assertThat(move.exitValue()).as(printed).isZero();
            assertThat(printed).contains("\"to\":\"owner-b\"").doesNotContain(TOKEN);
            assertThat(ownerSeenBy(b, ns, TOKEN)).isEqualTo("owner-b");
        } finally {
            move.destroyForcibly();
        }
    }

    /** Closes both owners and starts them again with one admin token. */
    private void restartWithToken(String token) {
        stop();
        a = ReferenceOwner.start(OwnerSpec.builder("owner-a")
                .ringMembers(MEMBERS)
                .adminToken(token)
                .build());
        b = ReferenceOwner.start(OwnerSpec.builder("owner-b")
                .ringMembers(MEMBERS)
                .adminToken(token)
                .build());
    }

    /** Returns the owner of {@code acme/ns} in {@code node}'s view, asked with the admin token. */
    private static String ownerSeenBy(ReferenceOwner node, String ns, @Nullable String token) throws Exception {
        HttpRequest.Builder q = HttpRequest.newBuilder(
                        node.baseUri().resolve("/admin/ownership?tenant=acme&namespace=" + ns))
                .timeout(Duration.ofSeconds(10));
        if (token != null) {
            q.header("Authorization", "Bearer " + token);
        }
        HttpResponse<String> r = HttpClient.newHttpClient().send(q.build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body()).path("owner").asText();
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
