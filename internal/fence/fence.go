// Package fence enforces lease fencing tokens where the data lives: the
// GORM callbacks behind lockplugin.Fence, lockplugin.WithFence and
// lockplugin.Fenced. A fenced write of a row carries the writer's fence
// into its WHERE clause ("fence <= mine") and into the row ("fence =
// mine"), so that a holder whose lease was taken over, whose fence is
// lower than the one its successor already wrote, writes nothing.
//
// The guard is "<=", not "<": one holder writes many times under one
// lease, each time with the same fence, and must keep succeeding; only a
// strictly greater fence, which only a later holder can have, refuses it.
package fence

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/internal/plugin"
)

// Fence is the column that records the fence of a row's last fenced
// writer. See lockplugin.Fence.
type Fence int64

var fenceType = reflect.TypeOf(Fence(0))

// Holder is what a fenced write needs of a lease: its fence. A
// *lease.Lease is one; so is anything else that hands out fencing tokens.
type Holder interface {
	Fence() int64
}

// token is the fence a statement writes under, and the holder it came
// from (for its name and, when it has one, its Done channel).
type token struct {
	fence  int64
	holder Holder
}

func (t token) name() string {
	if n, ok := t.holder.(interface{ Name() string }); ok {
		return n.Name()
	}
	return ""
}

// ErrStaleFence is matched by errors.Is when a fenced write found a row
// written under a greater fence: the writer's lease was taken over by a
// later holder, which has written since. Nothing was written to that row.
var ErrStaleFence = errors.New("lockplugin: stale fence: the lease was taken over and a later holder has written the row")

// ErrLeaseEnded is matched by errors.Is when a fenced write was asked for
// under a lease whose Done channel has closed (its safety deadline passed,
// it was found gone, or released): it was refused before any SQL.
var ErrLeaseEnded = errors.New("lockplugin: fenced write under a lease that may no longer be held (its Done channel is closed)")

// ErrUnguarded is matched by errors.Is when a fenced context sends a
// statement the fence cannot guard: db.Exec, a db.Raw that may write, a
// write of a model without a Fence column or of a table without a model.
// It was refused before any SQL.
var ErrUnguarded = errors.New("lockplugin: a fenced write that cannot be guarded was refused")

// StaleFenceError is the error of a fenced write that met a greater fence.
type StaleFenceError struct {
	Op      string // "update", "delete" or "upsert"
	Table   string
	Lease   string // the lease's name, when the holder has one
	Fence   int64  // the writer's fence
	Current int64  // the greatest fence found on the rows it would write
}

func (e *StaleFenceError) Error() string {
	lease := ""
	if e.Lease != "" {
		lease = fmt.Sprintf(" of lease %q", e.Lease)
	}
	return fmt.Sprintf("lockplugin: stale fence: %s of %s under fence %d%s refused: the row carries fence %d of a later holder; the lease was taken over, stop and re-acquire",
		e.Op, e.Table, e.Fence, lease, e.Current)
}

// Is makes errors.Is(err, ErrStaleFence) true.
func (e *StaleFenceError) Is(target error) bool { return target == ErrStaleFence }

type ctxKey struct{}

// WithFence returns ctx carrying h's fence: every write of a model with a
// Fence column on a *gorm.DB given this context (db.WithContext) is fenced.
func WithFence(ctx context.Context, h Holder) context.Context {
	return context.WithValue(ctx, ctxKey{}, token{fence: h.Fence(), holder: h})
}

// clauseKey holds a Fenced clause's token in Statement.Clauses.
const clauseKey = "lockplugin:fenced"

// Fenced returns the clause that fences one statement under h.
func Fenced(h Holder) clause.Expression { return fencedClause{token{fence: h.Fence(), holder: h}} }

type fencedClause struct{ tok token }

// ModifyStatement records the token, or fails the statement when the
// plugin, whose callbacks do the guarding, is not registered.
func (c fencedClause) ModifyStatement(stmt *gorm.Statement) {
	if !registered(stmt.DB) {
		stmt.AddError(fmt.Errorf("%w: a fenced write needs its callbacks", plugin.ErrNotRegistered))
		return
	}
	stmt.Clauses[clauseKey] = clause.Clause{Expression: c}
}

// Build renders nothing.
func (fencedClause) Build(clause.Builder) {}

func registered(db *gorm.DB) bool {
	return db != nil && db.Config != nil && db.Callback().Update().Get(guardName) != nil
}

// tokenOf returns the fence the statement writes under: its Fenced clause,
// else its context's WithFence.
func tokenOf(stmt *gorm.Statement) (token, bool) {
	if c, ok := stmt.Clauses[clauseKey]; ok {
		if f, ok := c.Expression.(fencedClause); ok {
			return f.tok, true
		}
	}
	if stmt.Context != nil {
		if t, ok := stmt.Context.Value(ctxKey{}).(token); ok {
			return t, true
		}
	}
	return token{}, false
}

// check refuses a token whose holder says its lease has ended.
func (t token) check() error {
	if t.holder == nil {
		return errors.New("lockplugin: fenced write with a nil lease")
	}
	if d, ok := t.holder.(interface{ Done() <-chan struct{} }); ok {
		select {
		case <-d.Done():
			if n := t.name(); n != "" {
				return fmt.Errorf("%w: lease %q, fence %d", ErrLeaseEnded, n, t.fence)
			}
			return ErrLeaseEnded
		default:
		}
	}
	if t.fence <= 0 {
		return fmt.Errorf("lockplugin: fenced write with fence %d; a lease's fence is positive", t.fence)
	}
	return nil
}

// fieldOf returns the model's Fence field.
func fieldOf(s *schema.Schema) *schema.Field {
	if s == nil {
		return nil
	}
	for _, f := range s.Fields {
		if f.DBName != "" && f.FieldType == fenceType {
			return f
		}
	}
	return nil
}

// noColumn is the error of a fenced write that cannot be guarded.
func noColumn(stmt *gorm.Statement, op string) error {
	if stmt.Schema == nil {
		return fmt.Errorf("%w: fenced %s of table %q without a model: the fence guard needs a model with a lockplugin.Fence column (db.Model(&T{})); nothing was sent", ErrUnguarded, op, stmt.Table)
	}
	return fmt.Errorf("%w: fenced %s of %s, which has no lockplugin.Fence column: embed lockplugin.Fence in the model; nothing was sent", ErrUnguarded, op, stmt.Schema.Name)
}

// CreateClauses implements GORM's schema.CreateClausesInterface, and
// UpdateClauses and DeleteClauses its update and delete counterparts: a
// fenced write of a model with a Fence column on a *gorm.DB without the
// plugin fails before any SQL instead of being sent unguarded.
func (Fence) CreateClauses(f *schema.Field) []clause.Interface { return fieldClauses(f) }

// UpdateClauses implements schema.UpdateClausesInterface; see CreateClauses.
func (Fence) UpdateClauses(f *schema.Field) []clause.Interface { return fieldClauses(f) }

// DeleteClauses implements schema.DeleteClausesInterface; see CreateClauses.
func (Fence) DeleteClauses(f *schema.Field) []clause.Interface { return fieldClauses(f) }

func fieldClauses(f *schema.Field) []clause.Interface {
	if f == nil || f.IndirectFieldType != fenceType {
		return nil
	}
	return []clause.Interface{fieldClause{}}
}

type fieldClause struct{}

func (fieldClause) Name() string               { return "" }
func (fieldClause) Build(clause.Builder)       {}
func (fieldClause) MergeClause(*clause.Clause) {}
func (fieldClause) ModifyStatement(stmt *gorm.Statement) {
	if _, ok := tokenOf(stmt); ok && !registered(stmt.DB) {
		stmt.AddError(fmt.Errorf("%w: a fenced write needs its callbacks", plugin.ErrNotRegistered))
	}
}
