package lockplugin

import (
	"context"

	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/internal/fence"
)

// Fence is a fencing column: embed it in a model (column "fence") to
// record the fence of the lease under which each row was last written,
// and to refuse writes under an older one.
//
//	type Account struct {
//		ID      uint
//		Balance int64
//		lockplugin.Fence
//	}
//
// A write is fenced when its context carries a lease (WithFence) or it has
// the Fenced clause. A fenced UPDATE or DELETE is sent with
// "AND fence <= <the lease's fence>" and an UPDATE also sets the column to
// it; a fenced INSERT writes it. A holder whose lease expired (a GC pause,
// a partition) and was taken over by a later holder, which has written the
// row since, so carries a lower fence than the row: its write matches
// nothing and fails with ErrStaleFence. The guard is "<=", not "<",
// because one holder writes many times under one lease with the same
// fence. Writes that are not fenced are not guarded, and leave the column
// alone unless they assign it.
//
// Fencing refuses a write made after a later holder's write; it does not
// make a read-modify-write atomic: a stale holder that writes before its
// successor does is not refused. Add Version when that matters.
//
// It works with every lease store: all a fenced write needs of the lease
// is its Fence, a number greater than every earlier holder's, checked by
// the database at the write. It composes with Version on the same model.
//
// A fenced soft delete (gorm.DeletedAt) writes the fence as well: the
// deleted row keeps it, so an older holder's Unscoped Updates, Save or
// Delete of it, or an upsert over it, is refused with ErrStaleFence.
//
// Upserts (Clauses(clause.OnConflict{...}).Create, and Save of a slice)
// are guarded on PostgreSQL and SQLite ("DO UPDATE SET ..., fence =
// excluded.fence WHERE fence <= ?") and refused with ErrUnsupported
// elsewhere: MySQL's and MariaDB's ON DUPLICATE KEY UPDATE takes no WHERE,
// and SQL Server's and Oracle's MERGE, as GORM builds it, takes no
// condition on its update. Save of one row is always guarded. An upsert's
// insert branch has nothing to compare: a row a later holder hard-deleted
// is inserted again by an older holder's upsert (or Create). Where rows
// may be re-created, delete them softly: the soft-deleted row is the
// tombstone that keeps the deleter's fence.
//
// Like Version, Fence is a plain int64 with no methods a driver or
// encoding/json would see.
type Fence = fence.Fence

// FenceHolder is what a fenced write needs of a lease: its fencing token.
// *lease.Lease is one. When the holder also has Done() <-chan struct{} and
// it has closed, a fenced write is refused before any SQL (ErrLeaseEnded);
// when it has Name() string, errors name it.
type FenceHolder = fence.Holder

// ErrStaleFence is matched by errors.Is when a fenced write met a row
// written under a greater fence: the lease was taken over, and the later
// holder has written the row. Nothing was written to it (for an UPDATE or
// DELETE that picks its rows by conditions rather than by primary key,
// every matched row with a greater fence was left alone, and rows with a
// lower one were written: fence inside a transaction to undo them). Stop
// the work; it is no longer yours. errors.As gives a *StaleFenceError.
//
// A fenced write whose rows a later holder wrote just after it, before
// the check that follows a write matching too few rows, may also report
// it: either way, the lease was taken over.
var ErrStaleFence = fence.ErrStaleFence

// StaleFenceError tells the table, the writer's fence and the greater
// fence found on the row.
type StaleFenceError = fence.StaleFenceError

// ErrUnguarded is matched by errors.Is when a fenced context (WithFence,
// Fenced) sends a statement the fence cannot guard: db.Exec, a db.Raw
// that may write (any statement not led by SELECT, WITH, VALUES, TABLE,
// SHOW, EXPLAIN or DESCRIBE, and one of those containing DELETE, UPDATE
// other than FOR UPDATE, INSERT, MERGE, REPLACE, UPSERT, INTO or
// TRUNCATE, as a CTE that writes does), INSERT OR REPLACE, a write of a
// model without a Fence column or of a table without a model. Nothing was
// sent. A raw read passes; a function with side effects called from a
// SELECT is not seen.
var ErrUnguarded = fence.ErrUnguarded

// ErrLeaseEnded is matched by errors.Is when a fenced write is made under
// a lease whose Done channel has already closed: refused before any SQL.
var ErrLeaseEnded = fence.ErrLeaseEnded

// WithFence returns a context under which every GORM write of a model with
// a Fence column is fenced by h (a *lease.Lease):
//
//	err := m.Do(ctx, "accounts", func(ctx context.Context) error {
//		l, _ := lease.FromContext(ctx)
//		tx := db.WithContext(lockplugin.WithFence(ctx, l))
//		return tx.Save(&account).Error // ErrStaleFence once taken over
//	})
//
// A fenced write of a model without a Fence column, of a table without a
// model, through db.Exec or a db.Raw that may write fails before any SQL
// (ErrUnguarded): it is never sent unguarded.
func WithFence(ctx context.Context, h FenceHolder) context.Context { return fence.WithFence(ctx, h) }

// Fenced returns a clause that fences one statement by h, like WithFence:
//
//	db.Clauses(lockplugin.Fenced(l)).Save(&account)
func Fenced(h FenceHolder) clause.Expression { return fence.Fenced(h) }
