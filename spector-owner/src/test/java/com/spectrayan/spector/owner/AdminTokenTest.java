package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.owner.AdminToken.Verdict;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link AdminToken}: how an {@code Authorization} value is read (RFC 6750 §2.1: {@code "Bearer" 1*SP
 * b64token}); the bounds and characters are in {@link OwnerSpecTest}, the wire in {@link
 * OwnershipScenarioTest}.
 */
final class AdminTokenTest {
    private static final String TOKEN = "unit-admin-token-0123456789";
    private static final AdminToken ADMIN = AdminToken.of(TOKEN);

    @Test
    void check_theBearerToken_isAccepted_withTheSchemeInAnyCaseAndOneOrMoreSpaces() {
        assertThat(ADMIN.check(List.of("Bearer " + TOKEN))).isEqualTo(Verdict.ACCEPTED);
        assertThat(ADMIN.check(List.of("bearer " + TOKEN))).isEqualTo(Verdict.ACCEPTED);
        assertThat(ADMIN.check(List.of("BEARER   " + TOKEN))).isEqualTo(Verdict.ACCEPTED);
        assertThat(ADMIN.check(List.of(ADMIN.authorization()))).isEqualTo(Verdict.ACCEPTED);
    }

    @Test
    void check_noBearerCredentials_isMissing() {
        assertThat(ADMIN.check(List.of())).isEqualTo(Verdict.MISSING);
        assertThat(ADMIN.check(List.of("Bearer"))).isEqualTo(Verdict.MISSING);
        assertThat(ADMIN.check(List.of("Bearer" + TOKEN))).as("no space").isEqualTo(Verdict.MISSING);
        assertThat(ADMIN.check(List.of("Basic " + TOKEN))).isEqualTo(Verdict.MISSING);
        assertThat(ADMIN.check(List.of(TOKEN))).as("no scheme").isEqualTo(Verdict.MISSING);
    }

    @Test
    void check_anotherTokenOrTwoAuthorizations_isWrong() {
        assertThat(ADMIN.check(List.of("Bearer "))).isEqualTo(Verdict.WRONG);
        assertThat(ADMIN.check(List.of("Bearer " + TOKEN.substring(1)))).isEqualTo(Verdict.WRONG);
        assertThat(ADMIN.check(List.of("Bearer " + TOKEN + "0"))).isEqualTo(Verdict.WRONG);
        assertThat(ADMIN.check(List.of("Bearer " + TOKEN.toUpperCase(java.util.Locale.ROOT))))
                .as("the token is case-sensitive")
                .isEqualTo(Verdict.WRONG);
        assertThat(ADMIN.check(List.of("Bearer " + TOKEN, "Bearer " + TOKEN)))
                .as("two Authorization fields: refused, whatever they hold")
                .isEqualTo(Verdict.WRONG);
    }

    @Test
    void toString_namesTheLengthOnly() {
        assertThat(ADMIN.toString()).isEqualTo("AdminToken{27 bytes}").doesNotContain(TOKEN);
    }
}
