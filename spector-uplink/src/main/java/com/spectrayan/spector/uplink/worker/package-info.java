/**
 * The worker's half of the relay: {@link com.spectrayan.spector.uplink.worker.UplinkSession} serves
 * one uplink connection, answering {@code status.get} and running {@code relay.request}, {@code
 * relay.body} and {@code relay.cancel} against the worker's registered relay targets.
 */
@NullMarked
package com.spectrayan.spector.uplink.worker;

import org.jspecify.annotations.NullMarked;
