// Package zero_test holds lockplugin's promise about zero values: every
// method of every exported type, called on a zero value and on a nil
// pointer, returns (an error naming the constructor to use, or works),
// and never panics.
//
// The types come from the packages' source (go/doc), so a new exported
// type with methods fails TestEveryTypeIsListed until it is added to
// types below, and then TestZeroValues calls each of its methods.
package zero_test

import (
	"context"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/etcdstore"
	"github.com/lockplugin/lockplugin/lease/leasetest"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// packages are the directories checked, relative to this one, by import
// path. (holds is checked by its own helper's test; add it here once its
// zero values are handled.)
var packages = map[string]string{
	"lockplugin": "../..",
	"advisory":   "../../advisory",
	"election":   "../../election",
	"lease":      "../../lease",
	"leasetest":  "../../lease/leasetest",
	"redisstore": "../../lease/redisstore",
	"sqlstore":   "../../lease/sqlstore",
	"etcdstore":  "../../lease/etcdstore",
}

// zeroType is one exported type with methods, and what its zero value
// answers: either it works (ctor == "") or every method that returns an
// error returns one naming ctor.
type zeroType struct {
	typ  reflect.Type
	ctor string
}

var types = map[string]zeroType{
	"lockplugin.Plugin":      {reflect.TypeFor[lockplugin.Plugin](), ""}, // the plugin without options
	"advisory.Lock":          {reflect.TypeFor[advisory.Lock](), "advisory.Acquire"},
	"election.Elector":       {reflect.TypeFor[election.Elector](), "election.New"},
	"election.Term":          {reflect.TypeFor[election.Term](), "Campaign"},
	"lease.Manager":          {reflect.TypeFor[lease.Manager](), "lease.NewManager"},
	"lease.Lease":            {reflect.TypeFor[lease.Lease](), "Manager.Acquire"},
	"lease.LocalStore":       {reflect.TypeFor[lease.LocalStore](), "lease.NewLocalStore"},
	"lease.NotAcquiredError": {reflect.TypeFor[lease.NotAcquiredError](), ""}, // an error value: Unwrap is nil
	"redisstore.Store":       {reflect.TypeFor[redisstore.Store](), "redisstore.New"},
	"sqlstore.Store":         {reflect.TypeFor[sqlstore.Store](), "sqlstore.New"},
	"etcdstore.Store":        {reflect.TypeFor[etcdstore.Store](), "etcdstore.New"},
}

var _ = leasetest.Run // leasetest has no exported type with methods; it is listed in packages

// typesWithMethods lists pkg.Type for every exported, non-alias type with
// methods declared in dir (test files left out).
func typesWithMethods(t *testing.T, pkg, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "example.com/"+pkg)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ty := range p.Types {
		if len(ty.Methods) > 0 {
			out = append(out, pkg+"."+ty.Name)
		}
	}
	return out
}

// TestEveryTypeIsListed fails for an exported type with methods that types
// does not list: add it, with its constructor, so that its zero value is
// tested.
func TestEveryTypeIsListed(t *testing.T) {
	var found []string
	for pkg, dir := range packages {
		found = append(found, typesWithMethods(t, pkg, dir)...)
	}
	sort.Strings(found)
	seen := map[string]bool{}
	for _, name := range found {
		seen[name] = true
		if _, ok := types[name]; !ok {
			t.Errorf("%s is an exported type with methods and no zero-value test: add it to types in tests/zero", name)
		}
	}
	for name := range types {
		if !seen[name] {
			t.Errorf("types lists %s, which has no methods in its package's source (any more)", name)
		}
	}
	t.Logf("%d exported types with methods: %s", len(found), strings.Join(found, ", "))
}

var (
	ctxType = reflect.TypeFor[context.Context]()
	errType = reflect.TypeFor[error]()
	dbType  = reflect.TypeFor[*gorm.DB]()
)

// arg returns a plausible argument of type in: what a caller would pass,
// so that only the receiver is zero.
func arg(t *testing.T, in reflect.Type) reflect.Value {
	switch {
	case in == ctxType:
		return reflect.ValueOf(context.Background())
	case in == dbType:
		return reflect.ValueOf(testdb.DryRunPlain(t, "sqlite"))
	case in.Kind() == reflect.String:
		return reflect.ValueOf("i18-zero").Convert(in)
	case in == reflect.TypeFor[time.Duration]():
		return reflect.ValueOf(time.Second)
	case in.Kind() == reflect.Pointer && in.Elem().Kind() == reflect.Struct:
		return reflect.New(in.Elem()) // a zero *lease.Lease, say
	case in.Kind() == reflect.Func: // a function that returns zero values
		return reflect.MakeFunc(in, func([]reflect.Value) []reflect.Value {
			out := make([]reflect.Value, in.NumOut())
			for i := range out {
				out[i] = reflect.Zero(in.Out(i))
			}
			return out
		})
	}
	return reflect.Zero(in)
}

// TestZeroValues calls every method of every listed type on a pointer to
// its zero value and, for pointer-receiver methods, on a nil pointer.
func TestZeroValues(t *testing.T) {
	for name, zt := range types {
		t.Run(name, func(t *testing.T) {
			ptr := reflect.PointerTo(zt.typ)
			for i := range ptr.NumMethod() {
				m := ptr.Method(i)
				_, valueReceiver := zt.typ.MethodByName(m.Name)
				receivers := map[string]reflect.Value{"zero": reflect.New(zt.typ)}
				if !valueReceiver { // a nil pointer cannot be dereferenced for a value receiver
					receivers["nil"] = reflect.Zero(ptr)
				}
				for which, recv := range receivers {
					call(t, name+"."+m.Name+" on "+which, zt.ctor, recv.Method(i))
				}
			}
		})
	}
}

func call(t *testing.T, what, ctor string, fn reflect.Value) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	ft := fn.Type()
	n := ft.NumIn()
	if ft.IsVariadic() {
		n-- // no options
	}
	args := make([]reflect.Value, n)
	for i := range n {
		args[i] = arg(t, ft.In(i))
	}
	out := fn.Call(args)
	if ctor == "" || len(out) == 0 || ft.Out(len(out)-1) != errType {
		return
	}
	err, _ := out[len(out)-1].Interface().(error)
	switch {
	case err == nil:
		t.Errorf("%s returned no error", what)
	case !strings.Contains(err.Error(), ctor):
		t.Errorf("%s = %v, which does not name %s", what, err, ctor)
	}
}
