/**
 * The worker's half of the relay: {@link com.spectrayan.spector.uplink.worker.UplinkSession} serves
 * one uplink connection, answering {@code status.get} and opening each {@code relay.request} as a
 * relay that runs against the worker's registered relay targets (with its {@code relay.body} and
 * {@code relay.cancel}), and, on a link of protocol v2, each stream the gateway opens as a relay
 * on that stream; {@link com.spectrayan.spector.uplink.worker.WorkerOptions} are what every
 * session of a worker shares.
 */
@NullMarked
package com.spectrayan.spector.uplink.worker;

import org.jspecify.annotations.NullMarked;
