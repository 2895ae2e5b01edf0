package com.spectrayan.spector.uplink.internal.v2;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.internal.wire.Checks;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.internal.wire.Inputs;
import com.spectrayan.spector.uplink.internal.wire.Lengths;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.RelayHeaders;
import com.spectrayan.spector.uplink.wire.UplinkException;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The request head of protocol v2 (docs/PROTOCOL.md section 9.3): the JSON of the HEADERS frame
 * with which the gateway opens a stream. It is v1's {@code relay.request} input ({@link
 * RelayRequest}) with the same fields and bounds, checked by the same code, minus {@code relayId}
 * (the stream id is the relay's id) and {@code hasBody} (END_STREAM on the HEADERS says there is
 * no body), {@code length} included, plus an optional {@code upgrade}:
 *
 * <pre>
 * {"target":"app", "method":"PUT", "url":"https://app.local/a?x=1",
 *  "headers":[["content-type","text/plain"]], "tenant":"acme", "leaseId":"l-9", "length":11}
 *
 * length   optional integer 0..2^53-1: the request's Content-Length as the client declared it;
 *          absent when unknown (a chunked body); only 0 with END_STREAM; never with upgrade
 * upgrade  optional: the protocol of an Upgrade request (section 9.7), an RFC 9110 token of
 *          1..64 chars, e.g. "websocket"
 *
 * END_STREAM  set on a GET or HEAD without upgrade (no body); never set with upgrade (the stream
 *             carries the upgraded connection); either way for the other methods
 * </pre>
 *
 * <p>A declared {@code length} is a promise the worker holds the gateway to (section 9.4): DATA
 * past it, or END_STREAM short of it, resets the stream {@code PROTOCOL_ERROR}.
 *
 * <p>The constructor checks every field (a refusal is BAD_REQUEST naming it, as in v1); {@link
 * #toFrame} adds the END_STREAM rule. {@link #parse} reads a peer's head and turns any refusal
 * into a stream error {@code PROTOCOL_ERROR}: the stream is reset, the link carries on.
 *
 * @param target the capability name of the relay target on the worker
 * @param method the request's method
 * @param url the request's absolute URL
 * @param headers the request's headers after filtering ({@link RelayHeaders#forRequest}), in order
 * @param tenant the tenant the request is made for
 * @param leaseId the lease the request is made under, or null
 * @param upgrade the protocol the request asks to switch to, or null for an ordinary request
 * @param length the body's declared length in bytes, or {@link ResponseFraming#UNKNOWN_LENGTH}
 *     (-1) when the head has no {@code length}
 */
public record RequestHead(
        String target,
        String method,
        String url,
        List<Header> headers,
        String tenant,
        @Nullable String leaseId,
        @Nullable String upgrade,
        long length) {
    /** The member naming the upgrade. */
    public static final String UPGRADE = "upgrade";

    /** The name of the END_STREAM flag in a refusal. */
    static final String END_STREAM = "endStream";

    public RequestHead {
        headers = RelayRequest.checkedExchange(target, method, url, headers, tenant, leaseId);
        if (upgrade != null) {
            Checks.token(UPGRADE, upgrade, V2Limits.UPGRADE_TOKEN_CHARS);
        }
        if (Lengths.checked(length) != ResponseFraming.UNKNOWN_LENGTH && upgrade != null) {
            throw SpectorException.badRequest(
                    Lengths.FIELD,
                    length + " with upgrade (expected: absent, the stream carries the upgraded connection)");
        }
    }

    /**
     * Returns the HEADERS frame that opens stream {@code streamId} with this head.
     *
     * @param endStream whether the request has no body
     * @throws SpectorException BAD_REQUEST ({@code endStream}) when END_STREAM breaks the rule above,
     *     ({@code length}) when it is set on a head that declares a length above 0
     */
    public V2Frame.Headers toFrame(int streamId, boolean endStream) {
        checkEndStream(endStream);
        return new V2Frame.Headers(streamId, FrameCodec.writeJson(toJson()), endStream);
    }

    /**
     * Reads and bounds the request head of a peer's HEADERS frame.
     *
     * @throws V2ProtocolException a stream error {@code PROTOCOL_ERROR} on the frame's stream when
     *     the JSON is not a head, a field breaks its bound, or END_STREAM breaks its rule
     */
    public static RequestHead parse(V2Frame.Headers frame) {
        try {
            ObjectNode in = FrameCodec.readObject(frame.json(), 0, frame.json().length);
            String upgrade = Inputs.optionalText(in, UPGRADE);
            long length = Lengths.parse(in);
            RequestHead head = RelayRequest.parseExchange(
                    in,
                    (target, method, url, headers, tenant, leaseId) ->
                            new RequestHead(target, method, url, headers, tenant, leaseId, upgrade, length));
            head.checkEndStream(frame.endStream());
            return head;
        } catch (SpectorException | UplinkException e) {
            throw V2ProtocolException.streamError(
                    frame.streamId(), V2ErrorCode.PROTOCOL_ERROR, "request head: " + e.getMessage(), e);
        }
    }

    /**
     * Returns the head as sent; {@code leaseId} and {@code upgrade} are left out when null, {@code
     * length} when unknown.
     */
    public ObjectNode toJson() {
        ObjectNode node = Lengths.put(
                RelayRequest.putExchange(
                        JsonNodeFactory.instance.objectNode(), target, method, url, headers, tenant, leaseId),
                length);
        if (upgrade != null) {
            node.put(UPGRADE, upgrade);
        }
        return node;
    }

    private void checkEndStream(boolean endStream) {
        if (upgrade != null && endStream) {
            throw SpectorException.badRequest(
                    END_STREAM, "set with upgrade (expected: unset, the stream carries the upgraded connection)");
        }
        if (upgrade == null && !endStream && (method.equals("GET") || method.equals("HEAD"))) {
            throw SpectorException.badRequest(
                    END_STREAM, "unset with " + method + " (expected: set on a GET or HEAD, which has no body)");
        }
        RelayRequest.checkLength(length, !endStream, "END_STREAM");
    }
}
