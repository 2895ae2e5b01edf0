package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.gateway.WireClient.Response;
import com.spectrayan.spector.owner.ReferenceOwner;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.Stream;

/**
 * What a reference owner kept of the uploads sent to it through a cell's gateway: its uploads in
 * progress (one temporary file each, deleted on abort, moved on success) and its stored objects.
 * Every wait is bounded by {@link #WITHIN}.
 */
final class OwnerUploads {
    /** The bound on every wait for the owner to begin or end an upload. */
    static final Duration WITHIN = Duration.ofSeconds(5);

    private final Cell cell;
    private final ReferenceOwner owner;
    private final String token;

    /** Watches {@code owner}, asking {@code cell}'s gateway with {@code token} for stored objects. */
    OwnerUploads(Cell cell, ReferenceOwner owner, String token) {
        this.cell = cell;
        this.owner = owner;
        this.token = token;
    }

    /** Returns the owner's uploads in progress. */
    Set<Path> inProgress() {
        try (Stream<Path> files = Files.list(owner.dataDir().resolve(".tmp"))) {
            return new HashSet<>(files.toList());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Waits until the owner began an upload not in {@code before}, and returns its file. */
    Path awaitNew(Set<Path> before) {
        Path[] found = new Path[1];
        await("the owner began the upload").atMost(WITHIN).until(() -> {
            for (Path p : inProgress()) {
                if (!before.contains(p)) {
                    found[0] = p;
                    return true;
                }
            }
            return false;
        });
        return found[0];
    }

    /** Waits until the owner let go of an upload's temporary file. */
    void awaitAborted(Path upload) {
        await("the owner's upload ended").atMost(WITHIN).until(() -> !Files.exists(upload));
    }

    /** Asserts the object is absent: a GET is 404, and the owner answered no PUT of it with 2xx. */
    void assertNotStored(String path) {
        try (WireClient c = new WireClient(cell.gateway.port())) {
            Response get = c.send(WireClient.head("GET", path, token)).read();
            assertThat(get.status())
                    .as("a later GET finds no object, not a short one: %s", get)
                    .isEqualTo(404);
        }
        assertThat(owner.requests())
                .as("the owner completed no PUT of %s", path)
                .noneMatch(q -> q.method().equals("PUT") && q.path().equals(path) && q.status() < 300);
    }
}
