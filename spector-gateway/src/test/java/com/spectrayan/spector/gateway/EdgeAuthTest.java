package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Edge auth refusals on a real gateway: every one is 401 (or 403) before any owner is contacted. */
final class EdgeAuthTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder().owners(1).start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private HttpResponse<String> call(String path, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(cell.uri(path)).timeout(TIMEOUT);
        if (headers.length > 0) {
            b.headers(headers);
        }
        return cell.http.send(b.GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private void assertRefused(HttpResponse<String> r, String reason) throws Exception {
        assertThat(r.statusCode()).as("refusal for %s", reason).isEqualTo(401);
        assertThat(r.headers().firstValue("WWW-Authenticate"))
                .hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));
        assertThat(JSON.readTree(r.body()).get("code").asText()).isEqualTo("UNAUTHENTICATED");
        assertThat(JSON.readTree(r.body()).at("/details/reason").asText()).isEqualTo(reason);
        assertThat(cell.owners.get(0).requests())
                .as("no owner saw a refused request")
                .noneMatch(seen -> "/api/v1/namespaces/refused/echo".equals(seen.path()));
    }

    @Test
    void shouldRefuseAMissingToken() throws Exception {
        assertRefused(call("/api/v1/namespaces/refused/echo"), "missing");
    }

    @Test
    void shouldRefuseAnExpiredToken() throws Exception {
        String expired = Cell.token(Cell.TENANT, Instant.now().minusSeconds(600), Cell.SECRET);
        assertRefused(call("/api/v1/namespaces/refused/echo", "Authorization", "Bearer " + expired), "expired");
    }

    @Test
    void shouldRefuseABadSignature() throws Exception {
        String forged =
                Cell.token(Cell.TENANT, Instant.now().plusSeconds(600), "another-secret-0123456789-0123456789-xx");
        assertRefused(call("/api/v1/namespaces/refused/echo", "Authorization", "Bearer " + forged), "bad-signature");
    }

    @Test
    void shouldRefuseAlgNone() throws Exception {
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        String header = b64.encodeToString("{\"alg\":\"none\"}".getBytes(StandardCharsets.UTF_8));
        String claims = b64.encodeToString(
                ("{\"tenant\":\"acme\",\"exp\":" + (Instant.now().getEpochSecond() + 600) + "}")
                        .getBytes(StandardCharsets.UTF_8));
        assertRefused(
                call("/api/v1/namespaces/refused/echo", "Authorization", "Bearer " + header + "." + claims + "."),
                "alg-none");
    }

    @Test
    void shouldForbidAHeaderTenantThatContradictsTheToken() throws Exception {
        HttpResponse<String> r = call(
                "/api/v1/namespaces/refused/echo",
                "Authorization",
                "Bearer " + Cell.token(Cell.TENANT),
                "X-Spector-Tenant",
                "someone-else");
        assertThat(r.statusCode()).isEqualTo(403);
        assertThat(JSON.readTree(r.body()).get("code").asText()).isEqualTo("FORBIDDEN");
        assertThat(cell.owners.get(0).requests())
                .noneMatch(seen -> "/api/v1/namespaces/refused/echo".equals(seen.path()));
    }

    /**
     * A token that names no tenant grants none: {@code X-Spector-Tenant} with it is 403, as a
     * header contradicting a token's tenant is, and nothing reaches an owner. Regression (the
     * fourth review): such a token read any tenant's objects by naming the tenant in the header.
     * Without the header the token still reaches untenanted namespaces.
     */
    @Test
    void shouldForbidAHeaderTenantWithATokenThatNamesNone() throws Exception {
        String path = "/api/v1/namespaces/untenanted-probe/echo";
        RawClient.Response r = RawClient.exchange(
                cell.gateway.port(),
                "GET " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + Cell.untenantedToken()
                        + "\r\nX-Spector-Tenant: " + Cell.TENANT + "\r\n\r\n");
        assertThat(r.status()).isEqualTo(403);
        JsonNode problem = JSON.readTree(r.text());
        assertThat(problem.get("code").asText()).isEqualTo("FORBIDDEN");
        assertThat(problem.at("/details/reason").asText()).isEqualTo("tenant-mismatch");
        assertThat(cell.owners).allSatisfy(o -> assertThat(o.requests()).noneMatch(seen -> path.equals(seen.path())));

        RawClient.Response untenanted = RawClient.exchange(
                cell.gateway.port(),
                "GET " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + Cell.untenantedToken()
                        + "\r\n\r\n");
        assertThat(untenanted.status()).as("no header: an untenanted namespace").isEqualTo(200);
    }

    @Test
    void shouldLetTokenIssuanceAndHealthPassWithoutAToken() throws Exception {
        HttpResponse<String> token = cell.http.send(
                HttpRequest.newBuilder(cell.uri("/api/v1/auth/token"))
                        .timeout(TIMEOUT)
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"tenant\":\"demo\"}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(token.statusCode())
                .as("/api/v1/auth/** is forwarded without a token")
                .isEqualTo(200);
        String issued = JSON.readTree(token.body()).get("token").asText();

        HttpResponse<String> echo = call("/api/v1/namespaces/issued/echo", "Authorization", "Bearer " + issued);
        assertThat(echo.statusCode())
                .as("the owner-issued token is accepted at the edge")
                .isEqualTo(200);
        assertThat(call("/api/v1/health").statusCode()).isEqualTo(200);
    }
}
