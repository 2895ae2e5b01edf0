/**
 * Tests of the deployment files under {@code deploy/}: the Dockerfile's runtime targets, the Helm
 * chart and the compose cell, read as text and YAML (no Docker engine or helm binary needed).
 */
@NullMarked
package com.spectrayan.spector.deploy;

import org.jspecify.annotations.NullMarked;
