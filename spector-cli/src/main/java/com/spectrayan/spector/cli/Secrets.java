package com.spectrayan.spector.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads the secret and token files the commands take ({@code --secret-file}, {@code --token-file}). */
final class Secrets {
    private Secrets() {}

    /** Returns a file's text (UTF-8) without the white space around it (a trailing newline, say). */
    static String read(Path file) throws IOException {
        return Files.readString(file, StandardCharsets.UTF_8).strip();
    }
}
