package com.spectrayan.spector.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.deploy.Dockerfile.Instruction;
import com.spectrayan.spector.deploy.Dockerfile.Stage;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The rules of {@code deploy/docker/Dockerfile} (issue #5, seed 001 Phase 4): one runtime target
 * per process, each holding only its own module's jar and runtime dependencies, non-root, with a
 * health check that needs no curl, the launcher's JVM defaults for the gateway (issue 14), no
 * Panama flags, and an AppCDS archive for the gateway that its entry point really uses.
 */
final class DockerfileRulesTest {
    private static final String PATH = "deploy/docker/Dockerfile";
    /** Each runtime target, the module it runs and that module's main class. */
    private static final Map<String, String> MODULE_OF_TARGET =
            Map.of("gateway", "spector-gateway", "owner", "spector-owner", "worker", "spector-worker");

    private static final Map<String, String> MAIN_OF_TARGET = Map.of(
            "gateway", "com.spectrayan.spector.gateway.GatewayMain",
            "owner", "com.spectrayan.spector.owner.OwnerMain",
            "worker", "com.spectrayan.spector.worker.WorkerMain");

    /** The modules that are processes of their own (or hold every process, as the CLI does). */
    private static final Set<String> PROCESS_MODULES =
            Set.of("spector-gateway", "spector-owner", "spector-worker", "spector-cli", "bench");

    private static final Pattern ENTRYPOINT =
            Pattern.compile("\\[\\s*\"sh\"\\s*,\\s*\"-c\"\\s*,\\s*\"(exec java .*?)\"\\s*(?:,\\s*\"[^\"]*\"\\s*)?]");
    private static final Pattern CLASSPATH = Pattern.compile("-cp '([^']+)'");

    private static Dockerfile dockerfile() {
        return Dockerfile.parse(Repo.read(PATH));
    }

    private static String entrypointCommand(Stage stage) {
        Instruction entrypoint = stage.last("ENTRYPOINT")
                .orElseThrow(() -> new AssertionError("target " + stage.name() + " has no ENTRYPOINT"));
        Matcher m = ENTRYPOINT.matcher(entrypoint.args());
        assertThat(m.matches())
                .as(
                        "target %s: ENTRYPOINT is [\"sh\", \"-c\", \"exec java ...\"] so JAVA_OPTS is honoured and java is"
                                + " PID 1 (got %s)",
                        stage.name(), entrypoint.args())
                .isTrue();
        return m.group(1).replace("\\\"", "\"");
    }

    private static String classpath(String where, String command) {
        Matcher m = CLASSPATH.matcher(command);
        assertThat(m.find())
                .as("%s: a -cp '...' classpath in %s", where, command)
                .isTrue();
        return m.group(1);
    }

    @Test
    void targets_gatewayOwnerAndWorker_existBesideTheBuildStage() {
        Dockerfile d = dockerfile();
        List<String> names = d.stages().stream().map(Stage::name).toList();

        assertThat(names).as("stage names").containsExactlyInAnyOrder("build", "gateway", "owner", "worker");
        assertThat(d.baseImage(d.stage("build"))).as("the build stage's image").isEqualTo("eclipse-temurin:17-jdk");
        for (String target : MODULE_OF_TARGET.keySet()) {
            assertThat(d.baseImage(d.stage(target)))
                    .as("target %s runs on the JRE image, without build tools", target)
                    .isEqualTo("eclipse-temurin:17-jre");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"gateway", "owner", "worker"})
    void runtimeTarget_runsAsANonRootNumericUser(String target) {
        Stage stage = dockerfile().stage(target);
        Instruction user = stage.last("USER")
                .orElseThrow(() -> new AssertionError("target " + target + " has no USER: it would run as root"));

        assertThat(user.args())
                .as("target %s: USER is a numeric uid[:gid] (Kubernetes runAsNonRoot can check only numbers)", target)
                .matches("\\d+(:\\d+)?");
        assertThat(Integer.parseInt(user.args().split(":", -1)[0]))
                .as("target %s: USER is not root", target)
                .isPositive();
        Instruction entrypoint = stage.last("ENTRYPOINT").orElseThrow();
        assertThat(stage.indexOf(user))
                .as("target %s: USER comes before the ENTRYPOINT", target)
                .isLessThan(stage.indexOf(entrypoint));
    }

    @ParameterizedTest
    @ValueSource(strings = {"gateway:/actuator/health/liveness", "owner:/health"})
    void gatewayAndOwnerTargets_haveAHealthcheckThatNeedsNoCurl(String targetAndPath) {
        String target = targetAndPath.substring(0, targetAndPath.indexOf(':'));
        String path = targetAndPath.substring(targetAndPath.indexOf(':') + 1);
        Stage stage = dockerfile().stage(target);
        Instruction check = stage.last("HEALTHCHECK")
                .orElseThrow(() -> new AssertionError("target " + target + " has no HEALTHCHECK"));

        assertThat(check.args())
                .as("target %s: HEALTHCHECK probes %s with the bash /dev/tcp probe", target, path)
                .contains("CMD [\"/app/http-probe.sh\", \"" + path + "\"]");
        assertThat(stage.all("COPY"))
                .as("target %s: the probe script is in the image", target)
                .anyMatch(c -> c.args().endsWith("deploy/docker/http-probe.sh /app/http-probe.sh"));
        String probe = Repo.read("deploy/docker/http-probe.sh");
        assertThat(probe).as("http-probe.sh speaks HTTP over bash's /dev/tcp").contains("/dev/tcp/127.0.0.1/");
        assertThat(probe.lines().filter(l -> !l.strip().startsWith("#")))
                .as("http-probe.sh uses neither curl nor wget (the JRE image does not promise them)")
                .noneMatch(l -> l.contains("curl") || l.contains("wget"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"gateway", "owner", "worker"})
    void runtimeTarget_copiesFromTheBuildStageOnlyItsOwnModule(String target) {
        String module = MODULE_OF_TARGET.getOrDefault(target, "?");
        Stage stage = dockerfile().stage(target);
        List<Instruction> copies = stage.all("COPY").stream()
                .filter(c -> c.args().startsWith("--from="))
                .toList();

        assertThat(copies)
                .as("target %s copies its module from the build stage", target)
                .isNotEmpty();
        for (Instruction copy : copies) {
            List<String> words = new ArrayList<>(List.of(copy.args().split("\\s+", -1)));
            assertThat(words.get(0))
                    .as("target %s copies from the build stage", target)
                    .isEqualTo("--from=build");
            List<String> sources = words.subList(1, words.size() - 1);
            for (String source : sources) {
                assertThat(source)
                        .as("target %s: COPY --from names only its own module's output (/out/%s/)", target, module)
                        .startsWith("/out/" + module + "/");
                for (String other : PROCESS_MODULES) {
                    if (!other.equals(module)) {
                        assertThat(source)
                                .as("target %s: COPY names no other process module", target)
                                .doesNotContain(other);
                    }
                }
            }
        }
    }

    @Test
    void buildStage_laysOutEachModulesRuntimeClasspathApart() {
        Stage build = dockerfile().stage("build");
        String runs = String.join(
                "\n", build.all("RUN").stream().map(Instruction::args).toList());

        assertThat(runs)
                .as("the build stage packages the three process modules with what they need (-am)")
                .contains("-pl spector-gateway,spector-owner,spector-worker -am")
                .contains(" package ");
        assertThat(runs)
                .as("the build stage copies each module's runtime dependencies (compile + runtime scope)")
                .contains("copy-dependencies -DincludeScope=runtime");
        assertThat(runs)
                .as("the build stage lays out /out/<module>/<module>.jar and /out/<module>/lib/ from that module alone")
                .contains("for m in spector-owner spector-worker; do")
                .contains("cp \"$m/target/$m-\"*.jar \"/out/$m/$m.jar\"")
                .contains("cp \"$m/target/dependency/\"*.jar \"/out/$m/lib/\"");
        assertThat(runs)
                .as("the gateway's is one jar, its module's closure shaded by its package (ImageJarIT runs it)")
                .contains("cp spector-gateway/target/spector-gateway-*-image.jar"
                        + " /out/spector-gateway/spector-gateway.jar");
    }

    @Test
    void moduleClosures_keepEveryOtherProcessModuleOutOfEachImage() {
        assertThat(Poms.modules())
                .as("the root pom's modules")
                .contains("spector-gateway", "spector-owner", "spector-worker");
        for (Map.Entry<String, String> e : MODULE_OF_TARGET.entrySet()) {
            String target = e.getKey();
            String module = e.getValue();
            Set<String> closure = Poms.runtimeClosure(module);
            Set<String> others = new LinkedHashSet<>(PROCESS_MODULES);
            others.remove(module);

            assertThat(closure)
                    .as(
                            "target %s holds %s's runtime closure %s, which must not reach another process module",
                            target, module, closure)
                    .doesNotContainAnyElementsOf(others)
                    .doesNotContain("spector-testkit");
            for (String other : MODULE_OF_TARGET.values()) {
                if (other.equals(module)) {
                    continue;
                }
                Set<String> onlyTheOther = new LinkedHashSet<>(Poms.runtimeClosure(other));
                onlyTheOther.removeAll(closure);
                assertThat(onlyTheOther)
                        .as("%s itself is among what %s has and target %s (%s) does not", other, other, target, module)
                        .contains(other);
            }
        }
        assertThat(Poms.runtimeClosure("spector-gateway"))
                .as("the gateway legitimately carries contract, cluster and uplink")
                .containsExactlyInAnyOrder("spector-gateway", "spector-cluster", "spector-uplink", "spector-contract");
    }

    @Test
    void dockerfile_hasNoPanamaOrIncubatorFlags() {
        String text = Repo.read(PATH);

        assertThat(text).as("no jdk.incubator.vector (ADR Phase 4)").doesNotContain("jdk.incubator.vector");
        assertThat(text).as("no --enable-native-access (ADR Phase 4)").doesNotContain("--enable-native-access");
        assertThat(text).as("no --add-modules").doesNotContain("--add-modules");
    }

    /**
     * The options of {@code bin/spector}'s {@code gateway_defaults} (the JVM defaults of {@code
     * bin/spector gateway}), read from the launcher itself.
     */
    private static Set<String> launcherDefaults() {
        Matcher function =
                Pattern.compile("(?s)\\ngateway_defaults\\(\\) \\{(.*?)\\n}").matcher(Repo.read("bin/spector"));
        assertThat(function.find()).as("bin/spector has gateway_defaults()").isTrue();
        Set<String> options = new LinkedHashSet<>();
        Matcher assignment = Pattern.compile("defaults=\"([^\"]*)\"").matcher(function.group(1));
        while (assignment.find()) {
            for (String o : assignment.group(1).split(" ", -1)) {
                if (o.startsWith("-")) {
                    options.add(o);
                }
            }
        }
        assertThat(options)
                .as("gateway_defaults() picks a collector and a heap")
                .anyMatch(o -> o.startsWith("-XX:+Use") && o.endsWith("GC"))
                .anyMatch(o -> o.startsWith("-Xmx"));
        return options;
    }

    /**
     * Issue 14: the image starts as {@code bin/spector gateway} does out of the box (the seed's
     * {@code -Xms64m -Xmx256m -XX:+UseG1GC} stays the Helm chart's and the compose cell's setting).
     * Its {@code JAVA_OPTS} default and the options its entry point passes before them are the
     * launcher's defaults, no more and no fewer, so the two cannot drift apart.
     */
    @Test
    void gatewayTarget_javaOptsDefaultAndEntrypointAreTheLaunchersDefaults() {
        Stage gateway = dockerfile().stage("gateway");
        List<String> javaOpts = gateway.all("ENV").stream()
                .map(Instruction::args)
                .filter(a -> a.startsWith("JAVA_OPTS="))
                .toList();
        assertThat(javaOpts).as("the gateway sets JAVA_OPTS once").hasSize(1);
        String value = javaOpts.get(0).substring("JAVA_OPTS=".length()).replace("\"", "");
        List<String> imageOptions = List.of(value.split(" ", -1));

        String command = entrypointCommand(gateway);
        List<String> beforeJavaOpts =
                List.of(command.substring(0, command.indexOf(" $JAVA_OPTS ")).split(" ", -1));
        Set<String> launcher = launcherDefaults();

        assertThat(imageOptions)
                .as("the image's JAVA_OPTS default: the launcher's defaults its entry point does not pass")
                .containsExactlyInAnyOrderElementsOf(launcher.stream()
                        .filter(o -> !beforeJavaOpts.contains(o))
                        .toList());
        assertThat(beforeJavaOpts)
                .as("the entry point passes the launcher's other defaults (the JFR probe off)")
                .containsAll(
                        launcher.stream().filter(o -> !imageOptions.contains(o)).toList());
        assertThat(imageOptions)
                .as("a heap and a collector, so JAVA_OPTS given to `docker run` replaces them whole")
                .anyMatch(o -> o.startsWith("-Xmx"))
                .anyMatch(o -> o.startsWith("-XX:+Use") && o.endsWith("GC"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"gateway", "owner", "worker"})
    void runtimeTarget_entrypointHonoursJavaOptsAndRunsItsOwnMain(String target) throws Exception {
        Stage stage = dockerfile().stage(target);
        String module = MODULE_OF_TARGET.getOrDefault(target, "?");
        String main = MAIN_OF_TARGET.getOrDefault(target, "?");
        String command = entrypointCommand(stage);

        assertThat(command)
                .as("target %s: the entry point passes $JAVA_OPTS to java", target)
                .contains(" $JAVA_OPTS ");
        assertThat(classpath("target " + target, command))
                .as("target %s: the classpath is its module's jar and lib/ (the gateway's: one jar)", target)
                .isEqualTo(
                        target.equals("gateway") ? "/app/spector-gateway.jar" : "/app/" + module + ".jar:/app/lib/*");
        assertThat(command.substring(command.indexOf("-cp '")))
                .as("target %s: the entry point runs %s", target, main)
                .contains("' " + main);
        assertThat(Files.isRegularFile(
                        Repo.root().resolve(module + "/src/main/java/" + main.replace('.', '/') + ".java")))
                .as("target %s: %s is a class of %s", target, main, module)
                .isTrue();
        assertThat(stage.all("COPY").stream().filter(c -> c.args().startsWith("--from=")))
                .as("target %s: the jar and lib/ come from /out/%s/ into /app/", target, module)
                .anyMatch(c -> c.args().equals("--from=build /out/" + module + "/ /app/"));
    }

    @Test
    void gatewayTarget_usesTheAppCdsArchiveItsTrainingRunWrote() {
        Stage gateway = dockerfile().stage("gateway");
        String command = entrypointCommand(gateway);
        Instruction training = gateway.all("RUN").stream()
                .filter(r -> r.args().contains("GatewayTraining"))
                .findFirst()
                .orElseThrow(() -> new AssertionError("the gateway target has no CDS training run"));
        Instruction copy = gateway.all("COPY").stream()
                .filter(c -> c.args().startsWith("--from=build"))
                .findFirst()
                .orElseThrow();

        String dump = training.args().substring(training.args().indexOf("-Xshare:dump"));
        assertThat(training.args())
                .as("the training run lists the classes it loads, the dump archives them in /app/gateway.jsa (one"
                        + " static archive, as bin/spector gateway makes it)")
                .contains("-XX:DumpLoadedClassList=/tmp/gateway.classes")
                .contains("-XX:SharedClassListFile=/tmp/gateway.classes -XX:SharedArchiveFile=/app/gateway.jsa");
        assertThat(training.args().substring(0, training.args().indexOf("-Xshare:dump")))
                .as("the dump runs under G1 (heap objects are archived from a G1 dump only, and mapped under G1:"
                        + " the chart's collector), not under JAVA_OPTS' collector")
                .endsWith("java -XX:+UseG1GC -Xmx256m ");
        assertThat(command).as("the entry point maps that archive").contains("-XX:SharedArchiveFile=/app/gateway.jsa");
        assertThat(classpath("the training run", training.args()))
                .as("the training loads its classes from the entry point's classpath")
                .isEqualTo(classpath("the entry point", command));
        assertThat(classpath("the dump", dump))
                .as("the archive is valid only with the classpath it was written with")
                .isEqualTo(classpath("the entry point", command));
        assertThat(gateway.indexOf(training))
                .as("the training run comes after the jars are copied (the archive records their size and time)")
                .isGreaterThan(gateway.indexOf(copy));
        assertThat(training.args())
                .as("the training run fails the build when the archive is missing")
                .contains("test -s /app/gateway.jsa");
        assertThat(training.args())
                .as("the training run copies Netty's native libraries out of the jars")
                .contains("-Dspector.training.native-dir=/app/native");
        assertThat(command)
                .as("the entry point loads them from there, before JAVA_OPTS (a user's library path wins)")
                .contains("-Djava.library.path=/app/native $JAVA_OPTS");
    }

    @Test
    void dockerignore_keepsBuildOutputAndGitOutOfTheContext() {
        List<String> ignored =
                Repo.read(".dockerignore").lines().map(String::strip).toList();

        assertThat(ignored)
                .as(".dockerignore leaves stale target/ jars and .git out of the build context")
                .contains("**/target/", ".git/");
    }

    @ParameterizedTest
    @ValueSource(strings = {"spector-gateway", "spector-owner", "spector-worker"})
    void processModule_shipsAnSlf4jProvider_soItsImageLogs(String module) {
        assertThat(Poms.runtimeDependencies(module, "org.slf4j"))
                .as("%s's runtime classpath (its whole image) has a logging provider", module)
                .contains("slf4j-simple");
    }
}
