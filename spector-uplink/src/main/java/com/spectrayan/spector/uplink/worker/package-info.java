/**
 * The worker's half of the relay: {@link com.spectrayan.spector.uplink.worker.UplinkSession} serves
 * one uplink connection, answering {@code status.get} and opening each {@code relay.request} as a
 * relay that runs against the worker's registered relay targets (with its {@code relay.body} and
 * {@code relay.cancel}); {@link com.spectrayan.spector.uplink.worker.WorkerOptions} are what every
 * session of a worker shares.
 */
@NullMarked
package com.spectrayan.spector.uplink.worker;

import org.jspecify.annotations.NullMarked;
