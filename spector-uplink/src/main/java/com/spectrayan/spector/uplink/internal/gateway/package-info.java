/**
 * Internal: the gateway half's protocol client (relay operations and push hooks) and its failures.
 * Not an API: it may change at any time, in any release, without notice. Other modules use {@link
 * com.spectrayan.spector.uplink.gateway.GatewayWorkerClient} and {@link
 * com.spectrayan.spector.uplink.gateway.GatewayRelay} (ArchUnit keeps them out of here).
 */
@NullMarked
package com.spectrayan.spector.uplink.internal.gateway;

import org.jspecify.annotations.NullMarked;
