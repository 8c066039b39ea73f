package sqlserver

import (
	"fmt"
	"math"
	"time"
	"unicode/utf16"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Advisory phrases advisory locks as sp_getapplock and sp_releaseapplock,
// owned by the session or by the transaction.
func (p *Driver) Advisory() sqldriver.Advisory { return advisory{p} }

type advisory struct{ s *Driver }

// sqlServerMaxName is sp_getapplock's @Resource length (nvarchar(255)),
// which silently truncates longer values.
const sqlServerMaxName = 255

// Answers: sp_getapplock's return codes.
func (advisory) Answers() sqldriver.AdvisoryAnswers { return sqldriver.AnswersAppLock }

// CheckName refuses a name longer than @Resource, counted in UTF-16 code
// units: sp_getapplock would truncate it.
func (a advisory) CheckName(name string) error {
	if n := len(utf16.Encode([]rune(name))); n > sqlServerMaxName {
		return fmt.Errorf("advisory: lock name is %d characters; sp_getapplock on %s takes at most %d and would truncate it", n, a.s.d, sqlServerMaxName)
	}
	return nil
}

// Session is one sp_getapplock owned by the session.
func (advisory) Session(name string, w sqldriver.AdvisoryWait) sqldriver.AdvisorySession {
	return sqldriver.AdvisorySession{
		Steps: []sqldriver.AdvisoryStatement{msLock(name, w, "Session")},
		Release: sqldriver.AdvisoryStatement{
			SQL:  "DECLARE @result int; EXEC @result = sp_releaseapplock @Resource = @p1, @LockOwner = 'Session'; SELECT @result",
			Args: []any{name},
		},
	}
}

// Xact is one sp_getapplock owned by the transaction.
func (advisory) Xact(name string, w sqldriver.AdvisoryWait) (sqldriver.AdvisoryStatement, bool) {
	return msLock(name, w, "Transaction"), true
}

// msLock calls sp_getapplock; owner is 'Session' or 'Transaction'. The
// timeout is in milliseconds, -1 waiting indefinitely.
func msLock(name string, w sqldriver.AdvisoryWait, owner string) sqldriver.AdvisoryStatement {
	ms := int64(-1)
	if !w.Forever {
		ms = w.Ceil(time.Millisecond, math.MaxInt32)
	}
	return sqldriver.AdvisoryStatement{
		SQL: "DECLARE @result int; EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', " +
			"@LockOwner = '" + owner + "', @LockTimeout = @p2; SELECT @result",
		Args: []any{name, ms},
	}
}

// Clear releases every hold this session has of the name, at most max of
// them, and answers APPLOCK_MODE afterwards: 'NoLock' when none is left.
func (advisory) Clear(name string, max int) sqldriver.AdvisoryStatement {
	return sqldriver.AdvisoryStatement{
		SQL: "DECLARE @n int = 0; " +
			"WHILE APPLOCK_MODE('public', @p1, 'Session') <> 'NoLock' AND @n < @p2 " +
			"BEGIN EXEC sp_releaseapplock @Resource = @p1, @LockOwner = 'Session'; SET @n = @n + 1; END; " +
			"SELECT APPLOCK_MODE('public', @p1, 'Session')",
		Args: []any{name, int64(max)},
	}
}

// Kill: a cancelled wait ends with its statement.
func (advisory) Kill(int64) sqldriver.AdvisoryStatement { return sqldriver.AdvisoryStatement{} }

// ReleaseHandle: the release is by name.
func (advisory) ReleaseHandle(string) sqldriver.AdvisoryStatement {
	return sqldriver.AdvisoryStatement{}
}

// More: one sp_getapplock waits the whole wait.
func (advisory) More(string, sqldriver.AdvisoryWait) (sqldriver.AdvisoryStatement, bool) {
	return sqldriver.AdvisoryStatement{}, false
}
