package com.spectrayan.spector.deploy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A Dockerfile read as text: the global {@code ARG}s and the stages, each with its instructions
 * (continuation lines joined, comments dropped).
 */
final class Dockerfile {
    private static final Pattern FROM = Pattern.compile("(\\S+)(?:\\s+AS\\s+(\\S+))?", Pattern.CASE_INSENSITIVE);

    /** One instruction: its keyword in upper case and the rest of the line. */
    record Instruction(String keyword, String args) {}

    /** One stage: the image it starts from, its name, its instructions in order. */
    record Stage(String from, @Nullable String name, List<Instruction> instructions) {
        List<Instruction> all(String keyword) {
            return instructions.stream()
                    .filter(i -> i.keyword().equals(keyword))
                    .toList();
        }

        Optional<Instruction> last(String keyword) {
            List<Instruction> found = all(keyword);
            return found.isEmpty() ? Optional.empty() : Optional.of(found.get(found.size() - 1));
        }

        int indexOf(Instruction instruction) {
            return instructions.indexOf(instruction);
        }
    }

    private final Map<String, String> globalArgs;
    private final List<Stage> stages;

    private Dockerfile(Map<String, String> globalArgs, List<Stage> stages) {
        this.globalArgs = globalArgs;
        this.stages = stages;
    }

    /** Parses the text of a Dockerfile. */
    static Dockerfile parse(String text) {
        Map<String, String> args = new LinkedHashMap<>();
        List<Stage> stages = new ArrayList<>();
        List<Instruction> current = null;
        for (String line : logicalLines(text)) {
            int space = line.indexOf(' ');
            String keyword = (space < 0 ? line : line.substring(0, space)).toUpperCase(Locale.ROOT);
            String rest = space < 0 ? "" : line.substring(space + 1).strip();
            if (keyword.equals("FROM")) {
                Matcher m = FROM.matcher(rest);
                if (!m.matches()) {
                    throw new AssertionError("unreadable FROM: " + line);
                }
                current = new ArrayList<>();
                stages.add(new Stage(m.group(1), m.group(2), current));
            } else if (current == null) {
                if (!keyword.equals("ARG")) {
                    throw new AssertionError("only ARG may come before the first FROM: " + line);
                }
                int eq = rest.indexOf('=');
                args.put(eq < 0 ? rest : rest.substring(0, eq), eq < 0 ? "" : rest.substring(eq + 1));
            } else {
                current.add(new Instruction(keyword, rest));
            }
        }
        return new Dockerfile(args, stages);
    }

    private static List<String> logicalLines(String text) {
        List<String> lines = new ArrayList<>();
        StringBuilder pending = new StringBuilder();
        for (String raw : text.split("\n", -1)) {
            String line = raw.strip();
            if (line.startsWith("#") || (line.isEmpty() && pending.length() == 0)) {
                continue; // comments, also inside a continuation, as docker reads them
            }
            if (line.endsWith("\\")) {
                pending.append(line, 0, line.length() - 1).append(' ');
                continue;
            }
            pending.append(line);
            String joined = pending.toString().strip();
            pending.setLength(0);
            if (!joined.isEmpty()) {
                lines.add(joined);
            }
        }
        if (pending.length() > 0) {
            throw new AssertionError("the Dockerfile ends inside a continuation line");
        }
        return lines;
    }

    /** Returns the {@code ARG}s declared before the first stage, with their defaults. */
    Map<String, String> globalArgs() {
        return globalArgs;
    }

    /** Returns the stages in order. */
    List<Stage> stages() {
        return stages;
    }

    /** Returns the stage named {@code name}, failing the test when there is none. */
    Stage stage(String name) {
        return stages.stream()
                .filter(s -> name.equals(s.name()))
                .findFirst()
                .orElseThrow(() -> new AssertionError("the Dockerfile has no stage (target) named '" + name + "'"));
    }

    /** Returns the image a stage starts from, with a global {@code ${ARG}} resolved to its default. */
    String baseImage(Stage stage) {
        String from = stage.from();
        Matcher m = Pattern.compile("\\$\\{(\\w+)}").matcher(from);
        if (m.matches()) {
            String value = globalArgs.get(m.group(1));
            if (value == null) {
                throw new AssertionError("FROM " + from + " names an ARG without a default");
            }
            return value;
        }
        return from;
    }
}
