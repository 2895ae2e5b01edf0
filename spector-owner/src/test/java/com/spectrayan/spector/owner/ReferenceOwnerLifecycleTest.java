package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Starting and closing a {@link ReferenceOwner}. */
final class ReferenceOwnerLifecycleTest {
    @Test
    void close_withOpenConnections_returnsPromptlyAndFreesThePort() throws Exception {
        ReferenceOwner owner = ReferenceOwner.start(OwnerSpec.builder("owner-0").build());
        Path dataDir = owner.dataDir();
        int port = owner.port();
        RawHttp idle = new RawHttp(owner);
        RawHttp streaming = new RawHttp(owner);
        streaming.write("GET /api/v1/events HTTP/1.1\r\nHost: x\r\n\r\n");
        assertThat(streaming.readHead().status()).isEqualTo(200);

        long start = System.nanoTime();
        owner.close();
        owner.close();
        Duration took = Duration.ofNanos(System.nanoTime() - start);

        assertThat(took).as("close is bounded").isLessThan(OwnerLimits.CLOSE_TIMEOUT.multipliedBy(2));
        assertThat(idle.readsEof()).as("idle connection closed").isTrue();
        assertThat(streaming.drainsToEof()).as("event stream closed").isTrue();
        assertThat(Files.exists(dataDir))
                .as("a temporary data directory is removed")
                .isFalse();
        assertThatThrownBy(() -> {
                    try (Socket s = new Socket()) {
                        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1000);
                    }
                })
                .as("no longer listening")
                .isInstanceOf(IOException.class);
        idle.close();
        streaming.close();
    }

    @Test
    void start_onATakenPort_failsWithTheAddress() {
        try (ReferenceOwner first =
                ReferenceOwner.start(OwnerSpec.builder("owner-0").build())) {
            assertThatThrownBy(() -> ReferenceOwner.start(
                            OwnerSpec.builder("owner-1").port(first.port()).build()))
                    .isInstanceOf(UncheckedIOException.class);
        }
    }

    @Test
    void start_withAGivenPortAndDataDir_usesThem() throws Exception {
        Path dir = Files.createTempDirectory("owner-test-");
        int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        try (ReferenceOwner owner = ReferenceOwner.start(
                OwnerSpec.builder("owner-7").port(port).dataDir(dir).build())) {
            assertThat(owner.port()).isEqualTo(port);
            assertThat(owner.nodeId()).isEqualTo("owner-7");
            assertThat(owner.baseUri().toString()).isEqualTo("http://127.0.0.1:" + port);
            assertThat(owner.dataDir()).isEqualTo(dir.toAbsolutePath());
        }
        assertThat(Files.exists(dir)).as("a given data directory is kept").isTrue();
        Files.delete(dir.resolve(".tmp"));
        Files.delete(dir);
    }
}
