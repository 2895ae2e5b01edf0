package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link OwnershipFile}: the overrides saved whole and read back; a file that is not a whole
 * ownership file is refused naming it, never read as "no moves" (review finding 1).
 */
final class OwnershipFileTest {
    private static final String CELL = "cell-f";

    @TempDir
    Path dir;

    @Test
    void save_thenLoad_returnsEveryOverrideAndLeavesNoTemporaryFile() throws IOException {
        OwnershipFile file = new OwnershipFile(dir);
        Map<RoutingKey, RouteEntry> saved = Map.of(
                RoutingKey.of(CELL, "acme", "orders"), new RouteEntry("owner-1", 2, 2),
                RoutingKey.of(CELL, null, "default"), new RouteEntry("owner-0", 9, 4));

        file.save(saved);
        file.save(saved); // replaces, never appends

        assertThat(new OwnershipFile(dir).load(CELL)).isEqualTo(saved);
        try (var files = Files.list(dir)) {
            assertThat(files).containsExactly(dir.toAbsolutePath().resolve(OwnershipFile.NAME));
        }
    }

    @Test
    void load_noFile_isEmpty() throws IOException {
        assertThat(new OwnershipFile(dir).load(CELL)).isEmpty();
    }

    @Test
    void load_onePastTheSizeBound_isRefusedBeforeItIsRead() throws IOException {
        try (RandomAccessFile f =
                new RandomAccessFile(dir.resolve(OwnershipFile.NAME).toFile(), "rw")) {
            f.setLength(OwnerLimits.OWNERSHIP_FILE_BYTES + 1); // sparse: no 64 MiB written
        }

        assertThatThrownBy(() -> new OwnershipFile(dir).load(CELL))
                .isInstanceOf(IOException.class)
                .hasMessageContaining((OwnerLimits.OWNERSHIP_FILE_BYTES + 1) + " bytes (expected: <= "
                        + OwnerLimits.OWNERSHIP_FILE_BYTES + " bytes)");
    }

    @Test
    void load_anotherVersion_isRefusedNamingTheFile() throws IOException {
        Files.writeString(dir.resolve(OwnershipFile.NAME), "{\"version\":2,\"overrides\":[]}");

        assertThatThrownBy(() -> new OwnershipFile(dir).load(CELL))
                .isInstanceOf(IOException.class)
                .hasMessageContaining(OwnershipFile.NAME)
                .hasMessageContaining("version 2 (expected: 1)");
    }

    @Test
    void load_anOverrideWithABadField_isRefusedNamingIt() throws IOException {
        Files.write(
                dir.resolve(OwnershipFile.NAME),
                ("{\"version\":1,\"overrides\":[{\"tenant\":\"acme\",\"namespace\":\"orders\",\"owner\":\"owner-1\","
                                + "\"epoch\":-1,\"fence\":2}]}")
                        .getBytes(StandardCharsets.UTF_8));

        assertThatThrownBy(() -> new OwnershipFile(dir).load(CELL))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("override 0: 'epoch' missing or not an integer >= 0");
    }
}
