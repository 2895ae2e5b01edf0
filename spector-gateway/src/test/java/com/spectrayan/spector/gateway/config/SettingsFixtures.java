package com.spectrayan.spector.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.smallrye.config.PropertiesConfigSource;
import io.smallrye.config.SmallRyeConfigBuilder;
import java.util.HashMap;
import java.util.Map;

/** What the settings tests share: the keys a gateway needs, and loading with extra keys. */
final class SettingsFixtures {
    /** An HMAC secret of exactly the 32 bytes HS256 needs. */
    static final String SECRET = "0123456789abcdef0123456789abcdef";

    /** The SHA-256 of a worker token, in lower-case hex. */
    static final String HASH = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    private SettingsFixtures() {}

    /** The keys without which the gateway does not start. */
    static Map<String, String> required() {
        Map<String, String> m = new HashMap<>();
        m.put("spector.cell.role", "gateway");
        m.put("spector.cell.ring-members", "owner-0");
        m.put("spector.security.jwt.hmac-secret", SECRET);
        return m;
    }

    /** Loads the required keys and {@code extra}, which must be accepted. */
    static GatewaySettings withProps(Map<String, String> extra) {
        Map<String, String> props = required();
        props.putAll(extra);
        return GatewaySettings.load(null, Map.of(), props);
    }

    /** Loads the required keys and {@code extra}, which must be refused, and returns the refusal. */
    static SettingsException refused(Map<String, String> extra) {
        Map<String, String> props = required();
        props.putAll(extra);
        return refusedExactly(props);
    }

    /** A reader of the required keys and {@code extra} over the defaults, for one section's checks. */
    static SettingsReader reader(Map<String, String> extra) {
        Map<String, String> props = required();
        props.putAll(extra);
        return new SettingsReader(new SmallRyeConfigBuilder()
                .withDefaultValues(Keys.DEFAULTS)
                .withSources(new PropertiesConfigSource(props, "test", 400))
                .build());
    }

    /** Loads exactly {@code props}, which must be refused, and returns the refusal. */
    static SettingsException refusedExactly(Map<String, String> props) {
        SettingsException e =
                catchThrowableOfType(SettingsException.class, () -> GatewaySettings.load(null, Map.of(), props));
        assertThat(e).as("settings %s must be refused", props).isNotNull();
        return e;
    }
}
