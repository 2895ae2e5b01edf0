package com.spectrayan.spector.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/** The kernel's TCP table read back for a loopback connection whose bytes nobody reads. */
@EnabledOnOs(OS.LINUX)
final class TcpTableTest {
    /** {@code TCP_TIME_WAIT} in the table's state column. */
    private static final String TIME_WAIT = "06";

    @Test
    void unreadBytes_showInTheReceiveQueue_seenFromEitherPort() throws IOException {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
                Socket accepted = server.accept()) {
            int n = 3000;
            accepted.getOutputStream().write(new byte[n]); // the client reads none of it

            await().atMost(Duration.ofSeconds(10))
                    .until(() -> TcpTable.receiveQueue(client.getLocalPort(), server.getLocalPort()) == n);
            assertThat(TcpTable.receiveQueueTowards(server.getLocalPort())).isEqualTo(n);
            assertThat(TcpTable.rows()).anySatisfy(r -> {
                assertThat(r.localPort()).isEqualTo(client.getLocalPort());
                assertThat(r.remotePort()).isEqualTo(server.getLocalPort());
                assertThat(r.state()).isEqualTo("01"); // ESTABLISHED
            });

            client.getInputStream().readNBytes(n);
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> TcpTable.receiveQueue(client.getLocalPort(), server.getLocalPort()) == 0);
        }
        assertThat(TcpTable.receiveQueue(0, 0)).as("no socket has local port 0").isEqualTo(-1);
    }

    /**
     * Regression (a flake under a benchmark's load): a local port reused towards another peer while
     * its old connection waits in TIME_WAIT has two rows; the one asked for answers.
     */
    @Test
    void aReusedLocalPort_answersForTheConnectionAskedFor_notForItsTimeWaitRow() throws IOException {
        InetAddress lo = InetAddress.getLoopbackAddress();
        try (ServerSocket a = new ServerSocket(0, 1, lo);
                ServerSocket b = new ServerSocket(0, 1, lo)) {
            int port;
            try (Socket first = new Socket()) {
                first.setReuseAddress(true);
                first.bind(new InetSocketAddress(lo, 0));
                port = first.getLocalPort();
                first.connect(a.getLocalSocketAddress());
                try (Socket acceptedA = a.accept()) {
                    first.shutdownOutput(); // the active close: first's end ends in TIME_WAIT
                    assertThat(acceptedA.getInputStream().read()).isEqualTo(-1);
                }
            }
            int p = port;
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> TcpTable.rows().stream()
                            .anyMatch(r -> r.localPort() == p
                                    && r.remotePort() == a.getLocalPort()
                                    && r.state().equals(TIME_WAIT)));
            try (Socket second = new Socket()) {
                second.setReuseAddress(true);
                second.bind(new InetSocketAddress(lo, p));
                second.connect(b.getLocalSocketAddress());
                try (Socket acceptedB = b.accept()) {
                    int n = 1500;
                    acceptedB.getOutputStream().write(new byte[n]); // second reads none of it

                    await().atMost(Duration.ofSeconds(10)).until(() -> TcpTable.receiveQueue(p, b.getLocalPort()) == n);
                    assertThat(TcpTable.receiveQueue(p, a.getLocalPort()))
                            .as("the TIME_WAIT row")
                            .isZero();
                }
            }
        }
    }
}
