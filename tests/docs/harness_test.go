package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSplitImports(t *testing.T) {
	code := "import (\n\t\"fmt\"\n)\n\nfmt.Println(1)\nreturn nil"
	decl, rest, line, shown := splitImports(code, 20)
	if !shown || decl != "import (\n\t\"fmt\"\n)" {
		t.Fatalf("decl %q, shown %v", decl, shown)
	}
	// rest starts at the blank line after ")": line 23 of the page.
	if line != 23 || rest != "\nfmt.Println(1)\nreturn nil" {
		t.Errorf("rest %q at line %d, want the blank line 23", rest, line)
	}
	if _, rest, line, shown := splitImports("x := 1\n_ = x", 7); shown || line != 7 || rest != "x := 1\n_ = x" {
		t.Errorf("a fragment without imports: rest %q, line %d, shown %v", rest, line, shown)
	}
}

func TestPageFragmentMustShowImports(t *testing.T) {
	page := "# p\n\n<!-- fragment: needs ctx context.Context -->\n```go\nfmt.Println(ctx)\n```\n\n" +
		"<!-- fragment: needs ctx context.Context -->\n```go\nimport (\n\t\"context\"\n\t\"fmt\"\n)\n\nfmt.Println(ctx)\n```\n"
	blocks := pageBlocks("docs/p.md", page)
	if len(blocks) != 2 {
		t.Fatalf("%d blocks, want 2", len(blocks))
	}
	dir := t.TempDir()
	for i := range blocks {
		if err := generate(&blocks[i], filepath.Join(dir, fmt.Sprintf("b%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if p := blocks[0].problem; !strings.Contains(p, `"context"`) || !strings.Contains(p, `"fmt"`) {
		t.Errorf("docs/p.md:5 without imports: problem %q, want it to name context and fmt", p)
	}
	if p := blocks[1].problem; p != "" {
		t.Errorf("docs/p.md:10 with imports: problem %q", p)
	}
	src, err := os.ReadFile(filepath.Join(dir, "b1", "block.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "//line docs/p.md:10\nimport (") || !strings.Contains(string(src), "//line docs/p.md:14\n") {
		t.Errorf("block.go does not map the imports and the code to their page lines:\n%s", src)
	}
}
