package com.spectrayan.spector.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Repo;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/CONFIG.md stays true to the code: its tables list exactly the keys the gateway reads
 * ({@link Keys#ALL}, which refuses any other {@code spector.*} key at start), in the same order,
 * and each documented default is the one the code applies.
 */
final class ConfigDocTest {
    /** A key's table row: {@code | `key` | default | ...}. */
    private static final Pattern ROW =
            Pattern.compile("^\\| `(spector\\.[a-z0-9.-]+)` \\| ([^|]*)\\|", Pattern.MULTILINE);

    /** The documented rows: key to its default cell, in the document's order. */
    private static Map<String, String> documented() {
        Matcher m = ROW.matcher(Repo.read("docs/CONFIG.md"));
        Map<String, String> rows = new LinkedHashMap<>();
        while (m.find()) {
            assertThat(rows.put(m.group(1), m.group(2).strip()))
                    .as("%s documented once", m.group(1))
                    .isNull();
        }
        return rows;
    }

    @Test
    void configDoc_listsEveryKeyTheGatewayReads_inItsOrder_andNoOther() {
        assertThat(new ArrayList<>(documented().keySet())).containsExactlyElementsOf(Keys.ALL);
    }

    @Test
    void configDoc_everyDefault_isTheOneTheCodeApplies() {
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, String> row : documented().entrySet()) {
            String key = row.getKey();
            String cell = row.getValue();
            String value = Keys.DEFAULTS.get(key);
            if (value != null && !value.isEmpty()) {
                if (!cell.startsWith("`" + value + "`")) {
                    wrong.add(key + ": documented " + cell + ", applied `" + value + "`");
                }
            } else if (cell.startsWith("`")) {
                wrong.add(key + ": documented " + cell + ", but the code has no default");
            }
        }
        assertThat(wrong).isEmpty();
    }
}
