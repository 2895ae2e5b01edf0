package com.spectrayan.spector.testkit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The kernel's table of TCP sockets ({@code /proc/net/tcp} and {@code tcp6}, Linux): what a test
 * needs to know of a loopback connection that neither end's API says, such as how many bytes wait
 * unread in a receive queue (the gateway has not read them yet) or whether a FIN was acknowledged.
 */
public final class TcpTable {
    /** {@code TCP_FIN_WAIT1} in the table's state column: a FIN sent and not yet acknowledged. */
    public static final String FIN_WAIT1 = "04";

    private static final List<Path> TABLES = List.of(Path.of("/proc/net/tcp"), Path.of("/proc/net/tcp6"));

    private TcpTable() {}

    /**
     * One socket of the table.
     *
     * @param localPort its local port
     * @param remotePort its peer's port
     * @param state its state, as the table writes it ({@link #FIN_WAIT1}, ...)
     * @param receiveQueue the bytes that arrived and were not read yet
     */
    public record Row(int localPort, int remotePort, String state, long receiveQueue) {}

    /** Returns every TCP socket of this machine's network namespace, IPv4 and IPv6. */
    public static List<Row> rows() throws IOException {
        List<Row> rows = new ArrayList<>();
        for (Path table : TABLES) {
            for (String line : Files.readAllLines(table)) {
                // sl local_address rem_address st tx_queue:rx_queue ...; the first line names them
                String[] f = line.trim().split("\\s+", -1);
                if (f.length > 4 && f[1].indexOf(':') > 0) {
                    rows.add(new Row(port(f[1]), port(f[2]), f[3], Long.parseLong(after(f[4]), 16)));
                }
            }
        }
        return rows;
    }

    /**
     * Returns the receive queue of the connection from local port {@code localPort} to peer port
     * {@code remotePort}, or -1 when there is none. Both ports, not the local one alone: an
     * ephemeral port is reused towards other peers while an old connection of it waits in
     * TIME_WAIT, and that row would answer for this one (seen under a benchmark's load).
     */
    public static long receiveQueue(int localPort, int remotePort) throws IOException {
        return rows().stream()
                .filter(r -> r.localPort() == localPort && r.remotePort() == remotePort)
                .mapToLong(Row::receiveQueue)
                .findFirst()
                .orElse(-1);
    }

    /**
     * Returns the largest receive queue of the sockets whose peer's port is {@code port} (the
     * client ends of connections to a server listening there), or 0 when there is none.
     */
    public static long receiveQueueTowards(int port) throws IOException {
        return rows().stream()
                .filter(r -> r.remotePort() == port)
                .mapToLong(Row::receiveQueue)
                .max()
                .orElse(0);
    }

    private static int port(String address) {
        return Integer.parseInt(after(address), 16);
    }

    private static String after(String field) {
        return field.substring(field.indexOf(':') + 1);
    }
}
