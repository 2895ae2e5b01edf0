package com.spectrayan.spector.bench;

import com.spectrayan.spector.cluster.routing.KetamaRing;
import java.util.ArrayList;
import java.util.List;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;

/** L3: one ring lookup (MD5 of the key plus a binary search over 160 points per member). */
public class RingLookupBenchmark extends NanoBenchmark {
    /** Ring sizes: the demo's cell and a large one. */
    @Param({"3", "64"})
    public int members;

    private KetamaRing ring = KetamaRing.of(1, List.of("x"));
    private String[] keys = new String[0];
    private int next;

    /** Builds the ring and 1024 distinct ring keys. */
    @Setup
    public void setUp() {
        List<String> labels = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            labels.add("owner-" + i);
        }
        ring = KetamaRing.of(1, labels);
        keys = new String[1024];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = "tenant-" + (i % 17) + "/namespace-" + i;
        }
    }

    /** Looks up the owner of the next key. */
    @Benchmark
    public String ownerOf() {
        String key = keys[next++ & (keys.length - 1)];
        return ring.ownerOf(key);
    }

    /** The hash alone, to separate MD5's cost from the search. */
    @Benchmark
    public long hashOnly() {
        return KetamaRing.hash(keys[next++ & (keys.length - 1)]);
    }
}
