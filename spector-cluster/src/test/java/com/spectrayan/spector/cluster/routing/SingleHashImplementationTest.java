package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Repo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Guards DESIGN.md section 2: "Exactly one class computes ring hashes". Every production source
 * file of the reactor is read; only {@code KetamaRing.java} may name a hash of the kind rings use.
 */
final class SingleHashImplementationTest {
    private static final Pattern RING_HASH =
            Pattern.compile("\"MD5\"|\\bCRC32C?\\b|murmur|xxhash|\\bfnv1a?|consistenthash", Pattern.CASE_INSENSITIVE);

    @Test
    void ringHashing_appearsOnlyInKetamaRing() throws IOException {
        Path root = Repo.root();
        List<String> offenders = new ArrayList<>();
        int scanned = 0;
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file :
                    files.filter(SingleHashImplementationTest::isMainSource).toList()) {
                scanned++;
                String text = Files.readString(file, StandardCharsets.UTF_8);
                boolean allowed = file.getFileName().toString().equals("KetamaRing.java");
                if (!allowed && RING_HASH.matcher(stripComments(text)).find()) {
                    offenders.add(root.relativize(file).toString());
                }
            }
        }

        assertThat(scanned).as("production sources scanned").isGreaterThan(10);
        assertThat(offenders)
                .as("only KetamaRing may compute ring hashes (MD5, CRC32, murmur, xxHash, FNV, ketama)")
                .isEmpty();
    }

    @Test
    void guard_recognisesTheHashesItLooksFor() {
        for (String line : List.of(
                "MessageDigest.getInstance(\"MD5\")",
                "new CRC32()",
                "Hashing.murmur3_32()",
                "XXHashFactory.fastestInstance()",
                "fnv1a(key)")) {
            assertThat(RING_HASH.matcher(stripComments(line)).find()).as(line).isTrue();
        }
        assertThat(RING_HASH
                        .matcher(stripComments("// MD5 in a comment: \"MD5\""))
                        .find())
                .isFalse();
        assertThat(RING_HASH.matcher("MessageDigest.getInstance(\"SHA-256\")").find())
                .isFalse();
    }

    private static boolean isMainSource(Path p) {
        String s = p.toString().replace('\\', '/');
        return s.endsWith(".java") && s.contains("/src/main/java/") && !s.contains("/target/");
    }

    private static String stripComments(String text) {
        return text.replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\n]*", "");
    }
}
