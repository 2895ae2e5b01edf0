package com.spectrayan.spector.gateway;

import com.spectrayan.spector.bench.NanoBenchmark;
import org.openjdk.jmh.annotations.Benchmark;

/**
 * One access log line formatted as the writer thread formats it (issue 14: the writer's top frames
 * are the per-char string copy), for a typical forwarded 1 KiB GET. In the gateway's package: the
 * log is package-private.
 */
public class AccessLogFormatBenchmark extends NanoBenchmark {
    private final AccessLog.Entry entry = new AccessLog.Entry(
            1_765_000_000_123L,
            "9f2c4e1a0b7d4c3e8a1f6b5d2e9c0a47",
            "10.0.3.7:52144",
            "GET",
            "/api/v1/namespaces/bench/1k",
            200,
            0,
            1024,
            1_912_345,
            1_544_321,
            "forward",
            "bench",
            1,
            null,
            "bench",
            "completed",
            null,
            "4bf92f3577b34da6a3ce929d0e0e4736");

    private final AccessLog.Line line = new AccessLog.Line();
    private final AccessLog.Clock clock = new AccessLog.Clock();

    /** Formats the line into a reused buffer, as the writer does; returns its length. */
    @Benchmark
    public int format() {
        line.reset();
        AccessLog.format(entry, line, clock);
        return line.length;
    }
}
