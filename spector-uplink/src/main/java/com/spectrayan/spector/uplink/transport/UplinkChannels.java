package com.spectrayan.spector.uplink.transport;

import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import io.netty.channel.Channel;
import org.jspecify.annotations.Nullable;

/** What the transport tells about an uplink it handed over, whichever protocol version it speaks. */
public final class UplinkChannels {
    private UplinkChannels() {}

    /** Returns the Netty channel under an uplink this transport made, or null for another (in-memory) one. */
    public static @Nullable Channel nettyChannel(FrameChannel uplink) {
        if (uplink instanceof WebSocketFrameChannel ws) {
            return ws.channel();
        }
        if (uplink instanceof V2FrameChannel v2) {
            return v2.channel();
        }
        return null;
    }

    /** Returns the subprotocol the uplink speaks: {@code spector-uplink.v2} or {@code spector-uplink.v1}. */
    public static String protocol(FrameChannel uplink) {
        return uplink instanceof V2FrameChannel ? V2Limits.SUBPROTOCOL : FrameCodec.SUBPROTOCOL;
    }
}
