package com.spectrayan.spector.uplink.wire;

import com.spectrayan.spector.contract.SpectorException;
import org.jspecify.annotations.Nullable;

/**
 * A frame the uplink could not read: the one typed hierarchy of wire failures. Callers classify
 * by type ({@link CorruptFrameException}, {@link FrameTooLargeException}), never by message text.
 *
 * <p>These are expected failures of a peer's input, so they carry no stack trace.
 */
public abstract sealed class UplinkException extends RuntimeException
        permits CorruptFrameException, FrameTooLargeException {
    private static final long serialVersionUID = 1L;

    UplinkException(String message, @Nullable Throwable cause) {
        super(message, cause, false, false);
    }

    /** Returns this failure as the BAD_REQUEST a peer is answered with, naming the field that broke. */
    public abstract SpectorException toSpectorException();
}
