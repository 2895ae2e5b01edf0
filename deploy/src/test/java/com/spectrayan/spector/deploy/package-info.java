/**
 * Tests of the deployment files under {@code deploy/}: the Dockerfile's runtime targets, the Helm
 * chart and the compose cell. The chart is rendered, linted and dry-run installed by Helm itself
 * (helm-java: Helm's Go code in a native library from Maven, no {@code helm} binary) and its
 * objects parsed by fabric8's Kubernetes model as strictly as {@code kubectl apply}; no Docker
 * engine or cluster is needed.
 */
@NullMarked
package com.spectrayan.spector.deploy;

import org.jspecify.annotations.NullMarked;
