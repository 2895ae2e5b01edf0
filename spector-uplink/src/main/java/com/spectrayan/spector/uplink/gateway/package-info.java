/**
 * The gateway's half of the uplink relay: the worker client over one uplink, the directory of live
 * worker links with their status refresh, and {@link com.spectrayan.spector.uplink.gateway.GatewayRelay}.
 */
@NullMarked
package com.spectrayan.spector.uplink.gateway;

import org.jspecify.annotations.NullMarked;
