package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsReader.REDACTED;
import static com.spectrayan.spector.gateway.config.SettingsReader.show;
import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The {@code spector.uplink.*} section: which workers may dial in, and the relay's limits.
 *
 * <p>{@link GatewaySettings#load} builds it and has validated every value; the constructor only
 * refuses nulls and copies the tokens, keeping their order. {@link #toString()} shows the worker
 * ids, never the token hashes.
 *
 * @param tokens {@code spector.uplink.tokens}: worker id to the lower-case hex SHA-256 of its token
 * @param relayDeadline {@code spector.uplink.relay.deadline}, a relayed exchange's whole life
 * @param relayMaxPerWorker {@code spector.uplink.relay.max-per-worker}, the relays running at once per worker
 *     (across its links)
 * @param relayMaxUpgradesPerWorker {@code spector.uplink.relay.max-upgrades-per-worker}, the relayed upgrades
 *     switched at once per worker, a share apart from {@code relayMaxPerWorker}; past it an upgrade is refused 503
 * @param maxLinksPerWorker {@code spector.uplink.max-links-per-worker}, the uplinks one worker may hold at once
 * @param v2 {@code spector.uplink.v2}: whether a worker that offers protocol v2 gets it (else every link speaks v1)
 */
public record UplinkSettings(
        Map<String, String> tokens,
        Duration relayDeadline,
        int relayMaxPerWorker,
        int relayMaxUpgradesPerWorker,
        int maxLinksPerWorker,
        boolean v2) {

    /** The most relays at once per worker, {@code spector.uplink.relay.max-per-worker}. */
    static final int MAX_RELAYS_PER_WORKER_LIMIT = 64;

    /** Chars of a worker id in {@code spector.uplink.tokens}, of {@code [A-Za-z0-9._-]}. */
    static final int MAX_WORKER_ID_CHARS = 64;

    /** Hex chars of a SHA-256 token hash in {@code spector.uplink.tokens}. */
    static final int TOKEN_HASH_HEX_CHARS = 64;

    private static final Pattern WORKER_ID = Pattern.compile("[A-Za-z0-9._-]{1," + MAX_WORKER_ID_CHARS + "}");
    private static final Pattern HEX = Pattern.compile("[0-9a-fA-F]{" + TOKEN_HASH_HEX_CHARS + "}");

    /** Refuses nulls and keeps an unmodifiable copy of the tokens in their order. */
    public UplinkSettings {
        tokens = Collections.unmodifiableMap(new LinkedHashMap<>(requireNonNull(tokens, "tokens")));
        requireNonNull(relayDeadline, "relayDeadline");
    }

    /** Reads the section, recording every problem in {@code r}. */
    static UplinkSettings read(SettingsReader r) {
        return new UplinkSettings(
                tokens(r),
                r.positive(Keys.RELAY_DEADLINE, null, "330s"),
                (int) r.integer(
                        Keys.RELAY_MAX_PER_WORKER,
                        1,
                        MAX_RELAYS_PER_WORKER_LIMIT,
                        "an integer in 1.." + MAX_RELAYS_PER_WORKER_LIMIT),
                (int) r.integer(
                        Keys.RELAY_MAX_UPGRADES_PER_WORKER,
                        1,
                        MAX_RELAYS_PER_WORKER_LIMIT,
                        "an integer in 1.." + MAX_RELAYS_PER_WORKER_LIMIT),
                (int) r.integer(
                        Keys.MAX_LINKS_PER_WORKER,
                        1,
                        WorkerDirectory.MAX_LINKS_PER_WORKER,
                        "an integer in 1.." + WorkerDirectory.MAX_LINKS_PER_WORKER),
                r.bool(Keys.UPLINK_V2));
    }

    /** Puts the defaults of the keys that have one: the design's numbers, as {@link Limits} holds them. */
    static void defaults(Map<String, String> d) {
        d.put(Keys.RELAY_DEADLINE, Durations.format(Limits.RELAY_DEADLINE));
        d.put(Keys.RELAY_MAX_PER_WORKER, String.valueOf(Limits.RELAYS_PER_WORKER));
        d.put(Keys.RELAY_MAX_UPGRADES_PER_WORKER, String.valueOf(Limits.RELAY_UPGRADES_PER_WORKER));
        d.put(Keys.MAX_LINKS_PER_WORKER, String.valueOf(WorkerDirectory.DEFAULT_MAX_LINKS_PER_WORKER));
        d.put(Keys.UPLINK_V2, "true");
    }

    /** Returns this section's keys with their effective values, in the documented order; hashes are redacted. */
    Map<String, String> describe() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(
                Keys.UPLINK_TOKENS,
                tokens.keySet().stream().map(id -> id + "=" + REDACTED).collect(Collectors.joining(",")));
        d.put(Keys.RELAY_DEADLINE, Durations.format(relayDeadline));
        d.put(Keys.RELAY_MAX_PER_WORKER, String.valueOf(relayMaxPerWorker));
        d.put(Keys.RELAY_MAX_UPGRADES_PER_WORKER, String.valueOf(relayMaxUpgradesPerWorker));
        d.put(Keys.MAX_LINKS_PER_WORKER, String.valueOf(maxLinksPerWorker));
        d.put(Keys.UPLINK_V2, String.valueOf(v2));
        return d;
    }

    @Override
    public String toString() {
        return "UplinkSettings" + describe();
    }

    private static Map<String, String> tokens(SettingsReader r) {
        Map<String, String> tokens = new LinkedHashMap<>();
        String expected = "workerId=<" + TOKEN_HASH_HEX_CHARS + " hex chars of the token's SHA-256>, the id 1.."
                + MAX_WORKER_ID_CHARS + " chars of [A-Za-z0-9._-]";
        for (String entry : r.list(Keys.UPLINK_TOKENS)) {
            int eq = entry.indexOf('=');
            String id = (eq < 0 ? entry : entry.substring(0, eq)).strip();
            String hash = eq < 0 ? "" : entry.substring(eq + 1).strip();
            String shown = show(id) + "=" + REDACTED;
            if (!WORKER_ID.matcher(id).matches() || !HEX.matcher(hash).matches()) {
                r.problem(Keys.UPLINK_TOKENS, shown, expected);
            } else if (tokens.putIfAbsent(id, hash.toLowerCase(Locale.ROOT)) != null) {
                r.problem(Keys.UPLINK_TOKENS, shown, "each worker id once; '" + id + "' is listed twice");
            }
        }
        return tokens;
    }
}
