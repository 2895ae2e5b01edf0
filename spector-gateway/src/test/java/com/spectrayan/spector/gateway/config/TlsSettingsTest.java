package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsFixtures.reader;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.refused;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.withProps;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.gateway.TestPki;
import com.spectrayan.spector.gateway.config.ServerSettings.TlsProvider;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The {@code spector.server.tls.*} keys: the pair read and checked at start, every bound at its
 * limit and one past, and every refusal naming its key, its value and what was expected.
 */
final class TlsSettingsTest {
    private static TestPki ca;
    private static TestPki.Issued issued;
    private static TestPki.Issued other;

    @TempDir
    Path dir;

    @BeforeAll
    static void authority() {
        ca = TestPki.authority("settings");
        issued = ca.server("gateway.test");
        other = ca.server("other.test");
    }

    private Path file(String name, String content) throws IOException {
        Path p = dir.resolve(name);
        Files.writeString(p, content, StandardCharsets.US_ASCII);
        return p;
    }

    private Map<String, String> tls(Path cert, Path key) {
        Map<String, String> m = new HashMap<>();
        m.put("spector.server.tls.certificate", cert.toString());
        m.put("spector.server.tls.private-key", key.toString());
        return m;
    }

    private Map<String, String> goodPair() throws IOException {
        return tls(file("cert.pem", issued.chainPem()), file("key.pem", issued.keyPem()));
    }

    private Map<String, String> with(Map<String, String> base, String key, String value) {
        Map<String, String> m = new HashMap<>(base);
        m.put(key, value);
        return m;
    }

    @Test
    void tls_unset_noListener() {
        assertThat(withProps(Map.of()).server().tls()).isNull();
    }

    @Test
    void tls_bothFiles_readsTheChainAndTheDefaults() throws IOException {
        ServerSettings.Tls t = listener(goodPair());

        assertThat(t.port()).isEqualTo(ServerSettings.DEFAULT_TLS_PORT).isEqualTo(7443);
        assertThat(t.reloadInterval()).isEqualTo(ServerSettings.TLS_RELOAD_INTERVAL);
        assertThat(t.provider()).isEqualTo(TlsProvider.AUTO);
        assertThat(t.keyPair().leaf()).isEqualTo(issued.certificate());
        assertThat(t.keyPair().chain())
                .as("the server's certificate, then the intermediate")
                .hasSize(2);
        assertThat(t.toString())
                .as("toString names the certificate, never the key")
                .contains("CN=gateway.test")
                .doesNotContain(issued.keyPem().lines().skip(1).findFirst().orElseThrow());
    }

    @ParameterizedTest
    @CsvSource({
        "spector.server.tls.certificate, spector.server.tls.private-key",
        "spector.server.tls.private-key, spector.server.tls.certificate"
    })
    void oneFile_withoutTheOther_isRefusedNamingTheMissingKey(String set, String missing) throws IOException {
        Path file = file("file.pem", set.endsWith("certificate") ? issued.chainPem() : issued.keyPem());

        assertThat(refused(Map.of(set, file.toString())).problems())
                .containsExactly(missing + ": <unset> (expected: a PEM file while " + set
                        + " is set: the TLS listener needs both)");
    }

    @Test
    void certificate_unreadable_isRefusedWithTheFile() throws IOException {
        Path missing = dir.resolve("missing.pem");

        assertThat(refused(tls(missing, file("key.pem", issued.keyPem()))).problems())
                .containsExactly("spector.server.tls.certificate: " + missing
                        + " (expected: a readable PEM file (NoSuchFileException))");
    }

    @Test
    void privateKey_ofAnotherCertificate_isRefused() throws IOException {
        Map<String, String> m = tls(file("cert.pem", issued.chainPem()), file("key.pem", other.keyPem()));

        assertThat(refused(m).getMessage())
                .contains("spector.server.tls.private-key: " + dir.resolve("key.pem")
                        + " (expected: the private key of the certificate 'CN=gateway.test,O=Spector Tests'")
                .contains("this key belongs to another certificate");
    }

    @Test
    void privateKey_rsaForAnEcCertificate_isRefusedAsAnotherCertificates() throws IOException {
        Map<String, String> m = tls(
                file("cert.pem", issued.chainPem()),
                file("key.pem", ca.rsaServer("rsa.test").keyPem()));

        assertThat(refused(m).getMessage())
                .contains("spector.server.tls.private-key: ")
                .contains("(expected: an EC key like the certificate's, found an RSA key");
    }

    @Test
    void privateKey_pkcs1_isRefusedWithTheConversion() throws IOException {
        String pkcs1 = issued.keyPem().replace("PRIVATE KEY-----", "EC PRIVATE KEY-----");
        Map<String, String> m = tls(file("cert.pem", issued.chainPem()), file("key.pem", pkcs1));

        assertThat(refused(m).getMessage())
                .contains("spector.server.tls.private-key: " + dir.resolve("key.pem")
                        + " (expected: one unencrypted PKCS#8 '-----BEGIN PRIVATE KEY-----' block; found "
                        + "'EC PRIVATE KEY' (a PKCS#1 or SEC1 key: convert it with "
                        + "'openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8'))");
    }

    @Test
    void certificate_halfWritten_isRefused() throws IOException {
        String chain = issued.chainPem();
        Map<String, String> m =
                tls(file("cert.pem", chain.substring(0, chain.length() / 4)), file("key.pem", issued.keyPem()));

        assertThat(refused(m).getMessage())
                .contains("spector.server.tls.certificate: " + dir.resolve("cert.pem")
                        + " (expected: a PEM block closed by '-----END CERTIFICATE-----', found none"
                        + " (a file still being written?))");
    }

    @Test
    void certificate_noPemBlock_isRefused() throws IOException {
        Map<String, String> m = tls(file("cert.pem", "not a certificate\n"), file("key.pem", issued.keyPem()));

        assertThat(refused(m).getMessage())
                .contains("(expected: one or more PEM '-----BEGIN CERTIFICATE-----' blocks, the server's first;"
                        + " found no PEM block)");
    }

    @Test
    void certificate_chainOutOfOrder_isRefused() throws IOException {
        String reversed = ca.intermediatePem()
                + issued.chainPem().substring(0, issued.chainPem().indexOf("-----END")) + "-----END CERTIFICATE-----\n";
        Map<String, String> m = tls(file("cert.pem", reversed), file("key.pem", issued.keyPem()));

        assertThat(refused(m).getMessage())
                .contains("spector.server.tls.certificate: ")
                .contains("(expected: the chain in order, the server's certificate first");
    }

    @Test
    void certificateFile_atMaxBytes_isAcceptedAndOneMoreIsRefused() throws IOException {
        String chain = issued.chainPem();
        String atLimit = chain + "#".repeat(TlsKeyPair.MAX_FILE_BYTES - chain.length());
        assertThat(atLimit).hasSize(TlsKeyPair.MAX_FILE_BYTES);
        Path key = file("key.pem", issued.keyPem());

        assertThat(withProps(tls(file("cert.pem", atLimit), key)).server().tls())
                .isNotNull();
        assertThat(refused(tls(file("cert2.pem", atLimit + "#"), key)).getMessage())
                .contains("(expected: a PEM file of at most " + TlsKeyPair.MAX_FILE_BYTES + " bytes)");
    }

    @Test
    void certificateChain_atMaxCertificates_isAcceptedAndOneMoreIsRefused() throws IOException {
        // The root repeated: each one's issuer is the next one's subject, so only the count differs.
        String root = ca.rootPem();
        String chain = issued.chainPem() + root.repeat(TlsKeyPair.MAX_CHAIN_CERTIFICATES - 2);
        Path key = file("key.pem", issued.keyPem());

        ServerSettings.Tls t = listener(tls(file("cert.pem", chain), key));
        assertThat(t.keyPair().chain()).hasSize(TlsKeyPair.MAX_CHAIN_CERTIFICATES);
        assertThat(refused(tls(file("cert2.pem", chain + root), key)).getMessage())
                .contains("(expected: at most " + TlsKeyPair.MAX_CHAIN_CERTIFICATES + " certificates, found 11)");
    }

    @Test
    void certificate_expired_isAWarningNotARefusal() throws IOException {
        TestPki.Issued expired = ca.expiredServer("expired.test");
        GatewaySettings s = withProps(tls(file("cert.pem", expired.chainPem()), file("key.pem", expired.keyPem())));

        assertThat(s.server().tls()).isNotNull();
        assertThat(s.warnings())
                .anySatisfy(w -> assertThat(w)
                        .startsWith("spector.server.tls.certificate: the certificate 'CN=expired.test")
                        .contains("is not valid now"));
    }

    @Test
    void reloadInterval_atEachLimit_isAcceptedAndOnePastIsRefused() throws IOException {
        Map<String, String> pair = goodPair();
        String key = "spector.server.tls.reload-interval";

        assertThat(listener(with(pair, key, "100ms")).reloadInterval())
                .isEqualTo(ServerSettings.MIN_TLS_RELOAD_INTERVAL);
        assertThat(listener(with(pair, key, "1h")).reloadInterval()).isEqualTo(ServerSettings.MAX_TLS_RELOAD_INTERVAL);

        assertThat(refused(with(pair, key, "99ms")).problems())
                .containsExactly("spector.server.tls.reload-interval: 99ms (expected: a duration in 100ms..1h, "
                        + "e.g. 200ms, 10s, 5m, 1h or PT10S)");
        assertThat(refused(with(pair, key, "3600001ms")).problems())
                .containsExactly("spector.server.tls.reload-interval: 3600001ms (expected: a duration in 100ms..1h, "
                        + "e.g. 200ms, 10s, 5m, 1h or PT10S)");
    }

    @Test
    void port_atEachLimit_isAcceptedAndOnePastIsRefused() throws IOException {
        Map<String, String> pair = goodPair();

        assertThat(listener(with(pair, "spector.server.tls.port", "0")).port()).isEqualTo(0);
        assertThat(listener(with(pair, "spector.server.tls.port", "65535")).port())
                .isEqualTo(65535);
        assertThat(refused(with(pair, "spector.server.tls.port", "65536")).problems())
                .containsExactly("spector.server.tls.port: 65536 (expected: a port in 0..65535 (0: any free port))");
        assertThat(refused(with(pair, "spector.server.tls.port", "-1")).problems())
                .containsExactly("spector.server.tls.port: -1 (expected: a port in 0..65535 (0: any free port))");
    }

    @Test
    void port_sameAsThePlainPort_isRefused() throws IOException {
        Map<String, String> m =
                with(with(goodPair(), "spector.server.tls.port", "7070"), "spector.server.port", "7070");

        assertThat(refused(m).problems())
                .containsExactly("spector.server.tls.port: 7070 (expected: a port other than spector.server.port's)");
        assertThat(withProps(with(with(goodPair(), "spector.server.tls.port", "0"), "spector.server.port", "0"))
                        .server()
                        .tls())
                .as("both 0: two free ports")
                .isNotNull();
    }

    @Test
    void adminPort_sameAsTheTlsPort_isRefused() throws IOException {
        assertThat(refused(with(goodPair(), "spector.server.admin-port", "7443"))
                        .problems())
                .containsExactly(
                        "spector.server.admin-port: 7443 (expected: a port other than spector.server.tls.port's)");
    }

    @Test
    void provider_eachValueInAnyCase_isReadAndOthersAreRefused() throws IOException {
        Map<String, String> pair = goodPair();
        assertThat(listener(with(pair, "spector.server.tls.provider", "JDK")).provider())
                .isEqualTo(TlsProvider.JDK);
        assertThat(listener(with(pair, "spector.server.tls.provider", "auto")).provider())
                .isEqualTo(TlsProvider.AUTO);

        assertThat(refused(with(pair, "spector.server.tls.provider", "boringssl"))
                        .problems())
                .containsExactly("spector.server.tls.provider: boringssl (expected: auto, jdk or openssl)");
    }

    @Test
    void provider_openSslWhereItDoesNotLoad_isRefused() {
        SettingsReader r = reader(Map.of("spector.server.tls.provider", "openssl"));

        ServerSettings.provider(r, () -> false);

        assertThat(r.problems())
                .singleElement()
                .asString()
                .startsWith("spector.server.tls.provider: openssl (expected: auto or jdk: OpenSSL "
                        + "(netty-tcnative-boringssl-static) does not load here");
    }

    @Test
    void provider_openSslWhereItLoads_isAccepted() {
        SettingsReader r = reader(Map.of("spector.server.tls.provider", "openssl"));

        assertThat(ServerSettings.provider(r, () -> true)).isEqualTo(TlsProvider.OPENSSL);
        assertThat(r.problems()).isEmpty();
    }

    @Test
    void everyProblem_isReportedAtOnce() throws IOException {
        Map<String, String> m = new HashMap<>();
        m.put(
                "spector.server.tls.certificate",
                file("cert.pem", issued.chainPem()).toString());
        m.put("spector.server.tls.port", "http");
        m.put("spector.server.tls.reload-interval", "0s");
        m.put("spector.server.tls.provider", "fast");

        assertThat(refused(m).problems())
                .containsExactly(
                        "spector.server.tls.port: http (expected: a port in 0..65535 (0: any free port))",
                        "spector.server.tls.reload-interval: 0s (expected: a duration in 100ms..1h, "
                                + "e.g. 200ms, 10s, 5m, 1h or PT10S)",
                        "spector.server.tls.provider: fast (expected: auto, jdk or openssl)",
                        "spector.server.tls.private-key: <unset> (expected: a PEM file while "
                                + "spector.server.tls.certificate is set: the TLS listener needs both)");
    }

    @Test
    void describe_showsTheTlsKeysOrNothingWithoutAListener() throws IOException {
        Map<String, String> on = withProps(goodPair()).describe();
        assertThat(on)
                .containsEntry(
                        "spector.server.tls.certificate",
                        dir.resolve("cert.pem").toString())
                .containsEntry(
                        "spector.server.tls.private-key", dir.resolve("key.pem").toString())
                .containsEntry("spector.server.tls.port", "7443")
                .containsEntry("spector.server.tls.reload-interval", "10s")
                .containsEntry("spector.server.tls.provider", "auto");
        assertThat(on.values()).noneSatisfy(v -> assertThat(v).contains("PRIVATE KEY"));

        assertThat(withProps(Map.of()).describe())
                .containsEntry("spector.server.tls.certificate", "")
                .containsEntry("spector.server.tls.port", "");
    }

    /** Loads settings that must be accepted and have a TLS listener. */
    private static ServerSettings.Tls listener(Map<String, String> props) {
        ServerSettings.Tls t = withProps(props).server().tls();
        assertThat(t).as("a TLS listener from %s", props).isNotNull();
        return java.util.Objects.requireNonNull(t);
    }
}
