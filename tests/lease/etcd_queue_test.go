package lease_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/etcdstore"
	"github.com/lockplugin/lockplugin/lease/leasetest"
	"github.com/lockplugin/lockplugin/tests/internal/servers"
)

// The i25 tests: etcd waiters queue by revision (lease.Queuer).

// etcdWrites reads the cluster's revision and the Raft proposals its
// members have committed (the greatest count among them: every member
// commits every proposal), so that a run's delta counts its writes.
type etcdWrites struct{ rev, proposals int64 }

func readEtcdWrites(t testing.TB, c *servers.EtcdCluster, cl *clientv3.Client) etcdWrites {
	t.Helper()
	r, err := cl.Get(context.Background(), "i25_revision_probe")
	if err != nil {
		t.Fatalf("etcd revision: %v", err)
	}
	w := etcdWrites{rev: r.Header.Revision}
	for _, m := range c.Members {
		n, err := etcdMetric("http://"+m.Addr+"/metrics", "etcd_server_proposals_committed_total")
		if err != nil {
			t.Fatalf("etcd metrics: %v", err)
		}
		w.proposals = max(w.proposals, n)
	}
	return w
}

func (w etcdWrites) minus(o etcdWrites) etcdWrites {
	return etcdWrites{w.rev - o.rev, w.proposals - o.proposals}
}

// etcdMetric reads one unlabelled counter or gauge from a /metrics page.
func etcdMetric(url, name string) (int64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			return int64(v), err
		}
	}
	return 0, fmt.Errorf("%s: no %s", url, name)
}

// contend runs workers goroutines that take a name per times each
// through acquire, holding it for hold, and returns the holders harness's
// counts (overlaps, fence regressions) and how many waits ran out.
func contend(workers, per int, hold time.Duration, acquire func(w int) (fence int64, release func(), err error)) (*holders, int) {
	h := &holders{}
	var notAcquired atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				fence, release, err := acquire(w)
				if err != nil {
					h.mu.Lock()
					h.failed++
					h.mu.Unlock()
					if errors.Is(err, lease.ErrNotAcquired) {
						notAcquired.Add(1)
					}
					continue
				}
				h.enter(fence)
				if hold > 0 {
					time.Sleep(hold)
				}
				h.leave()
				release()
			}
		}()
	}
	wg.Wait()
	return h, int(notAcquired.Load())
}

// enter and leave are holders.fn's bookkeeping for a holder that is not a
// Do callback.
func (h *holders) enter(fence int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inside > 0 {
		h.overlaps++
	}
	h.inside++
	h.runs++
	if fence <= h.last {
		h.regressed++
	}
	h.last = max(h.last, fence)
}

func (h *holders) leave() {
	h.mu.Lock()
	h.inside--
	h.mu.Unlock()
}

// etcdManagerAcquire takes name through Manager.Acquire with a wait.
func etcdManagerAcquire(ms []*lease.Manager, name string, wait time.Duration) func(w int) (int64, func(), error) {
	return func(w int) (int64, func(), error) {
		l, err := ms[w].Acquire(context.Background(), name, lease.TTL(5*time.Second), lease.WaitAtMost(wait))
		if err != nil {
			return 0, nil, err
		}
		return l.Fence(), func() { _ = l.Release(context.Background()) }, nil
	}
}

// etcdMutexAcquire takes name through etcd's concurrency.Mutex, one
// session per worker; its fence is its key's create revision.
func etcdMutexAcquire(t testing.TB, cls []*clientv3.Client, name string, wait time.Duration) func(w int) (int64, func(), error) {
	sessions := make([]*concurrency.Session, len(cls))
	for i, cl := range cls {
		s, err := concurrency.NewSession(cl, concurrency.WithTTL(5))
		if err != nil {
			t.Fatalf("etcd session: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		sessions[i] = s
	}
	return func(w int) (int64, func(), error) {
		mu := concurrency.NewMutex(sessions[w], "i25-mutex/"+name)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := mu.Lock(ctx); err != nil {
			if ctx.Err() != nil {
				return 0, nil, fmt.Errorf("%w: %w", lease.ErrNotAcquired, err)
			}
			return 0, nil, err
		}
		return mu.Header().Revision, func() { _ = mu.Unlock(context.Background()) }, nil
	}
}

// i25EtcdWorkers makes workers Managers (each on a client of its own, as
// processes would be) and the clients.
func i25EtcdWorkers(t testing.TB, c *servers.EtcdCluster, workers int) ([]*lease.Manager, []*clientv3.Client) {
	var ms []*lease.Manager
	var cls []*clientv3.Client
	for range workers {
		cl := etcdClient(t, c)
		cls = append(cls, cl)
		ms = append(ms, lease.NewManager(etcdstoreOn(cl)))
	}
	return ms, cls
}

// TestEtcdQueueContended: 8 workers contend for one name through Manager
// (which queues them by revision) and through etcd's concurrency.Mutex on
// the same cluster, in interleaved rounds (the order alternating, so that
// the machine's load falls on both alike): no overlap, no fence
// regression, no wait (10 s) runs out, at most 4 etcd writes (Raft
// proposals) per acquisition, and the median over the rounds (after one
// warm-up round of each) of lockplugin's acquisitions/s over the Mutex's
// at least 0.8.
func TestEtcdQueueContended(t *testing.T) {
	t.Parallel()
	c := servers.StartEtcdCluster(t)
	const workers, per, rounds = 8, 20, 5
	ms, cls := i25EtcdWorkers(t, c, workers)
	name := namePrefix + "i25_queue_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	mutex := etcdMutexAcquire(t, cls, name, 10*time.Second)
	plugin := etcdManagerAcquire(ms, name, 10*time.Second)

	// run returns the acquisitions/s and the writes of one round of one side.
	run := func(what string, acquire func(w int) (int64, func(), error)) (float64, etcdWrites, int) {
		before := readEtcdWrites(t, c, cls[0])
		start := time.Now()
		h, notAcquired := contend(workers, per, 0, acquire)
		el := time.Since(start)
		d := readEtcdWrites(t, c, cls[0]).minus(before)
		n := float64(max(h.runs, 1))
		rate := float64(h.runs) / el.Seconds()
		t.Logf("%s: %v; %d waits ran out; %.1f acquisitions/s; per acquisition: %.2f revisions, %.2f proposals",
			what, h, notAcquired, rate, float64(d.rev)/n, float64(d.proposals)/n)
		if h.overlaps != 0 || h.regressed != 0 || h.failed != 0 || h.runs != workers*per {
			t.Errorf("%s: %v, want %d runs, no overlap, no regression, no failure", what, h, workers*per)
		}
		return rate, d, h.runs
	}
	// A warm-up round of each, not counted: sessions, connections, the
	// first watches.
	run("concurrency.Mutex, warm-up", mutex)
	run("lockplugin, warm-up", plugin)
	var ratios []float64
	var total etcdWrites
	runs := 0
	for i := range rounds {
		var m, p float64
		var d etcdWrites
		var n int
		if i%2 == 0 {
			m, _, _ = run("concurrency.Mutex", mutex)
			p, d, n = run("lockplugin", plugin)
		} else {
			p, d, n = run("lockplugin", plugin)
			m, _, _ = run("concurrency.Mutex", mutex)
		}
		ratios = append(ratios, p/m)
		total.rev += d.rev
		total.proposals += d.proposals
		runs += n
	}
	slices.Sort(ratios)
	med := ratios[len(ratios)/2]
	t.Logf("lockplugin/concurrency.Mutex acquisitions/s, %d interleaved rounds: median %.2f (sorted %.2f); lockplugin per acquisition: %.2f proposals, %.2f revisions",
		rounds, med, ratios, float64(total.proposals)/float64(max(runs, 1)), float64(total.rev)/float64(max(runs, 1)))
	if total.proposals > 4*int64(runs) {
		t.Errorf("lockplugin: %d etcd proposals for %d acquisitions, want at most 4 each", total.proposals, runs)
	}
	if med < 0.8 {
		t.Errorf("lockplugin: median %.2f of concurrency.Mutex's acquisitions/s, want at least 0.8", med)
	}
}

// TestEtcdQueueCancelledWaiterLeaves: a waiter whose wait runs out leaves
// the queue, so the next waiter is not held up behind it.
func TestEtcdQueueCancelledWaiterLeaves(t *testing.T) {
	t.Parallel()
	c := servers.StartEtcdCluster(t)
	ms, _ := i25EtcdWorkers(t, c, 3)
	name := namePrefix + "i25_leave_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ctx := context.Background()
	holder, err := ms[0].Acquire(ctx, name, lease.TTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// The first waiter gives up after 300 ms; the second queues behind it.
	gaveUp := make(chan error, 1)
	go func() {
		_, err := ms[1].Acquire(ctx, name, lease.TTL(30*time.Second), lease.WaitAtMost(300*time.Millisecond))
		gaveUp <- err
	}()
	time.Sleep(100 * time.Millisecond)
	got := make(chan error, 1)
	go func() {
		l, err := ms[2].Acquire(ctx, name, lease.TTL(30*time.Second), lease.WaitAtMost(10*time.Second))
		if err == nil {
			_ = l.Release(ctx)
		}
		got <- err
	}()
	if err := <-gaveUp; !errors.Is(err, lease.ErrNotAcquired) {
		t.Fatalf("first waiter: %v, want ErrNotAcquired", err)
	}
	time.Sleep(200 * time.Millisecond)
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("second waiter, behind one that gave up: %v", err)
	}
	// Had the one that gave up stayed in the queue, its 30 s TTL would
	// have outlasted the second's 10 s wait.
	t.Logf("second waiter got the lease %v after the release", time.Since(released))
	// A plain Acquire finds the name free again: the queue is empty.
	l, err := ms[0].Acquire(ctx, name, lease.TTL(5*time.Second))
	if err != nil {
		t.Fatalf("Acquire after the queue drained: %v", err)
	}
	_ = l.Release(ctx)
}

// etcdstoreOn is etcdStore on a given client.
func etcdstoreOn(cl *clientv3.Client) *etcdstore.Store {
	return etcdstore.New(cl, etcdstore.Prefix("lease-test/"+redisPrefix))
}

// BenchmarkEtcdContended: 8 workers take one name in turn, b.N
// acquisitions in all, through Manager (etcdstore queues them by
// revision) and through etcd's concurrency.Mutex on the same 3-member
// cluster in the same run. It reports acquisitions/s and the etcd writes
// (Raft proposals, revisions) per acquisition, and fails on an overlap,
// a fence regression or a wait (10 s) that ran out.
func BenchmarkEtcdContended(b *testing.B) {
	c := servers.StartEtcdCluster(b)
	const workers = 8
	ms, cls := i25EtcdWorkers(b, c, workers)
	name := namePrefix + "i25_bench_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	bench := func(b *testing.B, acquire func(w int) (int64, func(), error)) {
		before := readEtcdWrites(b, c, cls[0])
		b.ResetTimer()
		start := time.Now()
		per := (b.N + workers - 1) / workers
		h, notAcquired := contend(workers, per, 0, acquire)
		el := time.Since(start)
		b.StopTimer()
		d := readEtcdWrites(b, c, cls[0]).minus(before)
		n := float64(max(h.runs, 1))
		b.ReportMetric(float64(h.runs)/el.Seconds(), "acq/s")
		b.ReportMetric(float64(d.proposals)/n, "proposals/acq")
		b.ReportMetric(float64(d.rev)/n, "revisions/acq")
		if h.overlaps != 0 || h.regressed != 0 || notAcquired != 0 || h.failed != 0 {
			b.Fatalf("%v; %d waits ran out", h, notAcquired)
		}
	}
	b.Run("lockplugin", func(b *testing.B) { bench(b, etcdManagerAcquire(ms, name, 10*time.Second)) })
	b.Run("baseline=concurrency.Mutex", func(b *testing.B) { bench(b, etcdMutexAcquire(b, cls, name, 10*time.Second)) })
}

// TestEtcdTenThousandLeases takes 10,000 leases on names of their own at
// once through one Manager, then releases them. etcd answers "too many
// requests" when its apply falls too far behind its commits; the store
// sends such a request again with backoff (etcd refused it before
// proposing anything), so no acquire fails with it.
func TestEtcdTenThousandLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 leases on etcd")
	}
	t.Parallel()
	c := servers.StartEtcdCluster(t)
	cl := etcdClient(t, c)
	m := lease.NewManager(etcdstoreOn(cl), lease.CallTimeout(60*time.Second))
	const n = 10000
	base := namePrefix + "i25_10k_" + strconv.FormatInt(time.Now().UnixNano(), 36) + "_"
	var tooMany, otherErr atomic.Int64
	var firstErr atomic.Value
	leases := make([]*lease.Lease, n)
	before := readEtcdWrites(t, c, cl)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := m.Acquire(context.Background(), base+strconv.Itoa(i), lease.TTL(60*time.Second))
			switch {
			case err == nil:
				leases[i] = l
			case strings.Contains(err.Error(), "too many requests"):
				tooMany.Add(1)
			default:
				otherErr.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	d := readEtcdWrites(t, c, cl).minus(before)
	var released, releaseErr atomic.Int64
	for _, l := range leases {
		if l == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Release(context.Background()); err != nil {
				releaseErr.Add(1)
			} else {
				released.Add(1)
			}
		}()
	}
	wg.Wait()
	t.Logf("10,000 acquires at once in %v: %d failed with too many requests, %d with another error (first: %v); %.2f proposals, %.2f revisions per acquire; %d released, %d release errors",
		took.Round(time.Millisecond), tooMany.Load(), otherErr.Load(), firstErr.Load(), float64(d.proposals)/n, float64(d.rev)/n, released.Load(), releaseErr.Load())
	if tooMany.Load() != 0 || otherErr.Load() != 0 {
		t.Errorf("%d acquires failed with too many requests, %d otherwise", tooMany.Load(), otherErr.Load())
	}
}

// TestContendCatchesOverlap: the contend harness counts overlaps and
// fence regressions, shown on a store that grants everyone (so the zeros
// of the etcd runs mean something).
func TestContendCatchesOverlap(t *testing.T) {
	m := lease.NewManager(leasetest.GrantAll())
	h, _ := contend(8, 20, time.Millisecond, func(int) (int64, func(), error) {
		l, err := m.Acquire(context.Background(), namePrefix+"i25_grantall", lease.TTL(5*time.Second), lease.WaitAtMost(time.Second))
		if err != nil {
			return 0, nil, err
		}
		return l.Fence(), func() { _ = l.Release(context.Background()) }, nil
	})
	t.Logf("grant-everyone store: %v", h)
	if h.overlaps == 0 || h.regressed == 0 {
		t.Fatalf("grant-everyone store: %v; the harness missed overlaps or regressions", h)
	}
}

// TestEtcdQueueHandoffFence: a releasing holder hands the name to the
// first waiter; the waiter's fence is above the holder's, Holder reports
// it, the waiter's own rewrites of its key (a repeated Acquire, a Refresh
// with another TTL: the key moves to a new etcd lease) keep it, and the
// next holder's fence is above it.
func TestEtcdQueueHandoffFence(t *testing.T) {
	t.Parallel()
	c := servers.StartEtcdCluster(t)
	s := etcdstoreOn(etcdClient(t, c))
	ctx := context.Background()
	name := namePrefix + "i25_handoff_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ttl := 5 * time.Second
	ga, ok, err := s.AcquireGrant(ctx, name, "owner-a", ttl)
	if err != nil || !ok {
		t.Fatalf("a: ok=%v err=%v", ok, err)
	}
	type got struct {
		g   lease.Grant
		ok  bool
		err error
	}
	bc := make(chan got, 1)
	go func() {
		g, _, ok, err := s.AcquireQueued(ctx, name, "owner-b", ttl)
		bc <- got{g, ok, err}
	}()
	// Wait until b queues, then release: the name goes to b by handoff.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if f, held, err := s.Holder(ctx, name); err != nil || !held || f != ga.Fence {
			t.Fatalf("Holder while a holds: %d %v %v, want %d", f, held, err, ga.Fence)
		}
		// A plain Acquire is refused while b queues for a free name too.
		if _, ok, err := s.AcquireGrant(ctx, name, "owner-x", ttl); err != nil || ok {
			t.Fatalf("a stranger's Acquire while held: ok=%v err=%v", ok, err)
		}
		r, err := etcdClient(t, c).Get(ctx, s.Key("\x00q/"), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if r.Count > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b did not queue")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ok, err := s.ReleaseGrant(ctx, name, "owner-a", ga); err != nil || !ok {
		t.Fatalf("a's release: ok=%v err=%v", ok, err)
	}
	b := <-bc
	if b.err != nil || !b.ok {
		t.Fatalf("b: ok=%v err=%v", b.ok, b.err)
	}
	if b.g.Fence <= ga.Fence {
		t.Fatalf("b's fence %d after a's %d", b.g.Fence, ga.Fence)
	}
	holder := func(what string) {
		t.Helper()
		if f, held, err := s.Holder(ctx, name); err != nil || !held || f != b.g.Fence {
			t.Fatalf("Holder %s: %d %v %v, want b's fence %d", what, f, held, err, b.g.Fence)
		}
	}
	holder("after the handoff")
	if g, ok, err := s.AcquireGrant(ctx, name, "owner-b", 3*ttl); err != nil || !ok || g.Fence != b.g.Fence {
		t.Fatalf("b's repeated Acquire: fence %d ok=%v err=%v, want fence %d", g.Fence, ok, err, b.g.Fence)
	}
	holder("after b's repeated Acquire")
	if ok, err := s.Refresh(ctx, name, "owner-b", ttl); err != nil || !ok {
		t.Fatalf("b's Refresh: ok=%v err=%v", ok, err)
	}
	holder("after b's Refresh")
	if ok, err := s.Release(ctx, name, "owner-b"); err != nil || !ok {
		t.Fatalf("b's Release: ok=%v err=%v", ok, err)
	}
	gc, ok, err := s.AcquireGrant(ctx, name, "owner-c", ttl)
	if err != nil || !ok || gc.Fence <= b.g.Fence {
		t.Fatalf("c: fence %d ok=%v err=%v, want above b's %d", gc.Fence, ok, err, b.g.Fence)
	}
	if f, _, _ := s.Holder(ctx, name); f != gc.Fence {
		t.Fatalf("Holder after c took the name: %d, want %d", f, gc.Fence)
	}
	_, _ = s.ReleaseGrant(ctx, name, "owner-c", gc)
}

// TestEtcdQueueDeadFirstWaiter: the first waiter is dead (its queue key
// on an etcd lease nobody renews): the holder's release hands it the
// name, its lease expires, and the next waiter takes the name then.
func TestEtcdQueueDeadFirstWaiter(t *testing.T) {
	t.Parallel()
	c := servers.StartEtcdCluster(t)
	cl := etcdClient(t, c)
	ms, _ := i25EtcdWorkers(t, c, 2)
	s := etcdstoreOn(cl)
	ctx := context.Background()
	name := namePrefix + "i25_dead_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	holder, err := ms[0].Acquire(ctx, name, lease.TTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// A ghost queues as the store would, on a 2 s lease nobody renews.
	gl, err := cl.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	qkey := s.Key("\x00q/" + strconv.Itoa(len(name)) + ":" + name + "/ghost")
	if _, err := cl.Put(ctx, qkey, "ghost", clientv3.WithLease(gl.ID)); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var fence int64
	go func() {
		l, err := ms[1].Acquire(ctx, name, lease.TTL(5*time.Second), lease.WaitAtMost(15*time.Second))
		if err == nil {
			fence = l.Fence()
			_ = l.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(300 * time.Millisecond)
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter behind a dead one: %v", err)
	}
	t.Logf("the waiter behind a dead one got the name %v after the release (the dead one's lease: 2 s)", time.Since(released).Round(time.Millisecond))
	if fence <= holder.Fence() {
		t.Fatalf("fence %d after %d", fence, holder.Fence())
	}
}

// TestEtcdSpareLeaseRepeatedRelease: a released acquisition's etcd lease
// (released by a handoff to a waiter, then without one) is kept as a
// spare and carries the next acquisition's key; a release of the first
// repeated (as after a lost reply) answers not held and leaves the
// others held.
func TestEtcdSpareLeaseRepeatedRelease(t *testing.T) {
	t.Parallel()
	c := servers.StartEtcdCluster(t)
	s := etcdstoreOn(etcdClient(t, c))
	ctx := context.Background()
	base := namePrefix + "i25_spare_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ttl := 5 * time.Second
	for _, handoff := range []bool{true, false} {
		name, other := base+"_"+strconv.FormatBool(handoff), base+"_other_"+strconv.FormatBool(handoff)
		ga, ok, err := s.AcquireGrant(ctx, name, "owner-a", ttl)
		if err != nil || !ok {
			t.Fatalf("a: ok=%v err=%v", ok, err)
		}
		wc := make(chan lease.Grant, 1)
		if handoff {
			go func() {
				g, _, ok, err := s.AcquireQueued(ctx, name, "owner-w", ttl)
				if err != nil || !ok {
					t.Errorf("w: ok=%v err=%v", ok, err)
				}
				wc <- g
			}()
			for {
				r, err := etcdClient(t, c).Get(ctx, s.Key("\x00q/"), clientv3.WithPrefix(), clientv3.WithCountOnly())
				if err != nil {
					t.Fatal(err)
				}
				if r.Count > 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		if ok, err := s.ReleaseGrant(ctx, name, "owner-a", ga); err != nil || !ok {
			t.Fatalf("a's release: ok=%v err=%v", ok, err)
		}
		var gw lease.Grant
		if handoff {
			gw = <-wc
		}
		gb, ok, err := s.AcquireGrant(ctx, other, "owner-b", ttl)
		if err != nil || !ok {
			t.Fatalf("b: ok=%v err=%v", ok, err)
		}
		if gb.Handle != ga.Handle {
			t.Errorf("handoff %v: b did not get a's etcd lease as a spare (%v, %v)", handoff, gb.Handle, ga.Handle)
		}
		if ok, err := s.ReleaseGrant(ctx, name, "owner-a", ga); err != nil || ok {
			t.Fatalf("handoff %v: a's repeated release: ok=%v err=%v, want not held", handoff, ok, err)
		}
		if f, held, err := s.Holder(ctx, other); err != nil || !held || f != gb.Fence {
			t.Fatalf("handoff %v: after a's repeated release: b's Holder %d %v %v, want fence %d", handoff, f, held, err, gb.Fence)
		}
		if handoff {
			if f, held, err := s.Holder(ctx, name); err != nil || !held || f != gw.Fence {
				t.Fatalf("after a's repeated release: w's Holder %d %v %v, want fence %d", f, held, err, gw.Fence)
			}
			_, _ = s.ReleaseGrant(ctx, name, "owner-w", gw)
		}
		if ok, err := s.ReleaseGrant(ctx, other, "owner-b", gb); err != nil || !ok {
			t.Fatalf("b's release: ok=%v err=%v", ok, err)
		}
	}
}
