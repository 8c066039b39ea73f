package holds

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

type room struct {
	ID       uint
	Capacity int
}

func (r room) HoldCapacity() int { return r.Capacity }

type licence struct {
	Key   string `gorm:"primaryKey"`
	Seats int
}

func (l *licence) HoldCapacity() int { return l.Seats }

type pair struct {
	A, B int `gorm:"primaryKey"`
}

func (pair) HoldCapacity() int { return 1 }

type bare struct{ Name string }

func (bare) HoldCapacity() int { return 1 }

func open(t *testing.T, name string) *gorm.DB {
	t.Helper()
	db, err := dryrun.Open(name, "")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestRefusedBeforeSQL: bad arguments and unsupported databases fail before
// any statement is sent (the stand-in dialector has no connection, so any
// statement would fail differently).
func TestRefusedBeforeSQL(t *testing.T) {
	ctx := context.Background()
	pg := open(t, "postgres")
	var nilRoom *room
	cases := []struct {
		name   string
		db     *gorm.DB
		res    Holdable
		holder string
		opts   []Option
		want   error
	}{
		{"nil db", nil, &room{ID: 1}, "u", nil, ErrInvalid},
		{"nil resource", pg, nil, "u", nil, ErrInvalid},
		{"nil pointer", pg, nilRoom, "u", nil, ErrInvalid},
		{"no primary key", pg, bare{Name: "x"}, "u", nil, ErrInvalid},
		{"composite key", pg, pair{A: 1, B: 2}, "u", nil, ErrInvalid},
		{"zero key", pg, &room{Capacity: 1}, "u", nil, ErrInvalid},
		{"zero string key", pg, &licence{Seats: 1}, "u", nil, ErrInvalid},
		{"empty holder", pg, &room{ID: 1}, "", nil, ErrInvalid},
		{"long holder", pg, &room{ID: 1}, string(make([]byte, 256)), nil, ErrInvalid},
		{"negative TTL", pg, &room{ID: 1}, "u", []Option{TTL(-time.Millisecond)}, ErrInvalid},
		{"bad table", pg, &room{ID: 1}, "u", []Option{Table("a;b")}, ErrInvalid},
		{"oracle", open(t, "oracle"), &room{ID: 1}, "u", nil, dialects.ErrUnsupported},
		{"unknown", open(t, "clickhouse"), &room{ID: 1}, "u", nil, dialects.ErrUnsupported},
	}
	for _, c := range cases {
		h, err := Acquire(ctx, c.db, c.res, c.holder, c.opts...)
		if !errors.Is(err, c.want) || h != nil {
			t.Errorf("%s: %v, %v; want %v", c.name, h, err, c.want)
		}
	}
	if err := Migrate(open(t, "oracle")); !errors.Is(err, dialects.ErrUnsupported) {
		t.Errorf("Migrate on Oracle: %v", err)
	}
	if err := Release(ctx, pg, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Release(nil): %v", err)
	}
	if err := Extend(ctx, pg, &Hold{ID: 1}, -time.Second); !errors.Is(err, ErrInvalid) {
		t.Errorf("Extend(-1s): %v", err)
	}
	if _, err := Available(ctx, pg, &room{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Available on a zero key: %v", err)
	}
	if _, err := ActiveFor(ctx, pg, &room{ID: 1}, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("ActiveFor with no holder: %v", err)
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	pg := open(t, "postgres")
	r, err := resolve(ctx, pg, &room{ID: 42, Capacity: 3})
	if err != nil || r.table != "rooms" || r.key != "id" || r.id != "42" || r.pk != uint(42) {
		t.Fatalf("room: %+v, %v", r, err)
	}
	l, err := resolve(ctx, pg, &licence{Key: "ABC-1"})
	if err != nil || l.table != "licences" || l.key != "key" || l.id != "ABC-1" {
		t.Fatalf("licence: %+v, %v", l, err)
	}
	// db.Table names the resource table.
	r, err = resolve(ctx, pg.Table("rooms_2025"), room{ID: 7})
	if err != nil || r.table != "rooms_2025" || r.id != "7" {
		t.Fatalf("db.Table: %+v, %v", r, err)
	}
	if _, err := resolve(ctx, pg.Table("rooms r"), room{ID: 7}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("db.Table with an alias: %v", err)
	}
	// Raw SQL in db.Table is refused, never replaced by the model's table.
	for _, bad := range []string{"x; DROP TABLE rooms", "rooms; --", "(SELECT 1) AS t", "billing.rooms"} {
		if r, err := resolve(ctx, pg.Table(bad), room{ID: 7}); !errors.Is(err, ErrInvalid) {
			t.Errorf("db.Table(%q): %+v, %v; want ErrInvalid", bad, r, err)
		}
	}
	if _, err := resolve(ctx, pg.Table("rooms WHERE ?", 1), room{ID: 7}); !errors.Is(err, ErrInvalid) {
		t.Errorf("db.Table with args accepted")
	}
	// The copy read under the lock keeps what the database does not store.
	f := r.fresh().(*room)
	if f.ID != 7 || f == nil {
		t.Fatalf("fresh copy: %+v", f)
	}
}

func TestKeyString(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{{uint(5), "5"}, {"abc", "abc"}, {int64(-3), "-3"}, {[]byte{0xde, 0xad}, "dead"}, {stringer{}, "S"}} {
		if got, err := keyString(c.in); err != nil || got != c.want {
			t.Errorf("keyString(%#v) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

type stringer struct{}

func (stringer) String() string { return "S" }
