/**
 * JMH benchmarks of hot code and {@link com.spectrayan.spector.bench.UplinkLatencyMain}. Run them as
 * {@code bench/README.md} says; tests never run them.
 */
@NullMarked
package com.spectrayan.spector.bench;

import org.jspecify.annotations.NullMarked;
