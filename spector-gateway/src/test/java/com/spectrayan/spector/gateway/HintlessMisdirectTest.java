package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Waits;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A 421 that names no owner (DESIGN.md section 4: "retarget to the reported owner, else
 * re-resolve"), over raw sockets to two scripted owners: the gateway forgets the owner's L1 entry
 * and resolves the key again, so a stale cache entry is corrected by an owner that only knows it
 * is not the owner; when the ring names the owner that refused, the client gets 503 {@code
 * no-owner-hint} after one attempt.
 */
final class HintlessMisdirectTest {
    @TempDir
    static Path dir;

    private static Path log;
    private static MockOwner ringOwner;
    private static MockOwner refuser;
    private static Cell cell;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        log = dir.resolve("access.log");
        // The ring's owner of its namespaces: it sends "/moved" requests to the refuser (which
        // the gateway then caches) and serves everything else.
        ringOwner = MockOwner.start(r -> r.path().endsWith("/moved")
                ? MockOwner.response(
                        421,
                        "Misdirected Request",
                        "",
                        "X-Spector-Owner: mock-refuser",
                        "X-Spector-Epoch: 2",
                        "X-Spector-Redirect: moved")
                : MockOwner.response(200, "OK", "from the ring's owner", "Content-Type: text/plain"));
        // Serves "/moved", and says "not mine" without a hint to everything else.
        refuser = MockOwner.start(r -> r.path().endsWith("/moved")
                ? MockOwner.response(200, "OK", "from the refuser", "Content-Type: text/plain")
                : MockOwner.response(421, "Misdirected Request", ""));
        cell = Cell.builder()
                .owners(0)
                .member("mock-ring", ringOwner.baseUri())
                .member("mock-refuser", refuser.baseUri())
                .set("spector.server.access-log", log.toString())
                .start();
        token = Cell.token(Cell.TENANT);
    }

    @AfterAll
    static void stop() {
        cell.close();
        ringOwner.close();
        refuser.close();
    }

    private static RawClient.Response get(String path) throws Exception {
        return RawClient.exchange(
                cell.gateway.port(),
                "GET " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + token + "\r\n\r\n");
    }

    @Test
    void aStaleCacheEntry_isCorrectedByReresolving() throws Exception {
        String ns = cell.namespaceOwnedBy("mock-ring");
        String moved = "/api/v1/namespaces/" + ns + "/moved";
        String stale = "/api/v1/namespaces/" + ns + "/after";
        assertThat(get(moved).text()).as("the 421 taught L1 the refuser").isEqualTo("from the refuser");

        RawClient.Response r = get(stale);

        assertThat(r.status()).isEqualTo(200);
        assertThat(r.text()).isEqualTo("from the ring's owner");
        assertThat(refuser.requestsEndingWith("/after"))
                .as("L1 sent it to the refuser first")
                .hasSize(1);
        assertThat(ringOwner.requestsEndingWith("/after")).hasSize(1);
        Waits.untilAsserted(() -> assertThat(Cell.accessLogLines(log, stale))
                .singleElement()
                .satisfies(l -> assertThat(l).contains("\"attempts\":2,\"retargets\":\"moved\"")));

        RawClient.Response again = get(stale);

        assertThat(again.text()).isEqualTo("from the ring's owner");
        assertThat(refuser.requestsEndingWith("/after"))
                .as("the stale entry is gone: the next request goes where the ring says")
                .hasSize(1);
    }

    @Test
    void theRingNamingTheOwnerThatRefused_is503NoOwnerHint_afterOneAttempt() throws Exception {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-refuser") + "/refused";

        RawClient.Response r = get(path);

        assertThat(r.status()).isEqualTo(503);
        assertThat(r.text()).contains("\"code\":\"GATEWAY_ROUTING_FAILURE\"", "\"reason\":\"no-owner-hint\"");
        assertThat(refuser.requestsEndingWith("/refused")).hasSize(1);
        assertThat(ringOwner.requestsEndingWith("/refused")).isEmpty();
    }
}
