package com.spectrayan.spector.uplink.internal.v2;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.internal.wire.HeaderLists;
import com.spectrayan.spector.uplink.internal.wire.Inputs;
import com.spectrayan.spector.uplink.internal.wire.Lengths;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.RelayHeaders;
import com.spectrayan.spector.uplink.wire.UplinkException;
import java.util.List;

/**
 * The response head of protocol v2 (docs/PROTOCOL.md section 9.3): the JSON of the worker's first
 * HEADERS frame on a stream. It is v1's {@code relay-head} data ({@link RelayHead}) with the same
 * fields and bounds, checked by the same code, {@code length} included, except that status 101 is
 * allowed on a stream whose request head named an upgrade (section 9.7):
 *
 * <pre>
 * {"status":200, "headers":[["content-type","text/plain"]], "length":246}
 *
 * status   integer 100..599; 101 only when the request head has "upgrade"
 * headers  [name, value] pairs, filtered (RelayHeaders#forResponse), then at most 100
 * length   optional integer 0..2^53-1; never with 1xx or 204, only 0 with 205
 * </pre>
 *
 * <p>Whether 101 is allowed is the stream's to say, so {@link #toFrame} and {@link #parse} take
 * it; the constructor allows 101. When END_STREAM is set (a bodyless response, section 9.3) is
 * the stream's rule, which knows the request's method.
 *
 * @param status the response's status
 * @param headers the response's headers after filtering ({@link RelayHeaders#forResponse}), in order
 * @param length the declared content length in bytes, or {@link ResponseFraming#UNKNOWN_LENGTH}
 */
public record ResponseHead(int status, List<Header> headers, long length) {
    public ResponseHead {
        headers = RelayHead.checkedHead(status, headers, length, true);
    }

    /**
     * Returns the HEADERS frame carrying this head on stream {@code streamId}.
     *
     * @param upgradeRequested whether the stream's request head named an upgrade
     * @throws SpectorException BAD_REQUEST ({@code status}) for 101 when no upgrade was requested
     */
    public V2Frame.Headers toFrame(int streamId, boolean endStream, boolean upgradeRequested) {
        checkSwitching(upgradeRequested);
        return new V2Frame.Headers(streamId, FrameCodec.writeJson(toJson()), endStream);
    }

    /**
     * Reads and bounds the response head of a peer's HEADERS frame.
     *
     * @param upgradeRequested whether the stream's request head named an upgrade
     * @throws V2ProtocolException a stream error {@code PROTOCOL_ERROR} on the frame's stream when
     *     the JSON is not a head, a field breaks its bound, or it is a 101 no upgrade asked for
     */
    public static ResponseHead parse(V2Frame.Headers frame, boolean upgradeRequested) {
        try {
            ObjectNode in = FrameCodec.readObject(frame.json(), 0, frame.json().length);
            int status = (int) Inputs.integer(in, "status", RelayHead.MIN_STATUS, RelayHead.MAX_STATUS);
            List<Header> headers = HeaderLists.parse(in);
            ResponseHead head = new ResponseHead(status, headers, Lengths.parse(in));
            head.checkSwitching(upgradeRequested);
            return head;
        } catch (SpectorException | UplinkException e) {
            throw V2ProtocolException.streamError(
                    frame.streamId(), V2ErrorCode.PROTOCOL_ERROR, "response head: " + e.getMessage(), e);
        }
    }

    /** Returns the head as sent; {@code length} is left out when unknown. */
    public ObjectNode toJson() {
        ObjectNode node = JsonNodeFactory.instance.objectNode().put("status", status);
        node.set(HeaderLists.FIELD, HeaderLists.toJson(headers));
        return Lengths.put(node, length);
    }

    private void checkSwitching(boolean upgradeRequested) {
        if (status == RelayHead.SWITCHING_PROTOCOLS && !upgradeRequested) {
            throw SpectorException.badRequest("status", "101 (expected: not 101, the request head named no upgrade)");
        }
    }
}
