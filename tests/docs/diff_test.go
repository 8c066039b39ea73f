package docs

import (
	"strings"
	"testing"
)

func TestSpan(t *testing.T) {
	text := "intro\n<!-- lock-matrix-old -->\nold\n<!-- /lock-matrix-old -->\n<!-- lock-matrix: generated -->\n| a |\n<!-- /lock-matrix -->\nend\n"
	start, end, err := span(text, "lock-matrix")
	if err != nil {
		t.Fatal(err)
	}
	if got := text[start:end]; got != "| a |\n" {
		t.Errorf("body %q", got)
	}
	if _, _, err := span("<!-- lock-matrix -->\nno end\n", "lock-matrix"); err == nil || !strings.Contains(err.Error(), "closing") {
		t.Errorf("missing closing marker: %v", err)
	}
	if _, _, err := span("nothing", "mechanism-matrix"); err == nil {
		t.Error("missing opening marker not reported")
	}
}

func TestLineDiff(t *testing.T) {
	got := lineDiff("| h |\n| a | yes |\n| b | yes |\n", "| h |\n| a | error |\n| b | yes |\n| c | yes |\n")
	want := "  | h |\n- | a | yes |\n+ | a | error |\n  | b | yes |\n+ | c | yes |\n"
	if got != want {
		t.Errorf("lineDiff =\n%s\nwant\n%s", got, want)
	}
}
