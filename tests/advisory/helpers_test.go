// Package advisory_test runs the advisory lock conformance suite against
// every reachable database.
package advisory_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// prefix starts every lock name and table of this package.
const prefix = "adv"

// lockName returns a lock name unique to the test and run.
func lockName(t testing.TB) string { return testdb.Unique(t, prefix) }

// live runs fn on every database with advisory locks; on SQLite and TiDB
// it checks that the mechanism is refused instead.
func live(t *testing.T, fn func(t *testing.T, tg *testdb.Target)) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if !tg.Dialect.Supports(dialects.AdvisoryLock) {
			err := advisory.With(context.Background(), tg.DB, lockName(t), func(*gorm.DB) error {
				t.Fatalf("fn ran on %s", tg.Name)
				return nil
			})
			if !errors.Is(err, lockplugin.ErrUnsupported) {
				t.Fatalf("%s: err = %v, want ErrUnsupported", tg.Name, err)
			}
			t.Logf("refused on %s, as documented", tg.Name)
			return
		}
		fn(t, tg)
	})
}

// sessionID returns the server's id for the session conn runs on.
func sessionID(t testing.TB, tg *testdb.Target, conn *gorm.DB) int64 {
	t.Helper()
	id, err := querySessionID(tg, conn)
	if err != nil {
		t.Fatalf("session id: %v", err)
	}
	return id
}

// querySessionID is sessionID for goroutines other than the test's.
func querySessionID(tg *testdb.Target, conn *gorm.DB) (int64, error) {
	q := map[dialects.Kind]string{
		dialects.Postgres:  "SELECT pg_backend_pid()",
		dialects.MySQL:     "SELECT CONNECTION_ID()",
		dialects.MariaDB:   "SELECT CONNECTION_ID()",
		dialects.SQLServer: "SELECT @@SPID",
	}[tg.Dialect.Kind]
	var id int64
	err := conn.Raw(q).Scan(&id).Error
	return id, err
}

// kill ends session id from another session.
func kill(t testing.TB, tg *testdb.Target, id int64) {
	t.Helper()
	var err error
	switch tg.Dialect.Kind {
	case dialects.Postgres:
		var ok bool
		err = tg.Plain.Raw("SELECT pg_terminate_backend(?)", id).Scan(&ok).Error
		if err == nil && !ok {
			err = fmt.Errorf("pg_terminate_backend(%d) = false", id)
		}
	default: // MySQL, MariaDB and SQL Server all KILL a session id.
		err = tg.Plain.Exec(fmt.Sprintf("KILL %d", id)).Error
	}
	if err != nil {
		t.Fatalf("killing session %d: %v", id, err)
	}
}

// holder returns the session id that holds name according to the database,
// 0 when nobody holds it. SQL Server and TiDB tell only whether it is held
// (-1).
func holder(t testing.TB, tg *testdb.Target, name string) int64 {
	t.Helper()
	var id sql.NullInt64
	var err error
	switch tg.Dialect.Kind {
	case dialects.Postgres:
		k := advisory.PostgresKey(name)
		err = tg.Plain.Raw(`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND classid::bigint = ? AND objid::bigint = ? AND objsubid = 1`, k>>32, k&0xffffffff).Scan(&id).Error
	case dialects.MySQL, dialects.MariaDB:
		if tg.Dialect.Engine == dialects.TiDB {
			return tidbHolder(t, tg, name)
		}
		err = tg.Plain.Raw("SELECT IS_USED_LOCK(?)", name).Scan(&id).Error
	case dialects.SQLServer:
		var free int
		err = tg.Plain.Raw("SELECT APPLOCK_TEST('public', ?, 'Exclusive', 'Session')", name).Scan(&free).Error
		if free == 0 {
			id = sql.NullInt64{Int64: -1, Valid: true}
		}
	}
	if err != nil {
		t.Fatalf("who holds %q: %v", name, err)
	}
	return id.Int64
}

// userLockWait is the PROCESSLIST condition of a thread waiting in
// GET_LOCK: state "User lock" on MySQL and MariaDB; on TiDB, which shows no
// such state, the statement advisory sends to wait (advisory/tidb.go).
func userLockWait(tg *testdb.Target) string {
	if tg.Dialect.Engine == dialects.TiDB {
		// A prepared statement shows as Execute there.
		return "COMMAND IN ('Query', 'Execute') AND INFO LIKE 'SELECT GET_LOCK(ANY_VALUE(?), ANY_VALUE(?))%'"
	}
	return "STATE = 'User lock'"
}

// waiting counts the sessions waiting for name. MySQL and MariaDB do not
// say which lock a thread waits for, so there it counts the threads in
// "User lock" whose default database is waiterDB (see waiterPool).
func waiting(t testing.TB, tg *testdb.Target, name string) int {
	t.Helper()
	var n int
	var err error
	switch tg.Dialect.Kind {
	case dialects.Postgres:
		k := advisory.PostgresKey(name)
		err = tg.Plain.Raw(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND classid::bigint = ? AND objid::bigint = ? AND objsubid = 1`, k>>32, k&0xffffffff).Scan(&n).Error
	case dialects.MySQL, dialects.MariaDB:
		err = tg.Plain.Raw("SELECT count(*) FROM information_schema.PROCESSLIST WHERE "+userLockWait(tg)+" AND DB = ?", waiterDB).Scan(&n).Error
	case dialects.SQLServer:
		err = tg.Plain.Raw("SELECT count(*) FROM sys.dm_tran_locks WHERE resource_type = 'APPLICATION' AND request_status = 'WAIT'").Scan(&n).Error
	}
	if err != nil {
		t.Fatalf("waiters for %q: %v", name, err)
	}
	return n
}

// waiterDB is the default database of waiterPool's MySQL connections, which
// tells their threads apart in the process list.
const waiterDB = "information_schema"

// waiterPool opens a private pool whose waits waiting can see.
func waiterPool(t *testing.T, tg *testdb.Target) *testdb.Target {
	return testdb.Open(t, tg.Kind(), func(dsn string) string {
		if tg.Is(dialects.MySQL, dialects.MariaDB) {
			return replaceDB(dsn, waiterDB)
		}
		return dsn
	})
}

// replaceDB swaps the database of a go-sql-driver DSN.
func replaceDB(dsn, db string) string {
	slash, q := -1, len(dsn)
	for i := len(dsn) - 1; i >= 0; i-- {
		if dsn[i] == '?' {
			q = i
		}
		if dsn[i] == '/' {
			slash = i
			break
		}
	}
	if slash < 0 {
		return dsn
	}
	return dsn[:slash+1] + db + dsn[q:]
}

// eventually polls cond, which reads the database, until it holds or d
// passes. It observes a state the database reaches on its own schedule;
// nothing in the code under test waits on it.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hold takes name in a goroutine of its own with With and keeps it until
// the returned release is called; release returns With's error. inside runs
// in that goroutine, first thing in fn: it reports with t.Error, not
// t.Fatal.
func hold(t *testing.T, db *gorm.DB, name string, inside func(conn *gorm.DB)) (release func() error) {
	t.Helper()
	held := make(chan struct{})
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- advisory.With(context.Background(), db, name, func(conn *gorm.DB) error {
			if inside != nil {
				inside(conn)
			}
			close(held)
			<-stop
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("holder could not take %q: %v", name, err)
	}
	var once bool
	release = func() error {
		if once {
			return nil
		}
		once = true
		close(stop)
		return <-done
	}
	t.Cleanup(func() { _ = release() })
	return release
}
