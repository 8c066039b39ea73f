package oracle

import (
	"fmt"
	"time"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Advisory phrases advisory locks as DBMS_LOCK requests that survive
// COMMIT. Transaction-scoped locks are not offered on Oracle (the
// capability matrix refuses them).
func (p *Driver) Advisory() sqldriver.Advisory { return advisory{p} }

type advisory struct{ o *Driver }

// Limits on what DBMS_LOCK accepts.
const (
	// oracleMaxWait is DBMS_LOCK.MAXWAIT, which REQUEST reads as "forever";
	// finite waits stay below it.
	oracleMaxWait = 32767
	// oracleMaxName is ALLOCATE_UNIQUE's lockname length, in bytes.
	oracleMaxName = 128
)

// Answers: a lock handle and a status code in OUT binds.
func (advisory) Answers() sqldriver.AdvisoryAnswers { return sqldriver.AnswersHandle }

// CheckName refuses a name longer than ALLOCATE_UNIQUE's lockname.
func (a advisory) CheckName(name string) error {
	if n := len(name); n > oracleMaxName {
		return fmt.Errorf("advisory: lock name is %d bytes; DBMS_LOCK on %s takes at most %d", n, a.o.D, oracleMaxName)
	}
	return nil
}

// Session allocates the name's handle and requests it exclusively,
// surviving COMMIT. Oracle binds by position in order of appearance, so the
// placeholders appear in the order of args: name, handle (out), status
// (out), timeout in seconds. The release takes the lock handle that
// acquisition returns, so it is built later by ReleaseHandle.
func (advisory) Session(name string, w sqldriver.AdvisoryWait) sqldriver.AdvisorySession {
	secs := int64(oracleMaxWait)
	if !w.Forever {
		secs = w.Ceil(time.Second, oracleMaxWait-1)
	}
	return sqldriver.AdvisorySession{Steps: []sqldriver.AdvisoryStatement{{
		SQL: "DECLARE handle VARCHAR2(128); BEGIN " +
			"DBMS_LOCK.ALLOCATE_UNIQUE(lockname => :1, lockhandle => handle); :2 := handle; " +
			":3 := DBMS_LOCK.REQUEST(lockhandle => handle, lockmode => DBMS_LOCK.X_MODE, timeout => :4, release_on_commit => FALSE); END;",
		Args: []any{name, sqldriver.AdvisoryOut{}, sqldriver.AdvisoryOut{}, secs},
	}}}
}

// Xact: none.
func (advisory) Xact(string, sqldriver.AdvisoryWait) (sqldriver.AdvisoryStatement, bool) {
	return sqldriver.AdvisoryStatement{}, false
}

// Clear: none; the lock's state cannot be read back.
func (advisory) Clear(string, int) sqldriver.AdvisoryStatement { return sqldriver.AdvisoryStatement{} }

// Kill: a cancelled wait ends with its statement.
func (advisory) Kill(int64) sqldriver.AdvisoryStatement { return sqldriver.AdvisoryStatement{} }

// ReleaseHandle releases by the handle acquisition returned, so releasing
// does not call ALLOCATE_UNIQUE again (which commits).
func (advisory) ReleaseHandle(handle string) sqldriver.AdvisoryStatement {
	return sqldriver.AdvisoryStatement{
		SQL:  "BEGIN :1 := DBMS_LOCK.RELEASE(lockhandle => :2); END;",
		Args: []any{sqldriver.AdvisoryOut{}, handle},
	}
}

// More: one REQUEST waits the whole wait.
func (advisory) More(string, sqldriver.AdvisoryWait) (sqldriver.AdvisoryStatement, bool) {
	return sqldriver.AdvisoryStatement{}, false
}
