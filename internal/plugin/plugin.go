// Package plugin holds what every lockplugin package needs to know about the
// root plugin without importing it: its name, and the one error for a
// *gorm.DB that does not have it.
package plugin

import (
	"errors"

	"gorm.io/gorm"
)

// Name is the name the root plugin registers under in gorm.Config.Plugins.
const Name = "lockplugin"

// ErrNotRegistered is returned when a lockplugin lock or versioned model is
// used on a *gorm.DB that does not have the plugin: its checks would not
// have run, so nothing was sent.
var ErrNotRegistered = errors.New("lockplugin: the plugin is not registered on this *gorm.DB; call db.Use(lockplugin.New())")

// Registered reports whether the plugin is registered on db.
func Registered(db *gorm.DB) bool {
	if db == nil || db.Config == nil {
		return false
	}
	_, ok := db.Plugins[Name]
	return ok
}

// InTransaction reports whether statements on pool run inside a
// transaction: *sql.Tx, GORM's prepared-statement transaction, and any pool
// that can commit (dbresolver leaves a transaction's pool alone). Every
// lockplugin package decides "is this a transaction?" here, so that the
// answer is the same for a lock check, a version batch and a lease store.
func InTransaction(pool gorm.ConnPool) bool {
	_, ok := pool.(gorm.TxCommitter)
	return ok
}
