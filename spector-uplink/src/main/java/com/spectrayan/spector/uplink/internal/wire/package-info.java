/**
 * Internal: the uplink wire's codec and schemas, protocol v1. {@link
 * com.spectrayan.spector.uplink.internal.wire.FrameCodec} reads and writes frames (JSON text, the
 * WebSocket subprotocol {@link com.spectrayan.spector.uplink.internal.wire.FrameCodec#SUBPROTOCOL}),
 * and one record per operation and push ({@code relay.request}, {@code relay.body}, {@code
 * relay.cancel}, {@code status.get}, {@code relay-head}, {@code relay-chunk}) bounds every field in
 * its constructor, so a sender building one and a receiver parsing one apply the same checks.
 *
 * <p>Not an API: it may change at any time, in any release, without notice. Other modules use the
 * nouns of {@code com.spectrayan.spector.uplink.wire} (ArchUnit keeps them out of here); {@code
 * docs/PROTOCOL.md} is the wire's specification.
 */
@NullMarked
package com.spectrayan.spector.uplink.internal.wire;

import org.jspecify.annotations.NullMarked;
