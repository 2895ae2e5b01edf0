package com.spectrayan.spector.uplink.internal.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.RelayHeaders;
import java.util.List;

/**
 * The data of the {@code relay-head} push: the relayed response's status, headers and declared
 * length, sent once per relay, before any {@link RelayChunk}. Keyed by the {@code relay.request}
 * call's frame id.
 *
 * <pre>
 * {"status":200, "headers":[["content-type","text/plain"]], "length":246}
 *
 * status   integer 100..599, except 101: the relay carries no protocol switch
 * headers  [name, value] pairs, filtered (RelayHeaders#forResponse), then at most 100
 * length   optional integer 0..2^53-1 (Limits#RELAY_LENGTH_BYTES): the response's content length
 *          as the target declared it; absent when unknown (chunked or close-delimited). For a
 *          HEAD, the length a GET would have had. Never with 1xx or 204 (RFC 9110 section 8.6);
 *          only 0 with 205 (RFC 9110 section 15.3.6)
 * </pre>
 *
 * <p>The {@code length} member is new in v1 and optional: a peer that omits it relays as before,
 * its body chunked to the client. The gateway holds a worker to a length it declared: chunks that
 * add up to more, or a body that ends with fewer bytes, fail the relay INTERNAL.
 *
 * <p>Every check runs in the constructor, so the worker (building one from its target's response,
 * where a refusal fails the call INTERNAL) and the gateway ({@link #parse}) apply the same bounds.
 *
 * @param status the response's status
 * @param headers the response's headers after filtering, in order, repeats kept
 * @param length the declared content length in bytes, or {@link ResponseFraming#UNKNOWN_LENGTH}
 *     (-1) when the head has no {@code length}
 */
public record RelayHead(int status, List<Header> headers, long length) {
    /** The push's name. */
    public static final String PUSH = "relay-head";

    /** The smallest status. */
    public static final int MIN_STATUS = 100;

    /** The largest status. */
    public static final int MAX_STATUS = 599;

    /** The one status in range a relay refuses: 101 Switching Protocols. */
    public static final int SWITCHING_PROTOCOLS = 101;

    /** The member holding the declared length ({@link Lengths#FIELD}). */
    public static final String LENGTH = Lengths.FIELD;

    public RelayHead {
        headers = checkedHead(status, headers, length, false);
    }

    /**
     * Checks a response head's fields, in the order the constructor does, and returns the headers
     * filtered ({@link RelayHeaders#forResponse}) and bounded. Shared with protocol v2's response
     * head, which allows 101 on a stream whose request named an upgrade.
     *
     * @param switching whether status 101 is allowed (never for a v1 relay)
     * @throws SpectorException BAD_REQUEST naming the field that broke
     */
    public static List<Header> checkedHead(int status, List<Header> headers, long length, boolean switching) {
        if (status < MIN_STATUS || status > MAX_STATUS) {
            throw SpectorException.badRequest("status", status + " (expected: " + MIN_STATUS + ".." + MAX_STATUS + ")");
        }
        if (status == SWITCHING_PROTOCOLS && !switching) {
            throw SpectorException.badRequest(
                    "status", "101 (expected: not 101, the relay carries no protocol switch)");
        }
        if (status < 200 && status != SWITCHING_PROTOCOLS) {
            // A relay carries one head, the final one (RFC 9110 §15.2: a 1xx is interim, a final
            // answer follows it); a client given a 1xx as the answer would wait for one that never
            // comes. Workers skip their upstreams' interim heads.
            throw SpectorException.badRequest(
                    "status", status + " (expected: a final status, 200..599; an interim 1xx is not relayed)");
        }
        List<Header> checked = HeaderLists.checked(RelayHeaders.forResponse(headers));
        if (Lengths.checked(length) != ResponseFraming.UNKNOWN_LENGTH) {
            if (ResponseFraming.contentLength(status, length) != length) {
                throw SpectorException.badRequest(
                        LENGTH,
                        length + " with status " + status + " (expected: "
                                + (status == 205 ? "absent or 0" : "absent") + ", RFC 9110 section "
                                + (status == 205 ? "15.3.6" : "8.6") + ")");
            }
        }
        return checked;
    }

    /** A head without a declared length: its body's length is unknown. */
    public RelayHead(int status, List<Header> headers) {
        this(status, headers, ResponseFraming.UNKNOWN_LENGTH);
    }

    /**
     * Reads and bounds a {@code relay-head} push's data.
     *
     * @throws SpectorException BAD_REQUEST naming the field that broke
     */
    public static RelayHead parse(JsonNode data) {
        ObjectNode in = Inputs.object(data, "data");
        int status = (int) Inputs.integer(in, "status", MIN_STATUS, MAX_STATUS);
        List<Header> headers = HeaderLists.parse(in);
        return new RelayHead(status, headers, Lengths.parse(in));
    }

    /** Returns the data as sent. */
    public ObjectNode toJson() {
        ObjectNode node = JsonNodeFactory.instance.objectNode().put("status", status);
        node.set(HeaderLists.FIELD, HeaderLists.toJson(headers));
        return Lengths.put(node, length);
    }
}
