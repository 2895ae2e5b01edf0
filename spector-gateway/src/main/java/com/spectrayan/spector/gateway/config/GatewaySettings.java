package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsReader.show;
import static java.util.Objects.requireNonNull;

import io.smallrye.config.EnvConfigSource;
import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfigBuilder;
import io.smallrye.config.source.yaml.YamlConfigSource;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An immutable snapshot of every gateway setting (docs/CONFIG.md), bound with SmallRye Config and
 * validated as a whole, one record per section of keys.
 *
 * <p>Sources, highest precedence first: system properties, the environment (each key's form in
 * upper case with {@code .} and {@code -} as {@code _}: {@code SPECTOR_CELL_RING_MEMBERS}), a YAML
 * file, then the documented defaults. {@link #load(Path, Map, Map)} reads only the sources it is
 * given, never the process environment behind a caller's back.
 *
 * <p>A bad value stops the process at start: {@link SettingsException} lists every problem of
 * every section, one per line, as {@code key: value (expected: ...)}; secrets are never shown.
 * Durations are written {@code 200ms}, {@code 10s}, {@code 5m}, {@code 1h} or ISO-8601 ({@code
 * PT10S}); keys named {@code -ms} or {@code -seconds} also take a bare number in that unit.
 *
 * <p>Each section reads its own keys, bounds and defaults ({@code read(SettingsReader)} and {@code
 * defaults} in {@link CellSettings}, {@link RoutingSettings}, {@link UplinkSettings}, {@link
 * SecuritySettings}, {@link CorsSettings}, {@link ServerSettings}); {@link Specs} maps them onto
 * the forwarder's Spring-free specs. A section built by hand is not validated beyond its nulls.
 *
 * <p>Thread-safe: immutable.
 *
 * @param cell {@code spector.cell.*}
 * @param routing {@code spector.routing.*}
 * @param uplink {@code spector.uplink.*}
 * @param security {@code spector.security.*}
 * @param cors {@code spector.cors.*}
 * @param server {@code spector.server.*}
 * @param warnings what an operator should know but that does not stop the start: unknown {@code
 *     spector.*} keys (likely typos), security turned off, a JWK set over plain http; {@link
 *     #load(Path, Map, Map)} has logged each at WARN
 */
public record GatewaySettings(
        CellSettings cell,
        RoutingSettings routing,
        UplinkSettings uplink,
        SecuritySettings security,
        CorsSettings cors,
        ServerSettings server,
        List<String> warnings) {
    private static final Logger log = LoggerFactory.getLogger(GatewaySettings.class);

    /** Precedence of system properties, the highest (SmallRye's own ordinal for them). */
    static final int SYSTEM_PROPERTIES_ORDINAL = 400;

    /** Precedence of the environment (SmallRye's own ordinal for it). */
    static final int ENVIRONMENT_ORDINAL = 300;

    /** Precedence of the YAML file, below the environment. */
    static final int YAML_ORDINAL = 100;

    /** Refuses nulls and keeps an unmodifiable copy of the warnings. */
    public GatewaySettings {
        requireNonNull(cell, "cell");
        requireNonNull(routing, "routing");
        requireNonNull(uplink, "uplink");
        requireNonNull(security, "security");
        requireNonNull(cors, "cors");
        requireNonNull(server, "server");
        warnings = List.copyOf(warnings);
    }

    /**
     * Loads and validates the settings from the given sources only.
     *
     * @param yamlFile a YAML file, or null for none; a file that is given must be readable
     * @param environment environment variables, e.g. {@link System#getenv()}
     * @param systemProperties system properties, the highest precedence
     * @throws SettingsException listing every problem found
     */
    public static GatewaySettings load(
            @Nullable Path yamlFile, Map<String, String> environment, Map<String, String> systemProperties) {
        requireNonNull(environment, "environment");
        requireNonNull(systemProperties, "systemProperties");
        List<String> problems = new ArrayList<>();
        List<String> warnings = new ArrayList<>();
        PropertiesConfigSource sys = new PropertiesConfigSource(
                Map.copyOf(systemProperties), "system properties", SYSTEM_PROPERTIES_ORDINAL);
        SmallRyeConfigBuilder builder = new SmallRyeConfigBuilder()
                .withDefaultValues(Keys.DEFAULTS)
                .withSources(sys, new EnvConfigSource(Map.copyOf(environment), ENVIRONMENT_ORDINAL));
        warnUnknown(sys.getPropertyNames(), "a system property", warnings);
        if (yamlFile != null) {
            try {
                String text = Files.readString(yamlFile, StandardCharsets.UTF_8);
                YamlConfigSource yaml = new YamlConfigSource("YAML file " + yamlFile, text, YAML_ORDINAL);
                builder.withSources(yaml);
                warnUnknown(yaml.getPropertyNames(), "the YAML file " + yamlFile, warnings);
            } catch (IOException | RuntimeException e) { // snakeyaml refuses bad YAML unchecked
                problems.add("config file: " + show(yamlFile.toString()) + " (expected: a readable YAML file; "
                        + e.getClass().getSimpleName() + ")");
            }
        }
        SettingsReader r = new SettingsReader(builder.build());
        // In the documented key order, so that the problems and warnings come out in it.
        CellSettings cell = CellSettings.read(r);
        RoutingSettings routing = RoutingSettings.read(r);
        UplinkSettings uplink = UplinkSettings.read(r);
        SecuritySettings security = SecuritySettings.read(r);
        CorsSettings cors = CorsSettings.read(r);
        ServerSettings server = ServerSettings.read(r);
        problems.addAll(r.problems());
        if (!problems.isEmpty()) {
            throw new SettingsException(problems);
        }
        warnings.addAll(r.warnings());
        for (String warning : warnings) {
            log.warn("{}", warning);
        }
        return new GatewaySettings(cell, routing, uplink, security, cors, server, warnings);
    }

    /**
     * Loads the settings of this process: a YAML file (or none), {@link System#getenv()} and
     * {@link System#getProperties()}.
     *
     * @throws SettingsException listing every problem found
     */
    public static GatewaySettings load(@Nullable Path yamlFile) {
        Properties props = System.getProperties();
        Map<String, String> sys = new HashMap<>();
        for (String name : props.stringPropertyNames()) {
            String value = props.getProperty(name);
            if (value != null) {
                sys.put(name, value);
            }
        }
        return load(yamlFile, System.getenv(), sys);
    }

    /**
     * Returns every key with its effective value, in the documented order, for a start-up log line.
     * Secrets are redacted: the HMAC secret, the uplink token hashes, and any password in a URI.
     * An unset optional key maps to an empty string.
     */
    public Map<String, String> describe() {
        Map<String, String> d = new LinkedHashMap<>();
        d.putAll(cell.describe());
        d.putAll(routing.describe());
        d.putAll(uplink.describe());
        d.putAll(security.describe());
        d.putAll(cors.describe());
        d.putAll(server.describe());
        return Collections.unmodifiableMap(d);
    }

    @Override
    public String toString() {
        return "GatewaySettings" + describe();
    }

    private static void warnUnknown(Iterable<String> names, String where, List<String> warnings) {
        Set<String> unknown = new TreeSet<>();
        for (String name : names) {
            int bracket = name.indexOf('[');
            String key = bracket < 0 ? name : name.substring(0, bracket);
            if (key.startsWith("spector.") && !Keys.ALL.contains(key)) {
                unknown.add(key);
            }
        }
        for (String key : unknown) {
            warnings.add("unknown key " + show(key) + " in " + where + " is ignored (a typo?)");
        }
    }
}
