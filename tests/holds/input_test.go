package holds_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

// keyless has no primary key.
type keyless struct{ Name string }

func (keyless) TableName() string { return "holds_keyless" }
func (keyless) HoldCapacity() int { return 1 }

// TestBadInput: unusable arguments are refused with a clear error and
// nothing is written; zero capacity is always full.
func TestBadInput(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		setup(t, tg)
		ctx := context.Background()
		s := newSeat(t, tg.DB, 1)
		var nilSeat *seat
		cases := []struct {
			name     string
			resource holds.Holdable
			holder   string
			opts     []holds.Option
			want     error
		}{
			{"nil resource", nil, "u", nil, holds.ErrInvalid},
			{"nil pointer", nilSeat, "u", nil, holds.ErrInvalid},
			{"no primary key", &keyless{Name: "x"}, "u", nil, holds.ErrInvalid},
			{"zero primary key", &seat{Capacity: 1}, "u", nil, holds.ErrInvalid},
			{"empty holder", s, "", nil, holds.ErrInvalid},
			{"negative TTL", s, "u", []holds.Option{holds.TTL(-time.Second)}, holds.ErrInvalid},
			{"bad table", s, "u", []holds.Option{holds.Table("x; DROP TABLE y")}, holds.ErrInvalid},
			{"missing row", &seat{ID: 999999, Capacity: 1}, "u", nil, holds.ErrNotFound},
		}
		for _, c := range cases {
			h, err := holds.Acquire(ctx, tg.DB, c.resource, c.holder, append([]holds.Option{inTable}, c.opts...)...)
			if !errors.Is(err, c.want) || h != nil {
				t.Errorf("%s: %+v, %v; want %v", c.name, h, err, c.want)
			} else {
				t.Logf("%s: %v", c.name, err)
			}
		}
		zero := newSeat(t, tg.DB, 0)
		if h, err := holds.Acquire(ctx, tg.DB, zero, "u", inTable); h != nil || !errors.Is(err, holds.ErrFull) {
			t.Errorf("capacity 0: %+v, %v; want nil, ErrFull", h, err)
		}
		neg := &seat{ID: zero.ID, Capacity: -1}
		if full, err := holds.IsFull(ctx, tg.DB, neg, inTable); !full || err != nil {
			t.Errorf("IsFull with capacity -1: %v, %v", full, err)
		}
		var n int64
		require.NoError(t, tg.DB.Table(holdsTable).Count(&n).Error)
		if n != 0 {
			t.Fatalf("%d hold rows written by bad calls, want 0", n)
		}
		if err := holds.Release(ctx, tg.DB, nil); !errors.Is(err, holds.ErrInvalid) {
			t.Errorf("Release(nil) = %v, want ErrInvalid", err)
		}
	})
}
