package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.ProblemJson;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.gateway.auth.CorsPolicy;
import com.spectrayan.spector.gateway.auth.CorsPreflight;
import com.spectrayan.spector.gateway.auth.JwtAuthenticator;
import com.spectrayan.spector.gateway.config.CorsSettings;
import com.spectrayan.spector.gateway.config.SecuritySettings;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** Adapts the auth package (Nimbus JWT verification, the CORS policy) to the pipeline's ports. */
final class Security {
    private Security() {}

    /** The edge authenticator: JWT verification when security is on, else none. */
    static EdgeAuthenticator authenticator(SecuritySettings settings) {
        if (!settings.enabled()) {
            return EdgeAuthenticator.NONE;
        }
        JwtAuthenticator jwt = JwtAuthenticator.create(settings.jwt());
        return new EdgeAuthenticator() {
            @Override
            public Map<String, Object> authenticate(@Nullable String authorization) {
                return jwt.authenticate(authorization).asMap();
            }

            @Override
            public String challenge(SpectorException failure) {
                Object reason = failure.details().get("reason");
                return JwtAuthenticator.wwwAuthenticate(reason == null ? "missing" : reason.toString());
            }

            @Override
            public void close() {
                jwt.close();
            }
        };
    }

    /** CORS at the edge: preflights answered from the policy, actual responses decorated. */
    static Cors cors(CorsSettings settings) {
        CorsPolicy policy = CorsPolicy.create(settings);
        if (!policy.enabled()) {
            return Cors.OFF;
        }
        return new Cors() {
            @Override
            public boolean allowsCredentialsFrom(String origin) {
                return policy.allowsCredentials() && policy.allows(origin);
            }

            @Override
            public @Nullable FullHttpResponse preflight(HttpMethod method, HttpHeaders request) {
                String origin = request.get(HttpHeaderNames.ORIGIN);
                String acrm = request.get(HttpHeaderNames.ACCESS_CONTROL_REQUEST_METHOD);
                if (origin == null || acrm == null || !CorsPolicy.isPreflight(method.name(), origin, acrm)) {
                    return null;
                }
                CorsPreflight answer =
                        policy.preflight(origin, acrm, request.get(HttpHeaderNames.ACCESS_CONTROL_REQUEST_HEADERS));
                if (answer == null) {
                    SpectorException refused = SpectorException.of(
                            com.spectrayan.spector.contract.ErrorCode.FORBIDDEN,
                            "CORS preflight refused for origin " + origin,
                            Map.of("reason", "cors"));
                    Problem p = refused.toProblem(null);
                    return Responses.full(HttpResponseStatus.FORBIDDEN, Problem.CONTENT_TYPE, ProblemJson.toBytes(p));
                }
                FullHttpResponse r = new DefaultFullHttpResponse(
                        HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(CorsPreflight.STATUS), Unpooled.EMPTY_BUFFER);
                answer.headers().forEach(r.headers()::set);
                r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
                return r;
            }

            @Override
            public void decorate(HttpHeaders request, HttpHeaders response) {
                Map<String, String> cors = policy.actualResponseHeaders(request.get(HttpHeaderNames.ORIGIN));
                // an upstream that answers CORS itself keeps its own answer: one Allow-Origin, never two
                boolean upstreamAnswered = response.contains(HttpHeaderNames.ACCESS_CONTROL_ALLOW_ORIGIN);
                cors.forEach((name, value) -> {
                    boolean vary = HttpHeaderNames.VARY.contentEqualsIgnoreCase(name);
                    if (vary
                            || (!upstreamAnswered
                                    && HttpHeaderNames.ACCESS_CONTROL_EXPOSE_HEADERS.contentEqualsIgnoreCase(name))) {
                        List<String> present = response.getAll(name);
                        String merged =
                                vary ? CorsPolicy.mergeVary(present, value) : policy.mergeExposed(present, value);
                        if (present.size() != 1 || !present.get(0).equals(merged)) {
                            response.set(name, merged);
                        }
                    } else if (!upstreamAnswered && !response.contains(name)) {
                        response.add(name, value);
                    }
                });
            }
        };
    }
}
