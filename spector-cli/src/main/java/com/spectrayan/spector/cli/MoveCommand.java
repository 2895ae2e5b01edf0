package com.spectrayan.spector.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code spector move}: a planned move of one namespace to another owner, through the owners'
 * admin API. Finds the namespace's current owner (the newest view any member reports, {@code GET
 * /admin/ownership}), asks it to hand the namespace over ({@code POST /admin/move}), and prints
 * the owner's answer: the new epoch, what was copied, and the hand-off time. Exit 0 when the move
 * is done, 1 when the owner called it off (the namespace stays where it was) or a member refused
 * the admin token (401, named with the member's id), 2 on bad input.
 *
 * <p>Every call carries {@code Authorization: Bearer <--admin-token>} when one is given (default:
 * {@code $SPECTOR_OWNER_ADMIN_TOKEN}), which owners with an admin token require from every caller;
 * owners without one answer loopback callers only.
 */
@Command(
        name = "move",
        mixinStandardHelpOptions = true,
        description = {
            "Move a namespace to another owner with no client error: its requests are held by the",
            "gateways while the old owner copies it, then sent to the new owner."
        })
final class MoveCommand implements Callable<Integer> {
    /** The bound on each admin call but the move itself. */
    static final Duration CALL_TIMEOUT = Duration.ofSeconds(5);

    /** The bound on the move call: the owner's own bounds (drain 5 s, import 10 s) and some. */
    static final Duration MOVE_TIMEOUT = Duration.ofSeconds(30);

    private static final ObjectMapper JSON = new ObjectMapper();

    @Spec
    @SuppressWarnings("NullAway.Init") // injected by picocli before call()
    CommandSpec spec;

    @Option(names = "--namespace", required = true, description = "The namespace to move.")
    String namespace = "";

    @Option(names = "--tenant", description = "Its tenant (none: an untenanted namespace).")
    @Nullable
    String tenant;

    @Option(names = "--to", required = true, description = "The ring member id that takes it.")
    String to = "";

    @Option(
            names = "--members",
            required = true,
            split = ",",
            paramLabel = "ID=URL",
            description = "The owners' admin addresses, as spector.cell.ring-members: owner-0=http://host:port,...")
    List<String> members = List.of();

    @Option(
            names = "--to-url",
            paramLabel = "URL",
            description = {
                "The address the current owner reaches the new one at, when it is not the one in",
                "--members (a command run through a port-forward; default: the --to member's)."
            })
    @Nullable
    URI toUrl;

    @Option(
            names = "--admin-token",
            paramLabel = "TOKEN",
            defaultValue = "${env:" + OwnerCommand.ADMIN_TOKEN_ENV + "}",
            description = {
                "The cell's admin token, sent to every member (default: $" + OwnerCommand.ADMIN_TOKEN_ENV + ")."
            })
    @Nullable
    String adminToken;

    /** The {@code Authorization} value of every call, or null without a token. Set in call(). */
    private @Nullable String authorization;

    @Override
    public Integer call() throws IOException, InterruptedException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        String token = OwnerCommand.adminToken(adminToken);
        authorization = token == null ? null : "Bearer " + token;
        Map<String, URI> owners = parse(members);
        URI target = owners.get(to);
        if (target == null) {
            err.println("spector move: --to " + to + " is not among --members " + owners.keySet());
            return 2;
        }
        HttpClient http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(CALL_TIMEOUT)
                .build();
        String from = currentOwner(http, owners, err);
        if (from == null) {
            return 1;
        }
        if (from.equals(to)) {
            err.println("spector move: " + namespace + " is owned by " + to + " already");
            return 2;
        }
        URI source = owners.get(from);
        if (source == null) {
            err.println("spector move: the owner " + from + " is not among --members " + owners.keySet());
            return 2;
        }
        ObjectNode body = JSON.createObjectNode();
        if (tenant != null) {
            body.put("tenant", tenant);
        }
        URI reach = toUrl == null ? target : toUrl;
        body.put("namespace", namespace).put("to", to).put("toUrl", reach.toString());
        HttpResponse<String> r = http.send(
                authorized(HttpRequest.newBuilder(source.resolve("/admin/move")))
                        .timeout(MOVE_TIMEOUT)
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
                        .build(),
                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        if (r.statusCode() == 401) {
            err.println(refused(from, r));
            return 1;
        }
        if (r.statusCode() != 200) {
            err.println("spector move: " + from + " called the move off (" + r.statusCode() + "): " + r.body());
            return 1;
        }
        out.println(r.body());
        out.flush();
        return 0;
    }

    /** Returns the owner of the newest view any member reports, or null after printing why. */
    private @Nullable String currentOwner(HttpClient http, Map<String, URI> owners, PrintWriter err)
            throws InterruptedException {
        String query = "/admin/ownership?namespace=" + namespace + (tenant == null ? "" : "&tenant=" + tenant);
        String owner = null;
        long epoch = -1;
        long fence = -1;
        boolean refused = false;
        for (Map.Entry<String, URI> m : owners.entrySet()) {
            try {
                HttpResponse<String> r = http.send(
                        authorized(HttpRequest.newBuilder(m.getValue().resolve(query)))
                                .timeout(CALL_TIMEOUT)
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
                if (r.statusCode() == 401) {
                    err.println(refused(m.getKey(), r));
                    refused = true;
                    continue;
                }
                if (r.statusCode() != 200) {
                    err.println("spector move: " + m.getKey() + " answered " + r.statusCode() + ": " + r.body());
                    continue;
                }
                JsonNode view = JSON.readTree(r.body());
                long e = view.path("epoch").asLong(-1);
                long f = view.path("fence").asLong(-1);
                if (e > epoch || (e == epoch && f > fence)) {
                    owner = view.path("owner").asText();
                    epoch = e;
                    fence = f;
                }
            } catch (IOException e) {
                err.println("spector move: " + m.getKey() + " did not answer: " + e);
            }
        }
        if (refused) {
            return null; // a member that refused may hold the newest view: no move on a partial picture
        }
        if (owner == null) {
            err.println("spector move: no member reported the owner of " + namespace);
        }
        return owner;
    }

    /** Returns {@code b} with this command's {@code Authorization}, if it has a token. */
    private HttpRequest.Builder authorized(HttpRequest.Builder b) {
        String a = authorization;
        return a == null ? b : b.header("Authorization", a);
    }

    /** Returns the line printed for a member's 401: its id, and whether a token was sent. */
    private String refused(String member, HttpResponse<String> r) {
        return "spector move: " + member + " refused the admin call (401 "
                + r.headers().firstValue("WWW-Authenticate").orElse("") + "): "
                + (authorization == null
                        ? "it asks for the cell's admin token; give --admin-token or set "
                                + OwnerCommand.ADMIN_TOKEN_ENV
                        : "not its admin token; the cell's owners must share one")
                + ": " + r.body();
    }

    /** Parses {@code id=url} members. */
    static Map<String, URI> parse(List<String> members) {
        Map<String, URI> out = new LinkedHashMap<>();
        for (String m : members) {
            int eq = m.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("--members: '" + m + "' (expected: id=http://host:port)");
            }
            out.put(m.substring(0, eq).strip(), URI.create(m.substring(eq + 1).strip()));
        }
        return out;
    }
}
