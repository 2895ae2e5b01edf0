package com.spectrayan.spector.cluster.routing;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import java.net.URI;
import java.util.Map;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The stored form of a published ring: two fields of the cell's ring hash ({@link
 * PublishedRing#key}), both plain text so that any language can write them and a Lua script can
 * compare epochs without decoding anything:
 *
 * <pre>
 * epoch     "5"                                          decimal, 0..2^63-1, no sign, no leading 0
 * members   "owner-0=http://10.0.1.1:7070,owner-1=..."   the form of spector.cell.ring-members
 * </pre>
 *
 * <p>What Redis holds is wire input: anyone with write access to Redis can put any bytes there.
 * {@link #decode} bounds the text before it splits it and checks every field; it throws only
 * {@link SpectorException}, never crashes its caller, and a refused ring leaves the held one in
 * place.
 */
final class RingCodec {
    /** Longest epoch text: {@code Long.MAX_VALUE} has 19 digits. */
    static final int MAX_EPOCH_CHARS = 19;

    /**
     * Longest members text, in chars: {@link Limits#RING_MEMBERS} members of the longest id, an
     * {@code =}, the longest URL and a comma. Checked before the text is split.
     */
    static final int MAX_MEMBERS_CHARS =
            (int) Limits.RING_MEMBERS.max() * ((int) Limits.RING_MEMBER_CHARS.max() + CellRing.MAX_URL_CHARS + 2);

    private RingCodec() {}

    /** Returns the stored epoch text of a ring. */
    static String epoch(CellRing ring) {
        return Long.toString(ring.epoch());
    }

    /** Returns the stored members text of a ring: {@code id=url} in the ring's order, comma-separated. */
    static String members(CellRing ring) {
        return ring.urls().entrySet().stream()
                .map(e -> e.getKey() + "=" + e.getValue())
                .collect(Collectors.joining(","));
    }

    /**
     * Decodes the two stored fields into a ring from {@link CellRing.Source#REDIS}.
     *
     * @throws SpectorException BAD_REQUEST when a field is missing, too long, or breaks a rule of
     *     {@link CellRing#parseMembers} or {@link #parseEpoch}
     */
    static CellRing decode(@Nullable String epochText, @Nullable String membersText) {
        if (epochText == null || membersText == null) {
            throw SpectorException.badRequest(
                    "ring", "a field is missing (expected: both 'epoch' and 'members' in the ring hash)");
        }
        long epoch = parseEpoch(epochText);
        if (membersText.length() > MAX_MEMBERS_CHARS) {
            throw SpectorException.badRequest(
                    "members", membersText.length() + " chars (expected: <= " + MAX_MEMBERS_CHARS + " chars)");
        }
        Map<String, URI> members = CellRing.parseMembers(membersText);
        return CellRing.of(epoch, members, CellRing.Source.REDIS);
    }

    /**
     * Parses an epoch: 1 to {@value #MAX_EPOCH_CHARS} ASCII digits, without a leading zero (so
     * that one epoch has one text and a script can compare two by length, then by chars), at most
     * {@link Long#MAX_VALUE}.
     *
     * @throws SpectorException BAD_REQUEST otherwise
     */
    static long parseEpoch(String text) {
        boolean ok =
                !text.isEmpty() && text.length() <= MAX_EPOCH_CHARS && (text.length() == 1 || text.charAt(0) != '0');
        for (int i = 0; ok && i < text.length(); i++) {
            char c = text.charAt(i);
            ok = c >= '0' && c <= '9';
        }
        if (ok) {
            try {
                return Long.parseLong(text);
            } catch (NumberFormatException e) {
                // 19 digits past Long.MAX_VALUE: refused below
            }
        }
        throw SpectorException.badRequest(
                "epoch",
                "'" + CellRing.printable(text) + "' (expected: a decimal in 0.." + Long.MAX_VALUE
                        + " without a leading zero)");
    }
}
