package com.spectrayan.spector.uplink.internal.wire;

import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import org.jspecify.annotations.Nullable;

/**
 * The bounds of the frame members, shared by the frame records (which throw {@link
 * IllegalArgumentException}) and the decoder (which throws {@link CorruptFrameException}). Each
 * check returns what is wrong, or null when nothing is.
 */
public final class FrameRules {
    private FrameRules() {}

    /** Returns why a frame id is refused, or null. */
    public static @Nullable String idProblem(long id) {
        return id >= Frame.MIN_ID && id <= Frame.MAX_ID
                ? null
                : id + " (expected: " + Frame.MIN_ID + ".." + Frame.MAX_ID + ")";
    }

    /** Returns why an operation or push name is refused, or null. */
    public static @Nullable String nameProblem(@Nullable String name) {
        if (name == null) {
            return "missing (expected: a string)";
        }
        if (name.isEmpty() || name.length() > Frame.MAX_NAME_CHARS) {
            return name.length() + " chars (expected: 1.." + Frame.MAX_NAME_CHARS + ")";
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (i > 0 && ((c >= '0' && c <= '9') || c == '.' || c == '-'));
            if (!ok) {
                return "char " + (i + 1) + " is " + Checks.describe(c) + " (expected: [a-z][a-z0-9.-]*)";
            }
        }
        return null;
    }

    /** Returns why an error message is refused, or null. */
    public static @Nullable String messageProblem(@Nullable String message) {
        if (message == null) {
            return "missing (expected: a string)";
        }
        return message.length() <= Frame.MAX_MESSAGE_CHARS
                ? null
                : message.length() + " chars (expected: <= " + Frame.MAX_MESSAGE_CHARS + ")";
    }

    /** Throws {@link IllegalArgumentException} naming the member when there is a problem. */
    public static void requireValid(String member, @Nullable String problem) {
        if (problem != null) {
            throw new IllegalArgumentException(member + ": " + problem);
        }
    }
}
