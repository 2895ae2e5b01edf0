package com.spectrayan.spector.uplink.internal.v2;

import static com.spectrayan.spector.uplink.internal.v2.V2Wire.concat;
import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.testkit.NettyLeakExtension;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.ResourceLeakDetector;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AroundPropertyHook;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.lifecycle.PropagationMode;
import net.jqwik.api.lifecycle.PropertyExecutionResult;
import net.jqwik.api.lifecycle.PropertyExecutor;
import net.jqwik.api.lifecycle.PropertyLifecycleContext;
import org.jspecify.annotations.Nullable;

/**
 * Random bytes and mutated valid encodings against {@link V2FrameCodec#decodeAll}
 * (docs/PROTOCOL.md section 9.2). For every input:
 *
 * <ol>
 *   <li><b>typed</b>: the only exception that leaves the decoder is a {@link V2ProtocolException}
 *       (a connection error);
 *   <li><b>round trip</b>: every frame it delivers writes bytes that read back as the same frame;
 *       a message of valid frames, unmutated, reads back as exactly those frames, and writes the
 *       same bytes again;
 *   <li><b>no leak</b>: after each property, Netty's detector (PARANOID) reports no buffer, so no
 *       slice of a refused frame outlived the call (the delivered ones are released by the test).
 * </ol>
 *
 * <p>Each property runs {@link #DEFAULT_TRIES} tries in {@code verify}; {@code
 * -Dspector.v2.fuzz.tries=N} sets them all (bench/README.md, the long run).
 */
@AddLifecycleHook(value = V2FrameCodecFuzzTest.Tries.class, propagateTo = PropagationMode.ALL_DESCENDANTS)
final class V2FrameCodecFuzzTest {
    /** The tries of each property in {@code verify}. */
    static final int DEFAULT_TRIES = 10_000;

    /** The system property that overrides the tries of every property here. */
    static final String TRIES_PROPERTY = "spector.v2.fuzz.tries";

    /** The longest generated payload: past every fixed size, far below the bounds (tested exactly elsewhere). */
    static final int MAX_GENERATED_PAYLOAD = 300;

    private static final HexFormat HEX = HexFormat.of();

    static {
        NettyLeakExtension.collectLeaks(); // installs the recording detector before a buffer class loads
    }

    /** The leak check can fail: a dropped buffer is reported in this JVM, so a leak would be. */
    @BeforeContainer
    static void leakDetectionSeesADroppedBuffer() {
        if (ResourceLeakDetector.getLevel() != ResourceLeakDetector.Level.PARANOID) {
            throw new IllegalStateException("leak detection is " + ResourceLeakDetector.getLevel()
                    + " (expected: PARANOID, -Dio.netty.leakDetection.level=PARANOID as the parent pom sets)");
        }
        NettyLeakExtension.collectLeaks();
        // Dropped on purpose, never released; the hint makes its record unique, as the detector
        // reports a record it has reported before (a rerun of this class) only once.
        ByteBufAllocator.DEFAULT.buffer(16).writeInt(42).touch("probe " + System.nanoTime());
        List<String> found = new ArrayList<>();
        await("the detector reports a dropped buffer")
                .atMost(Duration.ofSeconds(10))
                .until(() -> {
                    found.addAll(NettyLeakExtension.collectLeaks());
                    return !found.isEmpty();
                });
    }

    // ---- the properties

    @Property(tries = DEFAULT_TRIES)
    void decodeAll_randomBytes_throwsOnlyProtocolErrors(@ForAll("randomMessages") byte[] bytes) {
        V2Wire.release(decodeAndCheck(bytes));
    }

    @Property(tries = DEFAULT_TRIES)
    void decodeAll_mutatedEncodings_throwsOnlyProtocolErrors(
            @ForAll("messages") List<Spec> specs, @ForAll("mutations") List<Mutation> mutations) {
        Encoded encoded = Encoded.of(specs);
        byte[] bytes = encoded.bytes;
        for (Mutation m : mutations) {
            bytes = m.apply(bytes, encoded.starts);
        }
        V2Wire.release(decodeAndCheck(bytes));
    }

    @Property(tries = DEFAULT_TRIES)
    void decodeAll_validEncodings_readBackAsTheirFrames(@ForAll("messages") List<Spec> specs) {
        Encoded encoded = Encoded.of(specs);
        List<V2Frame> read = decodeAndCheck(encoded.bytes);
        List<V2Frame> built = new ArrayList<>();
        try {
            specs.forEach(s -> built.add(s.build()));
            assertThat(read)
                    .as("the frames of %s", HEX.formatHex(encoded.bytes))
                    .isEqualTo(built);
            List<byte[]> again = new ArrayList<>();
            read.forEach(f -> again.add(V2Wire.encode(retained(f))));
            assertThat(concat(again.toArray(new byte[0][]))).isEqualTo(encoded.bytes);
        } finally {
            V2Wire.release(read);
            V2Wire.release(built);
        }
    }

    /**
     * Decodes a message, allowing only a {@link V2ProtocolException}, checks that every delivered
     * frame round-trips, and returns the frames when no exception was thrown (the caller releases
     * them); on a refusal they are released here and an empty list returned.
     */
    private static List<V2Frame> decodeAndCheck(byte[] bytes) {
        ByteBuf message = V2Wire.message(bytes);
        List<V2Frame> delivered = new ArrayList<>();
        boolean refused = false;
        try {
            V2FrameCodec.decodeAll(message, delivered::add);
        } catch (V2ProtocolException e) {
            refused = true;
            assertThat(e.isConnectionError())
                    .as("the codec finds only connection errors: %s", e)
                    .isTrue();
        } finally {
            message.release();
        }
        try {
            for (V2Frame f : delivered) {
                V2Frame again = V2Wire.decodeOne(V2Wire.encode(retained(f)));
                try {
                    assertThat(again).as("a delivered frame read back").isEqualTo(f);
                } finally {
                    ReferenceCountUtil.release(again);
                }
            }
        } catch (RuntimeException | AssertionError e) {
            V2Wire.release(delivered);
            throw e;
        }
        if (refused) {
            V2Wire.release(delivered);
            return List.of();
        }
        return delivered;
    }

    private static V2Frame retained(V2Frame frame) {
        return frame instanceof V2Frame.Data d ? d.retain() : frame;
    }

    // ---- what is generated

    /** Bytes of any kind: noise, or frames whose header roughly agrees with what follows it. */
    @Provide
    Arbitrary<byte[]> randomMessages() {
        Arbitrary<byte[]> noise = Arbitraries.bytes().array(byte[].class).ofMaxSize(2 * MAX_GENERATED_PAYLOAD);
        Arbitrary<byte[]> frame = Combinators.combine(
                        Arbitraries.frequencyOf(
                                Tuple.of(6, Arbitraries.integers().between(0, 16)),
                                Tuple.of(1, Arbitraries.integers().between(0, MAX_GENERATED_PAYLOAD)),
                                Tuple.of(1, Arbitraries.integers().between(0, 0xffffff))),
                        Arbitraries.integers().between(0, 12),
                        Arbitraries.integers().between(0, 255),
                        Arbitraries.of(0, 1, 2, 3, 0x8000_0000, 0x8000_0001, V2Limits.MAX_STREAM_ID, -1),
                        Arbitraries.integers().between(-2, 2),
                        Arbitraries.longs())
                .as((length, type, flags, streamId, delta, seed) -> {
                    int actual = Math.max(0, Math.min(length, MAX_GENERATED_PAYLOAD) + delta);
                    byte[] payload = new byte[actual];
                    new Random(seed).nextBytes(payload);
                    return concat(V2Wire.header(length, type, flags, streamId), payload);
                });
        Arbitrary<byte[]> frames = frame.list().ofMinSize(1).ofMaxSize(4).map(l -> concat(l.toArray(new byte[0][])));
        return Arbitraries.frequencyOf(Tuple.of(1, noise), Tuple.of(3, frames));
    }

    /** One to four valid frames of any type, for one message. */
    @Provide
    Arbitrary<List<Spec>> messages() {
        return spec().list().ofMinSize(1).ofMaxSize(4);
    }

    /** Up to four mutations of a message's bytes. */
    @Provide
    Arbitrary<List<Mutation>> mutations() {
        return Combinators.combine(
                        Arbitraries.of(Mutation.Kind.class),
                        Arbitraries.integers().greaterOrEqual(0),
                        Arbitraries.integers())
                .as(Mutation::new)
                .list()
                .ofMinSize(1)
                .ofMaxSize(4);
    }

    private static Arbitrary<Spec> spec() {
        Arbitrary<Integer> stream = Arbitraries.frequencyOf(
                Tuple.of(6, Arbitraries.integers().between(1, 9)),
                Tuple.of(1, Arbitraries.just(V2Limits.MAX_STREAM_ID)),
                Tuple.of(1, Arbitraries.integers().between(1, V2Limits.MAX_STREAM_ID)));
        Arbitrary<Integer> anyStream = Arbitraries.frequencyOf(Tuple.of(1, Arbitraries.just(0)), Tuple.of(2, stream));
        Arbitrary<byte[]> bytes = Arbitraries.bytes().array(byte[].class).ofMaxSize(MAX_GENERATED_PAYLOAD);
        Arbitrary<String> text = Arbitraries.strings()
                .withCharRange(' ', '~')
                .withCharRange('\u00a0', '\ud7ff')
                .ofMaxLength(60);
        Arbitrary<Boolean> flag = Arbitraries.of(true, false);
        Arbitrary<V2ErrorCode> code = Arbitraries.of(V2ErrorCode.class);
        Arbitrary<byte[]> errorObject = Combinators.combine(Arbitraries.of(ErrorCode.class), text, flag)
                .as((c, message, withDetails) -> FrameCodec.encodeErrorObject(new Frame.ErrorFrame(
                        1,
                        c,
                        message,
                        withDetails
                                ? JsonNodeFactory.instance.objectNode().put("target", "app")
                                : JsonNodeFactory.instance.objectNode())));
        Arbitrary<byte[]> maybeErrorObject =
                Arbitraries.frequencyOf(Tuple.of(1, Arbitraries.just(new byte[0])), Tuple.of(1, errorObject));
        return Arbitraries.oneOf(
                Combinators.combine(stream, bytes, flag)
                        .as((s, b, f) -> new Spec(V2FrameCodec.TYPE_DATA, s, f, 0, null, b, "")),
                Combinators.combine(stream, bytes, flag)
                        .as((s, b, f) -> new Spec(V2FrameCodec.TYPE_HEADERS, s, f, 0, null, b, "")),
                Combinators.combine(stream, code, maybeErrorObject, errorObject)
                        .as((s, c, o, needed) -> new Spec(
                                V2FrameCodec.TYPE_RESET,
                                s,
                                false,
                                0,
                                c,
                                c == V2ErrorCode.RELAY_ERROR && o.length == 0 ? needed : o,
                                "")),
                Combinators.combine(anyStream, Arbitraries.integers().between(1, V2Limits.MAX_WINDOW))
                        .as((s, increment) ->
                                new Spec(V2FrameCodec.TYPE_WINDOW_UPDATE, s, false, increment, null, new byte[0], "")),
                Combinators.combine(Arbitraries.longs(), flag)
                        .as((opaque, ack) -> new Spec(V2FrameCodec.TYPE_PING, 0, ack, opaque, null, new byte[0], "")),
                Combinators.combine(Arbitraries.integers().between(0, V2Limits.MAX_STREAM_ID), code, text)
                        .as((last, c, reason) ->
                                new Spec(V2FrameCodec.TYPE_GOAWAY, 0, false, last, c, new byte[0], reason)),
                text.map(json -> new Spec(V2FrameCodec.TYPE_CALL, 0, false, 0, null, new byte[0], json)));
    }

    /**
     * A valid frame to build: what a try holds instead of the frame (no buffer, so jqwik may keep,
     * print and shrink it). Which fields count depends on the type.
     */
    static final class Spec {
        final int type;
        final int streamId;
        final boolean flag;
        final long number;
        final @Nullable V2ErrorCode code;
        final byte[] bytes;
        final String text;

        Spec(int type, int streamId, boolean flag, long number, @Nullable V2ErrorCode code, byte[] bytes, String text) {
            this.type = type;
            this.streamId = streamId;
            this.flag = flag;
            this.number = number;
            this.code = code;
            this.bytes = bytes;
            this.text = text;
        }

        /** Returns the frame; a DATA holds a new buffer the caller releases. */
        V2Frame build() {
            return switch (type) {
                case V2FrameCodec.TYPE_DATA ->
                    new V2Frame.Data(
                            streamId,
                            ByteBufAllocator.DEFAULT.buffer(bytes.length).writeBytes(bytes),
                            flag);
                case V2FrameCodec.TYPE_HEADERS -> new V2Frame.Headers(streamId, bytes.clone(), flag);
                case V2FrameCodec.TYPE_RESET -> new V2Frame.Reset(streamId, requireNonNull(code), bytes.clone());
                case V2FrameCodec.TYPE_WINDOW_UPDATE -> new V2Frame.WindowUpdate(streamId, (int) number);
                case V2FrameCodec.TYPE_PING -> new V2Frame.Ping(number, flag);
                case V2FrameCodec.TYPE_GOAWAY -> new V2Frame.GoAway((int) number, requireNonNull(code), text);
                case V2FrameCodec.TYPE_CALL -> new V2Frame.Call(text);
                default -> throw new IllegalStateException("type " + type);
            };
        }

        @Override
        public String toString() {
            return "Spec[type=" + type + ", streamId=" + streamId + ", flag=" + flag + ", number=" + number + ", code="
                    + code + ", bytes=" + HEX.formatHex(bytes) + ", text='" + text + "']";
        }
    }

    /** A message's bytes and where each of its frames starts. */
    static final class Encoded {
        final byte[] bytes;
        final int[] starts;

        private Encoded(byte[] bytes, int[] starts) {
            this.bytes = bytes;
            this.starts = starts;
        }

        static Encoded of(List<Spec> specs) {
            List<byte[]> parts = new ArrayList<>();
            int[] starts = new int[specs.size()];
            int at = 0;
            for (int i = 0; i < specs.size(); i++) {
                byte[] part = V2Wire.encode(specs.get(i).build());
                starts[i] = at;
                at += part.length;
                parts.add(part);
            }
            return new Encoded(concat(parts.toArray(new byte[0][])), starts);
        }
    }

    /**
     * One change to a message's bytes: {@code at} picks the byte (or, for a header field, the
     * frame), {@code value} what goes there.
     */
    record Mutation(Kind kind, int at, int value) {
        enum Kind {
            FLIP_BIT,
            SET_BYTE,
            TRUNCATE,
            EXTEND,
            SET_LENGTH,
            NUDGE_LENGTH,
            SET_TYPE,
            SET_FLAGS,
            SET_STREAM_ID
        }

        byte[] apply(byte[] bytes, int[] starts) {
            int frame = starts[at % starts.length];
            return switch (kind) {
                case FLIP_BIT -> bytes.length == 0 ? bytes : flip(bytes, at % bytes.length, value & 7);
                case SET_BYTE -> bytes.length == 0 ? bytes : set(bytes, at % bytes.length, value);
                case TRUNCATE -> Arrays.copyOf(bytes, bytes.length == 0 ? 0 : at % bytes.length);
                case EXTEND -> {
                    byte[] more = new byte[1 + (at % 16)];
                    new Random(value).nextBytes(more);
                    yield concat(bytes, more);
                }
                case SET_LENGTH -> frame + 3 > bytes.length ? bytes : medium(bytes, frame, value & 0xffffff);
                case NUDGE_LENGTH ->
                    frame + 3 > bytes.length
                            ? bytes
                            : medium(bytes, frame, (readMedium(bytes, frame) + (value % 3 == 0 ? -1 : 1)) & 0xffffff);
                case SET_TYPE -> frame + 4 > bytes.length ? bytes : set(bytes, frame + 3, value % 13);
                case SET_FLAGS -> frame + 5 > bytes.length ? bytes : set(bytes, frame + 4, value);
                case SET_STREAM_ID -> {
                    if (frame + 9 > bytes.length) {
                        yield bytes;
                    }
                    int id = value % 4 == 0 ? 0 : value;
                    byte[] b = bytes.clone();
                    b[frame + 5] = (byte) (id >>> 24);
                    b[frame + 6] = (byte) (id >>> 16);
                    b[frame + 7] = (byte) (id >>> 8);
                    b[frame + 8] = (byte) id;
                    yield b;
                }
            };
        }

        private static byte[] flip(byte[] bytes, int i, int bit) {
            byte[] b = bytes.clone();
            b[i] ^= (byte) (1 << bit);
            return b;
        }

        private static byte[] set(byte[] bytes, int i, int value) {
            byte[] b = bytes.clone();
            b[i] = (byte) value;
            return b;
        }

        private static int readMedium(byte[] b, int at) {
            return (b[at] & 0xff) << 16 | (b[at + 1] & 0xff) << 8 | (b[at + 2] & 0xff);
        }

        private static byte[] medium(byte[] bytes, int at, int value) {
            byte[] b = bytes.clone();
            b[at] = (byte) (value >>> 16);
            b[at + 1] = (byte) (value >>> 8);
            b[at + 2] = (byte) value;
            return b;
        }
    }

    /** Sets the tries from {@link #TRIES_PROPERTY}, and fails a property that left a buffer unreleased. */
    static final class Tries implements AroundPropertyHook {
        @Override
        public PropertyExecutionResult aroundProperty(PropertyLifecycleContext context, PropertyExecutor property) {
            context.attributes().setTries(Integer.getInteger(TRIES_PROPERTY, DEFAULT_TRIES));
            NettyLeakExtension.collectLeaks(); // what ran before is not this property's
            long started = System.nanoTime();
            PropertyExecutionResult result = property.execute();
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            System.out.printf(
                    "%s: %d tries in %d ms (%.0f tries/s)%n",
                    context.label(), result.countTries(), ms, result.countTries() * 1000.0 / Math.max(1, ms));
            List<String> leaks = NettyLeakExtension.collectLeaks();
            if (leaks.isEmpty() || result.status() != PropertyExecutionResult.Status.SUCCESSFUL) {
                return result;
            }
            return result.mapToFailed(
                    "Netty buffers never released (" + leaks.size() + "):\n" + String.join("\n", leaks));
        }
    }
}
