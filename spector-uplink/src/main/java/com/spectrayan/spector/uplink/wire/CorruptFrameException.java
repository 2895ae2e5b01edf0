package com.spectrayan.spector.uplink.wire;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import java.util.Map;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * A frame that is not JSON, not an object, of an unknown type, or with a member missing or of the
 * wrong type or outside its bound. It names the member that broke ({@code frame} when the text is
 * not a JSON object at all) and, when it could be read first, the frame's id: a receiver answers
 * a corrupt call with an error frame under that id, and closes the connection when there is none.
 */
public final class CorruptFrameException extends UplinkException {
    private static final long serialVersionUID = 1L;

    /** The field named when the text is not a JSON object. */
    public static final String FRAME = "frame";

    private final String field;
    private final String reason;
    private final long frameId;

    CorruptFrameException(String field, String reason, long frameId, @Nullable Throwable cause) {
        super(field + ": " + reason, cause);
        this.field = field;
        this.reason = reason;
        this.frameId = frameId;
    }

    /** A frame whose member {@code field} broke for {@code reason}, read before its id. */
    public static CorruptFrameException of(String field, String reason) {
        return new CorruptFrameException(field, reason, 0, null);
    }

    /** A frame with a readable id whose member {@code field} broke for {@code reason}. */
    public static CorruptFrameException of(String field, String reason, long frameId) {
        return new CorruptFrameException(field, reason, frameId, null);
    }

    /** Text that is not well-formed JSON; {@code reason} says where. */
    public static CorruptFrameException malformed(String reason, Throwable cause) {
        return new CorruptFrameException(FRAME, reason, 0, cause);
    }

    /** Returns the frame member that broke, e.g. {@code id} or {@code op}, or {@code frame}. */
    public String field() {
        return field;
    }

    /** Returns why the member was refused, e.g. {@code "missing (expected: an integer)"}. */
    public String reason() {
        return reason;
    }

    /** Returns the frame's id when it was read before the failure, else empty. */
    public OptionalLong frameId() {
        return frameId == 0 ? OptionalLong.empty() : OptionalLong.of(frameId);
    }

    @Override
    public SpectorException toSpectorException() {
        return SpectorException.of(
                ErrorCode.BAD_REQUEST, field + ": " + reason, Map.of("field", field, "reason", reason), this);
    }
}
