/**
 * The uplink wire's public nouns, protocol v1: {@link com.spectrayan.spector.uplink.wire.Frame}
 * (the four frames a {@link com.spectrayan.spector.uplink.FrameChannel} carries), {@link
 * com.spectrayan.spector.uplink.wire.Header} and {@link
 * com.spectrayan.spector.uplink.wire.RelayHeaders} (a relayed exchange's headers and which of them
 * cross), {@link com.spectrayan.spector.uplink.wire.StatusReport} (what {@code status.get}
 * answers), and the typed failures of a frame that cannot be read ({@link
 * com.spectrayan.spector.uplink.wire.UplinkException}).
 *
 * <p>The codec and the schema of every operation and push live in {@code
 * com.spectrayan.spector.uplink.internal.wire}, which may change at any time. Nothing here holds a
 * connection or a buffer. {@code docs/PROTOCOL.md} describes the wire.
 */
@NullMarked
package com.spectrayan.spector.uplink.wire;

import org.jspecify.annotations.NullMarked;
