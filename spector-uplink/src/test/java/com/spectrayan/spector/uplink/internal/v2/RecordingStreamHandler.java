package com.spectrayan.spector.uplink.internal.v2;

import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A {@link V2StreamHandler} that records what its stream delivered: the events in order, the
 * bytes (copied, each buffer released at once) and how many are not yet consumed. With {@link
 * #autoConsume} it calls {@code consumed} for each buffer as it arrives; otherwise the test calls
 * {@link #consume}. It is also the stream's producer: {@link #send} writes a patterned body in
 * chunks while the stream is writable and resumes on {@code onWritabilityChanged}.
 */
final class RecordingStreamHandler implements V2StreamHandler {
    /** Bytes of each chunk {@link #send} writes. */
    static final int CHUNK = 64 * 1024;

    final List<String> events = new ArrayList<>();
    private final ByteArrayOutputStream received = new ByteArrayOutputStream();
    private @Nullable V2Stream stream;
    private boolean autoConsume;
    private long unconsumed;
    private int ends;
    private @Nullable V2ErrorCode resetCode;
    private Frame.@Nullable ErrorFrame resetError;

    // The producer's state.
    private long toSend;
    private long sent;
    private boolean endAfter;
    private boolean endWritten;

    RecordingStreamHandler autoConsume(boolean on) {
        autoConsume = on;
        return this;
    }

    void attach(V2Stream s) {
        stream = s;
    }

    V2Stream stream() {
        return java.util.Objects.requireNonNull(stream, "stream");
    }

    @Override
    public void onResponseHead(ResponseHead head, boolean endStream) {
        events.add("head " + head.status() + (endStream ? " END" : ""));
    }

    @Override
    public void onData(ByteBuf data, boolean endStream) {
        int n = data.readableBytes();
        try {
            data.readBytes(received, n);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        } finally {
            data.release();
        }
        if (endStream) {
            events.add("END");
        }
        unconsumed += n;
        if (autoConsume) {
            consume(n);
        }
    }

    @Override
    public void onReset(V2ErrorCode code, Frame.@Nullable ErrorFrame error) {
        ends++;
        resetCode = code;
        resetError = error;
        events.add("reset " + code);
    }

    @Override
    public void onLinkClosed(@Nullable Throwable cause) {
        ends++;
        events.add("linkClosed" + (cause == null ? "" : " " + cause.getClass().getSimpleName()));
    }

    @Override
    public void onWritabilityChanged() {
        fill();
    }

    /** Consumes {@code n} of the bytes received. */
    void consume(int n) {
        unconsumed -= n;
        stream().consumed(n);
    }

    /** Consumes every byte received and not yet consumed. */
    void consumeAll() {
        consume((int) unconsumed);
    }

    /** Starts writing a body of {@code total} patterned bytes, END_STREAM after it when {@code end}. */
    void send(long total, boolean end) {
        toSend = total;
        endAfter = end;
        fill();
    }

    private void fill() {
        V2Stream s = stream();
        while (sent < toSend && s.isWritable()) {
            int n = (int) Math.min(CHUNK, toSend - sent);
            byte[] bytes = new byte[n];
            for (int i = 0; i < n; i++) {
                bytes[i] = pattern(s.id(), sent + i);
            }
            // One write per chunk: under PARANOID leak detection every access to a buffer records
            // a stack trace, and a byte at a time made 4 MiB cost 20 s of the suite.
            ByteBuf chunk = ByteBufAllocator.DEFAULT.buffer(n).writeBytes(bytes);
            sent += n;
            endWritten = endAfter && sent == toSend;
            s.write(chunk, endWritten);
        }
        if (endAfter && !endWritten && sent == toSend && s.isWritable()) {
            endWritten = true;
            s.write(ByteBufAllocator.DEFAULT.buffer(0), true);
        }
    }

    /** Returns the bytes the producer was asked to send so far. */
    long target() {
        return toSend;
    }

    /** Returns whether the producer wrote END_STREAM. */
    boolean endWritten() {
        return endWritten;
    }

    /** Returns byte {@code at} of the body {@link #send} writes on stream {@code id}. */
    static byte pattern(int id, long at) {
        return (byte) (at * 31 + at / 251 + id);
    }

    /** Returns the body {@link #send} writes on stream {@code id}, its first {@code n} bytes. */
    static byte[] body(int id, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = pattern(id, i);
        }
        return b;
    }

    long unconsumed() {
        return unconsumed;
    }

    long sent() {
        return sent;
    }

    byte[] received() {
        return received.toByteArray();
    }

    int receivedBytes() {
        return received.size();
    }

    /** Returns how many times the stream was ended by onReset or onLinkClosed (at most 1 is right). */
    int ends() {
        return ends;
    }

    @Nullable
    V2ErrorCode resetCode() {
        return resetCode;
    }

    Frame.@Nullable ErrorFrame resetError() {
        return resetError;
    }
}
