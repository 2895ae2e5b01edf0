/**
 * The uplink: the wire workers dial the gateway with, and both halves of the relay over it.
 *
 * <p>Filled by the relay issue; DESIGN.md section 5 is its definition.
 */
@NullMarked
package com.spectrayan.spector.uplink;

import org.jspecify.annotations.NullMarked;
