package com.spectrayan.spector.cli;

import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.contract.SpectorException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code spector route}: which member of a ring owns each key. Prints {@code KEY<TAB>OWNER} per
 * key, reading keys from standard input (one per line) when none are given. The key is the ring
 * key itself: {@code namespace}, or {@code tenant/namespace}, or any text (to check the ring
 * against published libketama vectors).
 */
@Command(
        name = "route",
        mixinStandardHelpOptions = true,
        description = {
            "Print the owner of each KEY on the Ketama ring of the given members: KEY<TAB>OWNER.",
            "Keys are ring keys: 'namespace' or 'tenant/namespace'. With no KEY, reads keys from stdin."
        })
final class RouteCommand implements Callable<Integer> {
    /** Longest key read from standard input; a longer line is refused, not buffered. */
    static final int MAX_KEY_CHARS = 4096;

    @Spec
    @SuppressWarnings("NullAway.Init") // injected by picocli before call()
    CommandSpec spec;

    @Option(
            names = "--members",
            required = true,
            split = ",",
            paramLabel = "ID",
            description = "Ring members, comma-separated, taken as given (e.g. owner-0,owner-1 or 10.0.1.1:11211).")
    List<String> members = new ArrayList<>();

    @Mixin
    EpochOption epoch = new EpochOption();

    @Parameters(paramLabel = "KEY", arity = "0..*", description = "Ring keys; read from stdin when absent.")
    List<String> keys = new ArrayList<>();

    @Override
    public Integer call() {
        KetamaRing ring = KetamaRing.of(epoch.value, members);
        PrintWriter out = spec.commandLine().getOut();
        if (!keys.isEmpty()) {
            for (String key : keys) {
                print(out, ring, key);
            }
        } else {
            readKeys(new InputStreamReader(System.in, StandardCharsets.UTF_8), key -> print(out, ring, key));
        }
        out.flush();
        return 0;
    }

    private static void print(PrintWriter out, KetamaRing ring, String key) {
        out.print(key);
        out.print('\t');
        out.println(ring.ownerOf(key));
    }

    /** Calls {@code sink} with each non-empty line, refusing a line over {@link #MAX_KEY_CHARS}. */
    static void readKeys(Reader in, java.util.function.Consumer<String> sink) {
        try (BufferedReader r = new BufferedReader(in)) {
            StringBuilder line = new StringBuilder();
            for (int c; (c = r.read()) != -1; ) {
                if (c == '\n') {
                    emit(line, sink);
                } else if (c != '\r') {
                    if (line.length() == MAX_KEY_CHARS) {
                        throw SpectorException.badRequest(
                                "key", "longer than " + MAX_KEY_CHARS + " chars (expected: <= " + MAX_KEY_CHARS + ")");
                    }
                    line.append((char) c);
                }
            }
            emit(line, sink);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void emit(StringBuilder line, java.util.function.Consumer<String> sink) {
        if (line.length() > 0) {
            sink.accept(line.toString());
            line.setLength(0);
        }
    }
}
