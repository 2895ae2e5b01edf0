package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * An immutable consistent-hash ring, compatible with libketama's unweighted ring (and so with
 * spymemcached's {@code KETAMA_HASH}). This is the only hash implementation in the codebase.
 *
 * <pre>
 * for each member m, for i in 0..39:
 *     d = MD5(utf8(m + "-" + i))                       16 bytes
 *     points += le32(d[0..3]), le32(d[4..7]),          4 points per digest,
 *               le32(d[8..11]), le32(d[12..15])        160 per member
 * hash(key) = le32(MD5(utf8(key))[0..3])
 * owner(key) = member of the first point >= hash(key), wrapping to the first point
 * </pre>
 *
 * <p>Points are unsigned 32-bit values held in a {@code long}. Member labels are taken as given
 * (any text without a comma, such as {@code owner-0} or {@code 10.0.1.1:11211}); callers build
 * them from explicit fields, never from {@code InetSocketAddress.toString()}, whose form changed in
 * JDK 14. Two members landing on one point is resolved to the member whose label sorts first, so
 * every gateway builds the same ring from the same members in any order.
 *
 * <p>Thread-safe: immutable after construction; lookups allocate only the key's bytes.
 */
public final class KetamaRing {
    /** MD5 digests per member; each gives 4 points. */
    static final int DIGESTS_PER_MEMBER = Limits.RING_POINTS_PER_MEMBER / 4;

    /** Bits that hold a member index beside a point while sorting; covers {@code RING_MEMBERS}. */
    private static final int MEMBER_BITS = 16;

    private static final ThreadLocal<MessageDigest> MD5 = ThreadLocal.withInitial(KetamaRing::newMd5);

    private final long epoch;
    private final List<String> members;
    private final long[] points;
    private final int[] owners;

    private KetamaRing(long epoch, List<String> members, long[] points, int[] owners) {
        this.epoch = epoch;
        this.members = members;
        this.points = points;
        this.owners = owners;
    }

    /**
     * Builds the ring of the given members at an epoch.
     *
     * @throws SpectorException BAD_REQUEST for a duplicate or malformed label, or too many members
     */
    public static KetamaRing of(long epoch, Collection<String> members) {
        requireNonNull(members, "members");
        if (epoch < 0) {
            throw new IllegalArgumentException("epoch: " + epoch + " (expected: >= 0)");
        }
        if (members.size() > Limits.RING_MEMBERS.max()) {
            throw Limits.RING_MEMBERS.refusal(members.size());
        }
        TreeSet<String> sorted = new TreeSet<>();
        for (String member : members) {
            checkLabel(member);
            if (!sorted.add(member)) {
                throw SpectorException.badRequest("ringMembers", "'" + member + "' is listed twice");
            }
        }
        List<String> labels = List.copyOf(sorted);
        int n = labels.size() * Limits.RING_POINTS_PER_MEMBER;
        // Sort (point << 16 | memberIndex) once: ties go to the lower index, the label sorting first.
        // 32 + 16 bits stay positive, so a signed sort orders the unsigned points.
        long[] packed = new long[n];
        int p = 0;
        for (int m = 0; m < labels.size(); m++) {
            for (int i = 0; i < DIGESTS_PER_MEMBER; i++) {
                byte[] d = md5(labels.get(m) + "-" + i);
                for (int h = 0; h < 4; h++) {
                    packed[p++] = (le32(d, h * 4) << MEMBER_BITS) | m;
                }
            }
        }
        Arrays.sort(packed);
        long[] points = new long[n];
        int[] owners = new int[n];
        for (int i = 0; i < n; i++) {
            points[i] = packed[i] >>> MEMBER_BITS;
            owners[i] = (int) (packed[i] & ((1L << MEMBER_BITS) - 1));
        }
        return new KetamaRing(epoch, labels, points, owners);
    }

    /** Returns the ring's epoch: the version of its membership, carried as {@code X-Spector-Epoch}. */
    public long epoch() {
        return epoch;
    }

    /** Returns the members, sorted by label. */
    public List<String> members() {
        return members;
    }

    /** Answers whether the ring has no member; such a ring routes nothing (fail closed). */
    public boolean isEmpty() {
        return members.isEmpty();
    }

    /** Returns how many points the ring holds: 160 per member. */
    int pointCount() {
        return points.length;
    }

    /** Returns the largest point on the ring; keys hashing above it wrap to the first point. */
    long maxPoint() {
        if (points.length == 0) {
            throw emptyRing();
        }
        return points[points.length - 1];
    }

    /** Returns the smallest point on the ring. */
    long minPoint() {
        if (points.length == 0) {
            throw emptyRing();
        }
        return points[0];
    }

    /**
     * Returns the member that owns a ring key.
     *
     * @throws SpectorException GATEWAY_ROUTING_FAILURE when the ring is empty: never a random node
     */
    public String ownerOf(String ringKey) {
        return ownerOfHash(hash(ringKey));
    }

    /** Returns the member that owns a hash value (an unsigned 32-bit value). */
    String ownerOfHash(long hash) {
        if (points.length == 0) {
            throw emptyRing();
        }
        int lo = 0;
        int hi = points.length; // first index with points[i] >= hash, in [lo, hi]
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (points[mid] < hash) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return members.get(owners[lo == points.length ? 0 : lo]);
    }

    /** Returns libketama's hash of a key: the first four bytes of MD5(utf8(key)), little-endian. */
    public static long hash(String key) {
        return le32(md5(key), 0);
    }

    /** Returns the points one member label contributes, in digest order (for tests and tools). */
    static List<Long> pointsOf(String member) {
        List<Long> out = new ArrayList<>(Limits.RING_POINTS_PER_MEMBER);
        for (int i = 0; i < DIGESTS_PER_MEMBER; i++) {
            byte[] d = md5(member + "-" + i);
            for (int h = 0; h < 4; h++) {
                out.add(le32(d, h * 4));
            }
        }
        return out;
    }

    private static void checkLabel(String member) {
        requireNonNull(member, "member");
        if (!Limits.RING_MEMBER_CHARS.allows(member.length())) {
            throw Limits.RING_MEMBER_CHARS.refusal(member.length());
        }
        for (int i = 0; i < member.length(); i++) {
            char c = member.charAt(i);
            if (c == ',' || c <= 0x20 || c == 0x7f) {
                throw SpectorException.badRequest(
                        "ringMembers", "label '" + member + "' has a comma, a space or a control character");
            }
        }
    }

    private static SpectorException emptyRing() {
        return SpectorException.of(
                ErrorCode.GATEWAY_ROUTING_FAILURE,
                "the ring has no members; refusing to route",
                Map.of("reason", "empty-ring"));
    }

    private static long le32(byte[] d, int off) {
        return (d[off] & 0xffL) | (d[off + 1] & 0xffL) << 8 | (d[off + 2] & 0xffL) << 16 | (d[off + 3] & 0xffL) << 24;
    }

    private static byte[] md5(String text) {
        MessageDigest md = MD5.get();
        md.reset();
        return md.digest(text.getBytes(StandardCharsets.UTF_8));
    }

    private static MessageDigest newMd5() {
        try {
            return MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has MD5", e);
        }
    }

    @Override
    public String toString() {
        return "KetamaRing{epoch=" + epoch + ", members=" + members + "}";
    }
}
