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
// The version is taken from the model GORM writes: the value given to Save
// or Delete, the Model of Update and Updates. Where that carries none, the
// loaded struct GORM takes the key or the values from guards the statement:
// db.Model(&b).Delete(&Book{}) is guarded by b's version, and
// db.Model(&Book{ID: id}).Updates(&b) by the version b was loaded at.
//
// A guarded statement that matches no row returns a *ConcurrencyError, and
// Save does not fall back to its upsert. On success the struct in memory
// carries the new version.
//
// Writes that carry no loaded version (an update by condition, a Save of a
// struct whose version is zero, an upsert) are not guarded, but increment
// the version of every row they touch, so that whoever holds one of those
// rows sees a conflict; an upsert never moves a version back. Save of a
// slice saves each element with its own guarded statement, all or nothing;
// so does a FullSaveAssociations save of loaded associations, which GORM
// would otherwise send as an upsert that overwrites newer rows.
package version
