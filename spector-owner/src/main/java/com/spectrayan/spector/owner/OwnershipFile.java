package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.SpectorException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * This node's ownership overrides on disk, so that a restart keeps every namespace move: without
 * them a restarted old owner would serve a moved namespace from its stale copy beside the new
 * owner, and a restarted new owner would point back at the old one (review finding 1).
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Where.</b> {@code <dataDir>/_ownership.json}: beside the objects, which it describes. The
 *       leading {@code _} keeps it apart from every tenant directory (tenants start with {@code
 *       [a-z0-9]}).
 *   <li><b>Format.</b> One JSON object, the whole set each time:
 *       <pre>
 *   {"version": 1,
 *    "overrides": [{"tenant": "acme" | null, "namespace": "orders",
 *                   "owner": "owner-1", "epoch": 2, "fence": 2}, ...]}
 *       </pre>
 *   <li><b>Atomic.</b> A save writes {@code _ownership.json.tmp}, forces it to disk, renames it over
 *       the file and forces the directory, so a crash leaves the old set or the new one, never half
 *       of one, and the rename itself survives a power loss.
 *   <li><b>Before the answer.</b> Callers save before they answer the call that made the override
 *       (an import, a move, {@code POST /admin/ownership}); a node restarted after an answer it gave
 *       remembers what it said.
 *   <li><b>Loud on damage.</b> {@link #load} refuses a file it cannot read whole (not JSON, a field
 *       missing or malformed, over {@link OwnerLimits#OWNERSHIP_FILE_BYTES}): the owner does not
 *       start, as starting without its moves would make it serve what it gave away.
 * </ul>
 *
 * <p>Concurrency: {@link #save} is synchronized on this object (guarded by this: the temporary
 * file), so two saves never interleave their temporary files; the caller orders the sets it saves
 * ({@link OwnerNode#takeOverride}). The disk I/O happens under that lock on purpose: overrides
 * change only by admin calls, which are rare, and the file must follow their order.
 */
final class OwnershipFile {
    /** The file's name under the data directory. */
    static final String NAME = "_ownership.json";

    /** The format's version; a file of another version is refused. */
    static final int VERSION = 1;

    private final Path file;
    private final Path tmp;
    private final Path dir;

    OwnershipFile(Path dataDir) {
        this.dir = requireNonNull(dataDir, "dataDir").toAbsolutePath();
        this.file = dir.resolve(NAME);
        this.tmp = dir.resolve(NAME + ".tmp");
    }

    /** Returns the file's path. */
    Path path() {
        return file;
    }

    /**
     * Reads the overrides saved for cell {@code cellId}; empty when there is no file yet.
     *
     * @throws IOException naming the file and what is wrong with it, when it cannot be read or is
     *     not a whole ownership file
     */
    Map<RoutingKey, RouteEntry> load(String cellId) throws IOException {
        long size;
        try {
            size = Files.size(file);
        } catch (NoSuchFileException e) {
            return Map.of();
        }
        if (size > OwnerLimits.OWNERSHIP_FILE_BYTES) {
            throw damaged(size + " bytes (expected: <= " + OwnerLimits.OWNERSHIP_FILE_BYTES + " bytes)");
        }
        byte[] bytes = Files.readAllBytes(file);
        JsonNode root;
        try {
            root = Json.MAPPER.readTree(bytes);
        } catch (JsonProcessingException e) {
            throw damaged("not JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw damaged("not a JSON object");
        }
        if (root.path("version").asInt(-1) != VERSION || !root.path("version").isInt()) {
            throw damaged("version " + root.path("version") + " (expected: " + VERSION + ")");
        }
        JsonNode list = root.get("overrides");
        if (list == null || !list.isArray()) {
            throw damaged("'overrides' missing or not an array");
        }
        Map<RoutingKey, RouteEntry> out = new LinkedHashMap<>();
        int i = 0;
        for (JsonNode o : list) {
            try {
                JsonNode tenant = o.path("tenant");
                RoutingKey key = RoutingKey.of(
                        cellId,
                        tenant.isNull() || tenant.isMissingNode() ? null : text(o, "tenant"),
                        text(o, "namespace"));
                String owner = OwnershipGuard.checkNode("owner", text(o, "owner"));
                out.put(key, new RouteEntry(owner, number(o, "epoch"), number(o, "fence")));
            } catch (SpectorException | IllegalArgumentException e) {
                throw damaged("override " + i + ": " + e.getMessage());
            }
            i++;
        }
        return out;
    }

    /**
     * Replaces the saved overrides with {@code overrides}, atomically and durably (see the notes);
     * returns once the new set is on disk.
     *
     * @throws IOException when the set could not be made durable; the file then holds the old set
     */
    synchronized void save(Map<RoutingKey, RouteEntry> overrides) throws IOException {
        List<Map<String, @Nullable Object>> rows = new ArrayList<>(overrides.size());
        overrides.entrySet().stream()
                .sorted(Comparator.comparing(e -> e.getKey().ringKey()))
                .forEach(e -> {
                    Map<String, @Nullable Object> row = new LinkedHashMap<>();
                    row.put("tenant", e.getKey().tenant());
                    row.put("namespace", e.getKey().namespace());
                    row.put("owner", e.getValue().owner());
                    row.put("epoch", e.getValue().epoch());
                    row.put("fence", e.getValue().fence());
                    rows.add(row);
                });
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("version", VERSION);
        doc.put("overrides", rows);
        ByteBuffer bytes = ByteBuffer.wrap(Json.bytes(doc));
        try (FileChannel channel = FileChannel.open(
                tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
            while (bytes.hasRemaining()) {
                channel.write(bytes);
            }
            channel.force(true);
        }
        try {
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
        }
        forceDirectory();
    }

    /** Forces the directory entry of the rename to disk (a no-op where a directory cannot be opened). */
    private void forceDirectory() throws IOException {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (UnsupportedOperationException | java.nio.file.AccessDeniedException e) {
            // Windows cannot open a directory; its rename is durable by other means.
        }
    }

    private IOException damaged(String why) {
        return new IOException(file + ": " + why + " (expected: an ownership file this owner wrote; the owner does"
                + " not start without its namespace moves, as it would serve what it handed away: restore the"
                + " file, or remove it only once every override it held is published in the ring)");
    }

    private static String text(JsonNode o, String field) {
        JsonNode v = o.get(field);
        if (v == null || !v.isTextual()) {
            throw new IllegalArgumentException("'" + field + "' missing or not a string");
        }
        return v.asText();
    }

    private static long number(JsonNode o, String field) {
        JsonNode v = o.get(field);
        if (v == null || !v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 0) {
            throw new IllegalArgumentException("'" + field + "' missing or not an integer >= 0");
        }
        return v.asLong();
    }
}
