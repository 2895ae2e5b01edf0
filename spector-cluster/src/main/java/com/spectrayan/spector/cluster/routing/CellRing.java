package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The ring a cell routes on, as one immutable snapshot: its epoch, each member's id and base URL,
 * where it came from ({@link Source}), and the {@link KetamaRing} built from the ids. The forwarder
 * (which URL to dial) and the resolver (which member owns a key) read the same snapshot, so a
 * swap never pairs one ring's owner with another ring's address.
 *
 * <p>Which of two snapshots wins is {@link #supersedes}: the higher epoch; at the same epoch a
 * published ring ({@link Source#REDIS}) over the configured one; otherwise the held ring stays.
 *
 * <p>Thread-safe: immutable.
 */
public final class CellRing {
    /**
     * Longest base URL of one member, in chars: a 253-char host name with {@code http://}, a port
     * and a slash fits.
     */
    public static final int MAX_URL_CHARS = 300;

    /** The port a member given as a bare id is dialled on: {@code http://<id>:7070}. */
    public static final int DEFAULT_OWNER_PORT = 7070;

    /** Where a snapshot came from, as {@code /gateway/v1/status} and the epoch gauge show it. */
    public enum Source {
        /** {@code spector.cell.ring-members} and {@code spector.cell.ring-epoch} (or an owner's spec). */
        CONFIG,
        /** The cell's published ring in Redis ({@link PublishedRing}). */
        REDIS;

        /** Returns the lower-case name: {@code config} or {@code redis}. */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final KetamaRing ketama;
    private final Map<String, URI> urls;
    private final Source source;

    /** A member and its URL. */
    private record MemberUrl(String id, URI url) {}

    /** {@link #urls} as {@link MemberUrl}s, made once per snapshot so a look-up allocates nothing. */
    private final Map<String, MemberUrl> members;

    /**
     * The member {@link #url} answered last: most requests go to the owner the one before went
     * to, and the id is then the same string, so the answer is an identity check instead of a
     * look-up in the map (issue 14). A plain field, racy by design: a record is immutable, so a
     * reader sees a whole one or the one before, and a lost write only means a look-up. A miss
     * allocates nothing.
     */
    private @Nullable MemberUrl lastUrl;

    private CellRing(KetamaRing ketama, Map<String, URI> urls, Source source) {
        this.ketama = ketama;
        this.urls = urls;
        this.source = source;
        Map<String, MemberUrl> m = new HashMap<>();
        urls.forEach((id, url) -> m.put(id, new MemberUrl(id, url)));
        this.members = Map.copyOf(m);
    }

    /**
     * Builds a snapshot of members (id to base URL, in the order given) at an epoch.
     *
     * @throws SpectorException BAD_REQUEST for a malformed id or URL, or a member count outside
     *     {@link Limits#RING_MEMBERS} (an empty map is allowed: that ring routes nothing)
     */
    public static CellRing of(long epoch, Map<String, URI> members, Source source) {
        requireNonNull(members, "members");
        requireNonNull(source, "source");
        Map<String, URI> copy = new LinkedHashMap<>();
        for (Map.Entry<String, URI> e : members.entrySet()) {
            URI url = requireNonNull(e.getValue(), "url");
            if (ownerUrl(url.toString()) == null) {
                throw SpectorException.badRequest("ringMembers", "'" + e.getKey() + "': " + urlExpectation());
            }
            copy.put(e.getKey(), url);
        }
        return new CellRing(KetamaRing.of(epoch, copy.keySet()), Collections.unmodifiableMap(copy), source);
    }

    /**
     * Wraps a ring of ids alone (no URLs: for an owner's guard, which only needs who owns a key).
     */
    public static CellRing ofIds(KetamaRing ring, Source source) {
        return new CellRing(requireNonNull(ring, "ring"), Map.of(), requireNonNull(source, "source"));
    }

    /**
     * Parses {@code id=http://host:port,...} (a bare {@code id} means {@code http://<id>:7070}), the
     * form of {@code spector.cell.ring-members} and of {@code spector ring publish --members}.
     *
     * @throws SpectorException BAD_REQUEST naming the first bad entry: a count outside {@link
     *     Limits#RING_MEMBERS}, an id breaking {@link Limits#RING_MEMBER_CHARS} or holding a comma,
     *     space or control char, a URL that is not {@code http://host:port} or is longer than
     *     {@link #MAX_URL_CHARS}, or an id listed twice
     */
    public static Map<String, URI> parseMembers(String text) {
        requireNonNull(text, "text");
        long count = 1 + text.chars().filter(c -> c == ',').count(); // counted before anything is split
        if (!Limits.RING_MEMBERS.allows(count)) {
            throw Limits.RING_MEMBERS.refusal(count);
        }
        List<String> entries = List.of(text.split(",", -1));
        Map<String, URI> members = new LinkedHashMap<>();
        for (String raw : entries) {
            String entry = raw.strip();
            int eq = entry.indexOf('=');
            String id = (eq < 0 ? entry : entry.substring(0, eq)).strip();
            checkId(id);
            String urlText = eq < 0
                    ? "http://" + id + ":" + DEFAULT_OWNER_PORT
                    : entry.substring(eq + 1).strip();
            URI url = ownerUrl(urlText);
            if (url == null) {
                throw SpectorException.badRequest("ringMembers", "'" + printable(entry) + "': " + urlExpectation());
            }
            if (members.putIfAbsent(id, url) != null) {
                throw SpectorException.badRequest("ringMembers", "'" + printable(id) + "' is listed twice");
            }
        }
        return members;
    }

    /**
     * Checks a member id: {@link Limits#RING_MEMBER_CHARS} chars, none a comma, a space, a control
     * char or non-ASCII.
     *
     * @throws SpectorException BAD_REQUEST otherwise
     */
    static String checkId(String id) {
        if (!Limits.RING_MEMBER_CHARS.allows(id.length())) {
            throw Limits.RING_MEMBER_CHARS.refusal(id.length());
        }
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            if (c == ',' || c == '=' || c <= 0x20 || c >= 0x7f) {
                throw SpectorException.badRequest(
                        "ringMembers",
                        "id '" + printable(id) + "' has a comma, '=', a space or a control character at " + i
                                + " (expected: a ring member label)");
            }
        }
        return id;
    }

    /**
     * Returns {@code text} as an owner's base URL, or null unless it is {@code http://host:port}
     * (an optional {@code /}, no user info, query or fragment) of at most {@link #MAX_URL_CHARS}.
     */
    public static @Nullable URI ownerUrl(String text) {
        if (text.length() > MAX_URL_CHARS) {
            return null;
        }
        try {
            URI u = new URI(text);
            String path = u.getRawPath();
            boolean ok = "http".equals(u.getScheme())
                    && u.getHost() != null
                    && u.getPort() > 0
                    && u.getPort() <= 65535
                    && u.getRawUserInfo() == null
                    && u.getRawQuery() == null
                    && u.getRawFragment() == null
                    && (path == null || path.isEmpty() || path.equals("/"));
            return ok ? u : null;
        } catch (URISyntaxException e) {
            return null;
        }
    }

    private static String urlExpectation() {
        return "expected id=http://host:port (an http URL with a host and a port, at most " + MAX_URL_CHARS + " chars)";
    }

    /** Returns the epoch, the version of this membership ({@code X-Spector-Epoch}). */
    public long epoch() {
        return ketama.epoch();
    }

    /** Returns where this snapshot came from. */
    public Source source() {
        return source;
    }

    /** Returns the hash ring of the members' ids. */
    public KetamaRing ketama() {
        return ketama;
    }

    /** Returns each member's base URL, in the order given (empty for {@link #ofIds}). */
    public Map<String, URI> urls() {
        return urls;
    }

    /** Returns a member's base URL, or null when the id is not a member (or has no URL). */
    public @Nullable URI url(String id) {
        MemberUrl last = lastUrl;
        if (last != null && last.id().equals(id)) { // equals: identity first
            return last.url();
        }
        MemberUrl member = members.get(id);
        if (member == null) {
            return null;
        }
        lastUrl = member;
        return member.url();
    }

    /** Answers whether {@code id} is a member. */
    public boolean contains(String id) {
        return urls.isEmpty() ? ketama.members().contains(id) : urls.containsKey(id);
    }

    /**
     * Answers whether this snapshot should replace {@code held}: a higher epoch, or the same epoch
     * published in Redis over a configured one. A ring at an older epoch, or the same ring again,
     * never replaces the held one (Redis Cluster's rule: the higher config epoch wins).
     */
    public boolean supersedes(CellRing held) {
        requireNonNull(held, "held");
        if (epoch() != held.epoch()) {
            return epoch() > held.epoch();
        }
        return source == Source.REDIS && held.source == Source.CONFIG;
    }

    /** Answers whether both hold the same epoch, members and URLs (the source aside). */
    boolean sameMembership(CellRing other) {
        return epoch() == other.epoch()
                && urls.equals(other.urls)
                && ketama.members().equals(other.ketama.members());
    }

    /** Returns text fit for a message: its first 64 chars, anything but printable ASCII as {@code ?}. */
    static String printable(String s) {
        String head = s.length() > 64 ? s.substring(0, 64) + "..." : s;
        return head.replaceAll("[^\\x20-\\x7e]", "?");
    }

    @Override
    public String toString() {
        return "CellRing{epoch=" + epoch() + ", source=" + source.label() + ", members=" + ketama.members() + "}";
    }
}
