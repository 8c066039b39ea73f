package sqlite

import (
	"strconv"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// RowLock has no row locks: only the writer lock, which lockplugin's
// SQLiteWriterLock option takes in their place.
func (*Driver) RowLock() sqldriver.RowLock { return rowLock{} }

type rowLock struct{ sqldriver.RowLockDefaults }

// StrengthRefusal points FOR UPDATE and FOR SHARE to SQLiteWriterLock.
func (rowLock) StrengthRefusal(f dialects.Feature) string {
	if f == dialects.ForUpdate || f == dialects.ForShare {
		return "SQLite has no row locks; lockplugin.New(lockplugin.SQLiteWriterLock()) makes such reads take the database's writer lock instead"
	}
	return ""
}

// WriterLock is SQLite's one writer per database.
func (rowLock) WriterLock() sqldriver.WriterLock { return writerLock{} }

// writerLock takes the writer lock by a write that changes nothing: DELETE
// FROM the query's table WHERE 0. SQLite takes the lock when a write
// statement starts, whether or not it matches a row (holds does the same
// with UPDATE t SET k = k WHERE k = ?). From then on until the transaction
// ends nobody else can write, and, in WAL mode, the transaction's reads see
// the latest commit: a transaction whose read snapshot is older cannot take
// the lock at all (SQLITE_BUSY_SNAPSHOT).
type writerLock struct{}

func (writerLock) Take(table string) string { return "DELETE FROM " + table + " WHERE 0" }

func (writerLock) ReadBusyTimeout() string { return "PRAGMA busy_timeout" }

func (writerLock) SetBusyTimeout(ms int) string { return "PRAGMA busy_timeout = " + strconv.Itoa(ms) }
