// Package version is lockplugin's optimistic locking: a version column that
// guards every UPDATE and DELETE of a model by the version it was loaded
// with, increments it, and turns a stale write into ErrConcurrency instead
// of a silent overwrite.
//
// It is internal: applications use it through the root package
// (lockplugin.Version, lockplugin.ConcurrencyError, lockplugin.ErrConcurrency,
// lockplugin.ErrZeroVersion, lockplugin.RetryOnConflict,
// lockplugin.SkipVersionCheck, lockplugin.StrictVersion) after
// db.Use(lockplugin.New()), which calls Register. The root's doc comments
// are the ones users read (pkg.go.dev shows no internal docs); keep them in
// step with this package's.
//
// A model is "loaded" when its primary key and its version are both
// non-zero. For a loaded model, every update path of GORM (Save, Updates
// with a struct or a map, Update, UpdateColumn, UpdateColumns,
// Select(...).Updates, the generics API) and Delete, soft delete included,
// sends the one statement GORM would have sent anyway, with the guard and
// the increment in it:
//
//	UPDATE books SET title = ?, version = COALESCE(books.version, 0) + 1 WHERE id = ? AND books.version = ?
//	DELETE FROM books WHERE books.version = ? AND books.id = ?
//
// The version is taken from the model GORM writes: the value given to Save
// or Delete, the Model of Update and Updates. Where that carries none, the
// loaded struct GORM takes the key or the values from guards the statement:
// db.Model(&b).Delete(&Book{}) is guarded by b's version, and
// db.Model(&Book{ID: id}).Updates(&b) by the version b was loaded at.
//
// A version the caller supplies in the values of an update is a guard as
// well, in every form GORM accepts: a struct field
// (db.Model(&Book{}).Where("id = ?", id).Updates(Book{Version: 1}), with or
// without Model, and through the generics API), or a map key under the
// column or the field name (db.Model(&Book{ID: id}).Updates(map[string]any{
// "version": 1})). A model with a primary key is guarded by key and version;
// one without by the caller's conditions and the version, and a write that
// then matches no row is a conflict.
//
// A NULL version (a row older than the column) scans as Null; a model read
// at Null is loaded, guarded by "version IS NULL", and the increment's
// COALESCE leaves version 1. The column AutoMigrate creates has DEFAULT 1
// (see shape).
//
// A guarded statement that matches no row returns a *ConcurrencyError, and
// Save does not fall back to its upsert. On success the struct in memory
// carries the new version.
//
// Writes that carry no loaded version (an update by condition, a Save of a
// struct whose version is zero, an upsert) are not guarded, but increment
// the version of every row they touch, so that whoever holds one of those
// rows sees a conflict; an upsert never moves a version back, moves it
// only when a column changes (for the assignments GORM's UpdateAll and its
// association saves send), and is followed by one SELECT that gives the
// structs their rows' versions. Config.Strict refuses a keyed model without
// a version whose row exists (ErrZeroVersion). An UPDATE without a model
// (db.Table("books").Updates(map)) increments the version of the rows it
// changes once this *gorm.DB has seen the versioned model of that table.
// Save of a slice saves each element with its own guarded statement, all
// or nothing; so does a FullSaveAssociations save of loaded associations,
// which GORM would otherwise send as an upsert that overwrites newer rows.
// The savepoints these open inside a caller's transaction are released; on
// PostgreSQL a guarded multi-row UPDATE or DELETE inside a transaction
// opens none, and locks its rows first instead.
package version
