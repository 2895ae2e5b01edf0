/**
 * The gateway's settings: every {@code spector.*} key bound with SmallRye Config from system
 * properties, the environment, a YAML file and the documented defaults, validated at start.
 *
 * <p>{@link com.spectrayan.spector.gateway.config.GatewaySettings#load} is the only entry point;
 * a bad value stops the process with a {@link
 * com.spectrayan.spector.gateway.config.SettingsException} naming every key that broke. The
 * settings are one record per section of keys ({@code cell}, {@code routing}, {@code uplink},
 * {@code security}, {@code cors}, {@code server}), each owning its keys' bounds, defaults and
 * messages, so {@code spector.server.body-timeout} is {@code settings.server().bodyTimeout()}.
 */
@NullMarked
package com.spectrayan.spector.gateway.config;

import org.jspecify.annotations.NullMarked;
