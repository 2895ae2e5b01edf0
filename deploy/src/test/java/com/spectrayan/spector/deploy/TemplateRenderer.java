package com.spectrayan.spector.deploy;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Renders the Go-template subset the chart uses, and fails on anything else, so a template that
 * this renderer accepts means the same thing to helm:
 *
 * <pre>
 * {{ .Values.a.b }}  {{ $.Values.a.b }}  {{ .Release.Name }}  {{ .Release.Namespace }}  {{ $i }}
 * {{ X | quote }}  {{ quote X }}
 * {{ if X }} {{ if eq X Y }} {{ if ne X Y }} {{ if not X }}  {{ else }}  {{ end }}
 * {{ range $i, $_ := until (int X) }} ... {{ end }}     (also {{ range $i := until (int X) }})
 * "{{- "  and  " -}}" trim the whitespace before and after the action, newlines included
 * </pre>
 *
 * As in Go templates, {@code .} inside a {@code range} is the element, so the chart must write
 * {@code $.Values} and {@code $.Release} there; this renderer refuses {@code .Values} inside a
 * range rather than guess. A value the chart names but values.yaml lacks is an error too (helm
 * would render it empty, hiding a typo).
 */
final class TemplateRenderer {
    private static final Pattern RANGE =
            Pattern.compile("range (\\$\\w+)(?:, *(\\$\\w+))? *:= *until +(?:\\(int (\\S+)\\)|(\\S+))");
    private static final Pattern NUMBER = Pattern.compile("-?\\d+");

    private final Map<String, Object> values;
    private final String releaseName;
    private final String namespace;

    TemplateRenderer(Map<String, Object> values, String releaseName, String namespace) {
        this.values = requireNonNull(values, "values");
        this.releaseName = requireNonNull(releaseName, "releaseName");
        this.namespace = requireNonNull(namespace, "namespace");
    }

    /** A template failed to parse or render; the message names the template and the action. */
    static final class TemplateException extends RuntimeException {
        TemplateException(String message) {
            super(message);
        }
    }

    private sealed interface Node permits Text, Output, If, Range {}

    private record Text(String text) implements Node {}

    private record Output(String expr) implements Node {}

    private record If(String cond, List<Node> then, List<Node> otherwise) implements Node {}

    private record Range(String indexVar, String countExpr, List<Node> body) implements Node {}

    /** Renders one template file. */
    String render(String name, String template) {
        List<Object> tokens = tokenize(name, template);
        int[] pos = {0};
        List<Node> nodes = parse(name, tokens, pos, false);
        if (pos[0] != tokens.size()) {
            throw new TemplateException(name + ": unexpected {{ " + tokens.get(pos[0]) + " }}");
        }
        StringBuilder out = new StringBuilder();
        eval(name, nodes, new Scope(null, null, 0), out);
        return out.toString();
    }

    /** An action between {{ and }}, with its trim markers removed. */
    private record Action(String body) {
        @Override
        public String toString() {
            return body;
        }
    }

    private static List<Object> tokenize(String name, String template) {
        List<Object> tokens = new ArrayList<>();
        int i = 0;
        boolean trimNextText = false;
        while (i < template.length()) {
            int open = template.indexOf("{{", i);
            String text = open < 0 ? template.substring(i) : template.substring(i, open);
            if (trimNextText) {
                text = text.stripLeading();
            }
            if (open < 0) {
                tokens.add(text);
                break;
            }
            int close = template.indexOf("}}", open);
            if (close < 0) {
                throw new TemplateException(name + ": unclosed {{ at offset " + open);
            }
            String inner = template.substring(open + 2, close);
            boolean trimLeft = inner.startsWith("- ");
            boolean trimRight = inner.endsWith(" -");
            if ((inner.startsWith("-") && !trimLeft) || (inner.endsWith("-") && !trimRight)) {
                throw new TemplateException(name + ": a trim marker needs a space: {{" + inner + "}}");
            }
            if (trimLeft) {
                text = text.stripTrailing();
            }
            tokens.add(text);
            String body = inner.substring(trimLeft ? 2 : 0, inner.length() - (trimRight ? 2 : 0))
                    .strip();
            if (body.isEmpty() || body.startsWith("/*")) {
                throw new TemplateException(name + ": empty action or comment not supported: {{" + inner + "}}");
            }
            tokens.add(new Action(body));
            trimNextText = trimRight;
            i = close + 2;
        }
        return tokens;
    }

    /** Parses until {{ end }} or {{ else }} (inside a block) or the end of the tokens. */
    private static List<Node> parse(String name, List<Object> tokens, int[] pos, boolean inBlock) {
        List<Node> nodes = new ArrayList<>();
        while (pos[0] < tokens.size()) {
            Object token = tokens.get(pos[0]);
            if (token instanceof String text) {
                if (!text.isEmpty()) {
                    nodes.add(new Text(text));
                }
                pos[0]++;
                continue;
            }
            String action = ((Action) token).body();
            if (action.equals("end") || action.equals("else")) {
                if (!inBlock) {
                    throw new TemplateException(name + ": {{ " + action + " }} outside a block");
                }
                return nodes;
            }
            pos[0]++;
            if (action.startsWith("if ")) {
                List<Node> then = parse(name, tokens, pos, true);
                List<Node> otherwise = List.of();
                if (closing(name, tokens, pos).equals("else")) {
                    pos[0]++;
                    otherwise = parse(name, tokens, pos, true);
                    if (!closing(name, tokens, pos).equals("end")) {
                        throw new TemplateException(name + ": a second {{ else }} in {{ " + action + " }}");
                    }
                }
                pos[0]++;
                nodes.add(new If(action.substring(3).strip(), then, otherwise));
            } else if (action.startsWith("range ")) {
                Matcher m = RANGE.matcher(action);
                if (!m.matches()) {
                    throw new TemplateException(name + ": unsupported range: {{ " + action + " }}");
                }
                List<Node> body = parse(name, tokens, pos, true);
                if (!closing(name, tokens, pos).equals("end")) {
                    throw new TemplateException(name + ": {{ else }} in a range is not supported");
                }
                pos[0]++;
                String count = m.group(3) != null ? m.group(3) : requireNonNull(m.group(4));
                nodes.add(new Range(m.group(1), count, body));
            } else {
                nodes.add(new Output(action));
            }
        }
        if (inBlock) {
            throw new TemplateException(name + ": a block has no {{ end }}");
        }
        return nodes;
    }

    private static String closing(String name, List<Object> tokens, int[] pos) {
        if (pos[0] >= tokens.size() || !(tokens.get(pos[0]) instanceof Action a)) {
            throw new TemplateException(name + ": a block has no {{ end }}");
        }
        return a.body();
    }

    /** The variables in force: the range index (and whether '.' is rebound). */
    private record Scope(
            @Nullable String indexVar, @Nullable Scope parent, long index) {
        boolean inRange() {
            return indexVar != null;
        }

        @Nullable
        Long lookup(String var) {
            for (Scope s = this; s != null; s = s.parent) {
                if (var.equals(s.indexVar)) {
                    return s.index;
                }
            }
            return null;
        }
    }

    private void eval(String name, List<Node> nodes, Scope scope, StringBuilder out) {
        for (Node node : nodes) {
            if (node instanceof Text t) {
                out.append(t.text());
            } else if (node instanceof Output o) {
                out.append(output(name, o.expr(), scope));
            } else if (node instanceof If f) {
                eval(name, truthy(condition(name, f.cond(), scope)) ? f.then() : f.otherwise(), scope, out);
            } else if (node instanceof Range r) {
                long n = toInt(name, operand(name, r.countExpr(), scope));
                for (long i = 0; i < n; i++) {
                    eval(name, r.body(), new Scope(r.indexVar(), scope, i), out);
                }
            }
        }
    }

    private String output(String name, String expr, Scope scope) {
        Object value;
        if (expr.endsWith("| quote")) {
            value = quote(scalar(
                    name,
                    expr,
                    operand(name, expr.substring(0, expr.length() - 7).strip(), scope)));
        } else if (expr.startsWith("quote ")) {
            value = quote(scalar(name, expr, operand(name, expr.substring(6).strip(), scope)));
        } else {
            value = scalar(name, expr, operand(name, expr, scope));
        }
        return (String) value;
    }

    private static String quote(String s) {
        return '"' + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + '"';
    }

    private static String scalar(String name, String expr, @Nullable Object value) {
        if (value == null) {
            return "";
        }
        if (value instanceof String || value instanceof Boolean || value instanceof Integer || value instanceof Long) {
            return value.toString();
        }
        if (value instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue())) {
            return Long.toString(n.longValue());
        }
        throw new TemplateException(name + ": {{ " + expr + " }} is not a scalar: " + value);
    }

    private @Nullable Object condition(String name, String cond, Scope scope) {
        String[] parts = splitArgs(name, cond);
        switch (parts[0]) {
            case "eq", "ne" -> {
                if (parts.length != 3) {
                    throw new TemplateException(name + ": " + parts[0] + " takes two operands: {{ if " + cond + " }}");
                }
                boolean eq = same(name, cond, operand(name, parts[1], scope), operand(name, parts[2], scope));
                return parts[0].equals("eq") == eq;
            }
            case "not" -> {
                if (parts.length != 2) {
                    throw new TemplateException(name + ": not takes one operand: {{ if " + cond + " }}");
                }
                return !truthy(operand(name, parts[1], scope));
            }
            default -> {
                if (parts.length != 1) {
                    throw new TemplateException(name + ": unsupported condition: {{ if " + cond + " }}");
                }
                return operand(name, parts[0], scope);
            }
        }
    }

    private static boolean same(String name, String cond, @Nullable Object a, @Nullable Object b) {
        if (a instanceof Number x && b instanceof Number y) {
            return x.doubleValue() == y.doubleValue();
        }
        if (a instanceof String || a instanceof Boolean) {
            if (b == null || a.getClass() != b.getClass()) {
                throw new TemplateException(name + ": incompatible types for comparison: {{ if " + cond + " }}");
            }
            return a.equals(b);
        }
        throw new TemplateException(name + ": incompatible types for comparison: {{ if " + cond + " }}");
    }

    private static String[] splitArgs(String name, String expr) {
        List<String> args = new ArrayList<>();
        Matcher m = Pattern.compile("\"(?:[^\"\\\\]|\\\\.)*\"|\\S+").matcher(expr);
        while (m.find()) {
            args.add(m.group());
        }
        if (args.isEmpty()) {
            throw new TemplateException(name + ": empty expression");
        }
        return args.toArray(new String[0]);
    }

    private @Nullable Object operand(String name, String expr, Scope scope) {
        if (expr.startsWith("\"") && expr.endsWith("\"") && expr.length() >= 2) {
            return expr.substring(1, expr.length() - 1);
        }
        if (!expr.matches("[$.\\w-]+")) {
            throw new TemplateException(name + ": unsupported expression or function: {{ " + expr + " }}");
        }
        if (NUMBER.matcher(expr).matches()) {
            return Long.parseLong(expr);
        }
        if (expr.startsWith("$.")) {
            return path(name, expr, expr.substring(2));
        }
        if (expr.startsWith("$")) {
            Long v = scope.lookup(expr);
            if (v == null) {
                throw new TemplateException(name + ": undefined variable " + expr);
            }
            return v;
        }
        if (expr.startsWith(".")) {
            if (scope.inRange()) {
                throw new TemplateException(
                        name + ": inside range '.' is the element; write $" + expr + " for the top level");
            }
            return path(name, expr, expr.substring(1));
        }
        throw new TemplateException(name + ": unsupported expression or function: {{ " + expr + " }}");
    }

    private @Nullable Object path(String name, String expr, String path) {
        String[] parts = path.split("\\.", -1);
        if (parts[0].equals("Release") && parts.length == 2) {
            switch (parts[1]) {
                case "Name" -> {
                    return releaseName;
                }
                case "Namespace" -> {
                    return namespace;
                }
                default -> throw new TemplateException(name + ": unsupported " + expr);
            }
        }
        if (!parts[0].equals("Values") || parts.length < 2) {
            throw new TemplateException(
                    name + ": unsupported " + expr + " (expected .Values.*, .Release.Name or" + " .Release.Namespace)");
        }
        Object node = values;
        for (int i = 1; i < parts.length; i++) {
            if (!(node instanceof Map<?, ?> map) || !map.containsKey(parts[i])) {
                throw new TemplateException(name + ": " + expr + " has no value (values.yaml lacks it)");
            }
            node = map.get(parts[i]);
        }
        return node;
    }

    private static long toInt(String name, @Nullable Object value) {
        if (value instanceof Number n) {
            return n.longValue();
        }
        if (value instanceof String s && NUMBER.matcher(s).matches()) {
            return Long.parseLong(s);
        }
        throw new TemplateException(name + ": not a number for until: " + value);
    }

    private static boolean truthy(@Nullable Object value) {
        if (value == null) {
            return false;
        }
        if (value instanceof Boolean b) {
            return b;
        }
        if (value instanceof Number n) {
            return n.doubleValue() != 0;
        }
        if (value instanceof String s) {
            return !s.isEmpty();
        }
        if (value instanceof Collection<?> c) {
            return !c.isEmpty();
        }
        if (value instanceof Map<?, ?> m) {
            return !m.isEmpty();
        }
        return true;
    }
}
