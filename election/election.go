// Package election elects one leader among any number of candidates, in
// any number of processes, on any lease.Store: the leader is whoever holds
// the lease on the election's name.
//
//	// fragment: needs ctx context.Context, store lease.Store
//	e, err := election.New(store, "billing-leader")
//	if err != nil {
//		return err
//	}
//	term, err := e.Campaign(ctx) // blocks until this candidate leads
//	if err != nil {
//		return err
//	}
//	defer term.Resign(context.Background())
//	tick := time.NewTicker(time.Second)
//	defer tick.Stop()
//	for term.Leading() {
//		// one round of the leader's work, on term.Context()
//		select {
//		case <-term.Done(): // the term ended: Leading is now false
//		case <-tick.C:
//		}
//	}
//
// The loop waits between rounds: a leader with nothing to do blocks on
// the term's Done channel (or its Context) instead of spinning on
// Leading.
//
// A Term's number is the lease's fence, so terms strictly increase, and a
// leader can fence its writes with it (lockplugin.WithFence(ctx, term)):
// a deposed leader's writes are then refused where the data lives.
//
// No two terms overlap in time, by the lease Manager's safety rules: a
// term ends (Done closes, Leading turns false) at the lease's safety
// deadline, the send time of the last successful refresh plus the TTL
// minus a margin for clock drift, which is before the store can let a
// successor in. The leader must act only while Leading() reports true and
// stop when Done closes: Leading compares the clock with the deadline, so
// it is right even just after a process pause, before Done's timer has
// run.
//
// TryCampaign, when another candidate leads, returns an error matching
// ErrNotLeader and lockplugin.ErrBusy, the one sentinel that every
// mechanism's "someone else has it" answer matches.
package election

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockplugin/lockplugin/internal/lockerr"
	"github.com/lockplugin/lockplugin/lease"
)

// DefaultTTL is an election's lease TTL unless TTL says otherwise: a
// leader that dies is replaced within about this long.
const DefaultTTL = 10 * time.Second

// Elector is one candidate in one election. It is safe for concurrent
// use; Campaign may be called again after a term ends. Make it with New:
// the methods of a zero Elector or a nil *Elector return an error naming
// election.New.
type Elector struct {
	store lease.Store
	m     *lease.Manager
	name  string
	ttl   time.Duration
	every time.Duration // keep-alive interval
	poll  time.Duration // Observe's read interval
	idle  time.Duration // a waiting candidate's check interval
	call  time.Duration // CallTimeout: bound of each store read

	mu  sync.Mutex
	cur *Term // the latest term this Elector won, until it ends
}

// Option configures an Elector. A nil Option is ignored; an invalid value
// is returned as an error by New.
type Option func(*options)

type options struct {
	ttl     time.Duration
	poll    time.Duration
	pollSet bool
	call    time.Duration
}

// TTL sets the lease TTL (default DefaultTTL, 10 s): how long a dead
// leader blocks the election. The leader refreshes it every third of it.
// d must be at least 400 ms.
func TTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// PollInterval sets how often a waiting candidate checks a held
// election, and how often Observe reads the store.
//
// Without it, a waiting candidate checks every TTL/10 (at most
// CallTimeout, at least lease.DefaultPollInterval), with jitter, so that
// an idle candidate costs the store about ten cheap reads per TTL
// whatever the number of candidates, and a new leader follows a dead one
// within the TTL plus that interval; on a store that signals releases
// (Watcher: etcd, Redis, the table store with sqlstore.Listen) it waits for
// the signal and checks only every third of the TTL. Observe then reads
// every lease.DefaultPollInterval (50 ms).
//
// With it, a waiting candidate checks every d (every max(d, TTL/3) on a
// Watcher store), and Observe reads every d.
func PollInterval(d time.Duration) Option {
	return func(o *options) { o.poll, o.pollSet = d, true }
}

// CallTimeout bounds each store call the Elector makes (default
// lease.DefaultCallTimeout, 5 s): its Manager's calls, each Leader read,
// and each of Observe's reads, so that Observe reports an unreachable
// store within about this long. d must be positive.
func CallTimeout(d time.Duration) Option { return func(o *options) { o.call = d } }

// errZeroElector answers every call on an Elector not made by New.
var errZeroElector = errors.New("election: Elector was not made by New (zero value or nil); use election.New")

// usable refuses an Elector not made by New.
func (e *Elector) usable() error {
	if e == nil || e.m == nil || e.store == nil {
		return errZeroElector
	}
	return nil
}

// New returns a candidate for the election name on store.
func New(store lease.Store, name string, opts ...Option) (*Elector, error) {
	if store == nil {
		return nil, errors.New("election: New needs a lease.Store, got nil")
	}
	if name == "" {
		return nil, errors.New("election: empty election name")
	}
	o := options{ttl: DefaultTTL, poll: lease.DefaultPollInterval, call: lease.DefaultCallTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.ttl < 400*time.Millisecond {
		return nil, fmt.Errorf("election: TTL must be at least 400ms, got %v", o.ttl)
	}
	if o.poll <= 0 {
		return nil, fmt.Errorf("election: PollInterval must be positive, got %v", o.poll)
	}
	if o.call <= 0 {
		return nil, fmt.Errorf("election: CallTimeout must be positive, got %v", o.call)
	}
	e := &Elector{store: store, name: name, ttl: o.ttl, poll: o.poll, call: o.call}
	e.every = e.ttl / 3
	e.idle = o.poll
	if !o.pollSet {
		e.idle = max(min(e.ttl/10, e.call), lease.DefaultPollInterval)
	}
	e.m = lease.NewManager(store, lease.PollInterval(e.poll), lease.CallTimeout(e.call))
	return e, nil
}

// Name returns the election's name ("" for an Elector not made by New).
func (e *Elector) Name() string {
	if e == nil {
		return ""
	}
	return e.name
}

// Campaign blocks until this candidate leads, and returns its term. Its
// first attempt takes the lease at once if it is free. While another
// candidate leads it waits: on a store that signals releases (Watcher:
// etcd, Redis) until the signal, checking every third of the TTL besides; on
// the others it checks every PollInterval (by default TTL/10, with
// jitter; see PollInterval). A check on a store that can say who holds
// the name (Holder) is one read, and Campaign tries to take the lease
// only when the read finds it free, so that idle candidates write
// nothing. It keeps waiting through store errors, backing off, until ctx
// ends; it then returns ctx's error joined with the last store error, if
// any.
//
// When this Elector leads already (a term it won is still Leading), it
// returns that same term at once, without a store call: a leader never
// waits on itself. Resigning that term ends it for every caller that got
// it.
func (e *Elector) Campaign(ctx context.Context) (*Term, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, errors.New("election: nil context")
	}
	if t := e.leading(); t != nil {
		return t, nil
	}
	var (
		watch   <-chan struct{} // release signals, nil without (or between watches)
		watcher Watcher
		wcancel context.CancelFunc = func() {}
	)
	defer func() { wcancel() }()
	if w, ok := e.store.(Watcher); ok {
		watcher = w
	}
	startWatch := func() {
		if watcher == nil {
			return
		}
		wcancel()
		var wctx context.Context
		wctx, wcancel = context.WithCancel(ctx)
		if ch, err := watcher.WatchRelease(wctx, e.name); err == nil {
			watch = ch
		}
	}
	startWatch() // before the first attempt, so that a release after it signals
	holder, _ := e.store.(Holder)
	var lastErr error
	failures := 0
	read := false // whether to read the holder before trying (after a timed wait)
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for {
		if t := e.leading(); t != nil {
			return t, nil // won meanwhile by another Campaign of this Elector
		}
		var err error
		if read && holder != nil {
			err = e.heldBy(ctx, holder)
		}
		if err == nil {
			var l *lease.Lease
			l, err = e.m.Acquire(ctx, e.name, lease.TTL(e.ttl))
			if err == nil {
				return e.begin(l), nil
			}
		}
		var d time.Duration
		if !errors.Is(err, lease.ErrNotAcquired) {
			if ctx.Err() != nil {
				return nil, errors.Join(ctx.Err(), err)
			}
			lastErr = err
			d = min(e.idle<<min(failures, 6), e.ttl)
			d = d/2 + rand.N(d/2+1)
			failures++
		} else {
			failures = 0
			d = e.idle
			if watch != nil {
				d = max(d, e.ttl/3)
			}
			d = d - rand.N(d/4+1) // jitter: candidates that began together spread out
		}
		if watcher != nil && watch == nil {
			startWatch() // the last watch ended (or failed to start): watch again
		}
		t.Reset(d)
		read = true
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return nil, errors.Join(ctx.Err(), lastErr)
			}
			return nil, ctx.Err()
		case _, ok := <-watch:
			if !t.Stop() {
				select { // drain a value the timer sent meanwhile (Go < 1.23 timers)
				case <-t.C:
				default:
				}
			}
			if !ok {
				// The watch ended: check as a store without one would, and
				// watch again after that check.
				watch = nil
				t.Reset(e.idle - rand.N(e.idle/4+1))
				select {
				case <-ctx.Done():
					if lastErr != nil {
						return nil, errors.Join(ctx.Err(), lastErr)
					}
					return nil, ctx.Err()
				case <-t.C:
				}
				continue
			}
			read = false // released: try at once
		case <-t.C:
		}
	}
}

// errHeld says a holder read found the election led: Campaign waits
// without trying to take the lease.
var errHeld = fmt.Errorf("election: held: %w", lease.ErrNotAcquired)

// heldBy reads who holds the election: errHeld when another candidate
// holds it now, nil when it is free or the read failed (Campaign then
// tries to take the lease, which reports the store's error if any).
func (e *Elector) heldBy(ctx context.Context, h Holder) error {
	rctx, cancel := context.WithTimeout(ctx, e.call)
	defer cancel()
	_, held, err := h.Holder(rctx, e.name)
	if err == nil && held {
		return errHeld
	}
	return nil
}

// ErrNotLeader is returned by TryCampaign when another candidate leads.
// Errors matching it also match lockplugin.ErrBusy, the sentinel every
// mechanism's "someone else has it" answer matches.
var ErrNotLeader = lockerr.Busy("election: another candidate leads")

// TryCampaign makes one attempt: it returns a term when this candidate
// wins at once, and an error matching ErrNotLeader when another leads.
// When this Elector leads already, it returns that term, as Campaign does.
func (e *Elector) TryCampaign(ctx context.Context) (*Term, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, errors.New("election: nil context")
	}
	if t := e.leading(); t != nil {
		return t, nil
	}
	l, err := e.m.Acquire(ctx, e.name, lease.TTL(e.ttl))
	if errors.Is(err, lease.ErrNotAcquired) {
		return nil, fmt.Errorf("%w: %q", ErrNotLeader, e.name)
	}
	if err != nil {
		return nil, err
	}
	return e.begin(l), nil
}

// leading returns the term this Elector leads now, or nil.
func (e *Elector) leading() *Term {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur != nil && !e.cur.Leading() {
		e.cur = nil
	}
	return e.cur
}

// Watcher is an optional interface of a lease.Store that can notify: a
// signal on the channel (until ctx ends) says name may have been released,
// and Campaign tries at once instead of at its next poll; the channel is
// closed when the watch ends (Campaign then polls, and watches again).
// The etcd store (etcdstore), the Redis store (redisstore: a subscription
// to the channels its scripts publish releases and grants on, and a timer
// for expiry) and the table store with sqlstore.Listen (PostgreSQL: LISTEN,
// and a timer for expiry) implement it; Campaign polls the others.
type Watcher interface {
	WatchRelease(ctx context.Context, name string) (<-chan struct{}, error)
}

// Holder is an optional interface of a lease.Store that can say who holds
// a name without taking it: the fence of the latest lease and whether it
// is held now (by the store's clock). A store that keeps no record of a
// released lease answers 0 and false for a name nobody holds. The table
// store (sqlstore), the Redis store (redisstore) and the etcd store
// (etcdstore) have it; the local file store does not.
type Holder interface {
	Holder(ctx context.Context, name string) (fence int64, held bool, err error)
}

// HolderWatcher is an optional interface of a Holder store that can
// notify: a signal on the channel says name's holder may have changed, and
// Observe reads at once instead of at its next poll; the channel is
// closed when the watch ends (Observe then watches again at its next
// poll). The etcd store (etcdstore), the Redis store (redisstore) and the
// table store with sqlstore.Listen (PostgreSQL) implement it.
type HolderWatcher interface {
	WatchHolder(ctx context.Context, name string) (<-chan struct{}, error)
}

// ErrNoHolderRead is returned by Leader and Observe on a store without
// the Holder interface: only the candidates themselves know who leads
// (Elector.Term), and a leader can publish itself with a fenced write.
var ErrNoHolderRead = errors.New("election: the store cannot say who holds a lease (no Holder method); ask the candidates, or have the leader publish its term with a fenced write")

// Leader returns the current term number and whether a leader holds it,
// read from the store (one read, no lease taken, bounded by CallTimeout).
// On a store that keeps no record of a released lease (etcd; Redis once
// the fencing counter has gone with its lease) the term is 0 while nobody
// leads.
func (e *Elector) Leader(ctx context.Context) (term int64, led bool, err error) {
	if err := e.usable(); err != nil {
		return 0, false, err
	}
	if ctx == nil {
		return 0, false, errors.New("election: nil context")
	}
	h, ok := e.store.(Holder)
	if !ok {
		return 0, false, ErrNoHolderRead
	}
	ctx, cancel := context.WithTimeout(ctx, e.call)
	defer cancel()
	term, led, err = h.Holder(ctx, e.name)
	if err != nil {
		return 0, false, fmt.Errorf("election: reading who leads %q: %w", e.name, err)
	}
	return term, led, nil
}

// Observe reports the election's leadership as it changes, reading the
// store every PollInterval, and at once when a store with HolderWatcher
// (etcd, Redis) signals a change: a value is sent when the term number or
// whether it is held changes. The channel is closed when ctx ends.
//
// A read that fails, or has no answer within CallTimeout, is sent as a
// Leadership with Err set (and the last Term and Led read, which may now
// be stale): once when the store stops answering, not on every retry.
// Observe keeps reading every PollInterval, and the first read that
// succeeds after an error is sent even if nothing changed, so the
// receiver knows the outage is over and the values are current again.
// A read still hanging when the next is due is waited for, not doubled.
//
// Term is the latest term Observe has seen: on a store that keeps no
// record of a released lease (etcd, and Redis once its fencing counter has
// gone with the lease, answer 0 once nobody holds it), a
// release is sent as the last term with Led false.
func (e *Elector) Observe(ctx context.Context) (<-chan Leadership, error) {
	if err := e.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, errors.New("election: nil context")
	}
	h, ok := e.store.(Holder)
	if !ok {
		return nil, ErrNoHolderRead
	}
	out := make(chan Leadership, 1)
	go func() {
		defer close(out)
		var last Leadership
		first := true
		failing := false
		var pending chan holderRead // a read not answered yet
		var changed <-chan struct{} // HolderWatcher's signals, nil without
		hw, watches := h.(HolderWatcher)
		t := time.NewTicker(e.poll)
		defer t.Stop()
		for {
			if watches && changed == nil {
				// Before the read, so that a change after the read signals.
				if ch, err := hw.WatchHolder(ctx, e.name); err == nil {
					changed = ch
				}
			}
			if pending == nil {
				pending = make(chan holderRead, 1)
				go func(ch chan<- holderRead) {
					rctx, cancel := context.WithTimeout(ctx, e.call)
					defer cancel()
					term, held, err := h.Holder(rctx, e.name)
					ch <- holderRead{term, held, err}
				}(pending)
			}
			var r holderRead
			timeout := time.NewTimer(e.call)
			select {
			case r = <-pending:
				pending = nil
			case <-timeout.C:
				r.err = fmt.Errorf("no answer within CallTimeout %v: %w", e.call, context.DeadlineExceeded)
			case <-ctx.Done():
				timeout.Stop()
				return
			}
			timeout.Stop()
			var cur Leadership
			send := false
			if r.err != nil {
				if ctx.Err() != nil {
					return
				}
				cur = Leadership{Term: last.Term, Led: last.Led,
					Err: fmt.Errorf("election: reading who leads %q: %w", e.name, r.err)}
				send = !failing
				failing = true
			} else {
				if r.term == 0 && !r.held {
					r.term = last.Term // a store with no record of released leases
				}
				cur = Leadership{Term: r.term, Led: r.held}
				send = first || failing || cur.Term != last.Term || cur.Led != last.Led
				failing, first = false, false
			}
			if send {
				select {
				case out <- cur:
				case <-ctx.Done():
					return
				}
			}
			last = cur
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case _, ok := <-changed:
				if !ok {
					// The watch ended: poll, and watch again after it.
					changed = nil
					select {
					case <-ctx.Done():
						return
					case <-t.C:
					}
				}
			}
		}
	}()
	return out, nil
}

// holderRead is one Holder answer.
type holderRead struct {
	term int64
	held bool
	err  error
}

// Leadership is one observation: the latest term and whether it is led.
// Err, when not nil, says the store could not be read: Term and Led are
// then the last values read, and may be stale until a Leadership with a
// nil Err follows.
type Leadership struct {
	Term int64
	Led  bool
	Err  error
}
