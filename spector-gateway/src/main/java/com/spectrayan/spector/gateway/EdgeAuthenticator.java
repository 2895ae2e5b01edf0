package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.SpectorException;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** Checks a request's bearer token at the edge and returns its verified claims. */
interface EdgeAuthenticator extends AutoCloseable {
    /** Lets every request through with no claims (auth switched off). */
    EdgeAuthenticator NONE = new EdgeAuthenticator() {
        @Override
        public Map<String, Object> authenticate(@Nullable String authorization) {
            return Map.of();
        }

        @Override
        public String challenge(SpectorException failure) {
            return "Bearer";
        }
    };

    /**
     * Returns the verified claims of the {@code Authorization} header's token.
     *
     * @throws SpectorException UNAUTHENTICATED (details {@code reason}) when it is missing or bad
     */
    Map<String, Object> authenticate(@Nullable String authorization);

    /** Returns the {@code WWW-Authenticate} value for a refusal. */
    String challenge(SpectorException failure);

    /** Stops background work (a JWK set refresh). */
    @Override
    default void close() {}
}
