package com.spectrayan.spector.uplink.wire;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import java.util.Map;

/**
 * A text frame longer than {@link FrameCodec#MAX_FRAME_CHARS}, refused before it is parsed (on
 * decode) or before it is sent (on encode).
 */
public final class FrameTooLargeException extends UplinkException {
    private static final long serialVersionUID = 1L;

    private final long size;
    private final long limit;

    FrameTooLargeException(long size, long limit) {
        super(CorruptFrameException.FRAME + ": " + reason(size, limit), null);
        this.size = size;
        this.limit = limit;
    }

    /** A frame of {@code size} chars where at most {@code limit} are allowed. */
    public static FrameTooLargeException of(long size, long limit) {
        return new FrameTooLargeException(size, limit);
    }

    /** Returns the frame's length in chars. */
    public long size() {
        return size;
    }

    /** Returns the largest length allowed, in chars. */
    public long limit() {
        return limit;
    }

    @Override
    public SpectorException toSpectorException() {
        String reason = reason(size, limit);
        return SpectorException.of(
                ErrorCode.BAD_REQUEST,
                CorruptFrameException.FRAME + ": " + reason,
                Map.of("field", CorruptFrameException.FRAME, "reason", reason),
                this);
    }

    private static String reason(long size, long limit) {
        return size + " chars (expected: <= " + limit + ")";
    }
}
