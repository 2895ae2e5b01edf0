package com.spectrayan.spector.contract;

/**
 * The header names of the cell routing contract (DESIGN.md section 4) and the uplink, in their
 * canonical spelling. Compare them case-insensitively.
 */
public final class SpectorHeaders {
    /** The namespace of the routing key; a client may send it, the gateway always re-sets it. */
    public static final String NAMESPACE = "X-Spector-Namespace";
    /** The tenant of the routing key; a client may send it, the gateway always re-sets it. */
    public static final String TENANT = "X-Spector-Tenant";
    /** The ring or ownership epoch the gateway routed with; never taken from a client. */
    public static final String EPOCH = "X-Spector-Epoch";
    /** The last fencing token the gateway learned for the key; never taken from a client. */
    public static final String FENCE = "X-Spector-Fence";
    /** On an owner's 421: the node that owns the key. Never taken from a client. */
    public static final String OWNER = "X-Spector-Owner";
    /**
     * On an owner's 421: {@code moved} (the default when absent or unknown): the key's owner changed,
     * the gateway corrects its caches; {@code ask}: retarget this one request to {@link #OWNER}
     * without caching it (a migration in progress; Redis Cluster's ASK).
     */
    public static final String REDIRECT = "X-Spector-Redirect";
    /** The {@link #REDIRECT} value of a one-request retarget. */
    public static final String REDIRECT_ASK = "ask";
    /** The {@link #REDIRECT} value of an ownership change (the default). */
    public static final String REDIRECT_MOVED = "moved";
    /**
     * On an owner's {@code 503}: the node a namespace is being handed to (a planned move). The
     * gateway holds the request until the move completes and then sends it to the new owner; it
     * never relays this answer. Never taken from a client.
     */
    public static final String HANDOFF = "X-Spector-Handoff";
    /** On every owner response: the node that answered. */
    public static final String NODE = "X-Spector-Node";
    /** The attempt number of a forwarded request: 1, 2 or 3. Never taken from a client. */
    public static final String ATTEMPT = "X-Spector-Attempt";
    /** The lease id a relayed request runs under. */
    public static final String LEASE = "X-Spector-Lease";
    /**
     * The id of one exchange (the gateway's access log names it): sent to the owner or worker and
     * back to the client; taken from a client only when it is trusted.
     */
    public static final String REQUEST_ID = "X-Request-Id";
    /** The id a worker dials the uplink with. */
    public static final String WORKER = "X-Spector-Worker";
    /**
     * On a relay one gateway replica forwards to another over the peer hop (docs/PROTOCOL.md,
     * "The peer hop"): when the request was signed, in epoch seconds. Never taken from a client.
     */
    public static final String PEER_TIME = "X-Spector-Peer-Time";
    /** On the peer hop: the caller's tenant, percent-encoded UTF-8. Never taken from a client. */
    public static final String PEER_TENANT = "X-Spector-Peer-Tenant";
    /** On the peer hop: the caller's lease id, when it named one. Never taken from a client. */
    public static final String PEER_LEASE = "X-Spector-Peer-Lease";
    /** On the peer hop: the HMAC that authenticates it. Never taken from a client. */
    public static final String PEER_MAC = "X-Spector-Peer-Mac";
    /**
     * On the peer hop, on a holder's 421: the holder refused the relay before reading it (it has no
     * live link to the worker), so the caller may take it to another holder. Its value says why
     * ({@code no-link}). Never taken from a client or a worker.
     */
    public static final String PEER_REFUSED = "X-Spector-Peer-Refused";
    /** The prefix of every peer-hop name: a gateway drops them from what a worker answers. */
    public static final String PEER_PREFIX = "X-Spector-Peer-";
    /** The client's idempotency key, copied byte for byte on every attempt (K7). */
    public static final String IDEMPOTENCY_KEY = "Idempotency-Key";
    /** The legacy spelling of {@link #IDEMPOTENCY_KEY}, copied the same way. */
    public static final String X_IDEMPOTENCY_KEY = "X-Idempotency-Key";
    /** Set by an owner that answers a stored response for a repeated idempotency key. */
    public static final String IDEMPOTENT_REPLAYED = "Idempotent-Replayed";

    private SpectorHeaders() {}
}
