package com.spectrayan.spector.cli;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bin/spector gateway} as a user runs it: the repository's launcher, copied into a tree of
 * its own whose {@code spector-cli/target/spector-cli-*-all.jar} runs this build's classes (a jar
 * whose manifest names the test class path by relative paths, each class directory made a jar,
 * since a class-data archive takes jars only), started as a real process that serves {@code /actuator/health}.
 * Proves the launcher's class-data archive (first start trains and dumps it, the next maps it, a changed jar
 * trains a new one and drops the old, an unwritable place or {@code SPECTOR_CDS=off} still starts)
 * and its JVM defaults (and that {@code JAVA_OPTS} comes after them and wins).
 */
@EnabledOnOs({OS.LINUX, OS.MAC})
final class LauncherTest {
    /** How long one start may take to answer its health check, training included. */
    private static final Duration START = Duration.ofSeconds(60);

    private static final Duration STOP = Duration.ofSeconds(30);
    private static final Pattern LISTENING = Pattern.compile("gateway listening on /127\\.0\\.0\\.1:(\\d+)");
    private static final String TRAINING_NOTE = "spector: making a class-data archive";
    /** A gateway alone on loopback, any free port, its one owner refusing connections. */
    private static final Map<String, String> GATEWAY_SETTINGS = Map.of(
            "SPECTOR_CELL_ROLE", "gateway",
            "SPECTOR_CELL_RING_MEMBERS", "owner-0=http://127.0.0.1:1",
            "SPECTOR_SERVER_HOST", "127.0.0.1",
            "SPECTOR_SERVER_PORT", "0",
            "SPECTOR_ROUTING_REDIS_ENABLED", "false",
            "SPECTOR_SECURITY_JWT_HMAC_SECRET", "launcher-test-secret-0123456789-0123456789");

    private static final HttpClient HTTP =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @TempDir
    static Path classJars;

    private static List<Path> classPath;

    @BeforeAll
    static void jarTheClassPath() throws IOException {
        classPath = new ArrayList<>();
        String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        int n = 0;
        for (String entry : cp.split(java.io.File.pathSeparator, -1)) {
            Path p = Path.of(entry);
            if (Files.isDirectory(p)) {
                Path jar = classJars.resolve(n++ + "-" + p.toString().replaceAll("[^A-Za-z0-9]+", "-") + ".jar");
                jarDirectory(p, jar);
                classPath.add(jar);
            } else if (Files.isRegularFile(p) && entry.endsWith(".jar")) {
                classPath.add(p);
            }
        }
    }

    /** A tree with the launcher and a CLI jar: {@code root/bin/spector}, {@code root/spector-cli/target/...}. */
    private static Path tree(Path root) throws IOException {
        Path bin = Files.createDirectories(root.resolve("bin"));
        Path launcher = Files.copy(repository().resolve("bin/spector"), bin.resolve("spector"));
        assertThat(launcher.toFile().setExecutable(true)).isTrue();
        Path target = Files.createDirectories(root.resolve("spector-cli/target"));
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        m.getMainAttributes().put(Attributes.Name.MAIN_CLASS, SpectorCli.class.getName());
        StringBuilder refs = new StringBuilder();
        for (Path p : classPath) {
            // Relative: a class-data archive takes no absolute URL from a Class-Path attribute.
            String relative = target.relativize(p).toString().replace(java.io.File.separatorChar, '/');
            refs.append(refs.length() == 0 ? "" : " ").append(relative.replace(" ", "%20"));
        }
        m.getMainAttributes().put(Attributes.Name.CLASS_PATH, refs.toString());
        try (JarOutputStream out =
                new JarOutputStream(Files.newOutputStream(target.resolve("spector-cli-test-all.jar")), m)) {
            out.flush();
        }
        return root;
    }

    private static Path repository() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("bin/spector"))) {
                return dir;
            }
        }
        throw new IllegalStateException("no bin/spector above " + Path.of("").toAbsolutePath());
    }

    private static Path jar(Path root) {
        return root.resolve("spector-cli/target/spector-cli-test-all.jar");
    }

    private static List<Path> archives(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(f -> f.getFileName().toString().matches("spector-gateway-.*\\.jsa"))
                    .toList();
        }
    }

    @Test
    void cds_firstStartTrains_nextMaps_changedJarTrainsAnew(@TempDir Path dir) throws Exception {
        Path root = tree(dir.resolve("tree"));
        Path target = root.resolve("spector-cli/target");

        Started first = start(root, dir, Map.of());
        assertThat(first.output()).contains(TRAINING_NOTE);
        assertThat(archives(target)).hasSize(1);
        Path archive = archives(target).get(0);
        assertThat(Files.size(archive)).isPositive();

        Path loaded = dir.resolve("classes.log");
        Started second =
                start(root, dir, Map.of("JAVA_OPTS", "-Xlog:class+load=info:file=" + loaded + " -Xlog:library=info"));
        assertThat(second.output()).doesNotContain(TRAINING_NOTE).doesNotContain("spector: no class-data archive");
        String classes = Files.readString(loaded);
        assertThat(classes)
                .as("the gateway's classes come from the archive, one static archive of the JDK's and the"
                        + " jar's classes (not the JDK's with a dynamic one on top)")
                .contains("com.spectrayan.spector.gateway.GatewayServer source: shared objects file\n")
                .contains("java.lang.Object source: shared objects file\n")
                .doesNotContain("(top)")
                .as("spector gateway starts without picocli")
                .doesNotContain(" picocli.");
        Path libraries = Path.of(archive + ".lib");
        if (OS.LINUX.isCurrentOs()) {
            assertThat(second.output())
                    .as("Netty's epoll library is loaded from the directory the training filled, not written out again")
                    .contains("Loaded library " + libraries.resolve("libnetty_transport_native_epoll_"));
        }

        Files.setLastModifiedTime(
                jar(root),
                FileTime.fromMillis(Files.getLastModifiedTime(jar(root)).toMillis() + 10_000));
        Started third = start(root, dir, Map.of());
        assertThat(third.output()).contains(TRAINING_NOTE);
        assertThat(archives(target)).hasSize(1).doesNotContain(archive);
        assertThat(libraries).as("the old jar's libraries go with its archive").doesNotExist();
        assertThat(Path.of(archives(target).get(0) + ".lib")).isDirectory();
    }

    /**
     * A fresh clone has no jar: the launcher builds it first (here a {@code mvnw} that fails at once
     * stands for the build, which takes minutes) and says so, and when the build fails it says where
     * the log is and exits 1, never silently. (The nineteenth session's launcher, its functions
     * returning the status of a failed test, ended without a word under {@code set -e}.)
     */
    @Test
    void noJarYet_buildsIt_andAFailedBuildSaysWhere(@TempDir Path dir) throws Exception {
        Path root = tree(dir.resolve("tree"));
        Files.delete(jar(root));
        Path mvnw = root.resolve("mvnw");
        Files.writeString(mvnw, "#!/bin/sh\necho the-build-ran \"$@\"\nexit 3\n");
        assertThat(mvnw.toFile().setExecutable(true)).isTrue();

        Process p = new ProcessBuilder(root.resolve("bin/spector").toString(), "--version")
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .start();
        assertThat(p.waitFor(STOP.toMillis(), MILLISECONDS))
                .as("the launcher ends")
                .isTrue();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);

        assertThat(p.exitValue()).as(output).isEqualTo(1);
        assertThat(output)
                .contains("spector: building the command line")
                .contains("the-build-ran -B package -pl spector-cli -am")
                .contains("spector: the build failed; the whole log is in");
    }

    @Test
    void cds_placeThatCannotBeWritten_stillStartsWithOneNote(@TempDir Path dir) throws Exception {
        Path root = tree(dir.resolve("tree"));
        Path notADirectory = Files.writeString(dir.resolve("file"), "x");

        Started started = start(
                root,
                dir,
                Map.of("SPECTOR_CDS_DIR", notADirectory.resolve("cds").toString()));

        assertThat(started.output()).doesNotContain(TRAINING_NOTE);
        assertThat(started.output().lines().filter(l -> l.startsWith("spector: no class-data archive")))
                .hasSize(1);
        assertThat(archives(root.resolve("spector-cli/target"))).isEmpty();
    }

    /**
     * A checkout, or an archive folder, whose path holds a space: the launcher finds the jar and the
     * gateway starts, without an archive and with one note (the archive's options reach java split
     * on white space). Before, the jar was never found in such a checkout, and an archive made
     * there made every later start fail, the JVM taking the path's rest for its main class (found
     * by a review).
     */
    @Test
    void pathsWithASpace_theGatewayStillStarts(@TempDir Path dir) throws Exception {
        Path root = tree(dir.resolve("a tree"));

        Started started = start(
                root, dir, Map.of("SPECTOR_CDS_DIR", dir.resolve("cds dir").toString()));

        assertThat(started.output()).doesNotContain(TRAINING_NOTE).doesNotContain("building the command line");
        assertThat(started.output().lines().filter(l -> l.startsWith("spector: no class-data archive")))
                .singleElement()
                .asString()
                .contains("holds white space");
    }

    @Test
    void cds_off_noArchiveNoNote(@TempDir Path dir) throws Exception {
        Path root = tree(dir.resolve("tree"));

        Started started = start(root, dir, Map.of("SPECTOR_CDS", "off"));

        assertThat(started.output()).doesNotContain("spector:");
        assertThat(archives(root.resolve("spector-cli/target"))).isEmpty();
    }

    @Test
    void jvmDefaults_applied_andJavaOptsComeAfterThem(@TempDir Path dir) throws Exception {
        Path root = tree(dir.resolve("tree"));

        String defaults = start(root, dir, Map.of("SPECTOR_CDS", "off", "JAVA_OPTS", "-XX:+PrintCommandLineFlags"))
                .output();
        assertThat(defaults)
                .contains("-XX:+UseSerialGC")
                .contains("-XX:InitialHeapSize=8388608")
                .contains("-XX:MaxHeapSize=268435456");

        String overridden = start(
                        root,
                        dir,
                        Map.of("SPECTOR_CDS", "off", "JAVA_OPTS", "-XX:+PrintCommandLineFlags -XX:+UseG1GC -Xmx300m"))
                .output();
        assertThat(overridden)
                .contains("-XX:+UseG1GC")
                .doesNotContain("-XX:+UseSerialGC")
                .contains("-XX:MaxHeapSize=314572800")
                .contains("-XX:InitialHeapSize=8388608");

        String off = start(
                        root,
                        dir,
                        Map.of(
                                "SPECTOR_CDS",
                                "off",
                                "SPECTOR_JVM_DEFAULTS",
                                "off",
                                "JAVA_OPTS",
                                "-XX:+PrintCommandLineFlags"))
                .output();
        assertThat(off).doesNotContain("-XX:InitialHeapSize=8388608").doesNotContain("-XX:MaxHeapSize=268435456");
    }

    /** What one start printed, up to its stop. */
    private record Started(String output) {}

    /**
     * Starts {@code root/bin/spector gateway} with {@code env} (and a gateway's settings), waits
     * for its health check to answer 200, stops it with SIGTERM and returns what it printed.
     */
    private static Started start(Path root, Path dir, Map<String, String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(root.resolve("bin/spector").toString(), "gateway")
                .directory(dir.toFile())
                .redirectErrorStream(true);
        Map<String, String> e = pb.environment();
        e.keySet().removeIf(k -> k.startsWith("SPECTOR_") || k.equals("JAVA_OPTS") || k.startsWith("MALLOC_"));
        e.put("JAVA_HOME", System.getProperty("java.home"));
        e.put("HOME", dir.resolve("home").toString());
        e.put("XDG_CACHE_HOME", dir.resolve("cache").toString());
        e.putAll(GATEWAY_SETTINGS);
        e.putAll(env);
        Process p = pb.start();
        List<String> lines = new CopyOnWriteArrayList<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r =
                    new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                    lines.add(line);
                }
            } catch (IOException ignored) {
                // the process ended
            }
        });
        reader.start();
        try {
            int port = await("the gateway's port in its output")
                    .atMost(START)
                    .pollInterval(50, MILLISECONDS)
                    .failFast("the launcher exited: " + lines, () -> !p.isAlive())
                    .until(() -> port(lines), q -> q > 0);
            HttpRequest health = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/health"))
                    .timeout(Duration.ofSeconds(5))
                    .build();
            await("a 200 from /actuator/health")
                    .atMost(START)
                    .pollInterval(50, MILLISECONDS)
                    .until(() -> HTTP.send(health, HttpResponse.BodyHandlers.discarding())
                                    .statusCode()
                            == 200);
        } finally {
            p.destroy();
            if (!p.waitFor(STOP.toMillis(), MILLISECONDS)) {
                p.destroyForcibly().waitFor(STOP.toMillis(), MILLISECONDS);
            }
            reader.join(STOP.toMillis());
        }
        return new Started(String.join("\n", lines));
    }

    private static int port(List<String> lines) {
        for (String line : lines) {
            Matcher m = LISTENING.matcher(line);
            if (m.find()) {
                return Integer.parseInt(m.group(1));
            }
        }
        return 0;
    }

    /** Writes the files under {@code dir} into {@code jar}. */
    private static void jarDirectory(Path dir, Path jar) throws IOException {
        try (OutputStream file = Files.newOutputStream(jar);
                JarOutputStream out = new JarOutputStream(file)) {
            Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path f, BasicFileAttributes attrs) throws IOException {
                    String name = dir.relativize(f).toString().replace(java.io.File.separatorChar, '/');
                    if (!name.equals("META-INF/MANIFEST.MF")) {
                        out.putNextEntry(new JarEntry(name));
                        Files.copy(f, out);
                        out.closeEntry();
                    }
                    return FileVisitResult.CONTINUE;
                }
            });
        }
    }
}
