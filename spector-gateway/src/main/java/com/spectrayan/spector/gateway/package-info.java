/**
 * The gateway process on Netty: the request pipeline, edge auth, routing and forwarding.
 *
 * <p>Filled by the gateway issue; DESIGN.md sections 3, 4 and 7 are its definition.
 */
@NullMarked
package com.spectrayan.spector.gateway;

import org.jspecify.annotations.NullMarked;
