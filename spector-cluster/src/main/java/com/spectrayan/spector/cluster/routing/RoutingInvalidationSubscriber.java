package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisURI;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Subscribes to the cell's invalidation channel and applies each message to a {@link
 * WaterfallRoutingResolver}. It tells the resolver when the subscription is confirmed (L1 may be
 * used) and when its connection drops (L1 is cleared and bypassed): Redis pub/sub is at-most-once,
 * so a gateway that may have missed a message must not trust L1. Lettuce reconnects and
 * resubscribes by itself; the server's confirmation restores L1.
 *
 * <p>Concurrency: callbacks run on Lettuce's event loop and never block it.
 */
final class RoutingInvalidationSubscriber implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RoutingInvalidationSubscriber.class);

    private final RedisClient client;
    private final String channel;
    private final WaterfallRoutingResolver resolver;
    private final RedisConnectLoop<StatefulRedisPubSubConnection<String, String>> loop;
    private final RedisConnectionStateListener stateListener = new RedisConnectionStateListener() {
        @Override
        public void onRedisDisconnected(RedisChannelHandler<?, ?> connection) {
            if (connection == loop.connection()) {
                subscribed = false;
                resolver.subscriptionLost();
            }
        }
    };
    private volatile boolean subscribed;

    private RoutingInvalidationSubscriber(RedisClient client, RedisURI uri, WaterfallRoutingResolver resolver) {
        this.client = client;
        this.resolver = resolver;
        this.channel = RedisRoutingCache.channel(resolver.cellId());
        this.loop = new RedisConnectLoop<>(
                "invalidation-subscriber",
                () -> client.connectPubSubAsync(StringCodec.UTF8, uri),
                this::onConnected,
                client.getResources().eventExecutorGroup());
    }

    /** Starts subscribing in the background; the resolver bypasses L1 until it is confirmed. */
    static RoutingInvalidationSubscriber start(RedisClient client, RedisURI uri, WaterfallRoutingResolver resolver) {
        RoutingInvalidationSubscriber s = new RoutingInvalidationSubscriber(
                requireNonNull(client, "client"), requireNonNull(uri, "uri"), requireNonNull(resolver, "resolver"));
        client.addListener(s.stateListener);
        s.loop.start();
        return s;
    }

    /** Answers whether the subscription is confirmed by the server and its connection is up. */
    public boolean isSubscribed() {
        return subscribed;
    }

    private void onConnected(StatefulRedisPubSubConnection<String, String> connection) {
        connection.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void subscribed(String subscribedChannel, long count) {
                if (channel.equals(subscribedChannel)) {
                    subscribed = true;
                    resolver.subscriptionRestored();
                }
            }

            @Override
            public void message(String fromChannel, String message) {
                if (channel.equals(fromChannel)) {
                    apply(message);
                }
            }
        });
        connection.async().subscribe(channel).whenComplete((ignored, error) -> {
            if (error != null) {
                log.warn(
                        "SUBSCRIBE {} failed; L1 stays bypassed until Lettuce resubscribes: {}",
                        channel,
                        error.toString());
            }
        });
    }

    private void apply(String message) {
        try {
            resolver.onInvalidation(InvalidationCodec.decode(message));
        } catch (RuntimeException e) {
            log.warn("ignored a malformed route invalidation on {}: {}", channel, e.getMessage());
        }
    }

    @Override
    public void close() {
        client.removeListener(stateListener);
        subscribed = false;
        loop.close();
    }
}
