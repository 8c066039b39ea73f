package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

func mustRender(t *testing.T, dialector string) statements {
	t.Helper()
	d := dialects.New(dialector, "")
	table, err := quoteTable(d, DefaultTable)
	if err != nil {
		t.Fatal(err)
	}
	st, err := render(d, table)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestBind checks how a rendered statement's arguments are bound, which
// the golden files (SQL and the order of binds) do not show: each value in
// its place, repeated where the statement names it again, and Oracle's
// fence as an OUT parameter that writes into the caller's variable.
func TestBind(t *testing.T) {
	var fence int64
	st := mustRender(t, "oracle").acquire // binds every kind, each more than once
	got := st.bind(values{name: "n", owner: "o", ttl: 250, fence: &fence})
	if len(got) != len(st.args) {
		t.Fatalf("bind = %v for %d parameters", got, len(st.args))
	}
	var out bool
	for i, a := range st.args {
		switch a {
		case argName, argOwner, argTTL:
			if want := [...]any{argName: "n", argOwner: "o", argTTL: int64(250)}[a]; got[i] != want {
				t.Errorf("parameter %d = %#v, want %#v", i+1, got[i], want)
			}
		case argFence:
			o, ok := got[i].(sql.Out)
			if !ok || o.Dest != &fence {
				t.Errorf("the fence is not bound as an OUT parameter: %#v", got[i])
			}
			out = true
		}
	}
	if !out {
		t.Error("Oracle's acquire binds no fence")
	}
}

// TestCreateTableSQL checks what the exported entry point adds to the
// DDL that the golden files pin (create table, create table app.leases):
// that each dialector name reaches its database's statement, for the
// default table and for the table the Table option names; and that an
// unknown database and a bad name are refused.
func TestCreateTableSQL(t *testing.T) {
	for _, c := range []struct {
		dialector string
		opts      []Option
		table     string
	}{
		{"postgres", nil, DefaultTable}, {"sqlite", nil, DefaultTable}, {"mysql", nil, DefaultTable},
		{"sqlserver", nil, DefaultTable}, {"oracle", nil, DefaultTable},
		{"sqlserver", []Option{Table("app.leases")}, "app.leases"},
	} {
		d := dialects.New(c.dialector, "")
		table, err := quoteTable(d, c.table)
		if err != nil {
			t.Fatal(err)
		}
		want, err := createTableSQL(d, table)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := CreateTableSQL(c.dialector, c.opts...); err != nil || got != want {
			t.Errorf("%s, table %s:\n got %s (%v)\nwant %s", c.dialector, c.table, got, err, want)
		}
	}
	if _, err := CreateTableSQL("clickhouse"); !errors.Is(err, dialects.ErrUnsupported) {
		t.Errorf("unknown dialect: %v, want ErrUnsupported", err)
	}
	if _, err := CreateTableSQL("postgres", Table("x; DROP TABLE y")); err == nil {
		t.Error("an injected table name was accepted")
	}
}

func TestTableNames(t *testing.T) {
	d := dialects.New("postgres", "")
	for _, ok := range []string{"lock_leases", "_x", "app.leases", "L1"} {
		if _, err := quoteTable(d, ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1x", `a"b`, "a b", "a.b.c", "a.", strings.Repeat("x", 64), "ä"} {
		if _, err := quoteTable(d, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestKey(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := map[string]bool{ // name: stored as is
		"order-42":                          true,
		"a b":                               true,
		strings.Repeat("x", 191):            true,
		strings.Repeat("x", 192):            false,
		"trailing ":                         false,
		"заказ":                             false,
		"tab\there":                         false,
		"nul\x00":                           false,
		"sha256:" + strings.Repeat("0", 64): false,
	}
	for name, plain := range cases {
		k := key(name)
		if (k == name) != plain {
			t.Errorf("key(%q) = %q; plain %v, want %v", name, k, k == name, plain)
		}
		if len(k) > maxKeyLength {
			t.Errorf("key(%q) is %d bytes, over the column's %d", name, len(k), maxKeyLength)
		}
	}
	if key(long) == key(long[:299]+"y") {
		t.Error("two long names share a key")
	}
	if k := key(long); !strings.HasPrefix(k, "sha256:") || len(k) != 71 {
		t.Errorf("key of a long name = %q", k)
	}
	// A name that looks like a stored hash is hashed itself, so it cannot
	// collide with the name it looks like the hash of.
	if key(key(long)) == key(long) {
		t.Error("a name equal to another name's stored hash shares its key")
	}
}

type fakeTx struct{ dryrunPool }

func (fakeTx) Commit() error   { return nil }
func (fakeTx) Rollback() error { return nil }

// dryrunPool is a ConnPool that must never be reached.
type dryrunPool struct{}

func (dryrunPool) PrepareContext(context.Context, string) (*sql.Stmt, error) {
	panic("sent SQL")
}
func (dryrunPool) ExecContext(context.Context, string, ...any) (sql.Result, error) {
	panic("sent SQL")
}
func (dryrunPool) QueryContext(context.Context, string, ...any) (*sql.Rows, error) {
	panic("sent SQL")
}
func (dryrunPool) QueryRowContext(context.Context, string, ...any) *sql.Row {
	panic("sent SQL")
}

func TestNewRefusesBeforeSendingAnything(t *testing.T) {
	db, err := dryrun.Open("postgres", "")
	if err != nil {
		t.Fatal(err)
	}
	tx := db.Session(&gorm.Session{})
	tx.Statement.ConnPool = fakeTx{}
	if _, err := New(tx); err == nil || !strings.Contains(err.Error(), "inside a transaction") {
		t.Errorf("New inside a transaction: %v", err)
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	pg := db.Session(&gorm.Session{})
	pg.Statement.ConnPool = dryrunPool{}
	if _, err := New(pg, Table("bad name")); err == nil {
		t.Error("bad table name accepted")
	}
	if _, err := New(pg, nil, Table("bad name")); err == nil {
		t.Error("bad table name beside a nil option accepted")
	}
	unknown, _ := dryrun.Open("clickhouse", "")
	if _, err := New(unknown); !errors.Is(err, dialects.ErrUnsupported) || !strings.Contains(err.Error(), "lease table store") {
		t.Errorf("unknown dialect: %v, want ErrUnsupported naming the feature", err)
	}
}

func TestStoreRefusesBadArguments(t *testing.T) {
	db, _ := dryrun.Open("postgres", "")
	db.Statement.ConnPool = dryrunPool{}
	s, err := New(db, CreateTable(false))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := s.Acquire(ctx, "", "o", 0); err == nil {
		t.Error("empty name accepted")
	}
	if _, _, err := s.Acquire(ctx, "n", "", 0); err == nil {
		t.Error("empty owner accepted")
	}
	if _, _, err := s.Acquire(ctx, "n", strings.Repeat("o", 65), 0); err == nil {
		t.Error("65-byte owner accepted")
	}
	if _, err := s.Refresh(ctx, "n", "o", -1); err == nil {
		t.Error("negative TTL accepted")
	}
	v, _ := s.values(ctx, "n", "o", 1) // 1ns
	if v.ttl != 1 {
		t.Errorf("a 1 ns TTL became %d ms; it must round up, not to 0 (no expiry)", v.ttl)
	}
	// The longest TTL must not overflow into a negative, already expired one.
	if v, _ := s.values(ctx, "n", "o", math.MaxInt64); v.ttl != int64(math.MaxInt64/time.Millisecond)+1 {
		t.Errorf("TTL(math.MaxInt64) became %d ms", v.ttl)
	}
}
