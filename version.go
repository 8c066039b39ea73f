package lockplugin

import (
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/internal/version"
)

// Version is an optimistic-locking version column: embed it in a model
// (column "version") or declare a named field of this type. With the plugin
// registered, every UPDATE and DELETE of a loaded model is guarded by the
// version it was loaded with and increments it; a stale write fails with
// ErrConcurrency. See package version.
//
//	type Book struct {
//		ID    uint
//		Title string
//		lockplugin.Version
//	}
type Version = version.Version

// ErrConcurrency is matched by errors.Is when a guarded UPDATE or DELETE
// matched no row because the row changed or was deleted since it was read.
// Nothing was written; read the row again and retry (RetryOnConflict does).
var ErrConcurrency = version.ErrConcurrency

// ErrZeroVersion is matched by errors.Is when, under StrictVersion, an
// update or delete of a versioned model with a primary key but no version
// finds its row. Nothing was written; send the version the row was read at.
var ErrZeroVersion = version.ErrZeroVersion

// ConcurrencyError is the error of a stale write: errors.As gives the stale
// model (Entity), the table, the primary key, the version it was read at,
// and whether the row has since changed (Current) or been deleted (Deleted).
type ConcurrencyError = version.ConcurrencyError

// SkipVersionCheck returns a clause that sends one statement without its
// version guard, for an administrator's deliberate overwrite. The version
// is still incremented, so that other holders of the row see a conflict:
//
//	db.Clauses(lockplugin.SkipVersionCheck()).Save(&book)
func SkipVersionCheck() clause.Expression { return version.SkipVersionCheck() }
