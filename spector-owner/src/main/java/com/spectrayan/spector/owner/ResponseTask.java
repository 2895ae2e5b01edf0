package com.spectrayan.spector.owner;

/**
 * A response still being written after its request ended (a byte stream, an event stream). Called
 * on the connection's event loop only.
 */
interface ResponseTask {
    /** The channel became writable again; write more if waiting for it. */
    void onWritable();

    /** The connection closed: stop writing and release what the task holds. */
    void stop();
}
