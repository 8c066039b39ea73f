package fence

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/dialects"
)

// Callback names, as they appear in db.Callback().
const (
	guardName  = "lockplugin:fence_guard"
	checkName  = "lockplugin:fence_check"
	createName = "lockplugin:fence_create"
	rawName    = "lockplugin:fence_raw"
	readName   = "lockplugin:fence_raw_read"

	// The version callbacks the fence callbacks are ordered against: the
	// fence guard runs after the version guard (and adds to the SET it
	// built), and its check before the version check (which restores the
	// statement's SET), so that the two compose on one statement.
	versionGuard = "lockplugin:version_guard"
	versionCheck = "lockplugin:version_check"
)

// Register installs the fence callbacks on db, after version.Register.
// The root lockplugin plugin calls it.
func Register(db *gorm.DB) error {
	if db == nil || db.Config == nil {
		return errors.New("lockplugin: fence.Register needs an opened *gorm.DB")
	}
	cb := db.Callback()
	for _, need := range []struct{ kind, name string }{
		{"update", "gorm:update"}, {"delete", "gorm:delete"}, {"create", "gorm:create"},
		{"query", "gorm:query"}, {"row", "gorm:row"},
	} {
		var fn func(*gorm.DB)
		switch need.kind {
		case "update":
			fn = cb.Update().Get(need.name)
		case "delete":
			fn = cb.Delete().Get(need.name)
		case "query":
			fn = cb.Query().Get(need.name)
		case "row":
			fn = cb.Row().Get(need.name)
		default:
			fn = cb.Create().Get(need.name)
		}
		if fn == nil {
			return fmt.Errorf("lockplugin: the %s dialector has no %s callback %q; fenced writes cannot be installed", db.Dialector.Name(), need.kind, need.name)
		}
	}
	steps := []func() error{
		func() error {
			return cb.Update().Before("gorm:update").After(versionGuard).Register(guardName, guardUpdate)
		},
		func() error {
			return cb.Update().After("gorm:update").Before(versionCheck).Register(checkName, checkWrite)
		},
		func() error {
			return cb.Delete().Before("gorm:delete").After(versionGuard).Register(guardName, guardDelete)
		},
		func() error {
			return cb.Delete().After("gorm:delete").Before(versionCheck).Register(checkName, checkWrite)
		},
		func() error { return cb.Create().Before("gorm:create").Register(createName, guardCreate) },
		func() error { return cb.Create().After("gorm:create").Register(checkName, checkCreate) },
		func() error { return cb.Raw().Before("gorm:raw").Register(rawName, refuseRaw) },
		// db.Raw(sql) followed by Scan, Row, Rows, Find, First...: GORM
		// sends it through the query or row callbacks, SQL already built.
		func() error { return cb.Query().Before("gorm:query").Register(readName, refuseRawWrite) },
		func() error { return cb.Row().Before("gorm:row").Register(readName, refuseRawWrite) },
		func() error {
			if db.ClauseBuilders == nil {
				db.ClauseBuilders = map[string]clause.ClauseBuilder{}
			}
			db.ClauseBuilders["SET"] = softDeleteFence(db.ClauseBuilders["SET"])
			return nil
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// refuseRaw fails db.Exec under a fence: raw SQL cannot be guarded, and
// must not pass for fenced.
func refuseRaw(db *gorm.DB) {
	if _, ok := tokenOf(db.Statement); ok && db.Error == nil {
		db.AddError(fmt.Errorf("%w: db.Exec under a fence: write through a model with a lockplugin.Fence column, or add \"fence <= ?\" and \"fence = ?\" yourself on a context without WithFence; nothing was sent", ErrUnguarded))
	}
}

// refuseRawWrite fails a db.Raw statement under a fence that may write
// (rawWrite): it would be sent unguarded. A raw read passes.
func refuseRawWrite(db *gorm.DB) {
	stmt := db.Statement
	if stmt.SQL.Len() == 0 || db.Error != nil {
		return // GORM builds a SELECT: a read
	}
	if _, ok := tokenOf(stmt); !ok {
		return
	}
	if kw, writes := rawWrite(stmt.SQL.String(), drivers.For(dialects.Of(db)).Reread().RawLexis()); writes {
		err := fmt.Errorf("%w: db.Raw under a fence with a statement that may write (%s): write through a model with a lockplugin.Fence column, or send it on a context without WithFence with \"fence <= ?\" and \"fence = ?\" of your own; nothing was sent", ErrUnguarded, kw)
		db.AddError(err)
		if rows, ok := db.Get("rows"); ok && rows == false {
			// db.Row() returns the statement's *sql.Row, nil after an
			// error: a caller's Row().Scan would panic instead of seeing
			// the refusal. A Row that carries it instead.
			stmt.Dest = refusedRow(err)
		}
	}
}

// refusals is a database/sql pool whose every connection attempt fails
// with the error in its context: QueryRowContext on it makes a *sql.Row
// carrying that error (database/sql has no other way to build one). Made
// on first use: a pool starts a goroutine, which importing lockplugin
// must not.
var refusals = sync.OnceValue(func() *sql.DB { return sql.OpenDB(refusingConnector{}) })

type refusalKey struct{}

func refusedRow(err error) *sql.Row {
	return refusals().QueryRowContext(context.WithValue(context.Background(), refusalKey{}, err), "")
}

type refusingConnector struct{}

func (refusingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if err, ok := ctx.Value(refusalKey{}).(error); ok {
		return nil, err
	}
	return nil, ErrUnguarded
}

func (refusingConnector) Driver() driver.Driver { return refusingDriver{} }

type refusingDriver struct{}

func (refusingDriver) Open(string) (driver.Conn, error) { return nil, ErrUnguarded }
