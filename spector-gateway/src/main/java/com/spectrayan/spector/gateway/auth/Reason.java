package com.spectrayan.spector.gateway.auth;

import org.jspecify.annotations.Nullable;

/**
 * Why a bearer token was refused: the {@code reason} detail of an UNAUTHENTICATED failure, and the
 * {@code error_description} of the {@code WWW-Authenticate} header that goes with it.
 */
enum Reason {
    MISSING("missing", "no bearer token"),
    MALFORMED("malformed", "the bearer token is malformed"),
    BAD_SIGNATURE("bad-signature", "the token signature is invalid"),
    EXPIRED("expired", "the token has expired"),
    NOT_YET_VALID("not-yet-valid", "the token is not valid yet"),
    ALG_NONE("alg-none", "unsigned tokens are not accepted"),
    UNEXPECTED_ALG("unexpected-alg", "the token algorithm is not accepted"),
    ISSUER("issuer", "the token issuer is not accepted"),
    AUDIENCE("audience", "the token audience is not accepted"),
    JWKS_UNAVAILABLE("jwks-unavailable", "the signing keys are unavailable, retry later");

    private final String wire;
    private final String description;

    Reason(String wire, String description) {
        this.wire = wire;
        this.description = description;
    }

    /** Returns the name in the {@code reason} detail, e.g. {@code bad-signature}. */
    String wire() {
        return wire;
    }

    /** Returns a fixed, quote-free sentence for {@code error_description}: never text from a token. */
    String description() {
        return description;
    }

    /** Returns the reason with this wire name, or null. */
    static @Nullable Reason fromWire(String wire) {
        for (Reason r : values()) {
            if (r.wire.equals(wire)) {
                return r;
            }
        }
        return null;
    }
}
