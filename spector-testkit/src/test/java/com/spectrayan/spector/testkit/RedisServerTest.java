package com.spectrayan.spector.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

final class RedisServerTest {

    @Test
    void start_realBinary_answersPingAndSurvivesARestartOnTheSamePort() {
        try (RedisServer redis = RedisServer.onFreePort().start()) {
            assertThat(RedisCommands.send(redis.port(), "PING")).isEqualTo("+PONG");
            int port = redis.port();

            redis.stop();
            assertThat(redis.isRunning()).isFalse();
            assertThatThrownBy(() -> RedisCommands.send(port, "PING"))
                    .as("a stopped server refuses connections")
                    .hasMessageContaining("did not answer PING");

            redis.start();
            assertThat(redis.port()).isEqualTo(port);
            assertThat(RedisCommands.send(port, "PING")).isEqualTo("+PONG");
        }
    }

    @Test
    void start_missingBinary_failsWithAMessageSayingHowToInstallIt() {
        RedisServer missing = RedisServer.withBinary("/nonexistent/redis-server");

        assertThatThrownBy(missing::start)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("redis-server not found")
                .hasMessageContaining("apt-get install -y redis-server");
    }

    @Test
    void uri_isLoopbackWithThePort() {
        RedisServer redis = RedisServer.onFreePort();

        assertThat(redis.uri()).isEqualTo("redis://127.0.0.1:" + redis.port());
    }
}
