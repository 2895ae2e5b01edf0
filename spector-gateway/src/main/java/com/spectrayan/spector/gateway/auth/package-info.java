/**
 * Edge authentication and CORS: bearer JWTs verified with Nimbus JOSE+JWT ({@link
 * com.spectrayan.spector.gateway.auth.JwtAuthenticator}) and the browser cross-origin policy
 * ({@link com.spectrayan.spector.gateway.auth.CorsPolicy}).
 *
 * <p>Both are thread-safe and built once from their section of the settings ({@link
 * com.spectrayan.spector.gateway.config.SecuritySettings.Jwt}, {@link
 * com.spectrayan.spector.gateway.config.CorsSettings}); neither ever logs a token.
 */
@NullMarked
package com.spectrayan.spector.gateway.auth;

import org.jspecify.annotations.NullMarked;
