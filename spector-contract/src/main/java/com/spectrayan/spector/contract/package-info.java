/**
 * The contract every Spector process speaks: error codes and problem+json bodies, the header
 * policy, the routing header names, and the bounds of every wire field; and what the entry points
 * share about their process ({@link com.spectrayan.spector.contract.Environment}: the {@code
 * SPECTOR_*} variables and the wait until SIGTERM).
 *
 * <p>This package depends on Jackson only, so an owner, a worker, the gateway and the CLI agree on
 * one registry without pulling in a transport.
 */
@NullMarked
package com.spectrayan.spector.contract;

import org.jspecify.annotations.NullMarked;
