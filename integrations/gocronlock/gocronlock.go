// Package gocronlock runs go-co-op/gocron v2 jobs once per occurrence
// across any number of schedulers, on lockplugin leases: a Locker (one
// lease per job run, held at least a minimum time) and an Elector (one
// leader schedules everything), on any lease.Store.
//
//	// fragment: needs store lease.Store
//	m := lease.NewManager(store)
//	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(
//		gocronlock.NewLocker(m, gocronlock.HoldAtLeast(5*time.Second))))
//	if err != nil {
//		return err
//	}
//	s.Start()
//
// Why the minimum hold: a job scheduled on N nodes fires on each at about
// the same time, but not exactly (clock offsets, scheduler latency). A
// job faster than that spread releases its lock before the late node's
// timer fires, and the late node runs the same occurrence again
// (gocron#841). With HoldAtLeast(d) the lease is kept until d after it was
// taken whatever the job's duration, by the lease store's own TTL, so the
// late node is refused. Choose d above the nodes' spread and below the
// job's interval.
//
// It is a module of its own so that lockplugin does not require gocron.
package gocronlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease"
)

// Locker is a gocron.Locker on a lease.Manager. Make it with NewLocker: a
// zero Locker or a nil *Locker answers Lock with an error naming it.
type Locker struct {
	m    *lease.Manager
	opts options
}

type options struct {
	prefix string
	ttl    time.Duration
	hold   time.Duration
}

var _ gocron.Locker = (*Locker)(nil)

// Option configures a Locker. A nil Option is ignored; an invalid value is
// returned as an error by Lock.
type Option func(*options)

// Prefix is put before each job's name to form its lease name (default
// "gocron:").
func Prefix(p string) Option { return func(o *options) { o.prefix = p } }

// TTL is each run's lease TTL (default 30 s): a node that dies mid-run
// blocks the job this long. The lease is refreshed every third of it
// while the job runs.
func TTL(d time.Duration) Option { return func(o *options) { o.ttl = d } }

// HoldAtLeast keeps each run's lease until d after it was taken, however
// fast the job: see the package doc and lease.HoldAtLeast. Default 0 (no
// minimum), which lets a late node run a fast job's occurrence again.
func HoldAtLeast(d time.Duration) Option { return func(o *options) { o.hold = d } }

// NewLocker returns a Locker taking its leases from m.
func NewLocker(m *lease.Manager, opts ...Option) *Locker {
	l := &Locker{m: m, opts: options{prefix: "gocron:", ttl: 30 * time.Second}}
	for _, o := range opts {
		if o != nil {
			o(&l.opts)
		}
	}
	return l
}

// errZeroLocker and errZeroElector answer calls on values not made by
// NewLocker and NewElector.
var (
	errZeroLocker  = errors.New("gocronlock: Locker was not made by NewLocker (zero value or nil); use gocronlock.NewLocker")
	errZeroElector = errors.New("gocronlock: Elector was not made by NewElector (zero value or nil); use gocronlock.NewElector")
)

// Lock takes the job's lease, without waiting: a job whose lease another
// node holds is not run here (gocron then skips this run).
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if l == nil || l.m == nil {
		return nil, errZeroLocker
	}
	o := l.opts
	if o.ttl <= 0 || o.hold < 0 {
		return nil, fmt.Errorf("gocronlock: TTL must be positive and HoldAtLeast not negative (TTL %v, HoldAtLeast %v)", o.ttl, o.hold)
	}
	le, err := l.m.Acquire(ctx, o.prefix+key, lease.TTL(o.ttl), lease.HoldAtLeast(o.hold))
	if err != nil {
		return nil, err
	}
	lk := &lock{l: le, stop: make(chan struct{})}
	go lk.keepAlive(o.ttl / 3)
	return lk, nil
}

type lock struct {
	l    *lease.Lease
	once sync.Once
	stop chan struct{}
}

func (k *lock) keepAlive(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-k.l.Done():
			return
		case <-t.C:
			if err := k.l.Refresh(context.Background(), 0); errors.Is(err, lease.ErrLeaseLost) {
				return
			}
		}
	}
}

// Unlock releases the run's lease, or, under HoldAtLeast, keeps it until
// the minimum hold has passed.
func (k *lock) Unlock(ctx context.Context) error {
	k.once.Do(func() { close(k.stop) })
	return k.l.Release(ctx)
}

// Elector is a gocron.Elector on an election.Elector: the scheduler whose
// candidate leads runs the jobs. Make it with NewElector: a zero Elector
// or a nil *Elector answers IsLeader with an error naming it.
type Elector struct {
	e    *election.Elector
	mu   sync.Mutex
	term *election.Term
}

var _ gocron.Elector = (*Elector)(nil)

// NewElector returns a gocron.Elector for e.
func NewElector(e *election.Elector) *Elector { return &Elector{e: e} }

// IsLeader returns nil while this candidate leads, trying once to become
// leader when it does not; otherwise an error matching
// election.ErrNotLeader (and lockplugin.ErrBusy).
func (g *Elector) IsLeader(ctx context.Context) error {
	if g == nil || g.e == nil {
		return errZeroElector
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.term != nil && g.term.Leading() {
		return nil
	}
	t, err := g.e.TryCampaign(ctx)
	if err != nil {
		return err
	}
	g.term = t
	return nil
}

// Resign gives up leadership, if held.
func (g *Elector) Resign(ctx context.Context) error {
	if g == nil {
		return errZeroElector
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.term == nil {
		return nil
	}
	err := g.term.Resign(ctx)
	g.term = nil
	return err
}
