/**
 * The gateway's settings: every {@code spector.*} key bound with SmallRye Config from system
 * properties, the environment, a YAML file and the documented defaults, validated at start.
 *
 * <p>{@link com.spectrayan.spector.gateway.config.GatewaySettings#load} is the only entry point;
 * a bad value stops the process with a {@link
 * com.spectrayan.spector.gateway.config.SettingsException} naming every key that broke.
 */
@NullMarked
package com.spectrayan.spector.gateway.config;

import org.jspecify.annotations.NullMarked;
