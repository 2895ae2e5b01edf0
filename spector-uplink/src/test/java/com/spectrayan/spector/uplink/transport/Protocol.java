package com.spectrayan.spector.uplink.transport;

/**
 * The uplink protocol a relay test runs over (docs/PROTOCOL.md: sections 1-7 for v1, section 9
 * for v2): the end-to-end relay tests run once per value ({@code @EnumSource(Protocol.class)}),
 * the worker dialling with {@code onConnected} (offers v1 only) or {@code onUplink} (offers v2,
 * then v1) to a gateway that speaks both.
 */
enum Protocol {
    V1,
    V2
}
