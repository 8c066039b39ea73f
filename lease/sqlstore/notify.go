package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Receive receives the next notification on a PostgreSQL connection that
// has run LISTEN. The store calls it inside (*sql.Conn).Raw, with the
// driver's connection: it blocks until a notification arrives and
// returns its channel and payload, or returns an error when ctx ends or
// the connection fails. When ctx ends it must leave the connection usable:
// the store ends the read that way to run LISTEN or UNLISTEN on the same
// connection when a waiter comes to a name or the last one leaves it (a
// Receive that closes the connection instead makes every such change a
// lost connection: waits poll while the store LISTENs again). Reading notifications is not part of
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
// A release wakes one waiting Acquire per process (the first), not all.
//
// Channels: a release is announced on a channel of the name's own (a hash
// of the table and the name), and the connection LISTENs only on the names
// the store's waiters wait for (UNLISTEN 1 s after the last one left), so
// a process is sent the releases it waits for, not every release of the
// table. Measured (TestI25TableListenScale: 8 processes, 200 names, 4 hot
// names with a waiter per process, about 700 releases/s): 2.0
// notifications received per acquisition in all, against 8.0 with one
// channel per table (every process got every release, 12-15% of them of
// use to it); client CPU and statements per acquisition were within the
// noise either way (600-760 µs, 4.2-4.6). PostgreSQL before 19 still
// wakes every LISTENing backend of the database at each notifying commit,
// whatever its channels, to read and skip the message: the LISTEN
// backends' CPU (about 190 µs per acquisition there) did not change.
// The release still notifies the table's channel too, for waiters of
// releases before this one during a rolling upgrade; a waiter of this
// release does not hear an older releaser, and finds its release at its
// next check (at least every 5 s) or the lease's expiry.
//
// Every process using the table should pass
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

// unlistenLinger is how long the connection keeps LISTENing on a name's
// channel after the last waiter of that name left: a waiter that lost the
// race for the name usually waits again at once, and a LISTEN/UNLISTEN
// pair each time would cost two statements and two interruptions of the
// connection's read.
const unlistenLinger = time.Second

// nameChannelPrefix starts the notification channel of a name.
const nameChannelPrefix = "lp_"

// notifier is the store's one LISTEN connection and its waiters: the
// connection LISTENs on the channel of each name some waiter of the store
// waits for (nameChannel), and each notification (a released name) is
// handed to the waiters of that name, in the process.
type notifier struct {
	s           *Store
	receive     Receive
	salt        string // the table's channel and ":", hashed with a name into its channel
	listenSQL   func(channel string) string
	unlistenSQL func(channel string) string
	remaining   stmt

	mu      sync.Mutex
	run     *listenRun                            // the connection listening now (or starting), nil when none
	subs    map[string]map[*subscription]struct{} // by key(name)
	chans   map[string]int                        // channel -> keys in subs that it carries
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
	err    error         // why it stopped; read after lost
	lost   chan struct{} // closed when the connection stops listening
	cancel context.CancelFunc
	// Under notifier.mu: the channels the connection LISTENs on or is to
	// LISTEN on; dirty when they changed since it last ran LISTEN and
	// UNLISTEN; interrupt ends the read in progress so that it does.
	chans     map[string]*listenChan
	dirty     bool
	interrupt context.CancelFunc
}

// listenChan is one channel of a connection.
type listenChan struct {
	ready     chan struct{} // closed once LISTEN ran
	listening bool
	idleSince time.Time // when its last waiter left (zero while one waits)
}

// subscription is one waiter's interest in one name.
type subscription struct {
	key     string
	channel string
	c       chan struct{} // a release of key was announced (buffered 1)
	run     *listenRun
	// watch: an election watch, told of every release; else a waiting
	// Acquire (WaitFree), woken one at a time in arrival order (seq).
	watch bool
	seq   uint64
}

// channelName is the notification channel of a table: its name when it
// fits PostgreSQL's 63 bytes, else a hash of it. Releases still announce
// themselves on it, for waiters of releases before 0.x that LISTEN on it
// (a rolling upgrade); the store's own waiters LISTEN on nameChannel.
func channelName(table string) string {
	if len(table) <= 63 {
		return table
	}
	sum := sha256.Sum256([]byte(table))
	return "lockplugin_" + hex.EncodeToString(sum[:16])
}

// nameChannel is the channel a release of key is announced on: "lp_" and
// 24 hex digits of the SHA-256 of the table's channel, ":" and key, as the
// release statement computes it (sqldriver.LeaseNotifier). Two names
// that share a channel (a 96-bit collision) only wake each other's
// connection: the payload is the name.
func (n *notifier) nameChannel(key string) string {
	sum := sha256.Sum256([]byte(n.salt + key))
	return nameChannelPrefix + hex.EncodeToString(sum[:12])
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
	salt := ch + ":"
	s.stmts.release = renderOne(s.dr, s.quoted, ln.NotifyingRelease(ch, nameChannelPrefix, salt))
	s.notify = &notifier{
		s: s, receive: receive, salt: salt, listenSQL: ln.Listen, unlistenSQL: ln.Unlisten,
		remaining: renderOne(s.dr, s.quoted, remainingTmpl),
		subs:      map[string]map[*subscription]struct{}{},
		chans:     map[string]int{},
	}
	return nil
}

// subscribe registers interest in name's releases and returns once the
// store's connection LISTENs on its channel (so that a release after
// subscribe returns is announced to it), starting that connection if none
// is.
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
	k := key(name)
	sub := &subscription{key: k, channel: n.nameChannel(k), c: make(chan struct{}, 1), run: r, watch: watch, seq: n.seq}
	m := n.subs[k]
	if m == nil {
		m = map[*subscription]struct{}{}
		n.subs[k] = m
		n.chans[sub.channel]++
	}
	m[sub] = struct{}{}
	n.count++
	if n.idle != nil {
		n.idle.Stop()
		n.idle = nil
	}
	lc := r.chans[sub.channel]
	if lc == nil {
		lc = &listenChan{ready: make(chan struct{})}
		r.chans[sub.channel] = lc
		r.poke()
	}
	lc.idleSince = time.Time{}
	n.mu.Unlock()
	select {
	case <-lc.ready:
		return sub, nil
	case <-r.lost:
		n.unsubscribe(sub)
		return nil, r.err
	case <-ctx.Done():
		n.unsubscribe(sub)
		return nil, ctx.Err()
	}
}

// poke makes the connection run LISTEN and UNLISTEN for its channels'
// changes, ending the read in progress; notifier.mu is held.
func (r *listenRun) poke() {
	r.dirty = true
	if r.interrupt != nil {
		r.interrupt()
		r.interrupt = nil
	}
}

// unsubscribe drops sub; the last one out of a name lets the connection
// UNLISTEN its channel after unlistenLinger, and the last one out of the
// store stops the connection after notifyLinger.
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
		if n.chans[sub.channel]--; n.chans[sub.channel] <= 0 {
			delete(n.chans, sub.channel)
			if r := n.run; r != nil {
				if lc := r.chans[sub.channel]; lc != nil {
					lc.idleSince = time.Now()
					time.AfterFunc(unlistenLinger, func() {
						n.mu.Lock()
						defer n.mu.Unlock()
						if n.run == r && n.chans[sub.channel] == 0 && r.chans[sub.channel] == lc {
							r.poke()
						}
					})
				}
			}
		}
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
	r := &listenRun{lost: make(chan struct{}), cancel: cancel, chans: map[string]*listenChan{}}
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
	r.err = err
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
// the end, never handed back LISTENing), and in turns runs LISTEN and
// UNLISTEN for the channels that waiters came to or left, and dispatches
// notifications until a change ends the read, until the connection fails
// or ctx ends.
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
	conn, err := db.Conn(octx)
	cancel()
	if err != nil {
		return fmt.Errorf("sqlstore: taking a connection to LISTEN on %s: %w", n.s.d, err)
	}
	defer conn.Close()
	for {
		if err := n.sync(ctx, conn, r); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // discard it
			return err
		}
		n.mu.Lock()
		if r.dirty {
			n.mu.Unlock()
			continue
		}
		rctx, rcancel := context.WithCancel(ctx)
		r.interrupt = rcancel
		n.mu.Unlock()
		var lost error
		_ = conn.Raw(func(dc any) error {
			for {
				_, payload, err := n.receive(rctx, dc)
				if err != nil {
					if rctx.Err() != nil && ctx.Err() == nil {
						return nil // poked: the connection is kept (Receive's contract)
					}
					lost = err
					return driver.ErrBadConn // never back to the pool, LISTENing
				}
				n.dispatch(payload)
			}
		})
		rcancel()
		if lost != nil || ctx.Err() != nil {
			if lost == nil {
				lost = ctx.Err()
			}
			return fmt.Errorf("sqlstore: the LISTEN connection on %s ended: %w", n.s.d, lost)
		}
	}
}

// sync runs, in one round trip, LISTEN for the channels waiters came to
// and UNLISTEN for those nobody waited on for unlistenLinger, and marks
// the new ones ready.
func (n *notifier) sync(ctx context.Context, conn *sql.Conn, r *listenRun) error {
	var listen []string
	var stmts []string
	now := time.Now()
	n.mu.Lock()
	r.dirty = false
	for ch, lc := range r.chans {
		wanted := n.chans[ch] > 0
		switch {
		case !lc.listening && !wanted: // its waiters left before it listened
			delete(r.chans, ch)
		case !lc.listening:
			listen = append(listen, ch)
			stmts = append(stmts, n.listenSQL(ch))
		case wanted:
		case lc.idleSince.IsZero():
			lc.idleSince = now
		case now.Sub(lc.idleSince) >= unlistenLinger:
			delete(r.chans, ch) // a waiter that comes now adds it again, LISTENed after this UNLISTEN
			stmts = append(stmts, n.unlistenSQL(ch))
		}
	}
	n.mu.Unlock()
	if len(stmts) == 0 {
		return nil
	}
	octx, cancel := context.WithTimeout(ctx, notifyOpenTimeout)
	defer cancel()
	if _, err := conn.ExecContext(octx, strings.Join(stmts, "; ")); err != nil {
		return fmt.Errorf("sqlstore: LISTEN/UNLISTEN on %s: %w", n.s.d, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.backoff = 0
	for _, ch := range listen {
		if lc := r.chans[ch]; lc != nil && !lc.listening {
			lc.listening = true
			close(lc.ready)
		}
	}
	return nil
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
