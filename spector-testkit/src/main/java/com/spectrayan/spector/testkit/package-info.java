/**
 * Real peers for tests: a {@code redis-server} process per test class, a {@link FakeTicker}, and {@link Waits}, the one
 * bounded wait every module's tests use. Used at test scope only.
 */
@NullMarked
package com.spectrayan.spector.testkit;

import org.jspecify.annotations.NullMarked;
