package com.spectrayan.spector.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The repository the tests run in, for tests that hold a document or the sources to what the code
 * does (docs/CONFIG.md to the keys, docs/OPERATIONS.md to the meters): found upward from the
 * working directory (surefire's is the module's) by the Maven wrapper at its root.
 */
public final class Repo {
    private Repo() {}

    /** Returns the repository root: the nearest directory at or above the working one holding {@code mvnw}. */
    public static Path root() {
        Path dir = Path.of("").toAbsolutePath();
        for (Path d = dir; d != null; d = d.getParent()) {
            if (Files.isRegularFile(d.resolve("mvnw"))) {
                return d;
            }
        }
        throw new IllegalStateException("no repository root (a directory with mvnw) above " + dir);
    }

    /** Returns a file of the repository, {@code relativePath} from its root, as UTF-8 text. */
    public static String read(String relativePath) {
        try {
            return Files.readString(root().resolve(relativePath), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
