package lockplugin

// StrictVersion refuses, with ErrZeroVersion, an update or delete of a
// versioned model whose primary key is set but whose version is zero, when
// its row exists:
//
//	db.Use(lockplugin.New(lockplugin.StrictVersion()))
//	err := db.Save(&Book{ID: 7, Title: "from a form without the version"}).Error
//	// errors.Is(err, lockplugin.ErrZeroVersion): row 7 exists; nothing written
//
// Without it such a write is the documented unguarded overwrite (it still
// increments the version, so that other holders of the row see a
// conflict), the trap of a struct decoded from a request that left the
// version out. Under StrictVersion the write is guarded by version zero:
// it updates a row only if that row is at version 0, and Save of a row
// that does not exist still inserts it. A row whose version is NULL (it
// predates the column) is refused with ErrZeroVersion too, the message
// naming the backfill (UPDATE t SET version = 1 WHERE version IS NULL); a
// struct read from that row carries NullVersion and is written, guarded.
// Updates by condition (db.Model(&Book{}).Where(...)) and
// SkipVersionCheck are not affected.
func StrictVersion() Option {
	return func(c *config) { c.strictVersion = true }
}
