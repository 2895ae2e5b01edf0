package com.spectrayan.spector.gateway;

import io.netty.handler.codec.http.HttpContent;

/** The client side of one in-flight exchange on a connection: what the connection's events reach. */
interface ClientSide {
    /** Told when an exchange's response is fully written or the exchange failed. */
    interface Done {
        void exchangeDone(ClientSide side, boolean reusable, int status);
    }

    /** A part of the request body; the side owns (and releases) it. */
    void onContent(HttpContent content);

    /** A read batch from the client ended. */
    void onReadComplete();

    /** The client connection became writable again. */
    void onWritable();

    /** The client connection closed. */
    void onClosed();

    /** Answers whether the exchange is over. */
    boolean isFinished();
}
