package com.spectrayan.spector.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.deploy.TemplateRenderer.TemplateException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link TemplateRenderer}: the chart's Go-template subset, and a refusal of anything else. */
final class TemplateRendererTest {
    private static final TemplateRenderer RENDERER = new TemplateRenderer(
            Map.of(
                    "mode",
                    "split",
                    "n",
                    3,
                    "on",
                    true,
                    "off",
                    false,
                    "name",
                    "a \"b\"",
                    "nested",
                    Map.of("x", "y"),
                    "list",
                    List.of(1)),
            "rel",
            "ns");

    private static String render(String template) {
        return RENDERER.render("t.yaml", template);
    }

    @Test
    void render_valuesReleaseAndQuote_areSubstituted() {
        assertThat(render(
                        "{{ .Values.nested.x }} {{ .Release.Name }}.{{ .Release.Namespace }} {{ .Values.name | quote }}"
                                + " {{ quote .Values.n }}"))
                .isEqualTo("y rel.ns \"a \\\"b\\\"\" \"3\"");
    }

    @Test
    void render_ifElseWithEqNeAndNot_choosesTheBranch() {
        assertThat(render("{{ if eq .Values.mode \"split\" }}S{{ else }}R{{ end }}"))
                .isEqualTo("S");
        assertThat(render("{{ if ne .Values.mode \"split\" }}S{{ else }}R{{ end }}"))
                .isEqualTo("R");
        assertThat(
                        render(
                                "{{ if .Values.off }}A{{ end }}{{ if not .Values.off }}B{{ end }}{{ if .Values.on }}C{{ end }}"))
                .isEqualTo("BC");
    }

    @Test
    void render_trimMarkers_removeWhitespaceAndNewlinesOnTheirSide() {
        assertThat(render("a:\n{{- if .Values.on }}\n  b: 1\n{{- end }}\nc: 2")).isEqualTo("a:\n  b: 1\nc: 2");
        assertThat(render("x  {{- .Values.n -}}  \n y")).isEqualTo("x3y");
    }

    @Test
    void render_rangeUntil_countsWithTheIndexAndDollarRoot() {
        assertThat(render(
                        "{{ range $i, $_ := until (int .Values.n) }}{{ if $i }},{{ end }}o-{{ $i }}.{{ $.Release.Name }}"
                                + "{{ end }}"))
                .isEqualTo("o-0.rel,o-1.rel,o-2.rel");
    }

    @Test
    void render_dotInsideRange_isRefusedAsHelmWould() {
        assertThatThrownBy(() -> render("{{ range $i := until (int .Values.n) }}{{ .Release.Name }}{{ end }}"))
                .isInstanceOf(TemplateException.class)
                .hasMessageContaining("inside range '.' is the element");
    }

    @Test
    void render_anythingOutsideTheSubset_isRefused() {
        for (String unsupported : List.of(
                "{{ include \"x\" . }}",
                "{{ .Values.name | upper }}",
                "{{ toYaml .Values.nested }}",
                "{{ .Chart.Name }}",
                "{{/* comment */}}",
                "{{ $x := 1 }}",
                "{{ with .Values.nested }}{{ end }}",
                "{{ if and .Values.on .Values.off }}{{ end }}",
                "{{ .Values.nested }}",
                "{{ .Values.missing }}",
                "{{ if eq .Values.n \"3\" }}{{ end }}",
                "{{ if .Values.on }}",
                "{{ end }}",
                "{{ .Values.n",
                "{{-.Values.n }}")) {
            assertThatThrownBy(() -> render(unsupported)).as(unsupported).isInstanceOf(TemplateException.class);
        }
    }
}
