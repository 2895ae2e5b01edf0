/**
 * Test pieces the uplink's test packages share: the two body sources ({@link ArrayBody} serves itself, {@link FedBody} is
 * fed by the test), body readers and byte patterns ({@link TestBodies}),
 * and relay hooks of callbacks ({@link TestHooks}).
 */
@NullMarked
package com.spectrayan.spector.uplink.testing;

import org.jspecify.annotations.NullMarked;
