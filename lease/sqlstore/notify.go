package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Receive receives the next notification on a PostgreSQL connection that
// has run LISTEN. The store calls it inside (*sql.Conn).Raw, with the
// driver's connection: it blocks until a notification arrives and
// returns its channel and payload, or returns an error when ctx ends or
// the connection fails. Reading notifications is not part of
// database/sql, so each driver needs its own: package
// github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify has the one
// for pgx (github.com/jackc/pgx/v5/stdlib, which GORM's PostgreSQL
// driver uses), in a module of its own so that this one requires no
// database driver.
type Receive func(ctx context.Context, driverConn any) (channel, payload string, err error)

// Listen makes waiting on the store event-driven on PostgreSQL, with
// LISTEN/NOTIFY: a release announces itself (pg_notify in the release
// statement, on the channel named after the table), and a waiting
// Acquire (lease.WaitAtMost: WaitFree) or a waiting election candidate
// (WatchRelease) wakes on it, and at the holder's expiry, instead of
// polling. receive reads the notifications with the database driver
// (pgnotify.Receive for pgx; nil: Listen is off).
//
// What it costs: the store keeps one connection of db's pool while
// anything waits (and 10 s after), LISTENing for every waiter of the
// store at once; a pool of at most one connection cannot spare it, and
// the store then polls. A notifying release commits under PostgreSQL's
// notification lock, one at a time with every other notifying commit of
// the database (8 goroutines acquiring and releasing names of their own
// took about 6 times as long per cycle): that is why it is an option.
// A release wakes one waiting Acquire per process (the first), not all. Every process using the table should pass
// Listen: a release by a process without it announces nothing, and the
// waiters find it only at their next check (at least every 5 s) or the
// lease's expiry. A ForceRelease announces nothing either. When the
// connection cannot LISTEN or is lost, waits fall back to polling and
// the store tries to LISTEN again, backing off up to 5 s.
//
// New fails with Listen on a database other than PostgreSQL.
func Listen(receive Receive) Option { return func(c *config) { c.receive = receive } }

// errNoListen answers WaitFree and the watches without Listen. It
// matches errors.ErrUnsupported: the store cannot wait in this
// configuration (Manager polls, the conformance suite skips its WaitFree
// check).
var errNoListen = fmt.Errorf("sqlstore: waiting on the table store needs the Listen option (PostgreSQL); polling: %w", errors.ErrUnsupported)

// notifyLinger is how long the LISTEN connection stays open after its
// last waiter left, so that waits that follow each other (Manager's
// rounds) do not open a connection each.
const notifyLinger = 10 * time.Second

// notifyOpenTimeout bounds taking the connection and running LISTEN.
const notifyOpenTimeout = 5 * time.Second

// notifyMaxBackoff bounds how long waits poll after LISTEN failed before
// the store tries again.
const notifyMaxBackoff = 5 * time.Second

// notifier is the store's one LISTEN connection and its waiters: each
// notification (a released name) is handed to the waiters of that name,
// in the process.
type notifier struct {
	s         *Store
	receive   Receive
	channel   string
	listenSQL string
	remaining stmt

	mu      sync.Mutex
	run     *listenRun                            // the connection listening now (or starting), nil when none
	subs    map[string]map[*subscription]struct{} // by key(name)
	count   int                                   // subscriptions in subs
	idle    *time.Timer                           // stops run once nobody waits
	seq     uint64                                // the last subscription's number
	checks  map[string]bool                       // keys with a handoff check pending
	retryAt time.Time                             // after a failure: subscribe fails until then
	backoff time.Duration
	lastErr error
}

// listenRun is one LISTEN connection's life.
type listenRun struct {
	ready   chan struct{} // closed once LISTEN ran (err nil) or failed
	err     error         // why it could not LISTEN; read after ready
	lost    chan struct{} // closed when the connection stops listening
	cancel  context.CancelFunc
	started bool // ready is closed (under notifier.mu)
}

// subscription is one waiter's interest in one name.
type subscription struct {
	key string
	c   chan struct{} // a release of key was announced (buffered 1)
	run *listenRun
	// watch: an election watch, told of every release; else a waiting
	// Acquire (WaitFree), woken one at a time in arrival order (seq).
	watch bool
	seq   uint64
}

// channelName is the notification channel of a table: its name when it
// fits PostgreSQL's 63 bytes, else a hash of it.
func channelName(table string) string {
	if len(table) <= 63 {
		return table
	}
	sum := sha256.Sum256([]byte(table))
	return "lockplugin_" + hex.EncodeToString(sum[:16])
}

// remainingTmpl reads how long name's lease has left by the database's
// clock: ms > 0, -1 for a lease without expiry, 0 when it is not held (no
// row, released, expired).
const remainingTmpl = `SELECT CASE WHEN expires_at = 0 THEN -1 WHEN expires_at > {now} THEN expires_at - {now} ELSE 0 END FROM {t} WHERE lock_name = {name}`

// listen sets up Listen: the notifying release and the notifier. Called
// by New.
func (s *Store) listen(receive Receive) error {
	if receive == nil {
		return nil
	}
	ln, ok := s.dr.LeaseTable().(sqldriver.LeaseNotifier)
	if !ok || s.stmts.tx != nil || s.d.Engine != dialects.NoEngine {
		return fmt.Errorf("sqlstore: Listen needs PostgreSQL's LISTEN/NOTIFY, which %s does not have; leave Listen out there (waits then poll): %w", s.d, dialects.ErrUnsupported)
	}
	ch := channelName(s.table)
	s.stmts.release = renderOne(s.dr, s.quoted, ln.NotifyingRelease(ch))
	s.notify = &notifier{
		s: s, receive: receive, channel: ch, listenSQL: ln.Listen(ch),
		remaining: renderOne(s.dr, s.quoted, remainingTmpl),
		subs:      map[string]map[*subscription]struct{}{},
	}
	return nil
}

// subscribe registers interest in name's releases and returns once the
// store's connection LISTENs (so that a release after subscribe returns
// is announced to it), starting that connection if none is.
func (n *notifier) subscribe(ctx context.Context, name string, watch bool) (*subscription, error) {
	n.mu.Lock()
	r := n.run
	if r == nil {
		if time.Now().Before(n.retryAt) {
			err := n.lastErr
			n.mu.Unlock()
			return nil, fmt.Errorf("sqlstore: LISTEN on %s failed lately, polling until %s: %w", n.s.d, n.retryAt.Format(time.RFC3339Nano), err)
		}
		r = n.start()
	}
	n.seq++
	sub := &subscription{key: key(name), c: make(chan struct{}, 1), run: r, watch: watch, seq: n.seq}
	m := n.subs[sub.key]
	if m == nil {
		m = map[*subscription]struct{}{}
		n.subs[sub.key] = m
	}
	m[sub] = struct{}{}
	n.count++
	if n.idle != nil {
		n.idle.Stop()
		n.idle = nil
	}
	n.mu.Unlock()
	select {
	case <-r.ready:
	case <-ctx.Done():
		n.unsubscribe(sub)
		return nil, ctx.Err()
	}
	if r.err != nil {
		n.unsubscribe(sub)
		return nil, r.err
	}
	return sub, nil
}

// unsubscribe drops sub; the last one out stops the connection after
// notifyLinger.
func (n *notifier) unsubscribe(sub *subscription) {
	n.mu.Lock()
	defer n.mu.Unlock()
	m := n.subs[sub.key]
	if _, ok := m[sub]; !ok {
		return
	}
	delete(m, sub)
	if len(m) == 0 {
		delete(n.subs, sub.key)
	}
	n.count--
	if !sub.watch && len(sub.c) > 0 {
		n.wakeNext(sub.key) // it left without taking its wake-up: pass it on
	}
	if n.count == 0 && n.run != nil && n.idle == nil {
		r := n.run
		n.idle = time.AfterFunc(notifyLinger, func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.run == r && n.count == 0 {
				n.run = nil
				n.idle = nil
				r.cancel()
			}
		})
	}
}

// start begins a new connection's life; n.mu is held.
func (n *notifier) start() *listenRun {
	ctx, cancel := context.WithCancel(context.Background())
	r := &listenRun{ready: make(chan struct{}), lost: make(chan struct{}), cancel: cancel}
	n.run = r
	go n.serve(ctx, r)
	return r
}

// serve runs one LISTEN connection until it fails or ctx (the idle stop)
// ends it.
func (n *notifier) serve(ctx context.Context, r *listenRun) {
	err := n.listenOn(ctx, r)
	n.mu.Lock()
	if n.run == r {
		n.run = nil
	}
	if !r.started {
		r.err = err
		r.started = true
		close(r.ready)
	}
	if ctx.Err() == nil { // failed, not stopped: back off
		n.backoff = min(max(2*n.backoff, 100*time.Millisecond), notifyMaxBackoff)
		n.retryAt = time.Now().Add(n.backoff)
		n.lastErr = err
	}
	n.mu.Unlock()
	r.cancel()
	close(r.lost)
}

// listenOn takes a connection of the pool for good (it is discarded at
// the end, never handed back LISTENing), runs LISTEN, marks r ready and
// dispatches notifications until the connection fails or ctx ends.
func (n *notifier) listenOn(ctx context.Context, r *listenRun) error {
	// The pool itself when it can give a connection of its own (a
	// *sql.DB, or a wrapper of one), else db's *sql.DB.
	var db connOpener
	if p, ok := n.s.pool.(connOpener); ok {
		db = p
	} else if sdb, err := n.s.db.DB(); err == nil {
		db = sdb
	} else {
		return fmt.Errorf("sqlstore: Listen needs db's *sql.DB: %w", err)
	}
	if st, ok := db.(interface{ Stats() sql.DBStats }); ok && st.Stats().MaxOpenConnections == 1 {
		return errors.New("sqlstore: Listen needs a second connection, and db's pool has at most one (SetMaxOpenConns(1)); polling")
	}
	octx, cancel := context.WithTimeout(ctx, notifyOpenTimeout)
	defer cancel()
	conn, err := db.Conn(octx)
	if err != nil {
		return fmt.Errorf("sqlstore: taking a connection to LISTEN on %s: %w", n.s.d, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(octx, n.listenSQL); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // discard it
		return fmt.Errorf("sqlstore: %s on %s: %w", n.listenSQL, n.s.d, err)
	}
	n.mu.Lock()
	n.backoff = 0
	r.started = true
	close(r.ready)
	n.mu.Unlock()
	var lost error
	_ = conn.Raw(func(dc any) error {
		for {
			ch, payload, err := n.receive(ctx, dc)
			if err != nil {
				lost = err
				return driver.ErrBadConn // never back to the pool, LISTENing
			}
			if ch == n.channel {
				n.dispatch(payload)
			}
		}
	})
	return fmt.Errorf("sqlstore: the LISTEN connection on %s ended: %w", n.s.d, lost)
}

// connOpener is a pool that gives out a connection of its own (*sql.DB).
type connOpener interface {
	Conn(ctx context.Context) (*sql.Conn, error)
}

// dispatch hands a release of name to its waiters in the process: every
// election watch, and the waiting Acquire that came first (the others
// would only be refused: one Acquire takes the name). A handoff check
// follows (handoffCheck).
func (n *notifier) dispatch(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for sub := range n.subs[name] {
		if sub.watch {
			select {
			case sub.c <- struct{}{}:
			default:
			}
		}
	}
	n.wakeNext(name)
}

// handoffCheck is how long after waking a waiter the store reads the
// name once (if others still wait in the process): when nobody took it
// (the woken Acquire gave up, its wait or context over), the next waiter
// is woken.
const handoffCheck = 200 * time.Millisecond

// wakeNext wakes the first waiting Acquire of key not woken yet, and
// schedules a handoff check while others wait; n.mu is held.
func (n *notifier) wakeNext(key string) {
	var first *subscription
	waiting := 0
	for sub := range n.subs[key] {
		if sub.watch || len(sub.c) > 0 {
			continue
		}
		waiting++
		if first == nil || sub.seq < first.seq {
			first = sub
		}
	}
	if first == nil {
		return
	}
	first.c <- struct{}{}
	if waiting > 1 && !n.checks[key] {
		if n.checks == nil {
			n.checks = map[string]bool{}
		}
		n.checks[key] = true
		time.AfterFunc(handoffCheck, func() { n.handoff(key) })
	}
}

// handoff is the handoff check of key: one read; when the name is free,
// the next waiter is woken (and another check follows); when the read
// fails, every waiter is (their Acquires find out).
func (n *notifier) handoff(key string) {
	n.mu.Lock()
	delete(n.checks, key)
	waiting := false
	for sub := range n.subs[key] {
		waiting = waiting || (!sub.watch && len(sub.c) == 0)
	}
	n.mu.Unlock()
	if !waiting {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyOpenTimeout)
	defer cancel()
	left, err := n.s.remainingKey(ctx, key)
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case err != nil:
		for sub := range n.subs[key] {
			select {
			case sub.c <- struct{}{}:
			default:
			}
		}
	case left == 0:
		n.wakeNext(key)
	}
}

// remainingFor reads how long name's lease has left: > 0, -1 for no
// expiry, 0 when free.
func (s *Store) remainingFor(ctx context.Context, name string) (time.Duration, error) {
	return s.remainingKey(ctx, key(name))
}

// remainingKey is remainingFor of a stored name (key).
func (s *Store) remainingKey(ctx context.Context, k string) (time.Duration, error) {
	ctx, cancel, err := s.join(ctx, "wait")
	if err != nil {
		return 0, err
	}
	defer cancel()
	st := s.notify.remaining
	var ms int64
	err = s.pool.QueryRowContext(ctx, st.SQL, st.bind(values{name: k})...).Scan(&ms)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, s.wrap("wait", err)
	case ms < 0:
		return -1, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// waitable checks a wait's arguments and that the store can wait.
func (s *Store) waitable(ctx context.Context, name string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return errors.New("sqlstore: nil context")
	}
	if name == "" {
		return errors.New("sqlstore: empty lock name")
	}
	if s.notify == nil {
		return errNoListen
	}
	return nil
}
