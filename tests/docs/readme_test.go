package docs

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
)

var update = flag.Bool("update", false, "rewrite docs/databases.md's generated blocks from dialects and internal/drivers")

// matricesFile is the page that holds the generated blocks, relative to the
// repository root, as messages name it; matricesPath is it seen from
// tests/docs.
const matricesFile = "docs/databases.md"

var matricesPath = filepath.Join("..", "..", filepath.FromSlash(matricesFile))

// block is one generated part of the documentation: the text between an opening
// marker "<!-- name ... -->" and the closing "<!-- /name -->".
type block struct {
	name string
	want string
}

func blocks() []block {
	return []block{
		{"lock-matrix", drivers.LockMatrix().Markdown()},
		{"mechanism-matrix", dialects.MechanismMatrix().Markdown()},
	}
}

// span finds the body of a block: from the line after the opening marker to
// the start of the closing marker's line.
func span(text, name string) (start, end int, err error) {
	open := "<!-- " + name
	i := strings.Index(text, open)
	for i >= 0 && !markerEnd(text[i+len(open):]) {
		j := strings.Index(text[i+1:], open)
		if j < 0 {
			i = -1
			break
		}
		i += 1 + j
	}
	if i < 0 {
		return 0, 0, fmt.Errorf("%s has no opening marker %q", matricesFile, open+" ... -->")
	}
	nl := strings.Index(text[i:], "\n")
	if nl < 0 {
		return 0, 0, fmt.Errorf("%s ends right after the marker %q", matricesFile, open)
	}
	start = i + nl + 1
	closing := "<!-- /" + name + " -->"
	k := strings.Index(text[start:], closing)
	if k < 0 {
		return 0, 0, fmt.Errorf("%s has no closing marker %q after %q", matricesFile, closing, open)
	}
	return start, start + k, nil
}

// markerEnd reports whether what follows "<!-- name" ends that name: a
// space, a colon or the comment's end, so "lock-matrix" does not match
// "lock-matrix-old".
func markerEnd(rest string) bool {
	return strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, ":") || strings.HasPrefix(rest, "-->")
}

// TestREADMEMatrices checks the per-database matrices of docs/databases.md
// (the README's "what each database gets", moved to its own page) against
// dialects (the mechanism matrix) and internal/drivers (the row-lock
// matrix, which shows the SQL each database is sent); -update rewrites them.
func TestREADMEMatrices(t *testing.T) {
	raw, err := os.ReadFile(matricesPath)
	if err != nil {
		t.Fatalf("reading %s: %v", matricesFile, err)
	}
	text := string(raw)
	changed := false
	for _, b := range blocks() {
		start, end, err := span(text, b.name)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		got := text[start:end]
		if got == b.want {
			continue
		}
		if *update {
			text = text[:start] + b.want + text[end:]
			changed = true
			continue
		}
		t.Errorf("%s's %s block differs from what lockplugin generates (- page, + generated):\n%s\nRegenerate it with: cd tests && go test ./docs -update",
			matricesFile, b.name, lineDiff(got, b.want))
	}
	if changed {
		if err := os.WriteFile(matricesPath, []byte(text), 0o644); err != nil {
			t.Fatalf("writing %s: %v", matricesFile, err)
		}
		t.Logf("rewrote %s's generated blocks", matricesFile)
	}
}

// lineDiff shows how b differs from a line by line, from a longest common
// subsequence: "- " for a's lines missing in b, "+ " for b's lines missing
// in a, "  " for shared lines.
func lineDiff(a, b string) string {
	x := strings.Split(strings.TrimSuffix(a, "\n"), "\n")
	y := strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out.WriteString("  " + x[i] + "\n")
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + x[i] + "\n")
			i++
		default:
			out.WriteString("+ " + y[j] + "\n")
			j++
		}
	}
	return out.String()
}
