package clauses

import "errors"

// ErrNotInTransaction is returned for a locking read outside a
// transaction: its locks would be released as soon as the statement ends,
// which protects nothing. Run the read inside db.Transaction, or turn the
// check off with Config.AllowOutsideTransaction (lockplugin's
// AllowLocksOutsideTransaction option). DryRun statements are exempt.
var ErrNotInTransaction = errors.New("lockplugin: locking read outside a transaction")

// ErrInvalidLock is returned for a lock that no database could run as
// asked: NoWait together with SkipLocked, a bad table name in Of, a lock on
// Raw or Exec SQL (which GORM ignores), a lock used as a value.
var ErrInvalidLock = errors.New("lockplugin: invalid lock")
