package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.gateway.config.ServerSettings;
import com.spectrayan.spector.gateway.config.ServerSettings.TlsProvider;
import com.spectrayan.spector.gateway.config.TlsFileException;
import com.spectrayan.spector.gateway.config.TlsKeyPair;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.NotSslRecordException;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.handler.ssl.SslHandshakeTimeoutException;
import io.netty.handler.ssl.SslProvider;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSession;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The TLS side of the client listener: the {@link SslContext} new connections handshake with, built
 * from {@code spector.server.tls.certificate} and {@code private-key} and rebuilt when those files
 * change, while the gateway runs.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>One current context.</b> {@link #current} holds the context and the pair it was built
 *       from. The channel initializer reads it once per connection ({@link #newHandler}), so a
 *       connection keeps the engine, and the certificate, it began with for its whole life, and a
 *       reload touches no open connection: only handshakes after the swap see the new pair.
 *   <li><b>Reload.</b> One daemon thread ({@value #RELOAD_THREAD}) checks both files every {@code
 *       spector.server.tls.reload-interval} ({@link ServerSettings#TLS_RELOAD_INTERVAL} by
 *       default): it reads them (bounded, {@link TlsKeyPair#MAX_FILE_BYTES}), and when their bytes
 *       differ from those last tried it parses them, checks the pair and builds a context, all off
 *       the event loops. Bytes, not modification times: Kubernetes swaps a symlink ({@code ..data})
 *       whose targets keep their times, and a rewrite within one second keeps its time.
 *   <li><b>A bad new pair</b> (unreadable, unparsable, half-written, a key that is not the
 *       certificate's, a context that does not build) is logged at WARN with the file and why,
 *       and the pair in use is kept. The bytes tried are remembered, so one bad state is reported
 *       once, not every interval. A pair rewritten in place, one file after the other, is caught
 *       between the two writes as a mismatch (one WARN) and applied at the next check.
 *   <li><b>Handshakes.</b> TLS 1.3 and 1.2 only ({@link #PROTOCOLS}); ALPN offers {@code
 *       http/1.1} only and a client that offers none of it proceeds without ALPN: RFC 7301 §3.2
 *       asks for a fatal {@code no_application_protocol} alert there, which Netty's OpenSSL
 *       provider cannot send, so both providers proceed alike and the client finds HTTP/1.1 (an
 *       h2 preface is then answered 505). A handshake must complete within {@code
 *       spector.server.header-timeout}, else the connection is closed. Failures are counted by
 *       {@link Failure} and logged at DEBUG with the peer: a scanner must not fill the log.
 * </ul>
 *
 * <p>Concurrency: {@link #current} is written only by the reload thread and read by every event
 * loop (a volatile reference to an immutable pair: a handshake sees the old or the new one, whole).
 * What was tried last ({@code lastCertificate}, {@code lastKey}, {@code lastUnreadable}, {@code
 * lastNotValidNow}) is
 * confined to the reload thread; {@code lastRefusal} is volatile. The counters are {@link
 * LongAdder}s.
 */
final class ServerTls implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ServerTls.class);

    /** The TLS versions served: 1.0 and 1.1 are deprecated (RFC 8996). */
    static final List<String> PROTOCOLS = List.of("TLSv1.3", "TLSv1.2");

    /** The ALPN protocols offered, in preference order (the HTTP/2 issue adds {@code h2}). */
    static final List<String> ALPN_PROTOCOLS = List.of(ApplicationProtocolNames.HTTP_1_1);

    /** The name of the reload thread. */
    static final String RELOAD_THREAD = "spector-tls-reload";

    /** The name of the {@link SslHandler} in a client connection's pipeline, in front of everything else. */
    static final String HANDLER_NAME = "tls";

    /** The name of the handshake watch, right after the {@link SslHandler}. */
    static final String WATCH_NAME = "tls-watch";

    private static final ApplicationProtocolConfig ALPN = new ApplicationProtocolConfig(
            ApplicationProtocolConfig.Protocol.ALPN,
            // The only behaviours both providers support on a server.
            ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
            ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
            ALPN_PROTOCOLS);

    /** Why a handshake failed, as counted; classified by exception type. */
    enum Failure {
        /** Not finished within {@code spector.server.header-timeout}. */
        TIMEOUT,
        /** The peer sent something that is not a TLS record, e.g. plain HTTP. */
        NOT_TLS,
        /** The peer closed before the handshake finished (port scanners, TCP health checks). */
        CLOSED,
        /** Refused by either side: no common version or cipher, a certificate the client rejects. */
        REFUSED;

        /** Returns the meter tag value: {@code timeout}, {@code not-tls}, {@code closed}, {@code refused}. */
        String tag() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }

        static Failure of(Throwable cause) {
            for (Throwable t = cause; t != null; t = t.getCause()) {
                if (t instanceof SslHandshakeTimeoutException) {
                    return TIMEOUT;
                }
                if (t instanceof NotSslRecordException) {
                    return NOT_TLS;
                }
                if (t instanceof ClosedChannelException) {
                    return CLOSED;
                }
            }
            return REFUSED;
        }
    }

    /** A context and the pair it was built from. */
    private record Loaded(SslContext context, TlsKeyPair pair) {}

    private final Path certificateFile;
    private final Path privateKeyFile;
    private final SslProvider provider;
    private final long handshakeTimeoutMillis;
    /** The context new handshakes use; written by the reload thread only, read by every event loop. */
    private volatile Loaded current;

    private final ScheduledExecutorService reloader;
    private final Map<Failure, LongAdder> failures = new EnumMap<>(Failure.class);
    private final LongAdder handshakesTls13 = new LongAdder();
    private final LongAdder handshakesTls12 = new LongAdder();
    private final LongAdder checks = new LongAdder();
    private final LongAdder reloadsApplied = new LongAdder();
    private final LongAdder reloadsRefused = new LongAdder();

    // Confined to the reload thread: the bytes last tried, good or bad, or that the files were unreadable.
    private byte[] lastCertificate = NOT_TRIED;
    private byte[] lastKey = NOT_TRIED;
    private boolean lastUnreadable;
    /** The certificate last refused as not valid now (reported once while it stays). */
    private byte[] lastNotValidNow = NOT_TRIED;

    private static final byte[] NOT_TRIED = new byte[0];

    /** The last refusal's log line; written by the reload thread, read by tests and status. */
    private volatile @Nullable String lastRefusal;

    private ServerTls(ServerSettings.Tls settings, Duration handshakeTimeout) {
        this.certificateFile = settings.certificate();
        this.privateKeyFile = settings.privateKey();
        this.provider = provider(settings.provider());
        this.handshakeTimeoutMillis = handshakeTimeout.toMillis();
        for (Failure f : Failure.values()) {
            failures.put(f, new LongAdder());
        }
        TlsKeyPair pair = settings.keyPair();
        try {
            this.current = new Loaded(newContext(pair, provider), pair);
        } catch (SSLException e) {
            throw new IllegalStateException(
                    "spector.server.tls: no TLS context from " + certificateFile + " and " + privateKeyFile + " ("
                            + provider + "): " + e.getMessage(),
                    e);
        }
        this.reloader = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, RELOAD_THREAD);
            t.setDaemon(true);
            return t;
        });
        long every = settings.reloadInterval().toNanos();
        reloader.scheduleWithFixedDelay(this::checkQuietly, every, every, TimeUnit.NANOSECONDS);
    }

    /**
     * Builds the first context from the pair the settings read and starts watching the files.
     *
     * @param handshakeTimeout the longest a handshake may take ({@code spector.server.header-timeout})
     * @throws IllegalStateException when no context builds from the pair
     */
    static ServerTls start(ServerSettings.Tls settings, Duration handshakeTimeout) {
        requireNonNull(settings, "settings");
        requireNonNull(handshakeTimeout, "handshakeTimeout");
        return new ServerTls(settings, handshakeTimeout);
    }

    /** Returns the concrete provider of a setting: {@code auto} is OpenSSL when it loads here. */
    static SslProvider provider(TlsProvider setting) {
        return switch (setting) {
            case JDK -> SslProvider.JDK;
            case OPENSSL -> SslProvider.OPENSSL;
            case AUTO -> OpenSsl.isAvailable() ? SslProvider.OPENSSL : SslProvider.JDK;
        };
    }

    /** Builds a server context: the pair, TLS 1.3 and 1.2, ALPN {@code http/1.1}. */
    static SslContext newContext(TlsKeyPair pair, SslProvider provider) throws SSLException {
        return SslContextBuilder.forServer(pair.privateKey(), pair.chain())
                .sslProvider(provider)
                .protocols(PROTOCOLS)
                .applicationProtocolConfig(ALPN)
                .build();
    }

    /**
     * Returns the handler that opens a TLS connection's pipeline (named {@value #HANDLER_NAME}),
     * from the current context, with the handshake timeout set.
     */
    SslHandler newHandler(ByteBufAllocator alloc) {
        SslHandler handler = current.context().newHandler(alloc);
        handler.setHandshakeTimeoutMillis(handshakeTimeoutMillis);
        return handler;
    }

    /**
     * Returns a watch of one connection's handshake (named {@value #WATCH_NAME}, after the {@link
     * SslHandler}): it counts the outcome and leaves once the handshake is over.
     */
    ChannelInboundHandlerAdapter newWatch() {
        return new HandshakeWatch();
    }

    /** Returns the provider in use: {@code OPENSSL} or {@code JDK}. */
    SslProvider provider() {
        return provider;
    }

    /** Returns the pair new handshakes present. */
    TlsKeyPair keyPair() {
        return current.pair();
    }

    /** Returns the last reload refusal as logged (file and why), or null when none happened yet. */
    @Nullable
    String lastRefusal() {
        return lastRefusal;
    }

    long failures(Failure f) {
        return failureCounter(f).sum();
    }

    long handshakes(String protocol) {
        return protocol.equals("TLSv1.3") ? handshakesTls13.sum() : handshakesTls12.sum();
    }

    private LongAdder failureCounter(Failure f) {
        return requireNonNull(failures.get(f), "failures"); // every cause has one from the start
    }

    /** Returns how many checks of the files have run (tests wait for checks, not for time). */
    long checks() {
        return checks.sum();
    }

    long reloadsApplied() {
        return reloadsApplied.sum();
    }

    long reloadsRefused() {
        return reloadsRefused.sum();
    }

    /**
     * Returns the seconds until the served chain expires (negative once it has): its earliest
     * notAfter, so an intermediate that expires first is what the alert sees.
     */
    double secondsToExpiry() {
        return keyPair().notAfter().getEpochSecond() - Instant.now().getEpochSecond();
    }

    private void checkQuietly() {
        try {
            check();
        } catch (RuntimeException e) { // never let one bad check end the schedule
            log.warn("TLS reload check failed: {}; keeping the certificate in use", e.toString(), e);
        } finally {
            checks.increment();
        }
    }

    /** Checks the files once, on the reload thread: applies a changed good pair, reports a changed bad one. */
    private void check() {
        byte[] cert;
        byte[] key;
        try {
            cert = TlsKeyPair.readFile(certificateFile, TlsFileException.Part.CERTIFICATE);
            key = TlsKeyPair.readFile(privateKeyFile, TlsFileException.Part.PRIVATE_KEY);
        } catch (TlsFileException e) {
            if (!lastUnreadable) { // one WARN per unreadable spell, not one per interval
                lastUnreadable = true;
                refuse(e);
            }
            return;
        }
        if (!lastUnreadable && Arrays.equals(cert, lastCertificate) && Arrays.equals(key, lastKey)) {
            return; // tried already, applied or refused
        }
        lastUnreadable = false;
        lastCertificate = cert;
        lastKey = key;
        Loaded in = current;
        if (in.pair().readFrom(cert, key)) {
            return; // the pair in use (again)
        }
        TlsKeyPair pair;
        SslContext context;
        try {
            pair = TlsKeyPair.parse(cert, key);
        } catch (TlsFileException e) {
            refuse(e);
            return;
        }
        Instant now = Instant.now();
        if (!pair.validAt(now) && in.pair().validAt(now)) {
            // An expired or not-yet-valid chain would fail every client that verifies it: the
            // valid pair in use stays (the third review; cert-manager writes a pair valid now).
            // Time changes what this refusal says, the bytes do not: these files are looked at
            // again at every check (a chain valid from a minute ahead, put in place early or
            // issued by a CA whose clock runs ahead, is applied once valid; it was remembered as
            // tried and never applied, found by a review), and reported once.
            lastCertificate = NOT_TRIED;
            lastKey = NOT_TRIED;
            if (!Arrays.equals(cert, lastNotValidNow)) {
                lastNotValidNow = cert;
                refuse(certificateFile + " (expected: a chain valid now; " + pair.describe()
                        + " is not, or one of its issuers is not; looked at again at every check)");
            }
            return;
        }
        lastNotValidNow = NOT_TRIED;
        try {
            context = newContext(pair, provider);
        } catch (SSLException e) {
            refuse("no " + provider + " context from " + certificateFile + " and " + privateKeyFile + " ("
                    + e.getMessage() + ")");
            return;
        }
        current = new Loaded(context, pair);
        reloadsApplied.increment();
        log.info(
                "TLS certificate reloaded: new handshakes present {} (was {})",
                pair.describe(),
                in.pair().describe());
        if (!pair.validAt(Instant.now())) {
            log.warn(
                    "TLS certificate {} from {} is not valid now: clients that verify it refuse the handshake",
                    pair.describe(),
                    certificateFile);
        }
    }

    private void refuse(TlsFileException e) {
        Path file = e.part() == TlsFileException.Part.CERTIFICATE ? certificateFile : privateKeyFile;
        refuse(file + " (expected: " + e.expected() + ")");
    }

    private void refuse(String why) {
        reloadsRefused.increment();
        String line = "TLS reload refused: " + why + "; new handshakes keep presenting "
                + current.pair().describe();
        lastRefusal = line;
        log.warn("{}", line);
    }

    /** Stops watching the files; open connections keep their engines. */
    @Override
    public void close() {
        reloader.shutdownNow();
    }

    /**
     * Counts one connection's handshake, then leaves the pipeline. A failure is logged at DEBUG
     * only; {@link SslHandler} has already closed the connection (and sent its alert).
     */
    private final class HandshakeWatch extends ChannelInboundHandlerAdapter {
        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
            if (evt instanceof SslHandshakeCompletionEvent done) {
                ctx.pipeline().remove(this);
                if (done.isSuccess()) {
                    SslHandler ssl = ctx.pipeline().get(SslHandler.class);
                    SSLSession session = ssl == null ? null : ssl.engine().getSession();
                    if (session != null && "TLSv1.3".equals(session.getProtocol())) {
                        handshakesTls13.increment();
                    } else {
                        handshakesTls12.increment();
                    }
                } else {
                    Throwable cause = done.cause();
                    Failure f = Failure.of(cause);
                    failureCounter(f).increment();
                    if (log.isDebugEnabled()) {
                        log.debug(
                                "TLS handshake with {} failed ({}): {}",
                                ctx.channel().remoteAddress(),
                                f.tag(),
                                String.valueOf(cause));
                    }
                }
            }
            super.userEventTriggered(ctx, evt);
        }
    }
}
