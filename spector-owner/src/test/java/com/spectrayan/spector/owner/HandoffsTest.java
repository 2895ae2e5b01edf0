package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.testkit.Waits;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/**
 * {@link Handoffs}: the hand-off mark and the running-write count per key. Defends the bound on its
 * memory (the review's finding 7): a key's count used to stay in the map for good once written, so
 * a caller writing to ever new namespaces grew the owner's heap without bound.
 */
final class HandoffsTest {
    private static final String CELL = "cell-h";

    @Test
    void left_lastWriteOfEachKey_forgetsTheKeys() {
        Handoffs handoffs = new Handoffs();
        for (int i = 0; i < 1000; i++) {
            RoutingKey key = RoutingKey.of(CELL, "acme", "ns-" + i);
            assertThat(handoffs.admit(key, true)).isNull();
            handoffs.left(key);
        }

        assertThat(handoffs.keysWritten()).isZero();
    }

    @Test
    void left_oneOfTwoWrites_keepsCountingTheOther() {
        Handoffs handoffs = new Handoffs();
        RoutingKey key = RoutingKey.of(CELL, "acme", "orders");
        handoffs.admit(key, true);
        handoffs.admit(key, true);

        handoffs.left(key);

        assertThat(handoffs.writesRunning(key)).isEqualTo(1);
        handoffs.left(key);
        assertThat(handoffs.writesRunning(key)).isZero();
        assertThat(handoffs.keysWritten()).isZero();
    }

    @Test
    void admit_writeOfAKeyHandedOff_isRefusedAndNotCounted() {
        Handoffs handoffs = new Handoffs();
        RoutingKey key = RoutingKey.of(CELL, "acme", "orders");
        assertThat(handoffs.start(key, "owner-1")).isTrue();

        assertThat(handoffs.admit(key, true)).isEqualTo("owner-1");

        assertThat(handoffs.writesRunning(key)).isZero();
        assertThat(handoffs.keysWritten()).isZero();
    }

    /** The same through a real owner: writes to many namespaces, each answered, leave no count. */
    @Test
    void writesToManyNamespaces_answered_leaveNoEntry() throws Exception {
        try (ReferenceOwner owner =
                ReferenceOwner.start(OwnerSpec.builder("owner-0").cellId(CELL).build())) {
            OwnerClient client = new OwnerClient(owner);
            for (int i = 0; i < 50; i++) {
                HttpResponse<byte[]> r = client.send(client.request("/api/v1/namespaces/ns-" + i + "/echo")
                        .POST(HttpRequest.BodyPublishers.ofString("x"))
                        .build());
                assertThat(r.statusCode()).isEqualTo(200);
            }

            Waits.until("no write runs", () -> owner.node().handoffs.keysWritten() == 0);
        }
    }
}
