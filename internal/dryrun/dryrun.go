// Package dryrun provides a stand-in GORM dialector for tests that render
// SQL without a database: the root module requires no SQL driver, and no
// GORM Oracle dialector is available at all, so unit tests and the Oracle
// rendering tests open this one under the name of the database they speak
// for.
package dryrun

import (
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/migrator"
	"gorm.io/gorm/schema"
)

// Dialector is a minimal dialector that reports DialectorName and
// ServerVersion the way the real ones do, quotes and binds like the database
// it stands in for, and sends nothing anywhere.
type Dialector struct {
	DialectorName string
	ServerVersion string
}

// Open returns a *gorm.DB in DryRun mode over a stand-in dialector.
func Open(name, version string) (*gorm.DB, error) {
	return gorm.Open(&Dialector{DialectorName: name, ServerVersion: version}, &gorm.Config{
		DryRun:                 true,
		SkipDefaultTransaction: true,
		DisableAutomaticPing:   true,
		Logger:                 logger.Discard,
	})
}

// Name reports the stood-in dialector's name.
func (d *Dialector) Name() string { return d.DialectorName }

// Initialize registers GORM's default callbacks.
func (d *Dialector) Initialize(db *gorm.DB) error {
	cfg := &callbacks.Config{}
	if d.DialectorName == "oracle" {
		cfg.QueryClauses = []string{"SELECT", "FROM", "WHERE", "GROUP BY", "ORDER BY", "LIMIT", "FOR"}
	}
	callbacks.RegisterDefaultCallbacks(db, cfg)
	if d.DialectorName == "oracle" {
		db.ClauseBuilders["LIMIT"] = func(c clause.Clause, b clause.Builder) {
			l, ok := c.Expression.(clause.Limit)
			if !ok {
				return
			}
			if l.Offset > 0 {
				b.WriteString("OFFSET " + strconv.Itoa(l.Offset) + " ROWS")
			}
			if l.Limit != nil && *l.Limit >= 0 {
				if l.Offset > 0 {
					b.WriteByte(' ')
				}
				b.WriteString("FETCH NEXT " + strconv.Itoa(*l.Limit) + " ROWS ONLY")
			}
		}
	}
	return nil
}

// Migrator returns GORM's generic migrator; nothing is ever migrated.
func (d *Dialector) Migrator(db *gorm.DB) gorm.Migrator {
	return migrator.Migrator{Config: migrator.Config{DB: db, Dialector: d}}
}

// DataTypeOf returns a generic type name.
func (d *Dialector) DataTypeOf(f *schema.Field) string { return string(f.DataType) }

// DefaultValueOf returns DEFAULT.
func (d *Dialector) DefaultValueOf(*schema.Field) clause.Expression {
	return clause.Expr{SQL: "DEFAULT"}
}

// BindVarTo writes the stood-in database's placeholder.
func (d *Dialector) BindVarTo(w clause.Writer, stmt *gorm.Statement, _ interface{}) {
	n := strconv.Itoa(len(stmt.Vars))
	switch d.DialectorName {
	case "postgres":
		w.WriteString("$" + n)
	case "oracle":
		w.WriteString(":" + n)
	case "sqlserver":
		w.WriteString("@p" + n)
	default:
		w.WriteByte('?')
	}
}

// QuoteTo quotes an identifier, dotted parts one by one.
func (d *Dialector) QuoteTo(w clause.Writer, s string) {
	open, closing := `"`, `"`
	switch d.DialectorName {
	case "mysql":
		open, closing = "`", "`"
	case "sqlserver":
		open, closing = "[", "]"
	}
	for i, part := range strings.Split(s, ".") {
		if i > 0 {
			w.WriteByte('.')
		}
		w.WriteString(open + strings.ReplaceAll(part, closing, closing+closing) + closing)
	}
}

// Explain interpolates vars for logs.
func (d *Dialector) Explain(sql string, vars ...interface{}) string {
	return logger.ExplainSQL(sql, nil, `'`, vars...)
}
