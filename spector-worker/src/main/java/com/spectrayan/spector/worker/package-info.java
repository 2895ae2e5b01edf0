/**
 * The worker daemon: dials the gateway's uplink and serves relay targets.
 *
 * <p>Filled by the relay issue; DESIGN.md section 5 is its definition.
 */
@NullMarked
package com.spectrayan.spector.worker;

import org.jspecify.annotations.NullMarked;
