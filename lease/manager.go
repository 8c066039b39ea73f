package lease

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockplugin/lockplugin/observe"
)

// MaxNameLength is the longest lock name, in bytes, that Manager accepts.
// Stores keep long names as a hash, so the limit only stops runaway input.
const MaxNameLength = 1024

// Manager takes, refreshes and releases leases on one Store. It is safe
// for concurrent use; one Manager per store is enough for a process.
//
// Every store call it makes is bounded by the Manager itself (CallTimeout,
// the caller's context, WaitAtMost, the lease's safety deadline): on the
// caller's goroutine, under a context ending at the bound, when the store
// declares that its client honours contexts (ContextHonourer); otherwise
// on a goroutine that the Manager stops waiting for at the bound (see
// CallTimeout for what happens to a call that is still running then).
type Manager struct {
	store       Store
	poll        time.Duration
	callTimeout time.Duration
	err         error            // an invalid ManagerOption, reported by every call
	obs         observe.Observer // WithObserver: observe.go
	inline      bool             // the store honours its contexts (ContextHonourer)
	// noWait: the store's WaitFree answered errors.ErrUnsupported (a
	// Waiter only in some configurations, the table store without Listen):
	// the Manager polls from then on without asking again.
	noWait atomic.Bool
}

// NewManager returns a Manager over store. Invalid options, and a nil
// store, are reported by every Acquire and Do; nil options are ignored.
func NewManager(store Store, opts ...ManagerOption) *Manager {
	o := managerOptions{poll: DefaultPollInterval, callTimeout: DefaultCallTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	m := &Manager{store: store, poll: o.poll, callTimeout: o.callTimeout, obs: o.obs, err: o.err}
	if store == nil {
		m.err = errors.New("lease: NewManager needs a Store, got nil")
	} else {
		m.inline = honours(store)
	}
	return m
}

// Acquire takes the lease on name, waiting for it as long as the
// WaitAtMost option allows (not at all without it), with the TTL option's TTL (DefaultTTL, 30 s, without
// one). It returns an error that matches ErrNotAcquired only when the
// store answered that someone else holds the lease; a store that errs or
// does not answer gives a wrapped store error (matching ErrStoreTimeout
// when the Manager stopped waiting), returned within the context's
// deadline and the WaitAtMost. A context already ended gives its error.
// Errors matching ErrNotAcquired also match lockplugin.ErrBusy.
//
// When an acquire's outcome is unknown (an error, or no answer in time),
// the Manager releases the name under the new handle's owner token, which
// nobody else has, so that a lease the store took but whose reply was lost
// does not stay held by nobody: at once, retried until the store answers
// (or the TTL has passed; a minute for NoExpiry), and again when an
// abandoned call finally returns. The caller must Release the returned Lease, and should
// stop the protected work when its Done channel closes (at its safety
// deadline unless refreshed).
func (m *Manager) Acquire(ctx context.Context, name string, opts ...Option) (*Lease, error) {
	o, err := m.check(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	if o.keepAlive > 0 {
		return nil, errors.New("lease: KeepAlive applies to Do; refresh a Lease from Acquire with Lease.Refresh")
	}
	return m.observedAcquire(ctx, name, o)
}

// Do takes the lease on name, runs fn, and releases the lease, also when
// fn fails or panics. Without a TTL option the lease has DefaultTTL and is
// refreshed every DefaultTTL/3 (KeepAlive); with TTL(d) and no KeepAlive
// it is not refreshed, so d is fn's time budget.
//
// fn's context is ctx, also cancelled (with a cause matching ErrLeaseLost)
// when the lease may no longer be held: at its safety deadline (see
// Lease) unless a refresh succeeded before, or when a refresh finds it
// gone. This happens on a timer, whether or not a store call has
// returned, so fn learns before any other holder can get in. fn reads its
// Lease, and its fence, with FromContext(ctx).
//
// Do returns fn's error; an error that matches ErrNotAcquired, without
// running fn, when someone else held the lease; a store error, without
// running fn, when the store failed or did not answer (see Acquire); and
// an error that matches ErrLeaseLost when the lease was lost while fn ran,
// joined with fn's error if any.
//
// The release runs on a context that survives ctx's cancellation, bounded
// by CallTimeout, so a cancelled caller still frees the lease. When the
// lease was lost, Do does not wait for that release: it runs on its own
// goroutine, and Do returns at once.
func (m *Manager) Do(ctx context.Context, name string, fn func(ctx context.Context) error, opts ...Option) (err error) {
	o, err := m.check(ctx, name, opts)
	if err != nil {
		return err
	}
	if fn == nil {
		return errors.New("lease: Do needs a function, got nil")
	}
	if !o.ttlSet && o.keepAlive == 0 {
		o.keepAlive = DefaultTTL / 3
	}
	l, err := m.observedAcquire(ctx, name, o)
	if err != nil {
		return err
	}

	lctx := l.Context()
	fnCtx, cancel := context.WithCancelCause(context.WithValue(ctx, ctxKey{}, l))
	stopLink := context.AfterFunc(lctx, func() { cancel(context.Cause(lctx)) })
	kaCtx, kaStop := context.WithCancel(context.Background())
	lost := make(chan error, 1)
	if o.keepAlive > 0 {
		go func() { lost <- l.keepAlive(kaCtx, o.keepAlive) }()
	} else {
		lost <- nil
	}

	var fnErr error
	defer func() {
		kaStop()
		lostErr := <-lost
		stopLink()
		if lostErr == nil && lctx.Err() != nil {
			lostErr = context.Cause(lctx) // the deadline passed under fn
		}
		cancel(nil)
		release := func() error {
			relCtx, relCancel := context.WithTimeout(context.WithoutCancel(ctx), m.callTimeout)
			defer relCancel()
			return l.Release(relCtx)
		}
		if lostErr != nil {
			// The lease may still be held: free it, but without waiting,
			// since the store may be unreachable (that may be why it was
			// lost) and the outcome adds nothing to the loss.
			go func() { _ = release() }()
			err = join(lostErr, fnErr)
			return
		}
		err = join(release(), fnErr)
	}()
	fnErr = fn(fnCtx)
	return nil // replaced by the deferred function
}

// keepAlive refreshes l every interval, drawn a little early (see
// nextRefresh), until ctx ends. A refresh that
// fails without an answer is retried with backoff (from interval/8,
// doubling, at most interval) until the lease's safety deadline, when the
// lease's own timer ends it; each retry is bounded by that deadline. It
// returns nil when ctx ended first, else an error matching ErrLeaseLost
// wrapping the last store error, if any.
func (l *Lease) keepAlive(ctx context.Context, interval time.Duration) error {
	lctx := l.Context()
	t := time.NewTimer(firstRefresh(interval)) // jittered early: keepalive_jitter.go
	defer t.Stop()
	var lastErr error
	failures := 0
	// lost is the error of a lease that ended under keepAlive; stopped is
	// what keepAlive reports when ctx ends: nil, unless the
	// lease had already ended too (fn returned because it did, and Do's
	// stop raced the lease's own end), which must not lose its cause.
	lost := func() error {
		if lastErr != nil {
			return fmt.Errorf("%w (last refresh: %w)", context.Cause(lctx), lastErr)
		}
		return context.Cause(lctx)
	}
	stopped := func() error {
		if lctx.Err() != nil {
			return lost()
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return stopped()
		case <-lctx.Done():
			return lost()
		case <-t.C:
		}
		err := l.refresh(ctx, 0)
		switch {
		case ctx.Err() != nil:
			return stopped()
		case err == nil:
			lastErr, failures = nil, 0
			t.Reset(nextRefresh(interval))
		case errors.Is(err, ErrLeaseLost):
			return join(err, lastErr)
		default:
			// Keep the store's own error over a later "no answer in time"
			// of a retry that the deadline cut short.
			if lastErr == nil || !errors.Is(err, ErrStoreTimeout) || errors.Is(lastErr, ErrStoreTimeout) {
				lastErr = err
			}
			d := min(interval/8<<min(failures, 10), interval)
			failures++
			t.Reset(d/2 + rand.N(d/2+1))
		}
	}
}

// check validates everything before any store call.
func (m *Manager) check(ctx context.Context, name string, opts []Option) (options, error) {
	if m == nil {
		return options{}, errZeroManager
	}
	if m.err != nil {
		return options{}, m.err
	}
	if m.store == nil {
		return options{}, errZeroManager
	}
	if ctx == nil {
		return options{}, errors.New("lease: nil context")
	}
	if err := checkName(name); err != nil {
		return options{}, err
	}
	return buildOptions(opts)
}

func checkName(name string) error {
	if name == "" {
		return errors.New("lease: empty lock name")
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("lease: lock name of %d bytes is longer than the %d-byte limit", len(name), MaxNameLength)
	}
	return nil
}

// acquired is one Acquire's answer.
type acquired struct {
	grant Grant
	ok    bool
}

// storeAcquire takes name through AcquireGrant when the store has it, else
// through Acquire (its Grant then has the TTL asked for and no handle).
func (m *Manager) storeAcquire(ctx context.Context, name, owner string, ttl time.Duration) (acquired, error) {
	if gs, ok := m.store.(GrantStore); ok {
		g, ok, err := gs.AcquireGrant(ctx, name, owner, ttl)
		if err == nil && ok {
			g.TTL = grantedTTL(g.TTL, ttl)
		}
		return acquired{g, ok}, err
	}
	fence, ok, err := m.store.Acquire(ctx, name, owner, ttl)
	return acquired{Grant{Fence: fence, TTL: ttl}, ok}, err
}

// grantedTTL is the TTL a lease is kept on: the store's granted one, but
// never shorter than asked (a store answering less breaks its contract;
// keeping the asked one is then no worse than the store's word) and
// never "no expiry" for a lease asked with one.
func grantedTTL(granted, asked time.Duration) time.Duration {
	if asked == 0 {
		return 0
	}
	return max(granted, asked)
}

func (m *Manager) acquire(ctx context.Context, name string, o options) (*Lease, error) {
	owner, err := newOwner()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lease: acquiring %q: %w", name, err)
	}
	ttl := o.ttl
	if o.noExpiry {
		ttl = 0
	}
	start := time.Now()
	var end time.Time // WaitAtMost's end, which bounds store calls too
	if o.wait > 0 {
		end = start.Add(o.wait)
	}
	if q, ok := m.store.(Queuer); ok && o.wait > 0 && ttl > 0 {
		return m.acquireQueued(ctx, q, name, owner, ttl, o, start, end) // queue.go
	}
	if ls, ok := m.store.(*LocalStore); ok && o.wait > 0 && ls.check() == nil {
		// Waiters queue in the process: local_queue.go.
		return m.acquireQueued(ctx, localQueuer{ls}, name, owner, ttl, o, start, end)
	}
	var timer *time.Timer
	heldSeen := false // the store has answered "held"
	quickWakes := 0   // WaitFree calls in a row that returned without waiting
	for attempt := 0; ; attempt++ {
		sent := start // the first attempt is sent now: one clock read fewer
		if attempt > 0 {
			sent = time.Now()
		}
		bound := earliest(sent.Add(m.callTimeout), end)
		if ttl > 0 {
			// An answer later than this would be useless: the lease could
			// already be someone else's.
			bound = earliest(bound, sent.Add(ttl-margin(ttl)))
		}
		// The two paths spelled out rather than through run, so that the
		// closures the inline path alone sees stay on the stack.
		var r acquired
		var cut bool
		if m.inline {
			r, err, cut = callInline(ctx, sent, bound, func(ctx context.Context) (acquired, error) {
				return m.storeAcquire(ctx, name, owner, ttl)
			}, func(r acquired, err error) { m.lateAcquire(name, owner, sent, ttl, r, err) })
		} else {
			r, err, cut = call(ctx, bound, func(ctx context.Context) (acquired, error) {
				return m.storeAcquire(ctx, name, owner, ttl)
			}, func(r acquired, err error) { m.lateAcquire(name, owner, sent, ttl, r, err) })
		}
		if err != nil {
			// The outcome is unknown: free the name under owner, waiting for
			// that briefly (a store that failed fast usually answers fast),
			// within the caller's bounds.
			wait := earliest(bound, time.Now().Add(abandonWait))
			if cut {
				wait = time.Time{} // the bound has passed: do not wait
			}
			m.abandon(name, owner, abandonLimit(sent, ttl), wait)
			if heldSeen && errors.Is(err, ErrStoreTimeout) && (ctx.Err() != nil || !time.Now().Before(end)) {
				// Waiting for a busy name: its last answer was "held", and
				// the wait or the context ran out during the next poll.
				return nil, &NotAcquiredError{Name: name, Waited: time.Since(start), Err: ctx.Err()}
			}
			return nil, fmt.Errorf("lease: acquiring %q: %w", name, err)
		}
		if r.ok {
			l := newLease(m, name, owner, r.grant, sent)
			if o.hold > 0 {
				l.holdUntil = sent.Add(o.hold) // HoldAtLeast: hold.go
			}
			if l.lostCause() != nil {
				m.abandon(name, owner, abandonLimit(sent, ttl), time.Time{})
				return nil, fmt.Errorf("lease: acquiring %q: %w: the store's answer came after the lease's safety deadline", name, ErrStoreTimeout)
			}
			return l, nil
		}
		heldSeen = true
		if o.wait == 0 {
			return nil, &NotAcquiredError{Name: name}
		}
		waited := time.Since(start)
		if waited >= o.wait {
			return nil, &NotAcquiredError{Name: name, Waited: waited}
		}
		// A Waiter that keeps waking at once while the name stays held
		// (spurious wake-ups, allowed but not useful) falls back to polling
		// for that round, so a bad watch cannot spin on the store.
		if w, ok := m.store.(Waiter); ok && quickWakes < 2 && !m.noWait.Load() {
			waitStart := time.Now()
			if m.waitFree(ctx, w, name, start.Add(o.wait)) {
				if err := ctx.Err(); err != nil {
					return nil, &NotAcquiredError{Name: name, Waited: time.Since(start), Err: err}
				}
				if waited := time.Since(start); waited >= o.wait {
					return nil, &NotAcquiredError{Name: name, Waited: waited}
				}
				if time.Since(waitStart) < m.poll/2 {
					quickWakes++
				} else {
					quickWakes = 0
				}
				continue
			}
		}
		quickWakes = 0
		d := min(m.nextPoll(), o.wait-waited)
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			// The store's last answer was "held": the context ended the
			// wait for a busy name.
			return nil, &NotAcquiredError{Name: name, Waited: time.Since(start), Err: ctx.Err()}
		case <-timer.C:
		}
	}
}

// lateAcquire handles the answer of an acquire sent at sent that came
// after its caller stopped waiting: the store may have granted it, so it
// is released under owner.
func (m *Manager) lateAcquire(name, owner string, sent time.Time, ttl time.Duration, r acquired, err error) {
	if r.ok || err != nil {
		m.abandon(name, owner, abandonLimit(sent, ttl), time.Time{}) // the call came back after all
	}
}

// waitFree blocks on the store's WaitFree until name may be free, end
// passes, ctx ends, or maxWatch (a guard against a watch that misses an
// event) has passed, bounded like every store call. It reports whether
// the wait is over (a retry is due now); false means the store could not
// watch, and the caller polls instead.
func (m *Manager) waitFree(ctx context.Context, w Waiter, name string, end time.Time) bool {
	bound := earliest(end, time.Now().Add(maxWatch))
	_, err, _ := run(m, ctx, bound, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.WaitFree(ctx, name)
	}, nil)
	// The watch ending at the bound or the context is a due retry (the
	// loop then finds the context or the wait ended); any other error
	// means the store cannot watch now, and ErrUnsupported that it never
	// will.
	if errors.Is(err, errors.ErrUnsupported) {
		m.noWait.Store(true)
		return false
	}
	return err == nil || ctx.Err() != nil || !time.Now().Before(bound)
}

// maxWatch bounds one WaitFree: a waiter re-checks the name at least this
// often even if the store's watch never fires.
const maxWatch = 5 * time.Second

// abandon releases name for owner after an Acquire whose outcome is
// unknown. The store may have taken the lease before the error reached the
// caller (its reply lost to a timeout, a cancelled context or a broken
// connection); nobody else has the owner token, so only this call can free
// it. If it was not taken, the release is refused and changes nothing.
//
// It runs on its own goroutine and context, detached from the caller's
// (which may be the very reason the acquire failed): each attempt bounded
// by CallTimeout, retried with backoff until the store frees the name or
// until limit, after which the lease has expired anyway. A "not held"
// answer is not the end: the acquire may not have reached the store yet
// (a statement the server reads late, behind a descheduled backend, runs
// after a release sent on another connection), so the release is sent
// again abandonRechecks times, 20 ms to 640 ms apart (1.26 s in all),
// and an acquire landing later than that is left to its TTL. The caller
// waits for it until wait at most (zero: not at all).
func (m *Manager) abandon(name, owner string, limit, wait time.Time) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		notHeld := 0
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(context.Background(), m.callTimeout)
			ok, err, _ := run(m, ctx, time.Now().Add(m.callTimeout), func(ctx context.Context) (bool, error) {
				return m.store.Release(ctx, name, owner)
			}, nil)
			cancel()
			var d time.Duration
			switch {
			case err == nil && ok:
				return // freed
			case err == nil:
				if notHeld == abandonRechecks {
					return
				}
				d = time.Duration(20<<notHeld) * time.Millisecond
				notHeld++
			default:
				d = time.Duration(10<<min(attempt, 7)) * time.Millisecond // 10 ms to 1.28 s
				d = d/2 + rand.N(d/2)
			}
			if time.Now().Add(d).After(limit) {
				return
			}
			time.Sleep(d)
		}
	}()
	if wait.IsZero() {
		return
	}
	t := time.NewTimer(time.Until(wait))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// abandonRechecks is how many more times abandon releases a name the
// store said was not held (see abandon).
const abandonRechecks = 6

// abandonWait is the longest an Acquire that failed waits for its
// abandon before it returns; abandon goes on in the background.
const abandonWait = 250 * time.Millisecond

// abandonLimit is how long abandon keeps trying to release a lease whose
// acquire was sent at sent: until its TTL has passed (it has expired by
// then), or for a minute when it has none.
func abandonLimit(sent time.Time, ttl time.Duration) time.Time {
	if ttl == 0 {
		return sent.Add(time.Minute)
	}
	return sent.Add(ttl)
}

// nextPoll draws the next retry delay from [poll/2, 3*poll/2).
func (m *Manager) nextPoll() time.Duration {
	return m.poll/2 + rand.N(m.poll)
}

// newOwner returns a fresh owner token: 128 random bits from crypto/rand
// in hex. The bits are read from the system in blocks of ownerBlock
// tokens, and each token's bytes are used once: a token is as
// unpredictable as one read on its own, at a fraction of the cost.
func newOwner() (string, error) {
	var buf [2 * ownerBytes]byte
	owners.mu.Lock()
	if owners.next == len(owners.block) {
		if _, err := cryptorand.Read(owners.block[:]); err != nil {
			owners.mu.Unlock()
			return "", fmt.Errorf("lease: reading random owner token: %w", err)
		}
		owners.next = 0
	}
	raw := owners.block[owners.next : owners.next+ownerBytes]
	hex.Encode(buf[:], raw)
	clear(raw) // never handed out twice, nor left in memory
	owners.next += ownerBytes
	owners.mu.Unlock()
	return string(buf[:]), nil
}

const (
	ownerBytes = 16 // 128 bits per owner token
	ownerBlock = 32 // tokens read from crypto/rand at once
)

// owners is newOwner's block of random bytes not yet handed out.
var owners = struct {
	mu    sync.Mutex
	block [ownerBytes * ownerBlock]byte
	next  int
}{next: ownerBytes * ownerBlock}

// join returns the non-nil errors of a and b, joined only when both are.
func join(a, b error) error {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return errors.Join(a, b)
}
