package com.spectrayan.spector.cli;

import picocli.CommandLine.Option;

/** The {@code --epoch N} option of the commands that build a ring ({@code owner}, {@code route}): a picocli mixin. */
final class EpochOption {
    @Option(names = "--epoch", paramLabel = "N", description = "The ring epoch (default: ${DEFAULT-VALUE}).")
    long value = 1;
}
