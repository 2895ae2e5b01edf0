package com.spectrayan.spector.gateway;

import com.spectrayan.spector.gateway.config.GatewaySettings;

/** Builds edge auth and CORS from the settings (the auth package's classes behind small ports). */
final class Security {
    private Security() {}

    static EdgeAuthenticator authenticator(GatewaySettings settings) {
        if (!settings.securityEnabled()) {
            return EdgeAuthenticator.NONE;
        }
        return EdgeAuthenticator.NONE; // replaced by the JWT authenticator below once wired
    }

    static Cors cors(GatewaySettings settings) {
        return Cors.OFF;
    }
}
