package holds

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// runner sends this package's fixed statements straight to a connection
// pool or transaction, and reports each to db's logger as GORM would have.
// It skips GORM's statement builder and callbacks: every statement here is
// fixed SQL with bind parameters, so building it anew each call (and
// rendering it for the logger whatever the log level) only cost CPU, and
// dbresolver's callbacks would send reads to a replica. The statements go
// where the call's pool is: the caller's transaction, or the source pool.
type runner struct {
	db *gorm.DB      // the logger and dialector
	q  gorm.ConnPool // where statements run
}

// exec runs a statement and returns the rows it affected.
func (r runner) exec(ctx context.Context, query string, args ...any) (int64, error) {
	begin := time.Now()
	res, err := r.q.ExecContext(ctx, query, args...)
	n := int64(-1)
	if err == nil {
		n, _ = res.RowsAffected()
	}
	r.trace(ctx, begin, query, args, n, err)
	return n, err
}

// insert runs an INSERT and returns the id the database gave the row.
func (r runner) insert(ctx context.Context, query string, args ...any) (int64, error) {
	begin := time.Now()
	res, err := r.q.ExecContext(ctx, query, args...)
	var id int64
	if err == nil {
		id, err = res.LastInsertId()
	}
	r.trace(ctx, begin, query, args, 1, err)
	return id, err
}

// row runs a query and scans its first row into dest; found is false when
// there is none.
func (r runner) row(ctx context.Context, query string, args []any, dest ...any) (found bool, err error) {
	begin := time.Now()
	err = r.q.QueryRowContext(ctx, query, args...).Scan(dest...)
	n := int64(1)
	if errors.Is(err, sql.ErrNoRows) {
		n, err = 0, nil
	}
	r.trace(ctx, begin, query, args, n, err)
	return n == 1 && err == nil, err
}

// rows runs a query and hands its rows to scan, closing them after.
func (r runner) rows(ctx context.Context, query string, args []any, scan func(*sql.Rows) error) error {
	begin := time.Now()
	rows, err := r.q.QueryContext(ctx, query, args...)
	if err == nil {
		err = scan(rows)
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}
	r.trace(ctx, begin, query, args, -1, err)
	return err
}

func (r runner) trace(ctx context.Context, begin time.Time, query string, args []any, n int64, err error) {
	if r.db == nil || r.db.Config == nil || r.db.Logger == nil {
		return
	}
	r.db.Logger.Trace(ctx, begin, func() (string, int64) {
		if r.db.Dialector == nil {
			return query, n
		}
		return r.db.Dialector.Explain(query, args...), n
	}, err)
}

// bind renders the ? placeholders of q as the driver's bind parameters,
// numbered in order: $1 on PostgreSQL, @p1 on SQL Server, ? on MySQL and
// SQLite (BindVar; :1 on Oracle, which holds refuses). A ? followed by a
// digit is a placeholder numbered already (SQLite's ?n, where activeOf
// repeats arguments) and is left as it is. The statements hold no ? but
// their placeholders (identifiers are validated, no string literal has
// one).
func bind(dr sqldriver.Phrasing, q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' && (i+1 == len(q) || q[i+1] < '0' || q[i+1] > '9') {
			n++
			b.WriteString(dr.BindVar(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
