package version

import (
	"fmt"
	"strings"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/internal/stmtstate"
)

// tables remembers, for one *gorm.DB, the tables it has seen a versioned
// model written to or read from, and their version column, so that a write
// GORM cannot tie to a model (db.Table("books").Updates(map)) still
// increments the version of the rows it changes. Only tables are kept
// whose model has a version field: a table is never forgotten, and never
// wrongly remembered because another, unversioned struct maps to it.
type tables struct {
	mu     sync.RWMutex
	column map[string]string // table name -> version column
}

func (t *tables) lookup(table string) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	col, ok := t.column[table]
	return col, ok
}

func (t *tables) remember(table, col string) {
	if table == "" {
		return
	}
	if got, ok := t.lookup(table); ok && got == col {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.column == nil {
		t.column = make(map[string]string)
	}
	t.column[table] = col
}

// learn runs before gorm:query (and from the other guards): the first read
// of a versioned model teaches this *gorm.DB its table. Holding a version
// means having read the row, so every table whose version a caller of
// this *gorm.DB can hold is known before that caller can be overwritten.
func (g *guard) learn(db *gorm.DB) {
	stmt := db.Statement
	if stmt.Schema == nil {
		return
	}
	f, err := versionField(stmt.Schema, opUpdate)
	if err != nil || f == nil {
		return
	}
	g.tables.remember(stmt.Schema.Table, f.DBName)
	if stmt.Table != stmt.Schema.Table && stmt.TableExpr == nil {
		g.tables.remember(stmt.Table, f.DBName)
	}
}

// guardTable runs for an UPDATE that GORM cannot tie to a model, as in
// db.Table("books").Where(...).Updates(map[string]any{...}), Update and
// UpdateColumn. When the table is one this *gorm.DB knows as versioned,
// the UPDATE increments the version of every row it changes, so that
// whoever holds one of them sees a conflict. A version value in such a
// write is refused: without a model there is nothing to guard it with.
func (g *guard) guardTable(db *gorm.DB) {
	stmt := db.Statement
	table := stmt.Table
	// Table(name) sets TableExpr to the quoted name; anything else (an
	// alias, a join, a schema-qualified name) is not a table this
	// *gorm.DB has seen by that name.
	if stmt.TableExpr != nil && strings.Trim(stmt.TableExpr.SQL, "`\"[]") != table {
		return
	}
	col, ok := g.tables.lookup(table)
	if !ok {
		return
	}
	st := &state{op: opUpdate}
	var set clause.Set
	if c, ok := stmt.Clauses["SET"]; ok {
		s, ok := c.Expression.(clause.Set)
		if !ok {
			db.AddError(fmt.Errorf("lockplugin: cannot increment the version of table %s in an UPDATE whose SET clause is a %T; use db.Model(&T{})", table, c.Expression))
			return
		}
		set, st.userSet = s, &c
	} else {
		set = callbacks.ConvertToAssignments(stmt)
		if db.Error != nil || len(set) == 0 {
			return
		}
	}
	for _, a := range set {
		if a.Column.Name == col {
			db.AddError(fmt.Errorf("%w: lockplugin: the UPDATE of table %s writes its version column %s, which GORM cannot check without a model; use db.Model(&T{}) instead of db.Table(%q) so that the version guards the write",
				gorm.ErrInvalidData, table, col, stmt.Table))
			return
		}
	}
	stmt.AddClause(clause.Set(append(set[:len(set):len(set)], bumpColumn(col))))
	stmtstate.Put(stmt, stateKey, st)
}
