package advisory

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/dryrun"
)

// dialectOf recognises a database through the stand-in dialector, as
// dialects.Of does for a real one.
func dialectOf(t *testing.T, name, version string) dialects.Dialect {
	t.Helper()
	db, err := dryrun.Open(name, version)
	if err != nil {
		t.Fatal(err)
	}
	return dialects.Of(db)
}

func forever() wait             { return wait{forever: true} }
func upTo(d time.Duration) wait { return wait{d: d} }

func TestSessionPlanExactSQL(t *testing.T) {
	key := PostgresKey("adv-job")
	tests := []struct {
		db, version string
		w           wait
		steps       []statement
		release     statement
	}{
		{"postgres", "", forever(),
			[]statement{{sql: "SELECT pg_advisory_lock($1)", args: []any{key}}, {sql: "SELECT pg_advisory_lock($1) FROM (SELECT set_config('lock_timeout', $2, true)) AS t", args: []any{key, "0"}}},
			statement{sql: "SELECT pg_advisory_unlock($1)", args: []any{key}}},
		{"postgres", "", upTo(0),
			[]statement{{sql: "SELECT pg_try_advisory_lock($1)", args: []any{key}}},
			statement{sql: "SELECT pg_advisory_unlock($1)", args: []any{key}}},
		{"postgres", "", upTo(300 * time.Millisecond),
			[]statement{{sql: "SELECT pg_advisory_lock($1) FROM (SELECT set_config('lock_timeout', $2, true)) AS t", args: []any{key, "300ms"}}},
			statement{sql: "SELECT pg_advisory_unlock($1)", args: []any{key}}},
		{"postgres", "", upTo(time.Microsecond),
			[]statement{{sql: "SELECT pg_advisory_lock($1) FROM (SELECT set_config('lock_timeout', $2, true)) AS t", args: []any{key, "1ms"}}},
			statement{sql: "SELECT pg_advisory_unlock($1)", args: []any{key}}},
		{"mysql", "10.11.6-MariaDB", forever(),
			[]statement{{sql: "SELECT GET_LOCK(?, 0), CONNECTION_ID()", args: []any{"adv-job"}}, {sql: "SELECT GET_LOCK(?, ?)", args: []any{"adv-job", int64(365 * 24 * 3600)}}},
			statement{sql: "SELECT RELEASE_LOCK(?)", args: []any{"adv-job"}}},
		// TiDB: arguments behind ANY_VALUE, which its planner never folds
		// (so the call runs once), a try guarded by a NOWAIT read of
		// mysql.advisory_locks, and waits of a second each.
		{"mysql", "8.0.11-TiDB-v8.4.0", forever(),
			[]statement{
				{sql: "SELECT 0, CONNECTION_ID()"},
				{sql: "SELECT GET_LOCK(ANY_VALUE(?), ANY_VALUE(?))", args: []any{"adv-job", int64(1)}, held: "SELECT 0"}},
			statement{sql: "SELECT RELEASE_LOCK(ANY_VALUE(?))", args: []any{"adv-job"}}},
		{"mysql", "8.0.11-TiDB-v8.4.0", upTo(1500 * time.Millisecond),
			[]statement{
				{sql: "SELECT 0, CONNECTION_ID()"},
				{sql: "SELECT GET_LOCK(ANY_VALUE(?), ANY_VALUE(?))", args: []any{"adv-job", int64(1)}, held: "SELECT 0"}},
			statement{sql: "SELECT RELEASE_LOCK(ANY_VALUE(?))", args: []any{"adv-job"}}},
		{"mysql", "8.0.11-TiDB-v8.4.0", upTo(0),
			[]statement{{sql: "SELECT GET_LOCK(ANY_VALUE(?), 0)", args: []any{"adv-job"}, guard: "SELECT 1 FROM mysql.advisory_locks WHERE lock_name = ? FOR UPDATE NOWAIT", guardArg: "adv-job", held: "SELECT 0", guardBegin: "BEGIN PESSIMISTIC", guardEnd: "ROLLBACK"}},
			statement{sql: "SELECT RELEASE_LOCK(ANY_VALUE(?))", args: []any{"adv-job"}}},
		{"mysql", "8.0.36", upTo(0),
			[]statement{{sql: "SELECT GET_LOCK(?, 0)", args: []any{"adv-job"}}},
			statement{sql: "SELECT RELEASE_LOCK(?)", args: []any{"adv-job"}}},
		{"mysql", "8.0.36", upTo(300 * time.Millisecond), // rounds up, never down
			[]statement{{sql: "SELECT GET_LOCK(?, 0), CONNECTION_ID()", args: []any{"adv-job"}}, {sql: "SELECT GET_LOCK(?, ?)", args: []any{"adv-job", int64(1)}}},
			statement{sql: "SELECT RELEASE_LOCK(?)", args: []any{"adv-job"}}},
		{"mysql", "8.0.36", upTo(2*time.Second + time.Nanosecond),
			[]statement{{sql: "SELECT GET_LOCK(?, 0), CONNECTION_ID()", args: []any{"adv-job"}}, {sql: "SELECT GET_LOCK(?, ?)", args: []any{"adv-job", int64(3)}}},
			statement{sql: "SELECT RELEASE_LOCK(?)", args: []any{"adv-job"}}},
		{"sqlserver", "", forever(),
			[]statement{{sql: "DECLARE @result int; EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = @p2; SELECT @result", args: []any{"adv-job", int64(-1)}}},
			statement{sql: "DECLARE @result int; EXEC @result = sp_releaseapplock @Resource = @p1, @LockOwner = 'Session'; SELECT @result", args: []any{"adv-job"}}},
		{"sqlserver", "", upTo(0),
			[]statement{{sql: "DECLARE @result int; EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = @p2; SELECT @result", args: []any{"adv-job", int64(0)}}},
			statement{sql: "DECLARE @result int; EXEC @result = sp_releaseapplock @Resource = @p1, @LockOwner = 'Session'; SELECT @result", args: []any{"adv-job"}}},
		{"sqlserver", "", upTo(1500*time.Millisecond + time.Microsecond),
			[]statement{{sql: "DECLARE @result int; EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = @p2; SELECT @result", args: []any{"adv-job", int64(1501)}}},
			statement{sql: "DECLARE @result int; EXEC @result = sp_releaseapplock @Resource = @p1, @LockOwner = 'Session'; SELECT @result", args: []any{"adv-job"}}},
		{"oracle", "", forever(),
			[]statement{{sql: "DECLARE handle VARCHAR2(128); BEGIN DBMS_LOCK.ALLOCATE_UNIQUE(lockname => :1, lockhandle => handle); :2 := handle; :3 := DBMS_LOCK.REQUEST(lockhandle => handle, lockmode => DBMS_LOCK.X_MODE, timeout => :4, release_on_commit => FALSE); END;", args: []any{"adv-job", outParam{}, outParam{}, int64(32767)}}},
			statement{}},
		{"oracle", "", upTo(0),
			[]statement{{sql: "DECLARE handle VARCHAR2(128); BEGIN DBMS_LOCK.ALLOCATE_UNIQUE(lockname => :1, lockhandle => handle); :2 := handle; :3 := DBMS_LOCK.REQUEST(lockhandle => handle, lockmode => DBMS_LOCK.X_MODE, timeout => :4, release_on_commit => FALSE); END;", args: []any{"adv-job", outParam{}, outParam{}, int64(0)}}},
			statement{}},
		{"oracle", "", upTo(100 * time.Hour), // stays below MAXWAIT, which means forever
			[]statement{{sql: "DECLARE handle VARCHAR2(128); BEGIN DBMS_LOCK.ALLOCATE_UNIQUE(lockname => :1, lockhandle => handle); :2 := handle; :3 := DBMS_LOCK.REQUEST(lockhandle => handle, lockmode => DBMS_LOCK.X_MODE, timeout => :4, release_on_commit => FALSE); END;", args: []any{"adv-job", outParam{}, outParam{}, int64(32766)}}},
			statement{}},
	}
	for _, tc := range tests {
		d := dialectOf(t, tc.db, tc.version)
		got, err := sessionPlan(d, "adv-job", tc.w)
		if err != nil {
			t.Fatalf("%s %+v: %v", d, tc.w, err)
		}
		var steps []statement
		for _, st := range got.steps {
			steps = append(steps, stmt(st))
		}
		if !reflect.DeepEqual(steps, tc.steps) {
			t.Errorf("%s %+v: steps\n got %#v\nwant %#v", d, tc.w, steps, tc.steps)
		}
		if !reflect.DeepEqual(got.release, tc.release) {
			t.Errorf("%s %+v: release\n got %#v\nwant %#v", d, tc.w, got.release, tc.release)
		}
	}
	if got, want := oracleRelease("10737418241073741824187"), (statement{sql: "BEGIN :1 := DBMS_LOCK.RELEASE(lockhandle => :2); END;", args: []any{outParam{}, "10737418241073741824187"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("oracle release\n got %#v\nwant %#v", got, want)
	}
	if got, want := myKill(42), (statement{sql: "KILL QUERY 42"}); !reflect.DeepEqual(got, want) {
		t.Errorf("mysql kill: got %#v want %#v", got, want)
	}
}

func TestXactPlanExactSQL(t *testing.T) {
	key := PostgresKey("adv-job")
	pgWait := "SELECT set_config('lock_timeout', c.old, true) FROM (" +
		"SELECT b.old, pg_advisory_xact_lock($1) FROM (" +
		"SELECT a.old, set_config('lock_timeout', $2, true) FROM (" +
		"SELECT current_setting('lock_timeout') AS old OFFSET 0) AS a) AS b) AS c"
	tests := []struct {
		db   string
		w    wait
		want statement
	}{
		{"postgres", forever(), statement{sql: pgWait, args: []any{key, "0"}}},
		{"postgres", upTo(0), statement{sql: "SELECT pg_try_advisory_xact_lock($1)", args: []any{key}}},
		{"postgres", upTo(2 * time.Second), statement{sql: pgWait, args: []any{key, "2000ms"}}},
		{"sqlserver", forever(), statement{sql: "DECLARE @result int; EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @p2; SELECT @result", args: []any{"adv-job", int64(-1)}}},
		{"sqlserver", upTo(250 * time.Millisecond), statement{sql: "DECLARE @result int; EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = @p2; SELECT @result", args: []any{"adv-job", int64(250)}}},
	}
	for _, tc := range tests {
		d := dialectOf(t, tc.db, "")
		got, err := xactPlan(d, "adv-job", tc.w)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %+v:\n got %#v\nwant %#v", d, tc.w, got, tc.want)
		}
	}
	for _, db := range []string{"mysql", "oracle", "sqlite"} {
		d := dialectOf(t, db, "")
		if _, err := xactPlan(d, "adv-job", forever()); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: xactPlan error = %v, want ErrUnsupported", d, err)
		}
	}
	if _, err := sessionPlan(dialectOf(t, "sqlite", ""), "adv-job", forever()); !errors.Is(err, ErrUnsupported) {
		t.Errorf("sqlite: sessionPlan error = %v, want ErrUnsupported", err)
	}
}

func TestPostgresKey(t *testing.T) {
	// SHA-256("nightly-invoice-run") begins a0a90186daced031 (sha256sum);
	// with the sign bit cleared that is 0x20a90186daced031.
	if got, want := PostgresKey("nightly-invoice-run"), int64(0x20a90186daced031); got != want {
		t.Errorf("PostgresKey = %d, want %d", got, want)
	}
	for _, name := range []string{"", "a", "adv-job", strings.Repeat("x", 1000)} {
		if k := PostgresKey(name); k < 0 {
			t.Errorf("PostgresKey(%q) = %d, negative", name, k)
		}
	}
	if PostgresKey("a") == PostgresKey("b") {
		t.Error("distinct names share a key")
	}
}

func TestCheckName(t *testing.T) {
	ms := dialectOf(t, "sqlserver", "")
	ora := dialectOf(t, "oracle", "")
	my := dialectOf(t, "mysql", "8.0.36")
	pg := dialectOf(t, "postgres", "")
	for _, tc := range []struct {
		d    dialects.Dialect
		name string
		ok   bool
	}{
		{ms, strings.Repeat("x", 255), true},
		{ms, strings.Repeat("x", 256), false},
		{ms, strings.Repeat("é", 255), true},  // 255 UTF-16 units
		{ms, strings.Repeat("😀", 128), false}, // 256 UTF-16 units
		{ora, strings.Repeat("x", 128), true},
		{ora, strings.Repeat("é", 65), false}, // 130 bytes
		{my, strings.Repeat("x", 65), true},   // the server answers for itself
		{pg, strings.Repeat("x", 10000), true},
		{pg, "", false},
	} {
		err := checkName(tc.d, tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("%s, %d-byte name: err = %v, want ok=%v", tc.d, len(tc.name), err, tc.ok)
		}
	}
}

func TestClearUpSQL(t *testing.T) {
	key := PostgresKey("adv-job")
	got := pgHolds("adv-job")
	want := statement{
		sql:  "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted AND classid::bigint = $1::bigint AND objid::bigint = $2::bigint AND objsubid = 1",
		args: []any{key >> 32, key & 0xffffffff},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pgHolds:\n got %#v\nwant %#v", got, want)
	}
	ms := msClear("adv-job", 8)
	wantMS := "DECLARE @n int = 0; WHILE APPLOCK_MODE('public', @p1, 'Session') <> 'NoLock' AND @n < @p2 " +
		"BEGIN EXEC sp_releaseapplock @Resource = @p1, @LockOwner = 'Session'; SET @n = @n + 1; END; " +
		"SELECT APPLOCK_MODE('public', @p1, 'Session')"
	if ms.sql != wantMS || !reflect.DeepEqual(ms.args, []any{"adv-job", int64(8)}) {
		t.Errorf("msClear:\n got %q %#v\nwant %q", ms.sql, ms.args, wantMS)
	}
}
