// Package holds_test is the conformance suite of package holds against every
// reachable database. Its tables start with "holds_".
package holds_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/holds"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

const (
	seatsTable = "holds_seats"
	holdsTable = "holds_holds"
)

// inTable is the Table option every test passes.
var inTable = holds.Table(holdsTable)

// seat is the resource under test.
type seat struct {
	ID        uint
	Capacity  int
	DeletedAt gorm.DeletedAt `gorm:"index"`
}

func (seat) TableName() string { return seatsTable }

func (s seat) HoldCapacity() int { return s.Capacity }

// setup gives the test empty seats and holds tables.
func setup(t *testing.T, tg *testdb.Target) {
	t.Helper()
	tg.Reset(t, &seat{})
	require.NoError(t, tg.DB.Migrator().DropTable(holdsTable))
	require.NoError(t, holds.Migrate(tg.DB, inTable))
}

func newSeat(t *testing.T, db *gorm.DB, capacity int) *seat {
	t.Helper()
	s := &seat{Capacity: capacity}
	require.NoError(t, db.Create(s).Error)
	return s
}

// holdRows counts the hold rows of a seat, active or not.
func holdRows(t *testing.T, db *gorm.DB, s *seat) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.Table(holdsTable).Where("resource_type = ? AND resource_id = ?", seatsTable, fmt.Sprint(s.ID)).Count(&n).Error)
	return n
}

// activeRows counts the holds of a seat that are not released and have no
// expiry (the races use no TTL).
func activeRows(t *testing.T, db *gorm.DB, s *seat) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.Table(holdsTable).Where("resource_type = ? AND resource_id = ? AND released_at IS NULL", seatsTable, fmt.Sprint(s.ID)).Count(&n).Error)
	return n
}

// race releases workers acquirers on one seat together and returns the
// holds granted, as the acquirers saw them and as the table has them.
func race(t *testing.T, db *gorm.DB, s *seat, workers int) (granted, rows int64) {
	t.Helper()
	ctx := context.Background()
	var n atomic.Int64
	errs, _ := scenario.Race(workers, func(w int) error {
		h, err := holds.Acquire(ctx, db, s, fmt.Sprintf("worker:%d", w), inTable)
		if h != nil {
			n.Add(1)
		}
		if errors.Is(err, holds.ErrFull) {
			return nil // the ordinary answer of the losers
		}
		return err
	})
	require.NoError(t, scenario.FirstError(errs))
	return n.Load(), activeRows(t, db, s)
}

// withoutResourceLock is the test-only hook that switches off Acquire's
// resource-row lock: on a hooked pool it strips FOR UPDATE from the
// locking read before it reaches the driver, and counts how often it did.
// The library itself has no switch that turns its protection off.
func withoutResourceLock(h *hooks) *atomic.Int64 {
	var stripped atomic.Int64
	h.set(func(q string) string {
		if strings.HasPrefix(q, "SELECT * FROM") && strings.HasSuffix(q, " FOR UPDATE") {
			stripped.Add(1)
			return strings.TrimSuffix(q, " FOR UPDATE")
		}
		return q
	}, nil)
	return &stripped
}

// retryableErr is what a deadlock victim looks like to dialects.IsRetryable:
// an error with SQLSTATE 40001.
type retryableErr struct{}

func (retryableErr) Error() string    { return "injected serialization failure" }
func (retryableErr) SQLState() string { return "40001" }

// injectAfterInsert makes the first n inserts into the holds table fail
// after the row was written, with err, and counts the inserts attempted.
func injectAfterInsert(h *hooks, n int64, err error) *atomic.Int64 {
	var calls atomic.Int64
	h.set(nil, func(q string) error {
		if isHoldInsert(q, holdsTable) && calls.Add(1) <= n {
			return err
		}
		return nil
	})
	return &calls
}
