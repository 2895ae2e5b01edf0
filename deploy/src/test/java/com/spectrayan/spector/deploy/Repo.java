package com.spectrayan.spector.deploy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** The repository the tests read: found upward from the working directory by its Maven wrapper. */
final class Repo {
    private Repo() {}

    /** Returns the repository root (the directory holding {@code mvnw} and {@code deploy/}). */
    static Path root() {
        Path dir = Path.of("").toAbsolutePath();
        for (Path d = dir; d != null; d = d.getParent()) {
            if (Files.isRegularFile(d.resolve("mvnw")) && Files.isDirectory(d.resolve("deploy"))) {
                return d;
            }
        }
        throw new IllegalStateException("no repository root (mvnw and deploy/) above " + dir);
    }

    /** Returns a file of the repository as text. */
    static String read(String relativePath) {
        try {
            return Files.readString(root().resolve(relativePath), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
