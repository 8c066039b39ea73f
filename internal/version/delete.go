package version

import (
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/lockplugin/lockplugin/internal/stmtstate"
)

// loadedModel returns the rows of the statement's Model when the value
// given to Delete is another, addressable one (Delete(&T{}) on
// Model(&loaded)) and the Model is loaded: GORM then deletes the Model's
// row, by its key, so the Model's version guards the delete.
func loadedModel(stmt *gorm.Statement, f *schema.Field) ([]row, bool) {
	if stmt.Model == nil || sameValue(stmt.Model, stmt.Dest) || !stmt.ReflectValue.CanAddr() {
		return nil, false
	}
	rv, ok := ofModelType(stmt, stmt.Model)
	if !ok {
		return nil, false
	}
	rows, loaded, err := collectValue(stmt, f, rv)
	return rows, err == nil && loaded
}

// guardDelete runs just before gorm:delete and adds the version condition
// to the DELETE (or to the soft delete's UPDATE) of a loaded model. A soft
// delete also increments the version (see softDeleteBump).
func (g *guard) guardDelete(db *gorm.DB) {
	st := g.prepare(db, opDelete)
	if st == nil {
		return
	}
	stmt, f := db.Statement, st.field
	if keyless(db, opDelete) {
		return
	}
	if !st.loaded {
		if rows, ok := loadedModel(stmt, f); ok {
			st.rows, st.loaded = rows, true
		}
	}
	if !st.loaded && !skipped(stmt) && len(st.rows) == 1 && !st.rows[0].keyed && st.rows[0].version != 0 {
		// db.Where("id = ?", id).Delete(&Book{Version: v}): the version
		// the caller carries guards the delete, with the caller's
		// conditions picking the row.
		if !hasConditions(stmt) && !db.AllowGlobalUpdate {
			db.AddError(gorm.ErrMissingWhereClause)
			return
		}
		st.rows[0].pk, st.byCond, st.loaded = nil, true, true
	}
	if !st.loaded && g.strict && !skipped(stmt) && len(st.rows) > 0 {
		// Strict: a keyed model without a version deletes only a row at
		// version 0; any other row is refused with ErrZeroVersion.
		keyed := true
		for _, r := range st.rows {
			keyed = keyed && r.keyed
		}
		st.zero, st.loaded = keyed, keyed
	}
	rows, loaded := st.rows, st.loaded
	if loaded && !skipped(stmt) {
		st.guarded = true
		stmt.AddClause(clause.Where{Exprs: []clause.Expression{versionCond{field: f, rows: rows}}})
		if len(rows) > 1 {
			beginBatch(db, st)
		}
	}
	stmtstate.Put(stmt, stateKey, st)
}

// softDeleteBump wraps the SET clause builder. A soft delete builds its
// UPDATE inside gorm:delete, after the guard, from a SET clause of its own;
// the builder adds the version increment to it there, so that a stale
// holder of the row cannot write it back even through Unscoped.
func softDeleteBump(prev clause.ClauseBuilder) clause.ClauseBuilder {
	return func(c clause.Clause, b clause.Builder) {
		if stmt, ok := b.(*gorm.Statement); ok {
			if st, _ := stmtstate.Peek(stmt, stateKey).(*state); st != nil && st.op == opDelete {
				if set, ok := c.Expression.(clause.Set); ok {
					c.Expression = clause.Set(withBump(set, st.field))
					st.bumped = true
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
