package com.spectrayan.spector.bench;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Holds many idle SSE streams through a gateway (issue 14): opens {@code streams} connections to
 * {@code host:port}, each a {@code GET path} with the given headers, at most {@value #IN_FLIGHT}
 * opening at once; counts those answered {@code 200 text/event-stream}; prints {@code ESTABLISHED
 * n} once all are open (or {@code FAILED} with the counts) and holds them for {@code holdSeconds}
 * (the caller measures the gateway meanwhile), then closes them.
 *
 * <pre>{@code
 * java -cp bench/target/benchmarks.jar com.spectrayan.spector.bench.SseIdleMain \
 *     127.0.0.1 19170 /api/v1/events 9000 30 "Authorization: Bearer ..." "X-Spector-Namespace: bench"
 * }</pre>
 */
public final class SseIdleMain {
    /** Connections opening at once: a loopback accept queue takes this without dropping SYNs. */
    static final int IN_FLIGHT = 256;

    /** The longest the streams may take to open. */
    static final long OPEN_TIMEOUT_SECONDS = 120;

    private SseIdleMain() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: SseIdleMain HOST PORT PATH STREAMS HOLD_SECONDS [HEADER: VALUE]...");
            System.exit(2);
        }
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        String path = args[2];
        int streams = Integer.parseInt(args[3]);
        long holdSeconds = Long.parseLong(args[4]);
        List<String[]> headers = new ArrayList<>();
        for (int i = 5; i < args.length; i++) {
            int colon = args[i].indexOf(':');
            headers.add(new String[] {
                args[i].substring(0, colon).trim(), args[i].substring(colon + 1).trim()
            });
        }

        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        AtomicInteger open = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicInteger events = new AtomicInteger();
        CountDownLatch settled = new CountDownLatch(streams);
        Semaphore inFlight = new Semaphore(IN_FLIGHT);
        List<Channel> channels = new ArrayList<>(streams);
        Bootstrap b = new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline()
                                .addLast(new HttpClientCodec())
                                .addLast(new SimpleChannelInboundHandler<HttpObject>() {
                                    private boolean answered;

                                    @Override
                                    protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
                                        if (msg instanceof HttpResponse r && !answered) {
                                            answered = true;
                                            String type = r.headers().get(HttpHeaderNames.CONTENT_TYPE, "");
                                            if (r.status().code() == 200 && type.startsWith("text/event-stream")) {
                                                open.incrementAndGet();
                                            } else {
                                                failed.incrementAndGet();
                                                System.err.println("refused: " + r.status());
                                            }
                                            inFlight.release();
                                            settled.countDown();
                                        } else if (answered) {
                                            events.incrementAndGet();
                                        } // SimpleChannelInboundHandler releases msg
                                    }

                                    @Override
                                    public void channelInactive(ChannelHandlerContext ctx) {
                                        if (!answered) {
                                            answered = true;
                                            failed.incrementAndGet();
                                            inFlight.release();
                                            settled.countDown();
                                        }
                                    }
                                });
                    }
                });
        long started = System.nanoTime();
        for (int i = 0; i < streams; i++) {
            inFlight.acquire();
            b.connect(host, port).addListener(f -> {
                if (!f.isSuccess()) {
                    failed.incrementAndGet();
                    inFlight.release();
                    settled.countDown();
                    return;
                }
                Channel ch = ((io.netty.channel.ChannelFuture) f).channel();
                synchronized (channels) {
                    channels.add(ch);
                }
                DefaultFullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, path);
                req.headers().set(HttpHeaderNames.HOST, host + ":" + port);
                req.headers().set(HttpHeaderNames.ACCEPT, "text/event-stream");
                for (String[] h : headers) {
                    req.headers().add(h[0], h[1]);
                }
                ch.writeAndFlush(req);
            });
        }
        boolean all = settled.await(OPEN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        if (!all || failed.get() > 0) {
            System.out.println("FAILED open=" + open.get() + " failed=" + failed.get() + " in " + tookMs + " ms");
        } else {
            System.out.println("ESTABLISHED " + open.get() + " in " + tookMs + " ms");
        }
        System.out.flush();
        Thread.sleep(TimeUnit.SECONDS.toMillis(holdSeconds)); // the caller measures meanwhile
        System.out.println(
                "STILL_OPEN " + channels.stream().filter(Channel::isActive).count() + " events=" + events.get());
        synchronized (channels) {
            for (Channel ch : channels) {
                ch.close();
            }
        }
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
