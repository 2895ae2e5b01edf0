package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsReader.show;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The peer listener of the {@code spector.server.*} section: where the gateway replicas of a cell
 * reach each other to hand over a relay (the peer hop, docs/PROTOCOL.md), and, read here for
 * {@link CellSettings}, the cell's peer secret.
 *
 * <p>The listener runs only when the hop can be used: Redis on (it says who holds which worker)
 * and {@code spector.cell.peer-secret} set (without it no peer request can be authenticated).
 *
 * @param port {@code spector.server.peer-port}: 1..65535, 0 for any free port (tests), or {@link
 *     #OFF}
 * @param address {@code spector.server.peer-address}, {@code host} or {@code host:port} as the
 *     other replicas dial it, or null for the first non-loopback address of this host; without a
 *     port, the bound peer port is added
 */
public record PeerSettings(int port, @Nullable String address) {
    /** {@code spector.server.peer-port} that turns the peer listener off. */
    public static final int OFF = -1;

    /** The default {@code spector.server.peer-port}. */
    public static final int DEFAULT_PORT = 7090;

    /** The fewest chars of {@code spector.cell.peer-secret}: 256 bits of base64 text and more. */
    public static final int MIN_SECRET_CHARS = 32;

    /** The most chars of {@code spector.server.peer-address}: a DNS name (253) and a port. */
    static final int MAX_ADDRESS_CHARS = 260;

    /** A host (a name, IPv4, or IPv6 in brackets), then an optional port. */
    private static final Pattern ADDRESS =
            Pattern.compile("(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::(\\d{1,5}))?");

    /** Reads the listener's keys, recording every problem in {@code r}. */
    static PeerSettings read(SettingsReader r) {
        int port = (int) r.integer(
                Keys.SERVER_PEER_PORT,
                OFF,
                65535,
                "a port in 1..65535, 0 for any free port, or " + OFF + " for no peer listener");
        String address = r.raw(Keys.SERVER_PEER_ADDRESS);
        if (address != null && !isAddress(address)) {
            r.problem(
                    Keys.SERVER_PEER_ADDRESS,
                    show(address),
                    "host or host:port the other gateway replicas dial, e.g. 10.0.0.7, gw-0.gateway:7090 or"
                            + " [fd00::7]:7090; unset for the first non-loopback address");
            address = null;
        }
        return new PeerSettings(port, address);
    }

    /** Reads {@code spector.cell.peer-secret}, or null when unset; a short one is a problem. */
    static @Nullable String secret(SettingsReader r) {
        String secret = r.raw(Keys.CELL_PEER_SECRET);
        if (secret != null && secret.length() < MIN_SECRET_CHARS) {
            r.problem(
                    Keys.CELL_PEER_SECRET,
                    SettingsReader.REDACTED + " of " + secret.length() + " chars",
                    "a secret of at least " + MIN_SECRET_CHARS + " chars, the same on every gateway of the cell,"
                            + " e.g. openssl rand -base64 33");
            return null;
        }
        return secret;
    }

    /**
     * Reads {@code spector.cell.peer-secret-previous}, or null when unset: a key accepted beside
     * {@code secret} while a rotation is under way. A short one, or one without a secret to
     * rotate to, is a problem.
     */
    static @Nullable String previousSecret(SettingsReader r, @Nullable String secret) {
        String previous = r.raw(Keys.CELL_PEER_SECRET_PREVIOUS);
        if (previous == null) {
            return null;
        }
        if (previous.length() < MIN_SECRET_CHARS) {
            r.problem(
                    Keys.CELL_PEER_SECRET_PREVIOUS,
                    SettingsReader.REDACTED + " of " + previous.length() + " chars",
                    "a secret of at least " + MIN_SECRET_CHARS + " chars: the cell's former " + Keys.CELL_PEER_SECRET);
            return null;
        }
        if (secret == null) {
            r.problem(
                    Keys.CELL_PEER_SECRET_PREVIOUS,
                    SettingsReader.REDACTED,
                    "unset while " + Keys.CELL_PEER_SECRET + " is unset: it is accepted beside that secret only");
            return null;
        }
        return previous;
    }

    static boolean isAddress(String text) {
        if (text.length() > MAX_ADDRESS_CHARS) {
            return false;
        }
        Matcher m = ADDRESS.matcher(text);
        if (!m.matches()) {
            return false;
        }
        String port = m.group(2);
        return port == null || (Integer.parseInt(port) >= 1 && Integer.parseInt(port) <= 65535);
    }

    /** Puts the defaults of the keys that have one. */
    static void defaults(Map<String, String> d) {
        d.put(Keys.SERVER_PEER_PORT, Integer.toString(DEFAULT_PORT));
    }

    /** Returns the listener's keys with their effective values, in the documented order. */
    Map<String, String> describe() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(Keys.SERVER_PEER_PORT, String.valueOf(port));
        d.put(Keys.SERVER_PEER_ADDRESS, address == null ? "" : address);
        return d;
    }
}
