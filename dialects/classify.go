package dialects

import (
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// Database error codes, by database. They are matched against what the
// drivers expose, never by importing a driver.
var (
	// PostgreSQL SQLSTATEs.
	pgLockNotAvailable = map[string]bool{"55P03": true}
	pgRetryable        = map[string]bool{"40001": true, "40P01": true}
	// MySQL / MariaDB error numbers: ER_LOCK_NOWAIT, ER_LOCK_WAIT_TIMEOUT;
	// ER_LOCK_DEADLOCK, and ER_CHECKREAD ("Record has changed since last
	// read ... try restarting transaction"), MariaDB's serialization
	// failure under innodb_snapshot_isolation (the default from 11.8).
	myLockNotAvailable = map[int]bool{3572: true, 1205: true}
	// 9007 is TiDB's write conflict, with which an optimistic transaction
	// fails at COMMIT (no MySQL error has that number).
	myRetryable = map[int]bool{1213: true, 1020: true, 9007: true}
	// SQL Server error numbers: lock request time out; deadlock victim,
	// snapshot isolation update conflict.
	msLockNotAvailable = map[int]bool{1222: true}
	msRetryable        = map[int]bool{1205: true, 3960: true}
	// SQL Server error 650: "You can only specify the READPAST lock in the
	// READ COMMITTED or REPEATABLE READ isolation levels."
	msReadPastIsolation = 650
	// Oracle ORA- numbers: resource busy with NOWAIT, and with WAIT timeout;
	// deadlock detected, cannot serialize access.
	oraLockNotAvailable = map[int]bool{54: true, 30006: true}
	oraRetryable        = map[int]bool{60: true, 8177: true}
	// SQLite primary result codes: BUSY (BUSY_SNAPSHOT is an extended BUSY),
	// LOCKED.
	sqliteRetryable = map[int]bool{5: true, 6: true}
)

// IsLockNotAvailable reports whether err says that a row lock could not be
// had: NOWAIT met a locked row, or a lock wait timed out (PostgreSQL 55P03;
// MySQL/MariaDB 3572, 1205; TiDB's 1105 "lock wait timeout"; SQL Server
// 1222; Oracle ORA-00054, ORA-30006).
func IsLockNotAvailable(err error) bool {
	if errors.Is(err, ErrLockNotAvailable) {
		return true
	}
	c := codeOf(err)
	switch c.family {
	case Postgres:
		return pgLockNotAvailable[c.state]
	case MySQL:
		return myLockNotAvailable[c.number] || IsTiDBLockWaitTimeout(err)
	case SQLServer:
		return msLockNotAvailable[c.number]
	case Oracle:
		return oraLockNotAvailable[c.number]
	}
	return false
}

// IsReadPastRefused reports whether err is SQL Server's error 650: the
// READPAST hint (SkipLocked) was sent in a transaction at an isolation
// level that does not allow it: READPAST needs READ COMMITTED or
// REPEATABLE READ, or SNAPSHOT with a locking hint beside it (which
// lockplugin's ForUpdate always adds). The statement was not run.
func IsReadPastRefused(err error) bool {
	c := codeOf(err)
	return c.family == SQLServer && c.number == msReadPastIsolation
}

// IsTiDBLockWaitTimeout reports whether err is TiDB's 1105 "lock wait
// timeout": a lock wait ran out, reported with the generic code instead of
// 1205 (measured: GET_LOCK under 8 contending sessions), holding nothing it
// asked for. IsLockNotAvailable reports it too.
func IsTiDBLockWaitTimeout(err error) bool {
	c := codeOf(err)
	return c.family == MySQL && c.number == 1105 && strings.Contains(err.Error(), "lock wait timeout")
}

// IsTiDBLockRetryLimit reports whether err is TiDB's 1105 "pessimistic
// lock retry limit reached": a statement that met a conflicting lock too
// many times gave up, holding nothing it asked for. TiDB raises it from
// GET_LOCK under contention (8 waiters on one name).
func IsTiDBLockRetryLimit(err error) bool {
	c := codeOf(err)
	return c.family == MySQL && c.number == 1105 && strings.Contains(err.Error(), "pessimistic lock retry limit reached")
}

// IsDuplicateKey reports whether err says that an INSERT met an existing
// primary or unique key (PostgreSQL 23505; MySQL, MariaDB and TiDB 1062;
// SQL Server 2627, 2601; Oracle ORA-00001; SQLite's constraint codes
// PRIMARYKEY and UNIQUE).
func IsDuplicateKey(err error) bool {
	c := codeOf(err)
	switch c.family {
	case Postgres:
		return c.state == "23505"
	case MySQL:
		return c.number == 1062
	case SQLServer:
		return c.number == 2627 || c.number == 2601
	case Oracle:
		return c.number == 1
	case SQLite:
		return c.number == 1555 || c.number == 2067
	}
	return false
}

// IsUndefinedTable reports whether err says that a table the statement
// names does not exist (PostgreSQL 42P01; MySQL, MariaDB and TiDB 1146;
// SQL Server 208, "Invalid object name"; Oracle ORA-00942; SQLite's
// "no such table", a plain SQLITE_ERROR told apart by its message).
func IsUndefinedTable(err error) bool {
	c := codeOf(err)
	switch c.family {
	case Postgres:
		return c.state == "42P01"
	case MySQL:
		return c.number == 1146
	case SQLServer:
		return c.number == 208
	case Oracle:
		return c.number == 942
	case SQLite:
		return c.number&0xff == 1 && strings.Contains(err.Error(), "no such table")
	}
	return false
}

// IsRetryable reports whether err is a transient concurrency failure after
// which the whole transaction may simply be run again: a deadlock victim or
// a serialization failure (PostgreSQL 40001, 40P01; MySQL/MariaDB 1213,
// 1020, TiDB's 1105 retry limit and 9007 write conflict; SQL Server 1205, 3960; Oracle ORA-00060,
// ORA-08177), or SQLite's
// BUSY, BUSY_SNAPSHOT and LOCKED.
func IsRetryable(err error) bool {
	c := codeOf(err)
	switch c.family {
	case Postgres:
		return pgRetryable[c.state]
	case MySQL:
		return myRetryable[c.number] || IsTiDBLockRetryLimit(err)
	case SQLServer:
		return msRetryable[c.number]
	case Oracle:
		return oraRetryable[c.number]
	case SQLite:
		return sqliteRetryable[c.number&0xff]
	}
	return false
}

type dbCode struct {
	family Kind
	state  string
	number int
}

var oraCode = regexp.MustCompile(`ORA-(\d{5})`)

// codeOf finds the first error in err's chain that carries a database code.
func codeOf(err error) dbCode {
	for _, e := range chain(err) {
		if c, ok := codeOfOne(e); ok {
			return c
		}
	}
	if err != nil {
		if m := oraCode.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			return dbCode{family: Oracle, number: n}
		}
	}
	return dbCode{}
}

func codeOfOne(e error) (dbCode, bool) {
	pkg := pkgPath(e)
	// pgx (*pgconn.PgError) and lib/pq (*pq.Error) expose SQLSTATE.
	if s, ok := e.(interface{ SQLState() string }); ok && !strings.Contains(pkg, "mysql") {
		return dbCode{family: Postgres, state: s.SQLState()}, true
	}
	// go-mssqldb.
	if s, ok := e.(interface{ SQLErrorNumber() int32 }); ok {
		return dbCode{family: SQLServer, number: int(s.SQLErrorNumber())}, true
	}
	// modernc.org/sqlite (glebarez/sqlite) exposes Code(); godror exposes
	// Code() too, so the package tells them apart.
	if s, ok := e.(interface{ Code() int }); ok {
		if strings.Contains(pkg, "sqlite") {
			return dbCode{family: SQLite, number: s.Code()}, true
		}
		if strings.Contains(pkg, "godror") {
			return dbCode{family: Oracle, number: s.Code()}, true
		}
	}
	// go-sql-driver/mysql has exported fields and no methods for them.
	if strings.Contains(pkg, "mysql") {
		if n, ok := intField(e, "Number"); ok {
			return dbCode{family: MySQL, number: n}, true
		}
	}
	// mattn/go-sqlite3 keeps its codes in fields.
	if strings.Contains(pkg, "sqlite") {
		if n, ok := intField(e, "ExtendedCode"); ok && n != 0 {
			return dbCode{family: SQLite, number: n}, true
		}
		if n, ok := intField(e, "Code"); ok {
			return dbCode{family: SQLite, number: n}, true
		}
	}
	// go-ora keeps the ORA- number in ErrCode.
	if n, ok := intField(e, "ErrCode"); ok && n != 0 {
		return dbCode{family: Oracle, number: n}, true
	}
	return dbCode{}, false
}

// chain lists err and everything it wraps, depth first.
func chain(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(out) > 64 {
			return
		}
		out = append(out, e)
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

func pkgPath(e error) string {
	t := reflect.TypeOf(e)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath()
}

func intField(e error, name string) (int, bool) {
	v := reflect.ValueOf(e)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return 0, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0, false
	}
	f := v.FieldByName(name)
	if !f.IsValid() {
		return 0, false
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(f.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int(f.Uint()), true
	}
	return 0, false
}
