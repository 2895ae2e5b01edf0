package com.spectrayan.spector.contract;

/** Classifies an {@link ErrorCode} by who can act on it. */
public enum ErrorKind {
    /** The caller sent something malformed or out of bounds; fixing the request fixes it. */
    VALIDATION,
    /** The caller is not authenticated or not allowed. */
    AUTH,
    /** A well-formed request that the domain cannot serve now (no route, no target). */
    DOMAIN,
    /** A peer could not be reached, or its connection was lost; the request may not have run. */
    TRANSPORT,
    /** A defect on our side. */
    INTERNAL
}
