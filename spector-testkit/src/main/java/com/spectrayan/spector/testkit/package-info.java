/**
 * Real peers for tests: a {@code redis-server} process per test class, a {@link FakeTicker}, and the helpers that bound
 * every wait on them. Used at test scope only.
 */
@NullMarked
package com.spectrayan.spector.testkit;

import org.jspecify.annotations.NullMarked;
