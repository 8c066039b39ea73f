package advisory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/ctxjoin"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// releaseTimeout bounds a release, which runs on a context detached from the
// caller's cancellation: a lock must be released even when the work that
// held it was cancelled.
const releaseTimeout = 10 * time.Second

// Lock is a session-scoped advisory lock held on one pinned connection.
// Release it; until then the connection stays out of the pool. A Lock is
// made by Acquire: the methods of a zero Lock or a nil *Lock return errors
// naming Acquire (DB: a *gorm.DB whose every statement fails with it).
type Lock struct {
	name    string
	dialect dialects.Dialect
	fam     sqldriver.Advisory // the database's statements: drivers.For(dialect).Advisory()
	conn    *sql.Conn
	db      *gorm.DB
	run     runner
	release statement
	held    *held
	own     held      // what held points to for a Lock made by Acquire: one allocation for both
	source  *gorm.DB  // AnswersGetLock: the db Acquire was given, for ownDSN when a wait must be killed
	obs     *observed // the plugin's Observer, if any: observe.go

	mu   sync.Mutex
	done bool
}

// Acquire takes the lock called name on a connection pinned from db's write
// pool and returns it held; the caller must Release it. It waits as the
// options say (indefinitely by default) and until ctx or db's own context
// (db.WithContext) is done, whichever is first, and returns an error
// matching ErrTimeout when the lock stayed busy, the context's error when
// either ended the wait, ErrReentrant when ctx or db already hold name, and
// ErrUnsupported on databases without advisory locks. On every error no lock
// is left behind: a failed wait that the database granted all the same is
// found and released on its own connection before that connection is
// pooled, or the connection is closed (see the package documentation).
//
// Use With when the lock's lifetime fits a function call.
func Acquire(ctx context.Context, db *gorm.DB, name string, opts ...Option) (*Lock, error) {
	// The lock outlives the acquisition: its DB keeps ctx's values but not
	// its cancellation, which was for the wait.
	l, done, err := acquire(ctx, db, name, opts, true)
	done()
	return l, err
}

// DB returns a *gorm.DB whose statements run on the connection that holds
// the lock. Its context carries ctx's values and the held lock (so nested
// acquisitions of the same name fail with ErrReentrant) but not ctx's
// cancellation; use WithContext to bound individual statements. It must not
// be used after Release.
func (l *Lock) DB() *gorm.DB {
	if l == nil || l.db == nil {
		return zeroLockDB().Session(&gorm.Session{})
	}
	return l.db
}

// Name returns the lock's name ("" for a Lock not made by Acquire).
func (l *Lock) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// Release releases the lock and returns its connection to the pool. It runs
// even when ctx is already cancelled (bounded by a timeout of its own). When
// the database cannot confirm the release, the connection is closed instead
// of being pooled, so that ending the session frees the lock. A nil ctx is
// taken as context.Background(). Releasing a Lock this handle released
// before does nothing and returns nil; an error matching ErrNotHeld means
// the session had lost the lock (the work may have run unprotected).
func (l *Lock) Release(ctx context.Context) (released error) {
	if l == nil || l.conn == nil || l.held == nil {
		return errZeroLock
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	l.done = true
	l.held.released.Store(true)
	defer l.obs.released(l.name, &released)

	if ctx == nil {
		// Release anyway: a panic here would strand the lock's connection.
		ctx = context.Background()
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	err := l.unlock(rctx)
	if err != nil {
		discard(l.conn)
		return lockError(l.dialect, l.name, err)
	}
	return l.conn.Close()
}

// unlock sends the release statement and checks the database's answer.
func (l *Lock) unlock(ctx context.Context) error {
	switch l.fam.Answers() {
	case sqldriver.AnswersBool:
		var ok bool
		if err := l.run.query(ctx, l.release, &ok); err != nil {
			return err
		}
		if !ok {
			return ErrNotHeld
		}
	case sqldriver.AnswersGetLock:
		var ok sql.NullInt64
		if err := l.run.query(ctx, l.release, &ok); err != nil {
			return err
		}
		if ok.Int64 != 1 {
			return ErrNotHeld
		}
	case sqldriver.AnswersAppLock:
		var code int64
		if err := l.run.query(ctx, l.release, &code); err != nil {
			return err
		}
		if code < 0 {
			return answer(ErrNotHeld, ": sp_releaseapplock returned "+strconv.FormatInt(code, 10))
		}
	case sqldriver.AnswersHandle:
		var code int64
		if err := l.run.query(ctx, l.release, &code); err != nil {
			return err
		}
		switch code {
		case 0:
		case 4:
			return answer(ErrNotHeld, ": DBMS_LOCK.RELEASE returned 4 (lock not owned)")
		default:
			return fmt.Errorf("DBMS_LOCK.RELEASE returned %d (%s)", code, oracleCode(code))
		}
	}
	return nil
}

// acquire is Acquire and With. The wait ends when ctx or db's own context
// ends, whichever is first (ctxjoin.Join): advisory.With(ctx,
// db.WithContext(r.Context()), ...) stops when the request is cancelled,
// and a context already done stops it before anything is sent. detach makes
// the pinned session's context ignore that cancellation (Acquire); With
// keeps it, so that cancelling either context also cancels fn's statements.
// done ends the joined context: With calls it after fn, Acquire at once.
func acquire(ctx context.Context, db *gorm.DB, name string, opts []Option, detach bool) (_ *Lock, done context.CancelFunc, err error) {
	done = func() {}
	if db == nil || db.Config == nil {
		return nil, done, errNilDB
	}
	if ctx == nil {
		return nil, done, errNilContext
	}
	if name == "" {
		return nil, done, errEmptyName
	}
	ctx, done = ctxjoin.Join(ctx, db)
	defer func() {
		if err != nil {
			done()
		}
	}()
	l, err := observeAcquire(db, name, opts, func() (*Lock, error) { return acquireJoined(ctx, db, name, opts, detach) })
	return l, done, err
}

func acquireJoined(ctx context.Context, db *gorm.DB, name string, opts []Option, detach bool) (*Lock, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	d := dialects.Of(db)
	if err := d.Require(dialects.AdvisoryLock); err != nil {
		return nil, err
	}
	if err := checkName(d, name); err != nil {
		return nil, err
	}
	if db.DryRun {
		return nil, errDryRun
	}
	// A context that has ended already stops the call before any SQL. db's
	// own is read too: the join learns of its end through a callback that
	// may not have run yet.
	own := ctx
	if db.Statement != nil && db.Statement.Context != nil {
		own = db.Statement.Context
	}
	for _, c := range []context.Context{ctx, own} {
		if c.Err() != nil {
			return nil, lockError(d, name, context.Cause(c))
		}
	}
	plan, err := sessionPlan(d, name, o.wait)
	if err != nil {
		return nil, err
	}
	var fromDB *held
	if db.Statement != nil {
		fromDB = heldIn(db.Statement.Context)
	}
	fromCtx := heldIn(ctx)
	pool, err := writePool(ctx, db, fromCtx, fromDB)
	if err != nil {
		return nil, err
	}
	if holding(pool, name, fromCtx, fromDB) {
		return nil, lockError(d, name, ErrReentrant)
	}

	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, lockError(d, name, err)
	}
	l := &Lock{name: name, dialect: d, fam: family(d), conn: conn, run: runner{db: db, q: conn}, release: plan.release}
	l.own.pool, l.own.conn, l.own.name, l.own.parents = pool, conn, name, [2]*held{fromCtx, fromDB}
	l.held = &l.own
	if l.fam.Answers() == sqldriver.AnswersGetLock && !o.wait.tryOnce() {
		l.source = db // ownDSN is read (by reflection) only if a wait is killed
	}
	if err := l.lock(ctx, pool, plan.steps, o.wait); err != nil {
		return nil, lockError(d, name, err)
	}
	if err := ctx.Err(); err != nil {
		// Granted just as ctx ended: the caller has stopped waiting.
		_ = l.Release(ctx)
		return nil, lockError(d, name, err)
	}

	sctx := ctx
	if detach {
		sctx = context.WithoutCancel(ctx)
	}
	l.db = pinnedSession(db, conn, context.WithValue(sctx, heldKey{}, l.held))
	l.run.db = l.db
	return l, nil
}

// lock runs the acquisition steps on l.conn. On success the session holds
// the lock exactly once.
//
// A statement that fails may still have been granted: PostgreSQL can raise
// 55P03 for a wait that a release granted at the very moment lock_timeout
// ran out, a MySQL GET_LOCK interrupted by KILL QUERY can return NULL after
// the grant, and a session lock survives the statement's error. So after any
// failed statement the session's holds of the name are counted and released
// on the same connection (clear), and only a connection known to hold none
// goes back to the pool; if that cannot be confirmed (the driver closed the
// connection when ctx ended, say) the connection is discarded, which ends
// the session and anything it held. A clean "busy" answer (false, 0, -1)
// needs no check. Either way, on every error the session is known not to
// hold the lock.
func (l *Lock) lock(ctx context.Context, pool *sql.DB, steps []sqldriver.AdvisoryStatement, w wait) error {
	err := l.steps(ctx, pool, steps, w)
	if err == nil {
		return nil
	}
	var doubt *doubtError
	if !errors.As(err, &doubt) {
		_ = l.conn.Close() // a clean answer: nothing was granted
		return err
	}
	err = doubt.err
	if cerr := l.clear(ctx); cerr != nil {
		discard(l.conn)
	} else {
		_ = l.conn.Close()
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if dialects.IsLockNotAvailable(err) { // 55P03: lock_timeout ran out
		return answer(ErrTimeout, " ("+err.Error()+")")
	}
	return err
}

// doubtError marks a failure after which the session may hold the lock
// (once, or more: a retry can stack a second hold on the first).
type doubtError struct{ err error }

func (e *doubtError) Error() string { return e.err.Error() }

func doubtful(err error) error {
	if err == nil {
		return nil
	}
	return &doubtError{err}
}

// maxClears bounds how many holds clear releases one at a time before it
// gives up and lets the connection be discarded.
const maxClears = 8

// clearTimeout bounds clear, which runs detached from ctx: a cancelled
// acquisition must still learn whether its session holds the lock.
const clearTimeout = 5 * time.Second

// clear releases every hold the pinned session has of the lock, and returns
// nil only when the database confirms the session holds none.
func (l *Lock) clear(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), clearTimeout)
	defer cancel()
	switch l.fam.Answers() {
	case sqldriver.AnswersBool:
		holds := stmt(l.fam.Clear(l.name, maxClears))
		for i := 0; ; i++ {
			var n int64
			if err := l.run.query(cctx, holds, &n); err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			if i == maxClears {
				return errors.New("still held after releasing it " + strconv.Itoa(maxClears) + " times")
			}
			if err := l.run.query(cctx, l.release); err != nil {
				return err
			}
		}
	case sqldriver.AnswersGetLock:
		// RELEASE_LOCK answers 1 for each hold of this session it releases
		// (MySQL 5.7+ and MariaDB count them), 0 when another session
		// holds the name and NULL when nobody does.
		for i := 0; i < maxClears; i++ {
			var ok sql.NullInt64
			if err := l.run.query(cctx, l.release, &ok); err != nil {
				return err
			}
			if ok.Int64 != 1 {
				return nil
			}
		}
		return errors.New("still held after releasing it " + strconv.Itoa(maxClears) + " times")
	case sqldriver.AnswersAppLock:
		var mode string
		if err := l.run.query(cctx, stmt(l.fam.Clear(l.name, maxClears)), &mode); err != nil {
			return err
		}
		if mode != "NoLock" {
			return fmt.Errorf("APPLOCK_MODE is %q after releasing", mode)
		}
		return nil
	}
	return errors.New("the lock's state cannot be read back on " + l.dialect.String())
}

func (l *Lock) steps(ctx context.Context, pool *sql.DB, steps []sqldriver.AdvisoryStatement, w wait) error {
	switch l.fam.Answers() {
	case sqldriver.AnswersBool:
		st := stmt(steps[0])
		if w.tryOnce() { // pg_try_advisory_lock
			var ok bool
			if err := l.run.query(ctx, st, &ok); err != nil {
				return doubtful(err)
			}
			if !ok {
				return ErrTimeout
			}
			return nil
		}
		err := l.run.query(ctx, st)
		if err != nil && w.forever && dialects.IsLockNotAvailable(err) {
			// A lock_timeout set on the server, database or role ran
			// out; an indefinite wait goes on with it off. The wait that
			// failed may have been granted as it failed: clear it first,
			// or the second wait would stack a second hold on it, and
			// one release would leave the lock held.
			if cerr := l.clear(ctx); cerr != nil {
				return doubtful(err)
			}
			err = l.run.query(ctx, stmt(steps[1]))
		}
		return doubtful(err)

	case sqldriver.AnswersGetLock:
		var got sql.NullInt64
		if len(steps) == 1 {
			if err := l.run.query(ctx, stmt(steps[0]), &got); err != nil {
				return doubtful(err)
			}
			return getLockAnswer(got)
		}
		var id int64
		if err := l.run.query(ctx, stmt(steps[0]), &got, &id); err != nil {
			return doubtful(err)
		}
		started := time.Now()
		for st, more := stmt(steps[1]), got.Valid && got.Int64 == 0; more; st, more = l.waitMore(w, started) {
			if err := l.run.query(ctx, st, &got); err != nil {
				if ctx.Err() != nil {
					l.killWait(ctx, pool, id)
				}
				if dialects.IsTiDBLockRetryLimit(err) && ctx.Err() == nil && l.clear(ctx) == nil {
					got = sql.NullInt64{Valid: true} // gave up: wait again if time is left
					continue
				}
				return doubtful(err)
			}
			if !got.Valid && ctx.Err() != nil {
				return doubtful(ctx.Err())
			}
			if !got.Valid || got.Int64 != 0 {
				break
			}
		}
		return getLockAnswer(got)

	case sqldriver.AnswersAppLock:
		var code int64
		if err := l.run.query(ctx, stmt(steps[0]), &code); err != nil {
			return doubtful(err)
		}
		return applockAnswer(code)

	case sqldriver.AnswersHandle:
		var handle string
		var code int64
		if err := l.run.query(ctx, stmt(steps[0]), &handle, &code); err != nil {
			return doubtful(err)
		}
		switch code {
		case 0:
			l.release = stmt(l.fam.ReleaseHandle(handle))
			return nil
		case 1:
			return ErrTimeout
		}
		return fmt.Errorf("DBMS_LOCK.REQUEST returned %d (%s)", code, oracleCode(code))
	}
	return l.dialect.Require(dialects.AdvisoryLock)
}

// waitMore returns the next wait after a GET_LOCK that timed out, when the
// database cut the wait short of w (TiDB's waits of a second): started is
// when the first wait began. ok is false when w has run out, or where one
// GET_LOCK waits the whole wait.
func (l *Lock) waitMore(w wait, started time.Time) (statement, bool) {
	left := w.sd()
	if !w.forever {
		if left.D = w.d - time.Since(started); left.D <= 0 {
			return statement{}, false
		}
	}
	st, ok := l.fam.More(l.name, left)
	return stmt(st), ok
}

// getLockAnswer reads GET_LOCK's 1 (acquired), 0 (timed out) or NULL (an
// error such as the thread being killed).
func getLockAnswer(got sql.NullInt64) error {
	switch {
	case !got.Valid:
		// Interrupted (KILL QUERY) or failed: it may have been granted.
		return doubtful(errors.New("GET_LOCK returned NULL (the wait was interrupted or failed)"))
	case got.Int64 == 1:
		return nil
	case got.Int64 == 0:
		return ErrTimeout
	}
	return fmt.Errorf("GET_LOCK returned %d", got.Int64)
}

// applockAnswer reads sp_getapplock's return code.
func applockAnswer(code int64) error {
	switch {
	case code >= 0: // 0 granted at once, 1 granted after waiting
		return nil
	case code == -1:
		return ErrTimeout
	case code == -2:
		return doubtful(errors.New("sp_getapplock returned -2 (the lock request was cancelled)"))
	case code == -3:
		return errors.New("sp_getapplock returned -3 (chosen as deadlock victim)")
	}
	return fmt.Errorf("sp_getapplock returned %d (parameter validation or other call error)", code)
}

// oracleCode names DBMS_LOCK's REQUEST and RELEASE return codes.
func oracleCode(code int64) string {
	switch code {
	case 0:
		return "success"
	case 1:
		return "timeout"
	case 2:
		return "deadlock"
	case 3:
		return "parameter error"
	case 4:
		return "already own the lock, or do not own it"
	case 5:
		return "illegal lock handle"
	}
	return "unknown"
}
