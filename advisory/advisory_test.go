package advisory

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
)

const (
	msAcquire = "DECLARE @result int; EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = @p2; SELECT @result"
	msRelease = "DECLARE @result int; EXEC @result = sp_releaseapplock @Resource = @p1, @LockOwner = 'Session'; SELECT @result"
)

// sqlServerFake answers sp_getapplock with code, sp_releaseapplock with
// releaseCode, and the clear-up after a doubtful answer with "NoLock".
func sqlServerFake(code, releaseCode int64) *fakeDB {
	return &fakeDB{answer: func(c call) ([]driver.Value, error) {
		switch {
		case strings.Contains(c.sql, "APPLOCK_MODE"):
			return []driver.Value{"NoLock"}, nil
		case strings.Contains(c.sql, "sp_getapplock"):
			return []driver.Value{code}, nil
		case strings.Contains(c.sql, "sp_releaseapplock"):
			return []driver.Value{releaseCode}, nil
		}
		return []driver.Value{int64(7)}, nil
	}}
}

func TestWithRunsFnOnTheLockConnection(t *testing.T) {
	f := sqlServerFake(0, 0)
	db := openFake(t, "sqlserver", "", f)
	ran := false
	err := With(context.Background(), db, "adv-job", func(conn *gorm.DB) error {
		ran = true
		var n int64
		return conn.Raw("SELECT 7").Scan(&n).Error
	})
	if err != nil || !ran {
		t.Fatalf("With: err=%v ran=%v", err, ran)
	}
	calls := f.calls()
	if got, want := f.statements(), []string{msAcquire, "SELECT 7", msRelease}; !reflect.DeepEqual(got, want) {
		t.Fatalf("statements:\n got %q\nwant %q", got, want)
	}
	if !reflect.DeepEqual(calls[0].args, []any{"adv-job", int64(-1)}) {
		t.Errorf("acquire args = %#v", calls[0].args)
	}
	if calls[1].conn != calls[0].conn || calls[2].conn != calls[0].conn {
		t.Errorf("fn and release ran on connections %d and %d, the lock on %d", calls[1].conn, calls[2].conn, calls[0].conn)
	}
	if _, closed := f.counts(); closed != 0 {
		t.Errorf("a healthy connection was closed instead of pooled (%d closed)", closed)
	}
}

func TestSQLServerReturnCodes(t *testing.T) {
	for _, tc := range []struct {
		code    int64
		timeout bool
		clear   bool // the answer leaves doubt: the session's holds are cleared
		msg     string
	}{
		{code: 1},
		{code: -1, timeout: true},
		{code: -2, clear: true, msg: "cancelled"},
		{code: -3, msg: "deadlock victim"},
		{code: -999, msg: "-999"},
	} {
		f := sqlServerFake(tc.code, 0)
		db := openFake(t, "sqlserver", "", f)
		ran := false
		err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { ran = true; return nil }, WaitAtMost(0))
		switch {
		case tc.code >= 0:
			if err != nil || !ran {
				t.Errorf("code %d: err=%v ran=%v", tc.code, err, ran)
			}
			continue
		case ran:
			t.Errorf("code %d: fn ran", tc.code)
		case tc.timeout != errors.Is(err, ErrTimeout):
			t.Errorf("code %d: err = %v, ErrTimeout expected: %v", tc.code, err, tc.timeout)
		case tc.msg != "" && !strings.Contains(err.Error(), tc.msg):
			t.Errorf("code %d: err = %v, want it to mention %q", tc.code, err, tc.msg)
		case !strings.Contains(err.Error(), `"adv-job" on SQL Server`):
			t.Errorf("code %d: err = %v does not name the lock and database", tc.code, err)
		}
		// Every answer leaves a session known to hold nothing: pooled.
		if _, closed := f.counts(); closed != 0 {
			t.Errorf("code %d: %d connections closed, want the clean session pooled", tc.code, closed)
		}
		want := []string{msAcquire}
		if tc.clear {
			want = append(want, msClear("adv-job", maxClears).sql)
		}
		if got := f.statements(); !reflect.DeepEqual(got, want) {
			t.Errorf("code %d: statements\n got %q\nwant %q", tc.code, got, want)
		}
	}
}

func TestWithReleasesOnErrorAndPanic(t *testing.T) {
	f := sqlServerFake(0, 0)
	db := openFake(t, "sqlserver", "", f)
	boom := errors.New("boom")
	if err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want fn's error", err)
	}
	func() {
		defer func() {
			if p := recover(); p != "kaboom" {
				t.Errorf("recovered %v, want the panic to propagate", p)
			}
		}()
		_ = With(context.Background(), db, "adv-job", func(*gorm.DB) error { panic("kaboom") })
		t.Error("With returned after a panic")
	}()
	if got, want := f.statements(), []string{msAcquire, msRelease, msAcquire, msRelease}; !reflect.DeepEqual(got, want) {
		t.Fatalf("statements:\n got %q\nwant %q", got, want)
	}
}

func TestFailedReleaseDiscardsConnection(t *testing.T) {
	f := sqlServerFake(0, -999)
	db := openFake(t, "sqlserver", "", f)
	boom := errors.New("boom")
	err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { return boom })
	if !errors.Is(err, boom) || !errors.Is(err, ErrNotHeld) {
		t.Fatalf("err = %v, want fn's error joined with ErrNotHeld", err)
	}
	if _, closed := f.counts(); closed != 1 {
		t.Fatalf("%d connections closed, want the lock's connection discarded", closed)
	}
}

func TestReleaseSurvivesCancelledContext(t *testing.T) {
	f := sqlServerFake(0, 0)
	db := openFake(t, "sqlserver", "", f)
	ctx, cancel := context.WithCancel(context.Background())
	l, err := Acquire(ctx, db, "adv-job")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := l.DB().Exec("SELECT 7").Error; err != nil {
		t.Errorf("Lock.DB stopped working when the acquisition's ctx ended: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release with a cancelled ctx: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("second Release = %v, want nil (the handle released it; nothing is sent)", err)
	}
	if got := f.statements(); len(got) != 3 || got[2] != msRelease {
		t.Fatalf("statements = %q", got)
	}

	// A nil ctx still releases, rather than panic with the lock held.
	l, err = Acquire(context.Background(), db, "adv-job")
	if err != nil {
		t.Fatal(err)
	}
	var nilCtx context.Context
	if err := l.Release(nilCtx); err != nil {
		t.Fatalf("Release(nil): %v", err)
	}
	if got := f.statements(); len(got) != 5 || got[4] != msRelease {
		t.Fatalf("statements = %q", got)
	}
}

func TestOracleOutBindsAndHandle(t *testing.T) {
	status, releaseStatus := int64(0), int64(0)
	f := &fakeDB{outs: func(c call, outs []sql.Out) error {
		if strings.Contains(c.sql, "DBMS_LOCK.REQUEST") {
			*outs[0].Dest.(*string) = "1073741824107374182418"
			*outs[1].Dest.(*int64) = status
			return nil
		}
		*outs[0].Dest.(*int64) = releaseStatus
		return nil
	}}
	db := openFake(t, "oracle", "", f)
	if err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { return nil }, WaitAtMost(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	calls := f.calls()
	want := []call{
		{conn: 1, sql: oracleLock("adv-job", upTo(2*time.Second)).sql, args: []any{"adv-job", outParam{}, outParam{}, int64(2)}},
		{conn: 1, sql: "BEGIN :1 := DBMS_LOCK.RELEASE(lockhandle => :2); END;", args: []any{outParam{}, "1073741824107374182418"}},
	}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("calls:\n got %#v\nwant %#v", calls, want)
	}

	status = 1
	if err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { return nil }); !errors.Is(err, ErrTimeout) {
		t.Fatalf("REQUEST = 1: err = %v, want ErrTimeout", err)
	}
	status, releaseStatus = 0, 4
	if err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { return nil }); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("RELEASE = 4: err = %v, want ErrNotHeld", err)
	}
	status, releaseStatus = 2, 0
	if err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { return nil }); err == nil || !strings.Contains(err.Error(), "deadlock") {
		t.Fatalf("REQUEST = 2: err = %v, want a deadlock error", err)
	}
}

// pgError looks like a pgx/lib/pq error to dialects' classifier.
type pgError struct{ code string }

func (e *pgError) Error() string {
	return "ERROR: canceling statement due to lock timeout (SQLSTATE " + e.code + ")"
}
func (e *pgError) SQLState() string { return e.code }

func TestPostgresAnswers(t *testing.T) {
	try := false
	f := &fakeDB{answer: func(c call) ([]driver.Value, error) {
		switch {
		case strings.Contains(c.sql, "pg_locks"):
			return []driver.Value{int64(0)}, nil
		case strings.HasPrefix(c.sql, "SELECT pg_try_advisory_lock"):
			return []driver.Value{try}, nil
		case strings.HasPrefix(c.sql, "SELECT pg_advisory_lock"):
			return nil, &pgError{"55P03"}
		}
		return []driver.Value{true}, nil
	}}
	db := openFake(t, "postgres", "", f)
	ran := false
	fn := func(*gorm.DB) error { ran = true; return nil }
	if err := With(context.Background(), db, "adv-job", fn, WaitAtMost(0)); !errors.Is(err, ErrTimeout) || ran {
		t.Fatalf("try busy: err = %v, ran = %v", err, ran)
	}
	if err := With(context.Background(), db, "adv-job", fn, WaitAtMost(time.Second)); !errors.Is(err, ErrTimeout) || ran {
		t.Fatalf("lock_timeout: err = %v, ran = %v", err, ran)
	}
	if _, closed := f.counts(); closed != 0 {
		t.Errorf("a timed-out acquisition discarded its connection (%d closed); the session is clean", closed)
	}
	if got := f.statements(); len(got) != 3 || got[2] != pgHolds("adv-job").sql {
		t.Errorf("after 55P03 the session's holds were not read back: %q", got)
	}
	try = true
	if err := With(context.Background(), db, "adv-job", fn, WaitAtMost(0)); err != nil || !ran {
		t.Fatalf("try free: err = %v, ran = %v", err, ran)
	}
}

// An indefinite wait cut short by a lock_timeout configured on the server
// waits again with lock_timeout off.
func TestPostgresIndefiniteWaitOverridesLockTimeout(t *testing.T) {
	f := &fakeDB{answer: func(c call) ([]driver.Value, error) {
		switch {
		case c.sql == "SELECT pg_advisory_lock($1)":
			return nil, &pgError{"55P03"}
		case strings.Contains(c.sql, "pg_locks"):
			return []driver.Value{int64(0)}, nil
		}
		return []driver.Value{true}, nil
	}}
	db := openFake(t, "postgres", "", f)
	if err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { return nil }); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"SELECT pg_advisory_lock($1)",
		pgHolds("adv-job").sql, // the failed wait may have been granted: not stacked on
		"SELECT pg_advisory_lock($1) FROM (SELECT set_config('lock_timeout', $2, true)) AS t",
		"SELECT pg_advisory_unlock($1)",
	}
	if got := f.statements(); !reflect.DeepEqual(got, want) {
		t.Fatalf("statements:\n got %q\nwant %q", got, want)
	}
}

// The server grants the lock just as the caller's context ends: the caller
// gets the context's error, and the lock is released (or its session ended)
// rather than left on a pooled connection.
func TestGrantedAsContextEndsIsReleased(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeDB{answer: func(c call) ([]driver.Value, error) {
		if c.sql == "SELECT pg_advisory_lock($1)" {
			cancel() // the wait's deadline passes as the grant arrives
		}
		return []driver.Value{true}, nil
	}}
	db := openFake(t, "postgres", "", f)
	err := With(ctx, db, "adv-job", func(*gorm.DB) error { t.Error("fn ran"); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	released := reflect.DeepEqual(f.statements(), []string{"SELECT pg_advisory_lock($1)", "SELECT pg_advisory_unlock($1)"})
	if _, closed := f.counts(); !released && closed != 1 {
		t.Fatalf("sent %q and closed %d connections: the granted lock went back to the pool", f.statements(), closed)
	}
}

func TestMySQLCancelledWaitIsKilled(t *testing.T) {
	f := &fakeDB{blockOn: "GET_LOCK(?, ?)", blocked: make(chan struct{}, 1), answer: func(c call) ([]driver.Value, error) {
		switch {
		case strings.Contains(c.sql, "CONNECTION_ID()"):
			return []driver.Value{int64(0), int64(77)}, nil
		case strings.Contains(c.sql, "RELEASE_LOCK"):
			return []driver.Value{nil}, nil // nobody holds it
		}
		return []driver.Value{int64(1)}, nil
	}}
	db := openFake(t, "mysql", "10.11.6-MariaDB", f)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-f.blocked // the wait has begun
		cancel()
	}()
	err := With(ctx, db, "adv-job", func(*gorm.DB) error { t.Error("fn ran"); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	calls := f.calls()
	if got, want := f.statements(), []string{"SELECT GET_LOCK(?, 0), CONNECTION_ID()", "SELECT GET_LOCK(?, ?)", "KILL QUERY 77", "SELECT RELEASE_LOCK(?)"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("statements:\n got %q\nwant %q", got, want)
	}
	if calls[2].conn == calls[1].conn {
		t.Error("KILL QUERY ran on the waiting connection")
	}
	if calls[3].conn != calls[1].conn {
		t.Error("the holds were read back on another connection than the wait's")
	}
}

func TestBadInputTouchesNothing(t *testing.T) {
	f := sqlServerFake(0, 0)
	db := openFake(t, "sqlserver", "", f)
	lite := openFake(t, "sqlite", "", f)
	fn := func(*gorm.DB) error { t.Error("fn ran"); return nil }
	dry := db.Session(&gorm.Session{DryRun: true})
	ctx := context.Background()
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"empty name", With(ctx, db, "", fn)},
		{"negative timeout", With(ctx, db, "adv-job", fn, WaitAtMost(-time.Second))},
		{"nil fn", With(ctx, db, "adv-job", nil)},
		{"nil db", With(ctx, nil, "adv-job", fn)},
		{"sqlite", With(ctx, lite, "adv-job", fn)},
		{"dry run", With(ctx, dry, "adv-job", fn)},
		{"long name", With(ctx, db, strings.Repeat("x", 256), fn)},
		{"WithTx empty name", WithTx(db, "")},
		{"WithTx sqlite", WithTx(lite, "adv-job")},
		{"WithTx outside a transaction", WithTx(db, "adv-job")},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.what)
		}
	}
	if err := With(ctx, lite, "adv-job", fn); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "SQLite") {
		t.Errorf("sqlite: err = %v, want ErrUnsupported naming SQLite", err)
	}
	if Supported(lite) || !Supported(db) {
		t.Error("Supported is wrong")
	}
	if opened, _ := f.counts(); opened != 0 || len(f.statements()) != 0 {
		t.Fatalf("bad input opened %d connections and sent %q", opened, f.statements())
	}
}

func TestWithRefusesATransaction(t *testing.T) {
	f := sqlServerFake(0, 0)
	db := openFake(t, "sqlserver", "", f)
	err := db.Transaction(func(tx *gorm.DB) error {
		return With(context.Background(), tx, "adv-job", func(*gorm.DB) error { return nil })
	})
	if err == nil || !strings.Contains(err.Error(), "WithTx") {
		t.Fatalf("err = %v, want the in-transaction error", err)
	}
}

func TestNotReentrant(t *testing.T) {
	f := sqlServerFake(0, 0)
	db := openFake(t, "sqlserver", "", f)
	ctx := context.Background()
	err := With(ctx, db, "adv-a", func(conn *gorm.DB) error {
		inner := func(*gorm.DB) error { t.Error("nested fn ran"); return nil }
		if err := With(conn.Statement.Context, db, "adv-a", inner); !errors.Is(err, ErrReentrant) {
			t.Errorf("same name through ctx: %v, want ErrReentrant", err)
		}
		if err := With(ctx, conn, "adv-a", inner); !errors.Is(err, ErrReentrant) {
			t.Errorf("same name through conn: %v, want ErrReentrant", err)
		}
		// Another name nests, on a connection of its own, and its context
		// still knows about the outer lock.
		return With(ctx, conn, "adv-b", func(conn2 *gorm.DB) error {
			if err := With(conn2.Statement.Context, db, "adv-a", inner); !errors.Is(err, ErrReentrant) {
				t.Errorf("outer name two levels down: %v, want ErrReentrant", err)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.statements(); len(got) != 4 {
		t.Fatalf("statements = %q, want two acquisitions and two releases", got)
	}
	calls := f.calls()
	if calls[0].conn == calls[1].conn {
		t.Error("the nested lock shared the outer lock's connection")
	}

	// A released lock leaves nothing behind in contexts derived from it.
	l, err := Acquire(ctx, db, "adv-a")
	if err != nil {
		t.Fatal(err)
	}
	stale := l.DB().Statement.Context
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := With(stale, db, "adv-a", func(*gorm.DB) error { return nil }); err != nil {
		t.Fatalf("after Release: %v", err)
	}
}

func TestWithTxSQLServer(t *testing.T) {
	f := sqlServerFake(1, 0)
	db := openFake(t, "sqlserver", "", f)
	err := db.Transaction(func(tx *gorm.DB) error { return WithTx(tx, "adv-job", WaitAtMost(250*time.Millisecond)) })
	if err != nil {
		t.Fatal(err)
	}
	calls := f.calls()
	want := []string{"BEGIN", "DECLARE @result int; EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @p2; SELECT @result", "COMMIT"}
	if got := f.statements(); !reflect.DeepEqual(got, want) {
		t.Fatalf("statements:\n got %q\nwant %q", got, want)
	}
	if !reflect.DeepEqual(calls[1].args, []any{"adv-job", int64(250)}) {
		t.Fatalf("args = %#v", calls[1].args)
	}
	f2 := sqlServerFake(-1, 0)
	db2 := openFake(t, "sqlserver", "", f2)
	err = db2.Transaction(func(tx *gorm.DB) error { return WithTx(tx, "adv-job", WaitAtMost(0)) })
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("busy: err = %v, want ErrTimeout", err)
	}
	my := openFake(t, "mysql", "8.0.36", f2)
	err = my.Transaction(func(tx *gorm.DB) error { return WithTx(tx, "adv-job") })
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "MySQL") {
		t.Fatalf("mysql: err = %v, want ErrUnsupported naming MySQL", err)
	}
}

// A resolver registered as gorm:db_resolver (gorm.io/plugin/dbresolver's
// name) picks the pool: the lock goes where it sends writes.
func TestLockOnTheResolvedWritePool(t *testing.T) {
	replica := sqlServerFake(0, 0)
	source := sqlServerFake(0, 0)
	db := openFake(t, "sqlserver", "", replica)
	sourcePool := sql.OpenDB(source)
	t.Cleanup(func() { _ = sourcePool.Close() })
	if err := db.Callback().Create().Before("*").Register("gorm:db_resolver", func(tx *gorm.DB) {
		tx.Statement.ConnPool = sourcePool
	}); err != nil {
		t.Fatal(err)
	}
	if err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(replica.statements()) != 0 || len(source.statements()) != 2 {
		t.Fatalf("source got %q, the default pool %q", source.statements(), replica.statements())
	}
}

// A wait that failed with 55P03 and was granted all the same (PostgreSQL
// can do both when a release meets the timeout): the hold is found through
// pg_locks and released on the same connection before it is pooled, and
// the caller gets ErrTimeout with nothing held. If the hold cannot be
// cleared, the connection is discarded.
func TestPostgresTimeoutThatWasGrantedIsCleared(t *testing.T) {
	for _, stuck := range []bool{false, true} {
		held := true
		f := &fakeDB{answer: func(c call) ([]driver.Value, error) {
			switch {
			case strings.HasPrefix(c.sql, "SELECT pg_advisory_lock"):
				return nil, &pgError{"55P03"}
			case strings.Contains(c.sql, "pg_locks"):
				if held {
					return []driver.Value{int64(1)}, nil
				}
				return []driver.Value{int64(0)}, nil
			case c.sql == "SELECT pg_advisory_unlock($1)":
				held = stuck
			}
			return []driver.Value{true}, nil
		}}
		db := openFake(t, "postgres", "", f)
		err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { t.Error("fn ran"); return nil }, WaitAtMost(time.Second))
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("stuck=%v: err = %v, want ErrTimeout", stuck, err)
		}
		got := f.statements()
		_, closed := f.counts()
		if !stuck {
			want := []string{pgTimedLockSQL(), pgHolds("adv-job").sql, "SELECT pg_advisory_unlock($1)", pgHolds("adv-job").sql}
			if !reflect.DeepEqual(got, want) || closed != 0 {
				t.Errorf("statements\n got %q\nwant %q; %d closed, want the cleared session pooled", got, want, closed)
			}
			continue
		}
		if closed != 1 || len(got) != 2+2*maxClears {
			t.Errorf("a hold that would not go: %d statements, %d closed; want %d and the connection discarded", len(got), closed, 2+2*maxClears)
		}
	}
}

// Under a session lock_timeout an indefinite wait fails, granted, and is
// tried again: the first hold is released before the second wait, so that
// one Release frees the lock.
func TestPostgresRetryDoesNotStack(t *testing.T) {
	holds := 0
	f := &fakeDB{answer: func(c call) ([]driver.Value, error) {
		switch {
		case c.sql == "SELECT pg_advisory_lock($1)":
			holds++
			return nil, &pgError{"55P03"}
		case strings.HasPrefix(c.sql, "SELECT pg_advisory_lock"):
			holds++
		case strings.Contains(c.sql, "pg_locks"):
			return []driver.Value{int64(min(holds, 1))}, nil
		case c.sql == "SELECT pg_advisory_unlock($1)":
			holds--
		}
		return []driver.Value{true}, nil
	}}
	db := openFake(t, "postgres", "", f)
	if err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if holds != 0 {
		t.Fatalf("%d holds left after With (statements %q)", holds, f.statements())
	}
}

// A PostgreSQL dialector over CockroachDB or YugabyteDB: the server's
// version() tells them apart, and advisory locks are refused before any
// lock statement (CockroachDB's pg_advisory_lock is a stub that locks
// nothing). The only statement sent is the one version query of the pool.
func TestLookalikeRefusesAdvisoryLocks(t *testing.T) {
	for _, version := range []string{
		"CockroachDB CCL v23.2.4 (x86_64-pc-linux-gnu, built 2024/04/08 16:21:58, go1.21.9)",
		"PostgreSQL 11.2-YB-2.20.1.0-b0 on x86_64-pc-linux-gnu, compiled by clang version 16.0.6",
	} {
		f := &fakeDB{answer: func(c call) ([]driver.Value, error) {
			if c.sql == "SELECT version()" {
				return []driver.Value{version}, nil
			}
			return []driver.Value{true}, nil
		}}
		db := openFake(t, "postgres", "", f)
		dialects.Forget(db) // ask the fake server, not openFake's assumption
		ran := false
		err := With(context.Background(), db, "adv-job", func(*gorm.DB) error { ran = true; return nil })
		if !errors.Is(err, ErrUnsupported) || ran {
			t.Fatalf("%s: With = %v, fn ran %v; want ErrUnsupported and fn not run", version, err, ran)
		}
		_, err = Acquire(context.Background(), db, "adv-job")
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("%s: Acquire = %v", version, err)
		}
		if got := f.statements(); len(got) != 1 || got[0] != "SELECT version()" {
			t.Fatalf("%s: sent %q, want only the version query", version, got)
		}
		t.Logf("%s: %v", version[:20], err)
	}
}
