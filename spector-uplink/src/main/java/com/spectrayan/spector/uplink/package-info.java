/**
 * The uplink: the wire workers dial the gateway with, and both halves of the relay over it
 * (DESIGN.md section 5, {@code docs/PROTOCOL.md}). This package holds what both halves share: one
 * connection ({@link com.spectrayan.spector.uplink.FrameChannel} and its receiver) and one relayed
 * exchange ({@link com.spectrayan.spector.uplink.RelayedRequest}, {@link
 * com.spectrayan.spector.uplink.RelayedResponse}, {@link com.spectrayan.spector.uplink.BodySource},
 * {@link com.spectrayan.spector.uplink.AbortSignal}, {@link
 * com.spectrayan.spector.uplink.RelayTarget}). The halves are {@code …uplink.gateway} and {@code
 * …uplink.worker}, the WebSocket is {@code …uplink.transport}, the wire's nouns {@code
 * …uplink.wire}; {@code …uplink.internal.*} is implementation and may change at any time.
 */
@NullMarked
package com.spectrayan.spector.uplink;

import org.jspecify.annotations.NullMarked;
