/**
 * Owner-side support (the ownership guard) and the reference owner node.
 *
 * <p>Filled by the gateway issue; DESIGN.md section 4, "Owner side", is its definition.
 */
@NullMarked
package com.spectrayan.spector.owner;

import org.jspecify.annotations.NullMarked;
