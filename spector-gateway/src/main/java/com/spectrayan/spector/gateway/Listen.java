package com.spectrayan.spector.gateway;

import io.netty.bootstrap.AbstractBootstrap;
import io.netty.channel.Channel;
import java.net.InetSocketAddress;

/**
 * Binds a listener and, when the address is taken (or not this host's), says which setting named
 * it: before, a clash failed start-up with Netty's anonymous {@code bind(..) failed: Address
 * already in use} (the third review), and the operator had to guess which of four listeners it was.
 */
final class Listen {
    private Listen() {}

    /**
     * Binds {@code bootstrap} at {@code address} and waits for it.
     *
     * @param key the setting that names the port ({@code spector.server.port}, ...)
     * @throws IllegalStateException naming {@code key} and the address when the bind fails
     */
    static Channel bind(AbstractBootstrap<?, ?> bootstrap, InetSocketAddress address, String key) {
        try {
            return bootstrap.bind(address).syncUninterruptibly().channel();
        } catch (Exception e) { // syncUninterruptibly rethrows the bind's BindException unchecked
            throw new IllegalStateException(
                    key + ": cannot listen on " + host(address) + ":" + address.getPort() + " (" + e.getMessage() + ")",
                    e);
        }
    }

    private static String host(InetSocketAddress address) {
        return address.getAddress() != null ? address.getAddress().getHostAddress() : address.getHostString();
    }
}
