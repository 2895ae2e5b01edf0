package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.junit.jupiter.api.Test;

/**
 * What {@link BodyChunks} holds of a body that came in reads of any size: the bytes in order, and
 * no read buffer held for a chunk much smaller than it (a client sending a byte at a time).
 */
final class BodyChunksTest {
    /** A read: the buffer the socket filled and the chunk the decoder hands over, a slice of it. */
    private record Read(ByteBuf buffer, ByteBuf chunk) {
        /** A read of {@code n} bytes into a buffer of {@code capacity}; the test keeps a reference to the buffer. */
        static Read of(int n, int capacity, int seed) {
            byte[] bytes = new byte[n];
            for (int i = 0; i < n; i++) {
                bytes[i] = (byte) (seed + i);
            }
            ByteBuf buffer = Unpooled.directBuffer(capacity, capacity).writeBytes(bytes);
            return new Read(buffer, buffer.retainedSlice(0, n));
        }
    }

    private static byte[] bytes(ByteBuf b) {
        return ByteBufUtil.getBytes(b);
    }

    /** Polls the first chunk, which must be there. */
    private static ByteBuf first(BodyChunks chunks) {
        return Objects.requireNonNull(chunks.poll(), "a chunk held");
    }

    /** Polls every chunk left, releasing each, and returns their bytes in order. */
    private static byte[] drain(BodyChunks chunks) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuf b;
        while ((b = chunks.poll()) != null) {
            out.writeBytes(bytes(b));
            b.release();
        }
        return out.toByteArray();
    }

    @Test
    void aOneByteRead_isCopied_andItsReadBufferIsNotHeld() {
        Read r = Read.of(1, 2048, 7);
        BodyChunks chunks = new BodyChunks();

        chunks.add(r.chunk());

        assertThat(r.buffer().refCnt()).as("only the test's reference is left").isEqualTo(1);
        assertThat(chunks.bytes()).isEqualTo(1);
        assertThat(drain(chunks)).containsExactly(7);
        r.buffer().release();
    }

    /** At the limits: at least MIN_SLICE_BYTES long and at least half of its buffer, held as it came. */
    @Test
    void aChunkAtTheSliceLimits_isHeldAsItCame() {
        for (int[] nAndCapacity : new int[][] {
            {BodyChunks.MIN_SLICE_BYTES, BodyChunks.MIN_SLICE_BYTES},
            {BodyChunks.MIN_SLICE_BYTES, 2 * BodyChunks.MIN_SLICE_BYTES}
        }) {
            Read r = Read.of(nAndCapacity[0], nAndCapacity[1], 1);
            BodyChunks chunks = new BodyChunks();

            chunks.add(r.chunk());

            ByteBuf held = first(chunks);
            assertThat(held)
                    .as("%s bytes of %s", nAndCapacity[0], nAndCapacity[1])
                    .isSameAs(r.chunk());
            assertThat(r.buffer().refCnt()).isEqualTo(2);
            held.release();
            r.buffer().release();
        }
    }

    /** One byte past either limit: copied, its read buffer given back. */
    @Test
    void aChunkOnePastTheSliceLimits_isCopied() {
        for (int[] nAndCapacity : new int[][] {
            {BodyChunks.MIN_SLICE_BYTES - 1, BodyChunks.MIN_SLICE_BYTES - 1},
            {BodyChunks.MIN_SLICE_BYTES, 2 * BodyChunks.MIN_SLICE_BYTES + 1}
        }) {
            Read r = Read.of(nAndCapacity[0], nAndCapacity[1], 3);
            BodyChunks chunks = new BodyChunks();

            chunks.add(r.chunk());

            assertThat(r.buffer().refCnt())
                    .as("%s bytes of %s", nAndCapacity[0], nAndCapacity[1])
                    .isEqualTo(1);
            ByteBuf held = first(chunks);
            assertThat(held).isNotSameAs(r.chunk());
            assertThat(bytes(held)).isEqualTo(bytes(r.buffer()));
            held.release();
            r.buffer().release();
        }
    }

    @Test
    void smallReads_areGatheredIntoOneBuffer_upToItsSize_thenAnother() {
        BodyChunks chunks = new BodyChunks();
        List<Read> reads = new ArrayList<>();
        for (int i = 0; i <= BodyChunks.COPY_BUFFER_BYTES; i++) { // one byte past one buffer's size
            Read r = Read.of(1, 64, i);
            reads.add(r);
            chunks.add(r.chunk());
        }

        ByteBuf first = first(chunks);
        ByteBuf second = first(chunks);
        assertThat(first.readableBytes()).isEqualTo(BodyChunks.COPY_BUFFER_BYTES);
        assertThat(second.readableBytes()).isEqualTo(1);
        assertThat(chunks.poll()).isNull();
        assertThat(chunks.isEmpty()).isTrue();
        for (int i = 0; i < reads.size(); i++) {
            ByteBuf b = i < BodyChunks.COPY_BUFFER_BYTES ? first : second;
            assertThat(b.getByte(i % BodyChunks.COPY_BUFFER_BYTES)).isEqualTo((byte) i);
            assertThat(reads.get(i).buffer().refCnt()).isEqualTo(1);
            reads.get(i).buffer().release();
        }
        first.release();
        second.release();
    }

    /** A buffer seen by forEach (written somewhere as a duplicate) takes no more bytes. */
    @Test
    void aBufferSeen_takesNoMoreBytes() {
        BodyChunks chunks = new BodyChunks();
        Read a = Read.of(1, 64, 1);
        chunks.add(a.chunk());
        List<ByteBuf> written = new ArrayList<>();
        chunks.forEach(b -> written.add(b.retainedDuplicate()));
        Read b = Read.of(1, 64, 2);
        chunks.add(b.chunk());

        assertThat(bytes(written.get(0))).containsExactly(1);
        ByteBuf first = first(chunks);
        assertThat(first.readableBytes())
                .as("the buffer seen kept its one byte")
                .isEqualTo(1);
        assertThat(drain(chunks)).containsExactly(2);
        first.release();
        written.get(0).release();
        a.buffer().release();
        b.buffer().release();
    }

    @Test
    void release_givesBackEverything() {
        BodyChunks chunks = new BodyChunks();
        Read small = Read.of(10, 100, 1);
        Read large = Read.of(8192, 8192, 2);
        chunks.add(small.chunk());
        chunks.add(large.chunk());

        chunks.release();

        assertThat(chunks.bytes()).isZero();
        assertThat(chunks.poll()).isNull();
        assertThat(large.buffer().refCnt()).isEqualTo(1);
        assertThat(small.buffer().refCnt()).isEqualTo(1);
        large.buffer().release();
        small.buffer().release();
    }

    /** A read: its length and its buffer's room past it, or a poll of the first chunk (length 0). */
    private record Step(int length, int slack) {}

    @Provide
    Arbitrary<List<Step>> steps() {
        Arbitrary<Step> read = Combinators.combine(
                        Arbitraries.integers().between(1, 20_000).edgeCases(c -> c.add(4095, 4096, 16_384)),
                        Arbitraries.integers().between(0, 40_000))
                .as(Step::new);
        Arbitrary<Step> poll = Arbitraries.just(new Step(0, 0));
        return Arbitraries.frequencyOf(Tuple.of(8, read), Tuple.of(1, poll))
                .list()
                .ofMaxSize(60);
    }

    /**
     * Off the wire, any reads: the bytes polled are the bytes added, in order; every buffer held
     * is at most about twice the bytes it holds (a copy buffer's first growth to 64 bytes aside);
     * and every read buffer is given back in the end.
     */
    @Property(tries = 200)
    void anyReads_comeOutInOrder_inMemoryAboutTheirBytes(@ForAll("steps") List<Step> steps) {
        BodyChunks chunks = new BodyChunks();
        ByteArrayOutputStream in = new ByteArrayOutputStream();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        List<ByteBuf> buffers = new ArrayList<>();
        int seed = 0;
        for (Step s : steps) {
            if (s.length() == 0) {
                ByteBuf b = chunks.poll();
                if (b != null) {
                    out.writeBytes(bytes(b));
                    b.release();
                }
                continue;
            }
            Read r = Read.of(s.length(), s.length() + s.slack(), seed++);
            in.writeBytes(bytes(r.buffer()));
            buffers.add(r.buffer());
            chunks.add(r.chunk());

            assertThat(chunks.memory())
                    .as("memory held for %s bytes", chunks.bytes())
                    .isLessThanOrEqualTo(2 * chunks.bytes() + 64L * steps.size());
        }
        out.writeBytes(drain(chunks));

        assertThat(out.toByteArray()).isEqualTo(in.toByteArray());
        for (ByteBuf b : buffers) {
            assertThat(b.refCnt()).as("only the test's reference is left").isEqualTo(1);
            b.release();
        }
    }
}
