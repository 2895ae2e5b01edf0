package com.spectrayan.spector.cluster.gateway;

import io.netty.handler.codec.DefaultHeaders.NameValidator;
import io.netty.handler.codec.DefaultHeaders.ValueValidator;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderValidationUtil;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;

/**
 * The headers of a message that a decoder fills from the wire, then the gateway edits in place
 * (a client's request becomes the owner's; an owner's response becomes the client's).
 *
 * <p>While the decoder adds them, every name is checked as Netty's default headers check it: a
 * token (RFC 9110 §5.6.2), so a name with a space, a colon or a control byte is a malformed
 * message. Once the message is decoded the gateway {@link #seal seals} them: from then on only the
 * gateway's own code sets names, and every name it sets is a constant, so a name is no longer
 * checked on each {@code set} (the checks of those constants were 3 % of a 1 KiB request's
 * samples, issue 14). Values are checked always: a value the gateway sets may come from the
 * client (a {@code Host}, an address), and a CR or LF in one would split the message (CWE-113).
 *
 * <p>Threading: a message's headers are filled, sealed and edited on one event loop.
 */
public class DecodedHeaders extends DefaultHttpHeaders {
    /** Builds these for the messages a decoder reads ({@code HttpDecoderConfig#setHeadersFactory}). */
    public static final HttpHeadersFactory FACTORY = new HttpHeadersFactory() {
        @Override
        public HttpHeaders newHeaders() {
            return new DecodedHeaders();
        }

        @Override
        public HttpHeaders newEmptyHeaders() {
            return new DecodedHeaders();
        }
    };

    /** Netty's value check (DefaultHttpHeadersFactory's default, which is private there). */
    private static final ValueValidator<CharSequence> VALUES = value -> {
        int index = HttpHeaderValidationUtil.validateValidHeaderValue(value);
        if (index != -1) {
            throw new IllegalArgumentException("a header value contains prohibited character 0x"
                    + Integer.toHexString(value.charAt(index)) + " at index " + index + '.');
        }
    };

    /** Checks names until sealed. Guarded by the event loop (see the class notes). */
    private static final class Gate implements NameValidator<CharSequence> {
        boolean sealed;

        @Override
        public void validateName(CharSequence name) {
            if (sealed) {
                return;
            }
            if (name == null || name.length() == 0) {
                throw new IllegalArgumentException("empty headers are not allowed [" + name + ']');
            }
            int index = HttpHeaderValidationUtil.validateToken(name);
            if (index != -1) {
                throw new IllegalArgumentException("a header name can only contain \"token\" characters, "
                        + "but found invalid character 0x" + Integer.toHexString(name.charAt(index))
                        + " at index " + index + " of header '" + name + "'.");
            }
        }
    }

    private final Gate gate;

    protected DecodedHeaders() {
        this(new Gate());
    }

    private DecodedHeaders(Gate gate) {
        super(gate, VALUES);
        this.gate = gate;
    }

    /**
     * Ends the decoder's part of {@code headers} when they are {@code DecodedHeaders}: names set
     * after this are the gateway's constants and are not checked again. Others are left as they
     * are (they check every name).
     */
    public static void seal(HttpHeaders headers) {
        if (headers instanceof DecodedHeaders d) {
            d.gate.sealed = true;
        }
    }

    /** Answers whether names set on these now are checked (test hook). */
    public boolean checksNames() {
        return !gate.sealed;
    }
}
