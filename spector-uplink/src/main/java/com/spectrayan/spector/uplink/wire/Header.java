package com.spectrayan.spector.uplink.wire;

import static java.util.Objects.requireNonNull;

/**
 * One HTTP header field of a relayed request or response, as given: names keep their case, and a
 * list of them keeps order and repeats. On the wire it is the pair {@code [name, value]}.
 *
 * <p>Its {@link #toString()} leaves the value out: values may be credentials.
 *
 * @param name the field name, an RFC 9110 token
 * @param value the field value
 */
public record Header(String name, String value) {
    public Header {
        requireNonNull(name, "name");
        requireNonNull(value, "value");
    }

    @Override
    public String toString() {
        return name + ": (" + value.length() + " chars)";
    }
}
