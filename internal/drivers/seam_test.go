package drivers_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// seamBudget is how many lines of production code outside the seam may
// still ask which database a connection is (issue 29: at most 15). The
// seam is package dialects (recognition and the capability matrix) and
// internal/drivers (drivers.For and one folder per database); everywhere
// else a database's difference is a driver's method.
const seamBudget = 15

// seamReportEnv, when set, makes TestSeam log every line it counts even
// when the count is within the budget (go test -v -run TestSeam).
const seamReportEnv = "LOCKPLUGIN_SEAM_REPORT"

const dialectsImport = "github.com/lockplugin/lockplugin/dialects"

// TestSeam walks the repository's production Go files (the root module and
// its submodules: cmd/lockcheck, integrations, the lease stores; not tests/,
// not *_test.go, not the seam itself) and counts the lines that compare
// database kinds or engines: a comparison with a Kind or Engine field
// (d.Kind == x, d.Engine != x), a switch on one, a mention of a Kind or
// Engine constant of package dialects (dialects.Postgres, dialects.TiDB,
// ..., also in a case clause), or IsMySQLFamily. It logs the count per
// file, and fails, naming each line, when there are more than seamBudget.
func TestSeam(t *testing.T) {
	root := filepath.Join("..", "..")
	consts := kindConstants(t, filepath.Join(root, "dialects"))
	if len(consts) < 11 {
		t.Fatalf("found only %d Kind and Engine constants in package dialects: %v", len(consts), consts)
	}

	type hit struct {
		file string
		line int
		text string
	}
	var hits []hit
	perFile := map[string]int{}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			name := e.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			switch rel {
			case "tests", "dialects", "internal/drivers":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines := kindComparisons(t, rel, src, consts)
		srcLines := strings.Split(string(src), "\n")
		for _, l := range lines {
			hits = append(hits, hit{rel, l, strings.TrimSpace(srcLines[l-1])})
		}
		if len(lines) > 0 {
			perFile[rel] = len(lines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	files := make([]string, 0, len(perFile))
	for f := range perFile {
		files = append(files, f)
	}
	sort.Strings(files)
	var summary strings.Builder
	for _, f := range files {
		fmt.Fprintf(&summary, "%5d  %s\n", perFile[f], f)
	}
	t.Logf("lines comparing database kinds or engines outside the seam: %d in %d files (budget %d)\n%s",
		len(hits), len(files), seamBudget, summary.String())

	if len(hits) > seamBudget || os.Getenv(seamReportEnv) != "" {
		var b strings.Builder
		for _, h := range hits {
			fmt.Fprintf(&b, "%s:%d: %s\n", h.file, h.line, h.text)
		}
		if len(hits) > seamBudget {
			t.Errorf("%d lines outside dialects/ and internal/drivers/ ask which database a connection is (at most %d may): "+
				"move each difference into the databases' drivers (internal/drivers/<db>/<family>.go) behind a method of "+
				"its family (internal/sqldriver)\n%s", len(hits), seamBudget, b.String())
		} else {
			t.Logf("the lines:\n%s", b.String())
		}
	}
}

// kindConstants returns the names of package dialects' constants of type
// Kind or Engine, read from its source so that a new database's constant
// is counted without a change here.
func kindConstants(t *testing.T, dir string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				if id, ok := v.Type.(*ast.Ident); ok && (id.Name == "Kind" || id.Name == "Engine") {
					for _, n := range v.Names {
						consts[n.Name] = true
					}
				}
			}
		}
	}
	return consts
}

// kindComparisons returns the lines of one file, in order, that compare
// database kinds or engines.
func kindComparisons(t *testing.T, name string, src []byte, consts map[string]bool) []int {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	pkgName := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == dialectsImport {
			pkgName = "dialects"
			if imp.Name != nil {
				pkgName = imp.Name.Name
			}
		}
	}
	// A file that does not import dialects has no Kind or Engine of a
	// database to compare (otellock's switch on an event's Kind is not one).
	isKindField := func(e ast.Expr) bool {
		if pkgName == "" {
			return false
		}
		s, ok := ast.Unparen(e).(*ast.SelectorExpr)
		return ok && (s.Sel.Name == "Kind" || s.Sel.Name == "Engine")
	}
	seen := map[int]bool{}
	mark := func(p token.Pos) { seen[fset.Position(p).Line] = true }
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && pkgName != "" && x.Name == pkgName && consts[n.Sel.Name] {
				mark(n.Pos())
			}
			if n.Sel.Name == "IsMySQLFamily" {
				mark(n.Pos())
			}
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (isKindField(n.X) || isKindField(n.Y)) {
				mark(n.OpPos)
			}
		case *ast.SwitchStmt:
			if n.Tag != nil && isKindField(n.Tag) {
				mark(n.Switch)
			}
		}
		return true
	})
	lines := make([]int, 0, len(seen))
	for l := range seen {
		lines = append(lines, l)
	}
	sort.Ints(lines)
	return lines
}
