package fence

import (
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/stmtstate"
)

// stateKey holds the guard's state in Statement.Clauses between the guard
// and the check; it is never built into SQL.
const stateKey = "lockplugin:fence_state"

type state struct {
	op     string
	tok    token
	field  *schema.Field
	hadSet bool
	set    clause.Clause // the SET the guard found, restored by the check
	keyed  int           // rows picked by primary key (0: by conditions)
	soft   bool          // a delete sent as the soft delete's UPDATE, which wrote the fence
}

// Build renders nothing.
func (*state) Build(clause.Builder) {}

// cond is the guard's WHERE condition: fence <= mine. A type of its own so
// that the check can take it out again. A NULL fence counts as 0: rows
// written before the column was added (ALTER TABLE ... ADD fence leaves
// them NULL) were written by no holder, and "NULL <= mine" would match
// nothing, turning every fenced write of them into a silent no-op.
type cond struct {
	col   string
	fence int64
}

func (c cond) Build(b clause.Builder) {
	b.WriteString("COALESCE(")
	b.WriteQuoted(clause.Column{Table: clause.CurrentTable, Name: c.col})
	b.WriteString(", 0) <= ")
	b.AddVar(b, c.fence)
}

// prepare returns the statement's token and Fence field, or false (with an
// error added when the write is fenced but cannot be guarded).
func prepare(db *gorm.DB, op string) (token, *schema.Field, bool) {
	stmt := db.Statement
	tok, ok := tokenOf(stmt)
	if !ok || db.Error != nil {
		return token{}, nil, false
	}
	if err := tok.check(); err != nil {
		db.AddError(err)
		return token{}, nil, false
	}
	if stmt.SQL.Len() > 0 {
		db.AddError(fmt.Errorf("lockplugin: fenced %s of a statement whose SQL is already built cannot be guarded; nothing was sent", op))
		return token{}, nil, false
	}
	if err := dialects.Of(db).Require(dialects.FencedWrite); err != nil {
		db.AddError(err)
		return token{}, nil, false
	}
	f := fieldOf(stmt.Schema)
	if f == nil {
		db.AddError(noColumn(stmt, op))
		return token{}, nil, false
	}
	return tok, f, true
}

// guardUpdate runs after the version guard, just before gorm:update: it
// builds the SET GORM would send (unless the version guard or the caller
// did), makes it write the fence, and adds "fence <= mine".
func guardUpdate(db *gorm.DB) {
	tok, f, ok := prepare(db, "update")
	if !ok {
		return
	}
	stmt := db.Statement
	st := &state{op: "update", tok: tok, field: f}
	var set clause.Set
	if c, had := stmt.Clauses["SET"]; had {
		s, ok := c.Expression.(clause.Set)
		if !ok {
			db.AddError(fmt.Errorf("lockplugin: cannot fence an UPDATE whose SET clause is a %T", c.Expression))
			return
		}
		set, st.hadSet, st.set = s, true, c
	} else {
		// As the version guard does: SQL Server cannot update an identity
		// column (UpdatesIdentity false), which its dialector leaves out
		// inside gorm:update.
		if pf := stmt.Schema.PrioritizedPrimaryField; pf != nil && pf.AutoIncrement && !drivers.For(dialects.Of(db)).Reread().UpdatesIdentity() {
			stmt.Omits = append(stmt.Omits, pf.DBName)
		}
		set = callbacks.ConvertToAssignments(stmt) // adds GORM's primary key condition
		if db.Error != nil || len(set) == 0 {
			return // GORM sends nothing for an empty SET
		}
	}
	if !hasConditions(stmt) && !db.AllowGlobalUpdate {
		db.AddError(gorm.ErrMissingWhereClause)
		return
	}
	st.keyed = keyedRows(stmt)
	stmt.AddClause(clause.Set(withFence(set, f, tok.fence)))
	stmt.AddClause(clause.Where{Exprs: []clause.Expression{cond{col: f.DBName, fence: tok.fence}}})
	stmtstate.Put(stmt, stateKey, st)
}

// guardDelete runs after the version guard, just before gorm:delete, and
// adds "fence <= mine" to the DELETE (or to the soft delete's UPDATE, which
// softDeleteFence makes write the fence too).
func guardDelete(db *gorm.DB) {
	tok, f, ok := prepare(db, "delete")
	if !ok {
		return
	}
	stmt := db.Statement
	keyed := keyedRows(stmt)
	if keyed == 0 && !hasConditions(stmt) && !db.AllowGlobalUpdate {
		db.AddError(gorm.ErrMissingWhereClause)
		return
	}
	stmt.AddClause(clause.Where{Exprs: []clause.Expression{cond{col: f.DBName, fence: tok.fence}}})
	stmtstate.Put(stmt, stateKey, &state{op: "delete", tok: tok, field: f, keyed: keyed})
}

// softDeleteFence wraps the SET clause builder. A soft delete builds its
// UPDATE inside gorm:delete, after the guard, from a SET clause of its own
// (GORM replaces any SET added before); the builder adds "fence = mine" to
// it there. A soft-deleted row then carries its deleter's fence, so that
// an older holder's Unscoped Updates, Save or Delete of it, or an upsert
// over it, meets the greater fence and is refused: the deleted row is the
// tombstone that keeps the fence.
func softDeleteFence(prev clause.ClauseBuilder) clause.ClauseBuilder {
	return func(c clause.Clause, b clause.Builder) {
		if stmt, ok := b.(*gorm.Statement); ok {
			if st, _ := stmtstate.Peek(stmt, stateKey).(*state); st != nil && st.op == "delete" {
				if set, ok := c.Expression.(clause.Set); ok {
					c.Expression = withFence(set, st.field, st.tok.fence)
					st.soft = true
				}
			}
		}
		if prev != nil {
			prev(c, b)
			return
		}
		c.Build(b)
	}
}

// withFence returns set with its assignment to the fence column replaced
// by "fence = mine" (appended when there was none).
func withFence(set clause.Set, f *schema.Field, fence int64) clause.Set {
	out := make(clause.Set, 0, len(set)+1)
	for _, a := range set {
		if a.Column.Name == f.DBName && (a.Column.Table == "" || a.Column.Table == clause.CurrentTable || a.Column.Table == f.Schema.Table) {
			continue
		}
		out = append(out, a)
	}
	return append(out, clause.Assignment{Column: clause.Column{Name: f.DBName}, Value: fence})
}

func hasConditions(stmt *gorm.Statement) bool {
	c, ok := stmt.Clauses["WHERE"]
	if !ok {
		return false
	}
	w, ok := c.Expression.(clause.Where)
	return ok && len(w.Exprs) > 0
}
