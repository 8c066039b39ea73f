package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/doc/comment"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the checkout's root, seen from tests/docs.
var repoRoot = filepath.Join("..", "..")

// codeBlock is one Go code block of the Markdown documentation or of a
// package doc comment.
type codeBlock struct {
	file  string // path relative to the repository root, as error messages show it
	line  int    // line of the block's first line of code in file
	code  string // the code, fragment marker removed
	needs string // parameter list the fragment needs ("ctx context.Context, db *gorm.DB"), or ""
	run   bool   // the README's first-screen program: built and run, output compared
	want  string // what run's program prints, from the text block after it
	dir   string // its package directory in the scratch module
	// showsImports: the block is from a Markdown page, whose reader cannot
	// guess import paths, so a fragment must show its own imports.
	showsImports bool
	problem      string // what is wrong with the block beyond compiling, found while generating it
}

func (b codeBlock) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// fragmentMarker is how a block says what it needs. In a Markdown page it
// is an HTML comment on the line before the fence:
//
//	<!-- fragment: needs ctx context.Context, db *gorm.DB -->
//
// and in a doc comment the first line of the code block:
//
//	// fragment: needs ctx context.Context, db *gorm.DB
//
// A block with a package clause is a complete file and is compiled as is;
// any other block is compiled as declarations or, failing that, as the body
// of a function taking the declarations it needs and returning error. The
// order-service domain (domainSource) is declared beside every fragment, in
// a file of its own.
//
// A fragment of a Markdown page shows its imports: its first lines are an
// import declaration, which the reader sees and the generated file uses as
// is, for the fragment's code and the types of what it needs:
//
//	<!-- fragment: needs ctx context.Context, db *gorm.DB -->
//	```go
//	import (
//		"context"
//
//		"github.com/lockplugin/lockplugin/advisory"
//		"gorm.io/gorm"
//	)
//
//	err := advisory.With(ctx, db, "nightly-invoices", ...)
//	```
//
// so a missing import is an undefined name and an extra one is "imported
// and not used", both reported at the fragment's lines. A Markdown fragment
// that uses a package and has no import declaration fails the test. Doc
// comment fragments may leave their imports out (godoc readers see the
// package's own import path): they are added from importPaths.
var (
	readmeMarker = regexp.MustCompile(`^<!--\s*fragment(?::\s*needs\s+(.*?))?\s*-->$`)
	docMarker    = regexp.MustCompile(`^//\s*fragment(?::\s*needs\s+(.*?))?\s*$`)
	runMarker    = regexp.MustCompile(`^<!--\s*run:\s*prints the next block\s*-->$`)
)

// markdownFiles returns the documentation pages whose Go blocks are
// compiled, relative to the repository root: README.md, CONTRIBUTING.md
// and every docs/*.md.
func markdownFiles() ([]string, error) {
	files := []string{"README.md"}
	if _, err := os.Stat(filepath.Join(repoRoot, "CONTRIBUTING.md")); err == nil {
		files = append(files, "CONTRIBUTING.md")
	}
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(pages)
	for _, p := range pages {
		files = append(files, "docs/"+filepath.Base(p))
	}
	return files, nil
}

// markdownBlocks returns the ```go blocks of every markdownFiles page.
func markdownBlocks(t *testing.T) []codeBlock {
	files, err := markdownFiles()
	if err != nil {
		t.Fatalf("listing the documentation pages: %v", err)
	}
	var out []codeBlock
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(f)))
		if err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		out = append(out, pageBlocks(f, string(raw))...)
	}
	return out
}

// pageBlocks returns the ```go blocks of one Markdown page, file being its
// path relative to the repository root.
func pageBlocks(file, text string) []codeBlock {
	lines := strings.Split(text, "\n")
	var out []codeBlock
	var pendingRun *codeBlock
	prev := ""
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "```") {
			if l != "" {
				prev = l
			}
			continue
		}
		lang := strings.TrimSpace(strings.TrimPrefix(l, "```"))
		start := i + 1
		j := start
		for j < len(lines) && strings.TrimSpace(lines[j]) != "```" {
			j++
		}
		body := strings.Join(lines[start:j], "\n")
		if pendingRun != nil {
			// The block after a run: program is what it prints.
			out[len(out)-1].want = body + "\n"
			pendingRun = nil
		} else if lang == "go" {
			b := codeBlock{file: file, line: start + 1, code: dedent(body), showsImports: true}
			if m := readmeMarker.FindStringSubmatch(prev); m != nil {
				b.needs = m[1]
			}
			if runMarker.MatchString(prev) {
				b.run = true
				out = append(out, b)
				pendingRun = &out[len(out)-1]
				i = j
				prev = ""
				continue
			}
			out = append(out, b)
		}
		i = j
		prev = ""
	}
	return out
}

// dedent removes the indentation common to every non-blank line (README
// blocks inside list items are indented).
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	common := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first || !strings.HasPrefix(ind, common) {
			if first {
				common = ind
			} else {
				for !strings.HasPrefix(ind, common) {
					common = common[:len(common)-1]
				}
			}
			first = false
		}
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, common)
	}
	return strings.Join(lines, "\n")
}

// docModules returns the module directories whose package docs are
// compiled: the root module and every module nested in the checkout
// (lease/etcdstore, integrations/*, and any later one such as a store or a
// command moved into a module of its own), but not tests/ or .ci/.
func docModules() ([]string, error) {
	mods := []string{"."}
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		if d.IsDir() && rel != "." && (rel == "tests" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "go.mod" && filepath.Dir(rel) != "." {
			mods = append(mods, filepath.ToSlash(filepath.Dir(rel)))
		}
		return nil
	})
	return mods, err
}

// modulePath reads the module path of the go.mod in dir.
func modulePath(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(l, "module ")), nil
		}
	}
	return "", fmt.Errorf("%s/go.mod has no module line", dir)
}

// packageDocBlocks returns the Go code blocks of the package doc comments
// of every non-internal package of docModules.
func packageDocBlocks(t *testing.T) (blocks []codeBlock, skipped []string) {
	mods, err := docModules()
	if err != nil {
		t.Fatalf("finding the checkout's modules: %v", err)
	}
	isModule := map[string]bool{}
	for _, m := range mods {
		isModule[filepath.Clean(m)] = true
	}
	for _, mod := range mods {
		root := filepath.Join(repoRoot, mod)
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(repoRoot, path)
			if d.IsDir() {
				name := d.Name()
				if path != root && (isModule[rel] || name == "tests" || name == "internal" || name == "testdata" || strings.HasPrefix(name, ".")) {
					return filepath.SkipDir
				}
				if path != root {
					if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
						return filepath.SkipDir // a module of its own not in docModules
					}
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			bs, sk, err := fileDocBlocks(path, filepath.ToSlash(rel))
			blocks = append(blocks, bs...)
			skipped = append(skipped, sk...)
			return err
		})
		if err != nil {
			t.Fatalf("walking %s: %v", mod, err)
		}
	}
	return blocks, skipped
}

// fileDocBlocks returns the code blocks of path's package doc comment.
func fileDocBlocks(path, rel string) (blocks []codeBlock, skipped []string, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		return nil, nil, err
	}
	if f.Doc == nil {
		return nil, nil, nil
	}
	// The comment's source lines, to find where each code block starts.
	type srcLine struct {
		line int
		text string // without "//"
	}
	var src []srcLine
	for _, c := range f.Doc.List {
		first := fset.Position(c.Pos()).Line
		for k, l := range strings.Split(c.Text, "\n") {
			src = append(src, srcLine{first + k, strings.TrimPrefix(l, "//")})
		}
	}
	var p comment.Parser
	d := p.Parse(f.Doc.Text())
	from := 0
	for _, blk := range d.Content {
		code, ok := blk.(*comment.Code)
		if !ok {
			continue
		}
		firstLine := strings.SplitN(code.Text, "\n", 2)[0]
		line := 0
		for k := from; k < len(src); k++ {
			if strings.TrimSpace(src[k].text) == strings.TrimSpace(firstLine) && strings.HasPrefix(src[k].text, "\t") {
				line, from = src[k].line, k+1
				break
			}
		}
		b := codeBlock{file: rel, line: line, code: strings.TrimSuffix(code.Text, "\n")}
		if m := docMarker.FindStringSubmatch(firstLine); m != nil {
			b.needs = m[1]
			b.code = strings.SplitN(b.code, "\n", 2)[1]
			b.line++
		} else if !looksLikeGo(b.code) {
			skipped = append(skipped, b.where())
			continue
		}
		blocks = append(blocks, b)
	}
	return blocks, skipped, nil
}

// looksLikeGo tells Go code blocks of doc comments from SQL, DSNs and shell
// lines: a block is Go when it parses as Go or reads like it.
func looksLikeGo(code string) bool {
	fset := token.NewFileSet()
	if _, err := parser.ParseFile(fset, "", "package p\n"+code, 0); err == nil {
		return true
	}
	if _, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+code+"\n}", 0); err == nil {
		return true
	}
	return strings.Contains(code, ":=") || strings.Contains(code, "func ") || strings.Contains(code, "err ")
}

// importPaths are the packages a fragment may use without importing them:
// the generator adds the import for each one a fragment refers to.
var importPaths = map[string]string{
	"lockplugin": "github.com/lockplugin/lockplugin",
	"advisory":   "github.com/lockplugin/lockplugin/advisory",
	"dialects":   "github.com/lockplugin/lockplugin/dialects",
	"election":   "github.com/lockplugin/lockplugin/election",
	"holds":      "github.com/lockplugin/lockplugin/holds",
	"lease":      "github.com/lockplugin/lockplugin/lease",
	"leasetest":  "github.com/lockplugin/lockplugin/lease/leasetest",
	"sqlstore":   "github.com/lockplugin/lockplugin/lease/sqlstore",
	"redisstore": "github.com/lockplugin/lockplugin/lease/redisstore",
	"etcdstore":  "github.com/lockplugin/lockplugin/lease/etcdstore",
	"pgnotify":   "github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify",
	"observe":    "github.com/lockplugin/lockplugin/observe",
	"gocronlock": "github.com/lockplugin/lockplugin/integrations/gocronlock",
	"otellock":   "github.com/lockplugin/lockplugin/integrations/otellock",
	"gorm":       "gorm.io/gorm",
	"clause":     "gorm.io/gorm/clause",
	"dbresolver": "gorm.io/plugin/dbresolver",
	"sqlite":     "github.com/glebarez/sqlite",
	"postgres":   "gorm.io/driver/postgres",
	"mysql":      "gorm.io/driver/mysql",
	"sqlserver":  "gorm.io/driver/sqlserver",
	"redis":      "github.com/redis/go-redis/v9",
	"clientv3":   "go.etcd.io/etcd/client/v3",
	"gocron":     "github.com/go-co-op/gocron/v2",
	"context":    "context",
	"errors":     "errors",
	"fmt":        "fmt",
	"log":        "log",
	"http":       "net/http",
	"os":         "os",
	"sql":        "database/sql",
	"strings":    "strings",
	"testing":    "testing",
	"time":       "time",
}

// domainSource is the README's one example domain, an order service,
// declared beside every fragment (a fragment's own declaration of a name
// replaces the domain's). Each helper has one signature here, so the README
// cannot give one name two signatures.
const domainSource = `package p

// Order is a versioned order.
type Order struct {
	ID     uint
	Status string
	Total  int64
	lockplugin.Version
}

// Job is a row of the jobs queue.
type Job struct {
	ID     uint
	State  string
	Worker string
}

// Seat is a resource with a capacity: a seat of a show, held while a
// customer pays.
type Seat struct {
	ID       uint
	Capacity int
}

func (s Seat) HoldCapacity() int { return s.Capacity }

var errSoldOut = errors.New("sold out")

// ship ships an order.
func ship(ctx context.Context, orderID uint) error { return ctx.Err() }

// runNightlyInvoices is the nightly job; conn is the connection that holds the lock.
func runNightlyInvoices(conn *gorm.DB) error { return conn.Error }

var (
	_ = errSoldOut
	_ = ship
	_ = runNightlyInvoices
)
`

// generate writes b as the file block.go of its scratch package directory,
// with the order-service domain beside it in domain.go; what is wrong with
// the block beyond compiling goes to b.problem.
func generate(b *codeBlock, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := filepath.Base(dir)
	trimmed := strings.TrimSpace(b.code)
	if strings.HasPrefix(trimmed, "package ") || strings.Contains(trimmed, "\npackage ") {
		directive := fmt.Sprintf("//line %s:%d\n", b.file, b.line)
		return os.WriteFile(filepath.Join(dir, "block.go"), []byte(directive+b.code+"\n"), 0o644)
	}
	code, line := b.code, b.line
	importDecl, rest, restLine, shown := splitImports(code, line)
	if shown {
		importDecl = fmt.Sprintf("//line %s:%d\n", b.file, line) + importDecl + "\n"
		code, line = rest, restLine
	}
	directive := fmt.Sprintf("//line %s:%d\n", b.file, line)
	fset := token.NewFileSet()
	var body string
	var declared map[string]bool
	if f, err := parser.ParseFile(fset, "", "package p\n"+code, 0); err == nil {
		body = directive + code + "\n"
		if b.needs != "" {
			// Declarations get what they need as package-level variables.
			body = "var (\n\t" + strings.Join(splitParams(b.needs), "\n\t") + "\n)\n\n" + body
		}
		declared = topLevelNames(f)
	} else {
		end := "\treturn nil\n"
		if fn, err := parser.ParseFile(fset, "", "package p\nfunc _() {\n"+code+"\n}", 0); err == nil {
			stmts := fn.Decls[0].(*ast.FuncDecl).Body.List
			if len(stmts) > 0 && terminates(stmts[len(stmts)-1]) {
				end = ""
			}
		}
		body = fmt.Sprintf("func fragment(%s) error {\n%s%s\n%s}\n", b.needs, directive, code, end)
		declared = map[string]bool{"fragment": true}
	}

	// domain.go: the domain's declarations the block does not declare
	// itself, with the imports they need.
	domain, err := parser.ParseFile(fset, "domain.go", domainSource, parser.ParseComments)
	if err != nil {
		return err
	}
	var kept []ast.Decl
	for _, d := range domain.Decls {
		if !declaresAny(d, declared) {
			kept = append(kept, d)
		}
	}
	domain.Decls = kept
	domain.Comments = nil
	var dbuf bytes.Buffer
	if err := format.Node(&dbuf, fset, domain); err != nil {
		return err
	}
	domainBody := strings.SplitN(dbuf.String(), "\n", 2)[1]
	var dsrc bytes.Buffer
	fmt.Fprintf(&dsrc, "package %s\n\n", name)
	writeImports(&dsrc, inferImports("package p\n"+domainBody))
	dsrc.WriteString(domainBody)
	if err := os.WriteFile(filepath.Join(dir, "domain.go"), dsrc.Bytes(), 0o644); err != nil {
		return err
	}

	// block.go: the block, with the imports it shows or, for a doc
	// comment fragment, those it refers to.
	var src bytes.Buffer
	fmt.Fprintf(&src, "package %s\n\n", name)
	if shown {
		src.WriteString(importDecl + "\n")
	} else {
		imports := inferImports("package p\n" + stripLineDirectives(body))
		if b.showsImports && len(imports) > 0 {
			b.problem = fmt.Sprintf("the fragment shows no imports: start it with an import declaration of %s (its reader cannot guess import paths)",
				strings.Join(imports, "; "))
		}
		writeImports(&src, imports)
	}
	src.WriteString(body)
	return os.WriteFile(filepath.Join(dir, "block.go"), src.Bytes(), 0o644)
}

// splitImports splits the import declarations a fragment starts with from
// the rest of it. line is the fragment's first line in its file; restLine
// is the line where rest starts. shown is false when the fragment starts
// with anything else.
func splitImports(code string, line int) (decl, rest string, restLine int, shown bool) {
	const head = "package p\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", head+code, parser.ImportsOnly)
	if err != nil || len(f.Imports) == 0 {
		return "", code, line, false
	}
	var end token.Pos
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.IMPORT {
			end = gd.End()
		}
	}
	off := fset.Position(end).Offset - len(head)
	decl, rest = code[:off], code[off:]
	restLine = line + strings.Count(decl, "\n")
	if strings.HasPrefix(rest, "\n") {
		rest, restLine = rest[1:], restLine+1
	}
	return decl, rest, restLine, true
}

// inferImports returns the import specs ("fmt", or clause
// "gorm.io/gorm/clause") of the importPaths packages src refers to and does
// not declare, sorted.
func inferImports(src string) []string {
	fset := token.NewFileSet()
	used := map[string]bool{}
	if f, err := parser.ParseFile(fset, "", src, 0); err == nil {
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil {
					used[id.Name] = true
				}
			}
			return true
		})
	} else {
		// A syntax error: guess, and let the compiler report it at its line.
		for pkg := range importPaths {
			if strings.Contains(src, pkg+".") {
				used[pkg] = true
			}
		}
	}
	var imports []string
	for pkg := range used {
		if p, ok := importPaths[pkg]; ok {
			if filepath.Base(p) == pkg || strings.HasSuffix(p, "/v2") || strings.HasSuffix(p, "/v3") || strings.HasSuffix(p, "/v9") {
				imports = append(imports, fmt.Sprintf("%q", p))
			} else {
				imports = append(imports, fmt.Sprintf("%s %q", pkg, p))
			}
		}
	}
	sort.Strings(imports)
	return imports
}

// writeImports writes an import declaration of specs, if any.
func writeImports(w *bytes.Buffer, specs []string) {
	if len(specs) > 0 {
		fmt.Fprintf(w, "import (\n\t%s\n)\n\n", strings.Join(specs, "\n\t"))
	}
}

// splitParams splits a parameter list at its top-level commas.
func splitParams(list string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range list {
		switch r {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(list[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(list[start:]))
}

// terminates reports whether s is a terminating statement in the Go spec's
// sense, for the shapes documentation blocks end with: then the generated
// function needs no final return (vet would call it unreachable).
func terminates(s ast.Stmt) bool {
	switch s := s.(type) {
	case *ast.ReturnStmt:
		return true
	case *ast.BlockStmt:
		return len(s.List) > 0 && terminates(s.List[len(s.List)-1])
	case *ast.IfStmt:
		return s.Else != nil && terminates(s.Body) && terminates(s.Else)
	case *ast.SwitchStmt:
		return clausesTerminate(s.Body)
	case *ast.TypeSwitchStmt:
		return clausesTerminate(s.Body)
	case *ast.ExprStmt:
		if call, ok := s.X.(*ast.CallExpr); ok {
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "panic" {
				return true
			}
		}
	}
	return false
}

func clausesTerminate(body *ast.BlockStmt) bool {
	hasDefault := false
	for _, c := range body.List {
		cc := c.(*ast.CaseClause)
		if cc.List == nil {
			hasDefault = true
		}
		if len(cc.Body) == 0 || !terminates(cc.Body[len(cc.Body)-1]) {
			return false
		}
		ast.Inspect(cc, func(n ast.Node) bool {
			if br, ok := n.(*ast.BranchStmt); ok && br.Tok == token.BREAK && br.Label == nil {
				hasDefault = false
			}
			return true
		})
	}
	return hasDefault
}

func stripLineDirectives(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "//line ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// topLevelNames returns the names f declares, methods as "Type.Method".
func topLevelNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			names[d.Name.Name] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
	return names
}

// declaresAny reports whether the domain declaration d declares one of
// names, or is a method of a type in names.
func declaresAny(d ast.Decl, names map[string]bool) bool {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) == 1 {
			t := d.Recv.List[0].Type
			if st, ok := t.(*ast.StarExpr); ok {
				t = st.X
			}
			if id, ok := t.(*ast.Ident); ok && names[id.Name] {
				return true
			}
		}
		return names[d.Name.Name]
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if names[s.Name.Name] {
					return true
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if names[n.Name] {
						return true
					}
				}
				for _, v := range s.Values {
					if id, ok := v.(*ast.Ident); ok && names[id.Name] {
						return true
					}
				}
			}
		}
	}
	return false
}

// scratch is the module the blocks are compiled in, made once per run.
var scratch struct {
	once   sync.Once
	dir    string
	blocks []codeBlock
	err    error
	keep   bool
}

// scratchModule writes every block into a package of its own in a temp
// module that requires the tests module's dependencies (its go.sum and the
// module cache, so nothing but the module proxy is reached) with the
// checkout's modules replaced by their directories.
func scratchModule(t *testing.T) (string, []codeBlock) {
	scratch.once.Do(func() {
		blocks := markdownBlocks(t)
		docs, skipped := packageDocBlocks(t)
		blocks = append(blocks, docs...)
		if len(skipped) > 0 {
			t.Logf("doc comment code blocks that are not Go (SQL, shell, DSNs), not compiled: %s", strings.Join(skipped, ", "))
		}
		dir, err := os.MkdirTemp("", "lockplugin-docs-")
		if err != nil {
			scratch.err = err
			return
		}
		scratch.dir = dir
		scratch.err = writeScratchModule(dir, blocks)
		scratch.blocks = blocks
	})
	if scratch.err != nil {
		t.Fatalf("writing the scratch module: %v", scratch.err)
	}
	return scratch.dir, scratch.blocks
}

func writeScratchModule(dir string, blocks []codeBlock) error {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(root, "tests", "go.mod"))
	if err != nil {
		return err
	}
	var mod strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "module "):
			l = "module docsblocks"
		case strings.HasPrefix(l, "replace ") && strings.Contains(l, "=> ../"):
			i := strings.Index(l, "=> ")
			l = l[:i] + "=> " + filepath.Join(root, "tests", l[i+3:])
		}
		mod.WriteString(l + "\n")
	}
	// Modules of the checkout the tests module does not require.
	mods, err := docModules()
	if err != nil {
		return err
	}
	for _, m := range mods[1:] {
		path, err := modulePath(filepath.Join(root, m))
		if err != nil {
			return err
		}
		if strings.Contains(mod.String(), path+" ") {
			continue
		}
		fmt.Fprintf(&mod, "require %s v0.0.0\nreplace %s => %s\n", path, path, filepath.Join(root, m))
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod.String()), 0o644); err != nil {
		return err
	}
	var sum []byte
	sums := []string{"tests/go.sum", "go.sum"}
	for _, m := range mods[1:] {
		sums = append(sums, filepath.Join(m, "go.sum"))
	}
	for _, s := range sums {
		b, err := os.ReadFile(filepath.Join(root, s))
		if err == nil {
			sum = append(sum, b...)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		return err
	}
	for i := range blocks {
		blocks[i].dir = fmt.Sprintf("b%03d", i)
		if err := generate(&blocks[i], filepath.Join(dir, blocks[i].dir)); err != nil {
			return fmt.Errorf("%s: %v", blocks[i].where(), err)
		}
	}
	return nil
}

// goCommand runs the go tool in the scratch module.
func goCommand(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	return cmd
}

// TestGoBlocksCompile compiles every Go block of README.md,
// CONTRIBUTING.md, docs/*.md and the package docs, all at once (one go vet over the scratch module), and names
// each failing block by file and line with the compiler's errors.
func TestGoBlocksCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every documentation block: not in -short")
	}
	dir, blocks := scratchModule(t)
	out, err := goCommand(dir, "vet", "./...").CombinedOutput()
	failures := map[string][]string{} // block dir -> error lines
	current := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "# docsblocks/") {
			current = strings.TrimPrefix(l, "# docsblocks/")
			continue
		}
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "go: ") {
			continue
		}
		if i := strings.Index(l, dir+string(filepath.Separator)); i >= 0 {
			rest := l[i+len(dir)+1:]
			if k := strings.Index(rest, string(filepath.Separator)); k > 0 {
				current = rest[:k]
				l = l[:i] + rest[k+1:]
			}
		}
		if current == "" {
			current = "?"
		}
		l = strings.TrimPrefix(l, "vet: ")
		l = strings.TrimPrefix(l, current+"/") // //line paths are shown relative to the package
		failures[current] = append(failures[current], l)
	}
	if err != nil && len(failures) == 0 {
		t.Fatalf("go vet failed without naming a block: %v\n%s", err, out)
	}
	failed := 0
	for _, b := range blocks {
		if b.problem != "" {
			failed++
			t.Errorf("%s: %s", b.where(), b.problem)
		}
		if msgs, ok := failures[b.dir]; ok {
			failed++
			t.Errorf("%s: the Go block does not compile (scratch package %s):\n\t%s", b.where(), b.dir, strings.Join(msgs, "\n\t"))
			delete(failures, b.dir)
		}
	}
	for d, msgs := range failures {
		t.Errorf("go vet in %s (%s):\n\t%s", dir, d, strings.Join(msgs, "\n\t"))
	}
	pages := 0
	for _, b := range blocks {
		if b.showsImports {
			pages++
		}
	}
	t.Logf("%d Go blocks compiled (%d of README.md, CONTRIBUTING.md and docs/*.md, %d of package docs), %d failed",
		len(blocks), pages, len(blocks)-pages, failed)
	if t.Failed() {
		scratch.keep = true
	}
}

// TestMain removes the scratch module after the run, unless a block failed
// (then it stays for inspection; the failure names its directory).
func TestMain(m *testing.M) {
	code := m.Run()
	if scratch.dir != "" && !scratch.keep {
		os.RemoveAll(scratch.dir)
	}
	os.Exit(code)
}

// TestFirstScreenProgram runs the README's first program against SQLite,
// in a temp directory, and compares what it prints with what the README
// says it prints.
func TestFirstScreenProgram(t *testing.T) {
	dir, blocks := scratchModule(t)
	var prog *codeBlock
	for i := range blocks {
		if blocks[i].run {
			if prog != nil {
				t.Fatalf("two programs are marked to run: %s and %s", prog.where(), blocks[i].where())
			}
			prog = &blocks[i]
		}
	}
	if prog == nil {
		t.Fatal(`README.md has no program marked "<!-- run: prints the next block -->"`)
	}
	if prog.file != "README.md" {
		t.Fatalf("%s: the program marked to run belongs on the README's first screen", prog.where())
	}
	bin := filepath.Join(t.TempDir(), "first")
	if out, err := goCommand(dir, "build", "-o", bin, "./"+prog.dir).CombinedOutput(); err != nil {
		t.Fatalf("%s: building the first-screen program: %v\n%s", prog.where(), err, out)
	}
	for run := 1; run <= 2; run++ { // twice: the second run finds the first's database file
		cmd := exec.Command(bin)
		cmd.Dir = filepath.Dir(bin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: run %d: %v\n%s", prog.where(), run, err, stderr.String())
		}
		if string(got) != prog.want {
			t.Errorf("%s: run %d printed (- README, + program):\n%s", prog.where(), run, lineDiff(prog.want, string(got)))
		}
	}
}
