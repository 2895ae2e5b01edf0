package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Waits;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The two kinds of 421 (RFC 9110 section 15.5.20; issue 13), over raw sockets to two scripted
 * owners: {@code X-Spector-Redirect: moved} (or none) corrects the caches, so the next request
 * goes straight to the new owner; {@code ask} retargets only the request it answers, so the next
 * one asks the old owner again. Both count against {@code retry-max}.
 */
final class RedirectKindsTest {
    @TempDir
    static Path dir;

    private static Path log;
    private static MockOwner oldOwner;
    private static MockOwner newOwner;
    private static Cell cell;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        log = dir.resolve("access.log");
        oldOwner = MockOwner.start(r -> MockOwner.response(
                421,
                "Misdirected Request",
                "",
                "X-Spector-Owner: mock-new",
                "X-Spector-Epoch: 2",
                r.path().endsWith("/ask") ? "X-Spector-Redirect: ask" : "X-Spector-Redirect: moved"));
        newOwner =
                MockOwner.start(r -> MockOwner.response(200, "OK", "from the new owner", "Content-Type: text/plain"));
        cell = Cell.builder()
                .owners(1)
                .member("mock-old", oldOwner.baseUri())
                .member("mock-new", newOwner.baseUri())
                .set("spector.server.access-log", log.toString())
                .start();
        token = Cell.token(Cell.TENANT);
    }

    @AfterAll
    static void stop() {
        cell.close();
        oldOwner.close();
        newOwner.close();
    }

    @Test
    void ask_retargetsThisRequestOnly_theNextOneAsksTheOldOwnerAgain() {
        String namespace = cell.namespaceOwnedBy("mock-old");
        String path = "/api/v1/namespaces/" + namespace + "/ask";

        List<Integer> statuses = twice(path);

        assertThat(statuses).containsExactly(200, 200);
        assertThat(oldOwner.requests().stream().filter(r -> r.path().equals(path)))
                .as("not cached: each request asks the old owner first")
                .hasSize(2);
        assertThat(newOwner.requests().stream().filter(r -> r.path().equals(path)))
                .as("and is retargeted to the owner the ASK named")
                .hasSize(2);
        Waits.untilAsserted(() -> assertThat(Cell.accessLogLines(log, path))
                .as("the access log says why each took two attempts")
                .hasSize(2)
                .allSatisfy(l -> assertThat(l).contains("\"attempts\":2,\"retargets\":\"ask\"")));
    }

    @Test
    void moved_correctsTheCache_theNextRequestGoesStraightToTheNewOwner() {
        String namespace = cell.namespaceOwnedBy("mock-old");
        String path = "/api/v1/namespaces/" + namespace + "/moved";

        List<Integer> statuses = twice(path);

        assertThat(statuses).containsExactly(200, 200);
        assertThat(oldOwner.requests().stream().filter(r -> r.path().equals(path)))
                .as("cached: only the first request asked the old owner")
                .hasSize(1);
        assertThat(newOwner.requests().stream().filter(r -> r.path().equals(path)))
                .hasSize(2);
    }

    private static List<Integer> twice(String path) {
        try (WireClient c = new WireClient(cell.gateway.port())) {
            int first = c.send(WireClient.head("GET", path, token)).read().status();
            int second = c.send(WireClient.head("GET", path, token)).read().status();
            return List.of(first, second);
        }
    }
}
