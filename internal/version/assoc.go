package version

import (
	"fmt"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// assocs remembers, for one *gorm.DB, the owner rows that GORM's
// Association(...).Delete of a belongs-to wrote. GORM sends that as an
// UPDATE by condition on a fresh model ("SET author_id = NULL WHERE
// id IN (owners) AND author_id IN (values)"): the guard increments the
// owner rows' versions, as for any write by condition, so that whoever
// holds one of them sees the change, but the owner struct the association
// was opened on is out of the statement's reach and keeps its old version.
// Its next write is then refused with ErrConcurrency; the memo lets that
// error say why and what to do. It holds at most assocMemoMax rows.
type assocs struct {
	mu sync.Mutex
	m  map[string]string // table NUL primary key -> relationship name
}

const assocMemoMax = 4096

func assocKey(table string, pk any) string { return table + "\x00" + fmt.Sprint(pk) }

func (a *assocs) note(table, rel string, pks []any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil || len(a.m)+len(pks) > assocMemoMax {
		a.m = make(map[string]string, len(pks))
	}
	for _, pk := range pks {
		a.m[assocKey(table, pk)] = rel
	}
}

// hint returns what the ConcurrencyError of a stale write of the row
// table/pk says, when an association Delete through this *gorm.DB wrote it.
func (a *assocs) hint(table string, pk []any) string {
	if a == nil || len(pk) != 1 {
		return ""
	}
	a.mu.Lock()
	rel, ok := a.m[assocKey(table, pk[0])]
	a.mu.Unlock()
	if !ok {
		return ""
	}
	return fmt.Sprintf("the row was written by Association(%q).Delete through this *gorm.DB, which GORM sends by condition, "+
		"so it moved the row's version but not the owner struct's: read the owner again after Association(%q).Delete, "+
		"or use Association(%q).Clear() (or Replace), which writes through the struct and keeps its version", rel, rel, rel)
}

// noteAssocDelete recognises GORM's belongs-to Association(...).Delete: an
// update by condition whose values are a map setting only belongs-to
// foreign keys to NULL, whose conditions hold "table.pk IN (owners)".
func (g *guard) noteAssocDelete(stmt *gorm.Statement) {
	s := stmt.Schema
	m, ok := stmt.Dest.(map[string]interface{})
	if !ok || len(m) == 0 || len(s.PrimaryFields) != 1 {
		return
	}
	rel := ""
	for k, v := range m {
		if v != nil {
			return
		}
		found := ""
		for _, r := range s.Relationships.BelongsTo {
			for _, ref := range r.References {
				if !ref.OwnPrimaryKey && ref.ForeignKey != nil && ref.ForeignKey.DBName == k {
					found = r.Name
				}
			}
		}
		if found == "" {
			return
		}
		rel = found
	}
	c, ok := stmt.Clauses["WHERE"]
	if !ok {
		return
	}
	w, ok := c.Expression.(clause.Where)
	if !ok {
		return
	}
	if vals, ok := ownersIn(w.Exprs, s); ok {
		g.assocs.note(s.Table, rel, vals)
	}
}

// ownersIn finds "table.pk IN (...)" among exprs (GORM's Clauses wraps
// them in an AND) and returns its values.
func ownersIn(exprs []clause.Expression, s *schema.Schema) ([]any, bool) {
	for _, e := range exprs {
		switch x := e.(type) {
		case clause.IN:
			if isColumn(x.Column, s, s.PrimaryFields[0].DBName) {
				return x.Values, true
			}
		case clause.AndConditions:
			if v, ok := ownersIn(x.Exprs, s); ok {
				return v, true
			}
		}
	}
	return nil, false
}

func isColumn(c any, s *schema.Schema, name string) bool {
	col, ok := c.(clause.Column)
	return ok && col.Name == name && (col.Table == s.Table || col.Table == clause.CurrentTable || col.Table == "")
}
