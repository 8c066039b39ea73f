package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/cmd/lockcheck/internal/testdb"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

func whoOn(t *testing.T, args ...string) []holding {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := runContext(context.Background(), append([]string{"who", "-json"}, args...), &out, &errOut); code != exitOK {
		t.Fatalf("who %v: exit %d: %s", args, code, errOut.String())
	}
	var rows []holding
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("who output %q: %v", out.String(), err)
	}
	return rows
}

func find(rows []holding, mechanism, name string) *holding {
	for i := range rows {
		if rows[i].Mechanism == mechanism && rows[i].Name == name {
			return &rows[i]
		}
	}
	return nil
}

type i17WhoSeat struct {
	ID       uint
	Capacity int
}

func (i17WhoSeat) TableName() string { return "i17_who_seats" }

func (s i17WhoSeat) HoldCapacity() int { return s.Capacity }

// TestWho: a lease, a hold and an advisory lock, each taken on its own
// connection pool, are listed; force-release ends the lease so that its
// holder's Refresh returns ErrLeaseLost and the next fence is higher.
func TestWho(t *testing.T) {
	for _, kind := range []string{testdb.Postgres, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			holder := testdb.Open(t, kind, nil) // the other process's pool
			ctx := context.Background()
			name := testdb.Unique(t, "i17_who")

			store, err := sqlstore.New(holder.DB, sqlstore.Table("i17_who_leases"))
			if err != nil {
				t.Fatal(err)
			}
			m := lease.NewManager(store)
			l, err := m.Acquire(ctx, name, lease.TTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)

			_ = holder.DB.Migrator().DropTable(&i17WhoSeat{}, "i17_who_holds")
			if err := holder.DB.AutoMigrate(&i17WhoSeat{}); err != nil {
				t.Fatal(err)
			}
			in := holds.Table("i17_who_holds")
			if err := holds.Migrate(holder.DB, in); err != nil {
				t.Fatal(err)
			}
			seat := i17WhoSeat{Capacity: 2}
			holder.DB.Create(&seat)
			if h, err := holds.Acquire(ctx, holder.DB, &seat, "alice", in); err != nil || h == nil {
				t.Fatalf("hold: %v %v", h, err)
			}

			a, err := advisory.Acquire(ctx, holder.DB, name)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Release(ctx)

			dsn := tg.DSN
			if kind == testdb.MySQL {
				dsn = "mysql://" + dsn
			}
			args := []string{"-dsn", dsn, "-lease-table", "i17_who_leases", "-holds-table", "i17_who_holds", "-name", name}
			rows := whoOn(t, args...)
			t.Logf("who: %+v", rows)
			if r := find(rows, "lease-table", name); r == nil || r.Holder != l.Owner() || r.Fence != l.Fence() || r.Expires == nil {
				t.Errorf("lease row %+v, want owner %s fence %d", r, l.Owner(), l.Fence())
			}
			if r := find(rows, "hold", "i17_who_seats/"+itoa(seat.ID)); r == nil || r.Holder != "alice" {
				t.Errorf("hold row %+v", r)
			}
			if r := find(rows, "advisory", name); r == nil {
				t.Errorf("advisory lock %s not listed", name)
			}

			rows = whoOn(t, append(args, "-force-release", name)...)
			if r := find(rows, "lease-table", name); r != nil {
				t.Errorf("lease still listed after force-release: %+v", r)
			}
			if err := l.Refresh(ctx, 0); !errors.Is(err, lease.ErrLeaseLost) {
				t.Fatalf("stale holder's Refresh after force-release: %v, want ErrLeaseLost", err)
			}
			next, err := m.Acquire(ctx, name, lease.TTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			defer next.Release(ctx)
			if next.Fence() <= l.Fence()+1 {
				t.Fatalf("next fence %d, want above %d (the forced release bumps it)", next.Fence(), l.Fence()+1)
			}
		})
	}
}

func TestWhoRedis(t *testing.T) {
	c := testdb.Redis(t)
	prefix := testdb.Unique(t, "i17_who") + ":"
	store := redisstore.New(c, redisstore.Prefix(prefix))
	m := lease.NewManager(store)
	ctx := context.Background()
	l, err := m.Acquire(ctx, "job{1}", lease.TTL(time.Minute)) // hashed key
	if err != nil {
		t.Fatal(err)
	}
	l2, err := m.Acquire(ctx, "job", lease.NoExpiry())
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctx)
	rows := whoOn(t, "-redis", testdb.RedisAddr(t), "-redis-prefix", prefix)
	t.Logf("who: %+v", rows)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	if r := find(rows, "lease-redis", "job"); r == nil || r.Holder != l2.Owner() || r.Fence != l2.Fence() || r.Expires != nil {
		t.Fatalf("job row %+v", r)
	}
	whoOn(t, "-redis", testdb.RedisAddr(t), "-redis-prefix", prefix, "-force-release", "job{1}")
	if err := l.Refresh(ctx, 0); !errors.Is(err, lease.ErrLeaseLost) {
		t.Fatalf("Refresh after force-release: %v", err)
	}
	next, err := m.Acquire(ctx, "job{1}", lease.TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Release(ctx)
	if next.Fence() <= l.Fence() {
		t.Fatalf("next fence %d <= %d", next.Fence(), l.Fence())
	}
	_ = c.Del(ctx, store.Key("job{1}")+":fence", store.Key("job")+":fence").Err()
}

func itoa(n uint) string {
	b, _ := json.Marshal(n)
	return string(b)
}
