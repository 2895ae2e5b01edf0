/**
 * Real peers for tests: a {@code redis-server} process per test class, a {@link FakeWorker} that dials a gateway's
 * uplink as a worker written from {@code docs/PROTOCOL.md} alone would, a {@link FakeTicker} and the {@link
 * ManualScheduler} that runs on it, and {@link Waits}, the one
 * bounded wait every module's tests use. Used at test scope only; depends on no spector module (every module depends on
 * this one).
 */
@NullMarked
package com.spectrayan.spector.testkit;

import org.jspecify.annotations.NullMarked;
