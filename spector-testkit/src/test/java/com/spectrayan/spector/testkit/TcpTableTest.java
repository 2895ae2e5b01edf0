package com.spectrayan.spector.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/** The kernel's TCP table read back for a loopback connection whose bytes nobody reads. */
@EnabledOnOs(OS.LINUX)
final class TcpTableTest {
    @Test
    void unreadBytes_showInTheReceiveQueue_seenFromEitherPort() throws IOException {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
                Socket accepted = server.accept()) {
            int n = 3000;
            accepted.getOutputStream().write(new byte[n]); // the client reads none of it

            await().atMost(Duration.ofSeconds(10)).until(() -> TcpTable.receiveQueue(client.getLocalPort()) == n);
            assertThat(TcpTable.receiveQueueTowards(server.getLocalPort())).isEqualTo(n);
            assertThat(TcpTable.rows()).anySatisfy(r -> {
                assertThat(r.localPort()).isEqualTo(client.getLocalPort());
                assertThat(r.remotePort()).isEqualTo(server.getLocalPort());
                assertThat(r.state()).isEqualTo("01"); // ESTABLISHED
            });

            client.getInputStream().readNBytes(n);
            await().atMost(Duration.ofSeconds(10)).until(() -> TcpTable.receiveQueue(client.getLocalPort()) == 0);
        }
        assertThat(TcpTable.receiveQueue(0)).as("no socket has local port 0").isEqualTo(-1);
    }
}
