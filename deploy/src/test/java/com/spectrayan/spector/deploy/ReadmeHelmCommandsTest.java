package com.spectrayan.spector.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.marcnuri.helm.DryRun;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.InstallCommand;
import com.marcnuri.helm.Release;
import com.marcnuri.helm.TemplateCommand;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The {@code helm template} and {@code helm install} commands of {@code deploy/README.md}, read
 * from the README and run through Helm as written: the same release, chart, namespace and
 * {@code --set} pairs, the shell variables given sample values. The install runs as {@code
 * --dry-run=client} with the cluster version the tests use ({@link HelmChart#KUBE_VERSION}): there
 * is no cluster to ask. A flag this test does not know fails it, so the README cannot show a
 * command the test skips.
 */
final class ReadmeHelmCommandsTest {
    private static final String README = "deploy/README.md";
    private static final Pattern SH_BLOCK = Pattern.compile("(?ms)^```sh\\n(.*?)^```");
    private static final Pattern VARIABLE = Pattern.compile("\\$(\\w+)|\\$\\{(\\w+)}");

    /** Sample values for the shell variables the README's commands use. */
    private static final Map<String, String> SHELL = Map.of(
            "HMAC_SECRET", "readme-hmac-secret-0123456789abcdefghijklmnopqrstuvwxyz0123456789ab",
            "PEER_SECRET", "readme-peer-secret-0123456789abcdefghijklmnop",
            "TOKEN_HASH", "ab".repeat(32),
            "ADMIN_TOKEN", "readme+admin/token-0123456789abcdefghijklmnopq");

    /** One {@code helm} command line of the README. */
    record HelmLine(
            String verb,
            String release,
            String chart,
            String namespace,
            boolean createNamespace,
            @Nullable String kubeVersion,
            Map<String, String> sets) {}

    /** Returns the README's {@code helm} commands, continuation lines joined, variables substituted. */
    static List<HelmLine> readmeCommands() {
        List<HelmLine> lines = new ArrayList<>();
        Matcher block = SH_BLOCK.matcher(Repo.read(README));
        while (block.find()) {
            for (String line : block.group(1).replace("\\\n", " ").split("\n", -1)) {
                if (line.startsWith("helm ")) {
                    lines.add(parse(words(line)));
                }
            }
        }
        return lines;
    }

    /** Splits a shell line into words: quotes group, {@code $VAR} and {@code ${VAR}} are substituted. */
    static List<String> words(String line) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        char quote = 0;
        for (int i = 0; i < line.length(); i++) {
            char ch = line.charAt(i);
            if (quote == 0 && (ch == '"' || ch == '\'')) {
                quote = ch;
                inWord = true;
            } else if (quote != 0 && ch == quote) {
                quote = 0;
            } else if (quote == 0 && Character.isWhitespace(ch)) {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else if (quote == 0 && ch == '#' && !inWord) {
                break;
            } else {
                word.append(ch);
                inWord = true;
            }
        }
        assertThat(quote).as("unbalanced quote in: %s", line).isEqualTo((char) 0);
        if (inWord) {
            words.add(word.toString());
        }
        return words.stream().map(ReadmeHelmCommandsTest::substitute).toList();
    }

    private static String substitute(String word) {
        assertThat(word)
                .as("a command substitution inside a helm line: %s", word)
                .doesNotContain("$(");
        Matcher m = VARIABLE.matcher(word);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String name = m.group(1) != null ? m.group(1) : m.group(2);
            assertThat(SHELL)
                    .as("the README's helm line uses $%s: give this test a value for it", name)
                    .containsKey(name);
            m.appendReplacement(out, Matcher.quoteReplacement(SHELL.get(name)));
        }
        m.appendTail(out);
        return out.toString();
    }

    static HelmLine parse(List<String> words) {
        assertThat(words.size()).as("helm VERB RELEASE CHART ...: %s", words).isGreaterThanOrEqualTo(4);
        assertThat(words.get(1)).as("the verb of %s", words).isIn("template", "install");
        String namespace = "default";
        boolean createNamespace = false;
        String kubeVersion = null;
        Map<String, String> sets = new LinkedHashMap<>();
        for (int i = 4; i < words.size(); i++) {
            String flag = words.get(i);
            switch (flag) {
                case "-n", "--namespace" -> namespace = words.get(++i);
                case "--create-namespace" -> createNamespace = true;
                case "--kube-version" -> kubeVersion = words.get(++i);
                case "--set" -> {
                    String pair = words.get(++i);
                    int eq = pair.indexOf('=');
                    assertThat(eq).as("--set KEY=VALUE: %s", pair).isPositive();
                    assertThat(sets.put(pair.substring(0, eq), pair.substring(eq + 1)))
                            .as("--set %s given twice", pair.substring(0, eq))
                            .isNull();
                }
                default ->
                    throw new AssertionError(
                            "the README's helm line has a flag this test does not run: " + flag + " in " + words);
            }
        }
        return new HelmLine(words.get(1), words.get(2), words.get(3), namespace, createNamespace, kubeVersion, sets);
    }

    private static List<HelmLine> commands(String verb) {
        List<HelmLine> commands =
                readmeCommands().stream().filter(c -> c.verb().equals(verb)).toList();
        assertThat(commands).as("the README shows a helm %s", verb).isNotEmpty();
        return commands;
    }

    /** Returns whether {@code dotted} names a key of values.yaml that holds a value, not a map. */
    @SuppressWarnings("unchecked") // values.yaml nests string-keyed maps
    private static boolean isLeafOfValuesYaml(String dotted) {
        Object node = HelmChart.defaults();
        for (String part : dotted.split("\\.", -1)) {
            if (!(node instanceof Map<?, ?> map) || !map.containsKey(part)) {
                return false;
            }
            node = ((Map<String, Object>) map).get(part);
        }
        return !(node instanceof Map<?, ?>);
    }

    private static void assertChartAndKeys(HelmLine line) {
        assertThat(Repo.root().resolve(line.chart()).normalize())
                .as("the README's chart path")
                .isEqualTo(HelmChart.dir());
        assertThat(line.sets().keySet())
                .as("every --set key is a value of values.yaml (Helm would silently ignore a misspelt one)")
                .allMatch(ReadmeHelmCommandsTest::isLeafOfValuesYaml);
    }

    private static Manifests render(HelmLine line, @Nullable String kubeVersion) {
        TemplateCommand template = new Helm(Repo.root().resolve(line.chart()))
                .template()
                .withName(line.release())
                .withNamespace(line.namespace());
        if (kubeVersion != null) {
            template.withKubeVersion(kubeVersion);
        }
        line.sets().forEach(template::set);
        return Manifests.parse(template.call());
    }

    /** Checks that the README's --set pairs are in the rendered objects, where they belong. */
    private static void assertValuesLanded(HelmLine line, Manifests objects) {
        Deployment gateway = objects.deployment(line.release() + "-gateway");
        Container container =
                gateway.getSpec().getTemplate().getSpec().getContainers().get(0);
        assertThat(container.getImage())
                .isEqualTo(line.sets().get("gateway.image.repository") + ":"
                        + line.sets().get("gateway.image.tag"));
        assertThat(objects.statefulSet(line.release() + "-owner")
                        .getSpec()
                        .getTemplate()
                        .getSpec()
                        .getContainers()
                        .get(0)
                        .getImage())
                .isEqualTo(line.sets().get("owner.image.repository") + ":"
                        + line.sets().get("owner.image.tag"));
        assertThat(objects.secret(line.release() + "-secrets").getStringData())
                .containsEntry("SPECTOR_SECURITY_JWT_HMAC_SECRET", SHELL.get("HMAC_SECRET"))
                .containsEntry("SPECTOR_CELL_PEER_SECRET", SHELL.get("PEER_SECRET"))
                .containsEntry("SPECTOR_UPLINK_TOKENS", "worker-1=" + SHELL.get("TOKEN_HASH"));
        String adminToken = line.sets().get("owner.adminToken");
        if (adminToken != null) {
            assertThat(adminToken).isEqualTo(SHELL.get("ADMIN_TOKEN"));
            assertThat(objects.secret(line.release() + "-owner-admin").getStringData())
                    .containsEntry("SPECTOR_OWNER_ADMIN_TOKEN", adminToken);
        }
        String tlsSecret = line.sets().get("gateway.tls.secretName");
        if (tlsSecret != null) {
            assertThat(gateway.getSpec().getTemplate().getSpec().getVolumes())
                    .anyMatch(v -> v.getSecret() != null
                            && tlsSecret.equals(v.getSecret().getSecretName()));
        }
        assertThat(objects.all())
                .allMatch(o -> line.namespace().equals(o.getMetadata().getNamespace()));
    }

    @Test
    void readme_showsAHelmInstallAndAHelmTemplate_andNothingElseOfHelm() {
        assertThat(readmeCommands()).extracting(HelmLine::verb).containsExactlyInAnyOrder("install", "template");
    }

    @Test
    void readmeHelmTemplate_rendersWithTheReadmesValues() {
        for (HelmLine line : commands("template")) {
            assertChartAndKeys(line);
            assertThat(line.kubeVersion())
                    .as("helm template needs --kube-version: the chart wants 1.28+ and there is no cluster")
                    .isNotNull();

            assertValuesLanded(line, render(line, line.kubeVersion()));
        }
    }

    @Test
    void readmeHelmInstall_installsWithTheReadmesValues_dryRun() {
        for (HelmLine line : commands("install")) {
            assertChartAndKeys(line);
            InstallCommand install = new Helm(Repo.root().resolve(line.chart()))
                    .install()
                    .withName(line.release())
                    .withNamespace(line.namespace())
                    .withKubeVersion(line.kubeVersion() != null ? line.kubeVersion() : HelmChart.KUBE_VERSION)
                    .withDryRunOption(DryRun.CLIENT)
                    .clientOnly();
            if (line.createNamespace()) {
                install.createNamespace();
            }
            line.sets().forEach(install::set);

            Release release = install.call();

            assertThat(release.getStatus()).isEqualTo("pending-install");
            assertThat(release.getName()).isEqualTo(line.release());
            assertThat(release.getNamespace()).isEqualTo(line.namespace());
            assertValuesLanded(line, render(line, HelmChart.KUBE_VERSION));
        }
    }

    @Test
    void words_groupQuotes_substituteVariables_andStopAtAComment() {
        assertThat(words("helm install a b --set k=\"x=$TOKEN_HASH\" --set 'q=1 2' # note"))
                .containsExactly("helm", "install", "a", "b", "--set", "k=x=" + "ab".repeat(32), "--set", "q=1 2");
        assertThat(parse(words("helm template r ./c -n ns --kube-version 1.31.0 --set a.b=c")))
                .isEqualTo(new HelmLine("template", "r", "./c", "ns", false, "1.31.0", Map.of("a.b", "c")));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> parse(words("helm install r ./c --wait")))
                .hasMessageContaining("--wait");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> words("helm install r ./c --set a=$UNKNOWN"))
                .hasMessageContaining("UNKNOWN");
        assertThat(isLeafOfValuesYaml("gateway.image.tag")).isTrue();
        assertThat(isLeafOfValuesYaml("gateway.image.tga")).as("misspelt").isFalse();
        assertThat(isLeafOfValuesYaml("gateway.image")).as("a map, not a value").isFalse();
    }
}
