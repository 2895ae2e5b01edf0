package com.spectrayan.spector.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.PrintWriter;
import java.io.StringReader;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

final class RouteCommandTest {
    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        return SpectorCli.run(new PrintWriter(out, true), new PrintWriter(err, true), args);
    }

    @Test
    void route_libketamaMembers_printsKeyTabOwnerPerKey() {
        int code = run(
                "route",
                "--members",
                "10.0.1.1:11211,10.0.1.2:11211,10.0.1.3:11211,10.0.1.4:11211,"
                        + "10.0.1.5:11211,10.0.1.6:11211,10.0.1.7:11211,10.0.1.8:11211",
                "0",
                "233",
                "466");

        assertThat(code).isZero();
        assertThat(out.toString())
                .isEqualTo("0\t10.0.1.1:11211\n233\t10.0.1.7:11211\n466\t10.0.1.3:11211\n"
                        .replace("\n", System.lineSeparator()));
    }

    @Test
    void route_duplicateMember_exitsWithBadRequestsCode() {
        int code = run("route", "--members", "a,a", "k");

        assertThat(code).as("BAD_REQUEST's CLI exit").isEqualTo(2);
        assertThat(err.toString()).contains("BAD_REQUEST").contains("listed twice");
    }

    @Test
    void route_missingMembers_isAUsageErrorWithExit2() {
        assertThat(run("route", "k")).isEqualTo(2);
        assertThat(err.toString()).contains("--members");
    }

    @Test
    void readKeys_atTheLimit_isRead_andOnePast_isRefused() {
        List<String> keys = new ArrayList<>();
        String max = "k".repeat(RouteCommand.MAX_KEY_CHARS);

        RouteCommand.readKeys(new StringReader(max + "\r\n\nnext"), keys::add);
        assertThat(keys).containsExactly(max, "next");

        assertThatThrownBy(() -> RouteCommand.readKeys(new StringReader(max + "k"), keys::add))
                .hasMessageContaining("longer than 4096 chars");
    }
}
