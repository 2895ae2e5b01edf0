package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Repo;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/OPERATIONS.md's metrics table names every meter a gateway exposes: a real cell's scrape,
 * after a forwarded request, holds no {@code spector_*} name the table does not (a meter added
 * without its row, what it counts and when to alert, fails here). Meters that exist only with TLS
 * or after a first event (a retarget's cause) are not in this scrape; their rows are kept by hand.
 */
final class MetricsDocTest {
    /** A sample line's name. */
    private static final Pattern SAMPLE = Pattern.compile("^(spector_[a-z0-9_]+)[{ ]", Pattern.MULTILINE);

    /** What Prometheus adds to a timer's or summary's name. */
    private static final List<String> SUFFIXES = List.of("_count", "_sum", "_max", "_bucket");

    @Test
    void operationsDoc_namesEveryMeterAGatewayExposes() throws Exception {
        String doc = Repo.read("docs/OPERATIONS.md");
        try (Cell cell = Cell.builder().owners(1).start()) {
            assertThat(cell.get("/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/echo")
                            .statusCode())
                    .isEqualTo(200);
            HttpResponse<String> scrape = cell.getWithoutToken("/actuator/prometheus");
            assertThat(scrape.statusCode()).isEqualTo(200);

            Set<String> names = new TreeSet<>();
            Matcher m = SAMPLE.matcher(scrape.body());
            while (m.find()) {
                names.add(m.group(1));
            }
            assertThat(names).as("the scrape's spector meters").hasSizeGreaterThan(20);
            List<String> undocumented = new ArrayList<>();
            for (String name : names) {
                if (!documents(doc, name)) {
                    undocumented.add(name);
                }
            }
            assertThat(undocumented)
                    .as("meters with no row in docs/OPERATIONS.md")
                    .isEmpty();
        }
    }

    /** Answers whether the doc names {@code name} in code font, or the timer it is a series of. */
    private static boolean documents(String doc, String name) {
        if (doc.contains("`" + name + "`") || doc.contains("`" + name + "{")) {
            return true;
        }
        for (String suffix : SUFFIXES) {
            if (name.endsWith(suffix)) {
                String base = name.substring(0, name.length() - suffix.length());
                return doc.contains("`" + base + "`") || doc.contains("`" + base + "{");
            }
        }
        return false;
    }
}
