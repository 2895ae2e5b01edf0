/**
 * Owner-side support and the reference owner node (DESIGN.md section 4, "Owner side").
 *
 * <p>Public nouns: {@link com.spectrayan.spector.owner.OwnershipGuard} (decide 421 / 503 before
 * any side effect, usable by any Java owner) and its {@link
 * com.spectrayan.spector.owner.OwnershipDecision}; {@link
 * com.spectrayan.spector.owner.ReferenceOwner}, started from an {@link
 * com.spectrayan.spector.owner.OwnerSpec}, with its request log of {@link
 * com.spectrayan.spector.owner.RecordedRequest}s. Everything else is package-private and may change
 * at any time.
 */
@NullMarked
package com.spectrayan.spector.owner;

import org.jspecify.annotations.NullMarked;
