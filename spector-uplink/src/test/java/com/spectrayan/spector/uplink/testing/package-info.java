/** Test pieces the uplink's test packages share: bodies, readers, byte patterns. */
@NullMarked
package com.spectrayan.spector.uplink.testing;

import org.jspecify.annotations.NullMarked;
