package com.spectrayan.spector.gateway;

/**
 * {@link EdgeSpliceTest} on the io_uring transport ({@code spector.server.transport=io_uring}): the
 * same bodies on the wire, spliced by the cluster's {@code UringSplice} instead of epoll's.
 */
final class EdgeSpliceUringTest extends EdgeSpliceTest {
    @Override
    String transport() {
        return "io_uring";
    }
}
