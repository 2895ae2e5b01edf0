/**
 * The uplink wire, protocol v1: the four frames and their JSON codec, the schema of every
 * operation and push of the relay with the bounds of each field, and the typed failures of a
 * frame that cannot be read.
 *
 * <p>Nothing here holds a connection or a buffer: the transport (a WebSocket whose subprotocol is
 * {@link com.spectrayan.spector.uplink.wire.FrameCodec#SUBPROTOCOL}) hands text in and out, and the
 * relay engine acts on the parsed records. {@code docs/PROTOCOL.md} describes the wire.
 */
@NullMarked
package com.spectrayan.spector.uplink.wire;

import org.jspecify.annotations.NullMarked;
