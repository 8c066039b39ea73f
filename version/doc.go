// Package version is lockplugin's optimistic locking: a version column that
// guards every UPDATE and DELETE of a model by the version it was loaded
// with, increments it, and turns a stale write into ErrConcurrency instead
// of a silent overwrite.
//
// Applications use it through the root package (lockplugin.Version,
// lockplugin.ErrConcurrency, lockplugin.RetryOnConflict,
// lockplugin.SkipVersionCheck) after db.Use(lockplugin.New()), which calls
// Register.
//
// A model is "loaded" when its primary key and its version are both
// non-zero. For a loaded model, every update path of GORM (Save, Updates
// with a struct or a map, Update, UpdateColumn, UpdateColumns,
// Select(...).Updates, the generics API) and Delete, soft delete included,
// sends the one statement GORM would have sent anyway, with the guard and
// the increment in it:
//
//	UPDATE books SET title = ?, version = books.version + 1 WHERE id = ? AND books.version = ?
//	DELETE FROM books WHERE books.version = ? AND books.id = ?
//
// A guarded statement that matches no row returns a *ConcurrencyError, and
// Save does not fall back to its upsert. On success the struct in memory
// carries the new version.
//
// Writes that carry no loaded version (an update by condition, a Save of a
// struct whose version is zero, an upsert) are not guarded, but increment
// the version of every row they touch, so that whoever holds one of those
// rows sees a conflict; an upsert never moves a version back. Save of a
// slice saves each element with its own guarded statement, all or nothing.
package version
