/**
 * Uplink protocol v2 (docs/PROTOCOL.md section 9): binary frames, per-stream and connection
 * credit windows, and the scheduler that writes control frames first and DATA round-robin. Not
 * API: the transport and the relay engines use it.
 */
@NullMarked
package com.spectrayan.spector.uplink.internal.v2;

import org.jspecify.annotations.NullMarked;
