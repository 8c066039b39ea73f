package lockplugin

import (
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin/internal/version"
)

// Version is an optimistic-locking version column. Embed it in a model
// (column "version") or declare a named field of this type with any column
// name; a model has at most one, and never a *Version:
//
//	type Book struct {
//		ID    uint
//		Title string
//		lockplugin.Version
//	}
//
//	type Invoice struct {
//		ID  uint
//		Rev lockplugin.Version `gorm:"column:lock_version"`
//	}
//
// With the plugin registered (db.Use(New())), Create writes 1, or keeps a
// non-zero value already set. A model is loaded when its primary key and
// its version are both non-zero. For a loaded model every GORM write path
// (Save, Updates with a struct or a map, Update, UpdateColumn(s),
// Select(...).Updates, the generics API, and Delete, soft delete included)
// sends the one statement GORM sends anyway, guarded by the loaded version
// and incrementing it:
//
//	UPDATE books SET title = ?, version = COALESCE(books.version, 0) + 1 WHERE id = ? AND books.version = ?
//
// On success the struct in memory carries the new version. One GORM call
// cannot keep it: Association("X").Delete on a belongs-to is sent as an
// UPDATE by condition on a fresh model, which increments the owner row's
// version out of reach of the owner struct; its next write is an
// ErrConcurrency that says so. Read the owner again after it, or use
// Association("X").Clear or Replace, which write through the struct. A guarded
// statement that matches no row writes nothing and returns a
// *ConcurrencyError (errors.Is(err, ErrConcurrency)); Save then does not
// fall back to its upsert. A version the caller supplies in the values of
// an update (a struct field, or a map key under the column or the field
// name) guards the write too, by key or, for a model without one, by the
// caller's conditions.
//
// Writes that carry no loaded version (an update by condition, a Save of a
// struct whose version is zero, an upsert) are not guarded, but they
// increment the version of every row they touch, so that whoever holds one
// of those rows sees a conflict; StrictVersion refuses the keyed ones whose
// row exists (ErrZeroVersion), and SkipVersionCheck sends one statement
// without its guard. Save of a slice and a FullSaveAssociations save of
// loaded associations write each row with its own guarded statement, all
// or nothing. A versioned model written through a *gorm.DB without the
// plugin fails with ErrNotRegistered before any SQL.
//
// Rows that existed before the column: AutoMigrate creates the column
// DEFAULT 1 (a default tag of the field's own is kept), so they
// start at 1. A NULL version (a column added by hand or by an older
// lockplugin) scans as NullVersion, and a write of that struct is guarded
// by "version IS NULL"; every increment is COALESCE(version, 0) + 1, so the
// first write leaves version 1. The backfill that removes the NULLs is
// UPDATE t SET version = 1 WHERE version IS NULL.
//
// A Version is a plain int64 to database/sql, to every driver and to
// encoding/json (a JSON number). It
// deliberately has no Scan, Value or MarshalJSON method: the methods of an
// embedded field are promoted to the model, and GORM would then treat the
// whole model as one value. Its methods CreateClauses, UpdateClauses and
// DeleteClauses are GORM's schema hooks (schema.CreateClausesInterface and
// its update and delete peers), called by GORM, not by applications: they
// set the initial version and make a write fail with ErrNotRegistered when
// the plugin is missing.
type Version = version.Version

// NullVersion is the Version of a struct read from a row whose version
// column is NULL (a row that predates the column). Such a struct is
// loaded: its Save or Delete is guarded by "version IS NULL" and leaves
// version 1. It is -1, so that it survives encoding/json like any version.
const NullVersion = version.Null

// ErrConcurrency is matched by errors.Is when a guarded UPDATE or DELETE
// matched no row because the row changed or was deleted since it was read.
// The error is a *ConcurrencyError. Nothing was written; read the row again
// and retry (RetryOnConflict does), or show the user the newer data.
var ErrConcurrency = version.ErrConcurrency

// ErrZeroVersion is matched by errors.Is when, under StrictVersion, an
// update or delete of a versioned model with a primary key but no version
// finds its row. Nothing was written; send the version the row was read
// at. It is not an ErrConcurrency: retrying cannot help.
var ErrZeroVersion = version.ErrZeroVersion

// ConcurrencyError is the error of a stale write (a guarded UPDATE or
// DELETE that matched no row); errors.Is(err, ErrConcurrency) is true for
// it, and errors.As gives its fields:
//
//   - Entity any: the stale model as it was passed to GORM (the pointer
//     given to Save, Model or Delete; for a slice Save, a pointer to the
//     stale element; for a version given in the values of Updates, the
//     struct given to Updates, or the Model when the values are a map). Its
//     version is the one it was loaded with.
//   - Op string: "update" or "delete".
//   - Table string: the table written to.
//   - PrimaryKey []any: the primary key values of the stale row, in the
//     order of the model's primary key fields (for a write guarded by the
//     caller's conditions, the key of the row they match now; nil when they
//     match none).
//   - Version Version: the version the model was loaded with.
//   - Current Version: the version the row holds now, when it still exists.
//     Current == Version means the row is still at that version and the
//     statement's other conditions matched nothing.
//   - Deleted bool: the row no longer exists (or is soft-deleted).
//
// Current and Deleted come from one re-read done only after the failure
// (on the failed statement's own connection; a locking read inside a
// MySQL or MariaDB transaction). Its Error method names the operation, the
// table, the key and the version read, and says which of these happened.
//
//	var ce *lockplugin.ConcurrencyError
//	if errors.As(err, &ce) && ce.Deleted {
//		// the order was deleted since it was read
//	}
type ConcurrencyError = version.ConcurrencyError

// SkipVersionCheck returns a clause that sends one statement without its
// version guard, for an administrator's deliberate overwrite. The version
// is still incremented, so that other holders of the row see a conflict:
//
//	db.Clauses(lockplugin.SkipVersionCheck()).Save(&book)
func SkipVersionCheck() clause.Expression { return version.SkipVersionCheck() }
