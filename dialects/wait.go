package dialects

import "time"

// LockWait is the bounded row-lock wait (lockplugin.WaitAtMost): a locking
// read that waits for a locked row at most a given time, then fails with
// ErrLockNotAvailable.
const LockWait Feature = "WaitAtMost"

// MaxLockWait is the longest bound WaitAtMost accepts. PostgreSQL's
// lock_timeout and SQL Server's LOCK_TIMEOUT are 32-bit millisecond
// counts (24.8 days); a day is far beyond any wait worth bounding.
const MaxLockWait = 24 * time.Hour
