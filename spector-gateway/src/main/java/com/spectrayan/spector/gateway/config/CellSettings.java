package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsReader.show;
import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.contract.Limits;
import java.net.URI;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The {@code spector.cell.*} section: which cell this gateway serves and the ring of owners it
 * routes onto.
 *
 * <p>{@link GatewaySettings#load} builds it and has validated every value; the constructor only
 * refuses nulls and copies the members, keeping their order.
 *
 * @param id {@code spector.cell.id}, a routing name; it prefixes the Redis keys
 * @param role {@code spector.cell.role}: always {@value #GATEWAY_ROLE} once loaded
 * @param nodeId {@code spector.cell.node-id}, or null when unset
 * @param ringMembers {@code spector.cell.ring-members}: member id to its base URL, in the order given
 * @param ringEpoch {@code spector.cell.ring-epoch}, the epoch of this membership
 * @param peerSecret {@code spector.cell.peer-secret}, the key of the peer hop's MAC (at least
 *     {@value PeerSettings#MIN_SECRET_CHARS} chars), or null: the peer hop is off; a secret, never
 *     log it ({@link #toString()} redacts it)
 * @param peerSecretPrevious {@code spector.cell.peer-secret-previous}, a key the peer hop still
 *     accepts, never signs with (a rotation under way), or null; redacted as the secret
 */
public record CellSettings(
        String id,
        String role,
        @Nullable String nodeId,
        Map<String, URI> ringMembers,
        long ringEpoch,
        @Nullable String peerSecret,
        @Nullable String peerSecretPrevious) {

    /** The only role the gateway process starts under ({@code spector.cell.role}). */
    public static final String GATEWAY_ROLE = "gateway";

    /** The port a ring member given as a bare id is dialled on: {@code http://<id>:7070}. */
    public static final int DEFAULT_OWNER_PORT = 7070;

    private static final Pattern ROUTING_NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");

    /** Refuses nulls and keeps an unmodifiable copy of the members in their order. */
    public CellSettings {
        requireNonNull(id, "id");
        requireNonNull(role, "role");
        ringMembers = Collections.unmodifiableMap(new LinkedHashMap<>(requireNonNull(ringMembers, "ringMembers")));
    }

    /** Reads the section, recording every problem in {@code r}. */
    static CellSettings read(SettingsReader r) {
        String id = routingName(r, Keys.CELL_ID);
        String role = r.raw(Keys.CELL_ROLE);
        if (role == null || !role.equals(GATEWAY_ROLE)) {
            r.problem(
                    Keys.CELL_ROLE,
                    role == null ? SettingsReader.UNSET : show(role),
                    GATEWAY_ROLE + "; the gateway refuses to start unless " + Keys.CELL_ROLE + "=" + GATEWAY_ROLE);
        }
        String node = r.raw(Keys.CELL_NODE_ID);
        if (node != null && !isMemberLabel(node)) {
            r.problem(Keys.CELL_NODE_ID, show(node), memberLabelExpectation());
        }
        Map<String, URI> members = ringMembers(r);
        long epoch = r.integer(Keys.RING_EPOCH, 0, Long.MAX_VALUE, "an integer >= 0");
        String secret = PeerSettings.secret(r);
        return new CellSettings(
                id, role == null ? "" : role, node, members, epoch, secret, PeerSettings.previousSecret(r, secret));
    }

    /** Puts the defaults of the keys that have one. */
    static void defaults(Map<String, String> d) {
        d.put(Keys.CELL_ID, "default");
        d.put(Keys.RING_EPOCH, "1");
    }

    /** Returns this section's keys with their effective values, in the documented order. */
    Map<String, String> describe() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(Keys.CELL_ID, id);
        d.put(Keys.CELL_ROLE, role);
        d.put(Keys.CELL_NODE_ID, nodeId == null ? "" : nodeId);
        d.put(
                Keys.RING_MEMBERS,
                ringMembers.entrySet().stream()
                        .map(e -> e.getKey() + "=" + e.getValue())
                        .collect(Collectors.joining(",")));
        d.put(Keys.RING_EPOCH, String.valueOf(ringEpoch));
        d.put(Keys.CELL_PEER_SECRET, peerSecret == null ? "" : SettingsReader.REDACTED);
        d.put(Keys.CELL_PEER_SECRET_PREVIOUS, peerSecretPrevious == null ? "" : SettingsReader.REDACTED);
        return d;
    }

    @Override
    public String toString() {
        return "CellSettings" + describe();
    }

    private static String routingName(SettingsReader r, String key) {
        String value = r.text(key);
        if (!ROUTING_NAME.matcher(value).matches()) {
            r.problem(key, show(value), "a routing name [a-z0-9][a-z0-9._-]{0,62}");
            return Keys.DEFAULTS.getOrDefault(key, "default");
        }
        return value;
    }

    private static boolean isMemberLabel(String label) {
        if (!Limits.RING_MEMBER_CHARS.allows(label.length())) {
            return false;
        }
        for (int i = 0; i < label.length(); i++) {
            char c = label.charAt(i);
            if (c == ',' || c <= 0x20 || c == 0x7f) {
                return false;
            }
        }
        return true;
    }

    private static String memberLabelExpectation() {
        return "an id of " + Limits.RING_MEMBER_CHARS.min() + ".." + Limits.RING_MEMBER_CHARS.max()
                + " chars without commas, spaces or control chars";
    }

    private static Map<String, URI> ringMembers(SettingsReader r) {
        String key = Keys.RING_MEMBERS;
        String expected = "id=http://host:port or a bare id (http://<id>:" + DEFAULT_OWNER_PORT + ")";
        if (r.raw(key) == null) {
            r.problem(key, SettingsReader.UNSET, "a comma-separated list of ring members, each " + expected);
            return Map.of();
        }
        List<String> entries = r.list(key);
        if (entries.size() > Limits.RING_MEMBERS.max()) {
            r.problem(key, entries.size() + " members", "1.." + Limits.RING_MEMBERS.max() + " members");
            return Map.of();
        }
        Map<String, URI> members = new LinkedHashMap<>();
        for (String entry : entries) {
            int eq = entry.indexOf('=');
            String id = (eq < 0 ? entry : entry.substring(0, eq)).strip();
            if (!isMemberLabel(id)) {
                r.problem(key, show(entry), memberLabelExpectation() + ", as " + expected);
                continue;
            }
            URI url;
            if (eq < 0) {
                url = ownerUrl("http://" + id + ":" + DEFAULT_OWNER_PORT);
                if (url == null) {
                    r.problem(key, show(entry), "a bare id that is a host name, else id=http://host:port");
                    continue;
                }
            } else {
                String text = entry.substring(eq + 1).strip();
                url = ownerUrl(text);
                if (url == null) {
                    r.problem(
                            key,
                            show(entry),
                            "id=http://host:port with an http URL, a host and a port, at most " + CellRing.MAX_URL_CHARS
                                    + " chars");
                    continue;
                }
            }
            if (members.putIfAbsent(id, url) != null) {
                r.problem(key, show(entry), "each id once; '" + show(id) + "' is listed twice");
            }
        }
        return members;
    }

    private static @Nullable URI ownerUrl(String text) {
        return CellRing.ownerUrl(text); // the published ring's rule too, so any configured ring can be published
    }
}
