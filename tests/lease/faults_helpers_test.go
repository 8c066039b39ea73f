package lease_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
)

// The fault tests (faults_*_test.go) run on servers of their own
// (tests/internal/servers), through the fault proxy
// (tests/internal/faultproxy), never on the shared default servers: they
// kill, restart and partition them.

// naiveAcquireScript is the Redis acquire script before issue 10: not
// idempotent per owner (a retried acquire finds its own key and answers
// "held") and a plain INCR counter (back to 1 after a restart without
// persistence). It is the unprotected baseline of the fault tests.
var naiveAcquireScript = redis.NewScript(`
local ttl = tonumber(ARGV[2])
local set
if ttl > 0 then
	set = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ttl)
else
	set = redis.call("SET", KEYS[1], ARGV[1], "NX")
end
if not set then
	return 0
end
return redis.call("INCR", KEYS[2])`)

// naiveRedis is the Redis store with naiveAcquireScript.
type naiveRedis struct {
	*redisstore.Store
	c redis.UniversalClient
}

func (s naiveRedis) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	k := s.Key(name)
	f, err := naiveAcquireScript.Run(ctx, s.c, []string{k, k + ":fence"}, owner, ttl.Milliseconds()).Int64()
	return f, f > 0, err
}

// naiveDo is Do as the Manager did it before issue 10, without a local
// safety deadline: fn's context is cancelled only when a KeepAlive refresh
// returns an error or "not held", each refresh bounded only through its
// context (TTL minus interval, from the tick). The unprotected baseline.
func naiveDo(ctx context.Context, s lease.Store, name string, ttl, interval time.Duration, fn func(context.Context)) error {
	owner := randomOwner()
	_, ok, err := s.Acquire(ctx, name, owner, ttl)
	if err != nil {
		return err
	}
	if !ok {
		return lease.ErrNotAcquired
	}
	fctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-fctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(context.Background(), ttl-interval)
			ok, err := s.Refresh(rctx, name, owner, ttl)
			rcancel()
			if err != nil || !ok {
				cancel()
				return
			}
		}
	}()
	fn(fctx)
	cancel()
	rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
	defer rcancel()
	_, _ = s.Release(rctx, name, owner)
	return nil
}

func randomOwner() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// grantClock wraps a Store and records when the Acquire that succeeded
// was sent: the earliest moment the store can have granted the lease.
type grantClock struct {
	lease.Store
	mu            sync.Mutex
	sent, replied time.Time // of the acquire that was granted
}

func (g *grantClock) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	sent := time.Now()
	f, ok, err := g.Store.Acquire(ctx, name, owner, ttl)
	if ok && err == nil {
		g.mu.Lock()
		g.sent, g.replied = sent, time.Now()
		g.mu.Unlock()
	}
	return f, ok, err
}

// takeover is one run of a holder whose store fails under it while a
// rival, on a healthy path to the store, waits for the lease.
type takeover struct {
	// overlap: the rival may have been granted the lease before the
	// holder's fn saw its context end.
	overlap bool
	// margin: how long before the rival's grant (its acquire's send time)
	// fn's context ended; negative or meaningless with overlap.
	margin time.Duration
	got    bool // the rival got the lease within its wait
	// starved: an overlap where the holder's own timer ran more than
	// starvedAfter past the lease's safety deadline: this process was not
	// scheduled (a loaded machine), which no local mechanism can help and
	// fencing exists for; or where fn's context ended while the rival's
	// grant was in flight for more than starvedAfter, so that the grant's
	// moment is unknown. Reported apart, and limited by the tests.
	starved bool
	late    time.Duration // how late the lease's context ended after its deadline
}

// starvedAfter is how late the holder's timer may run before a run counts
// as starved rather than as a failure of the mechanism.
const starvedAfter = 50 * time.Millisecond

// runTakeover starts holder, which must call fn while it holds name; once
// fn runs it calls fault, then a rival Manager on rival waits up to 5 s
// for the lease. It does not wait for the holder to end. A holder that
// ends without calling fn fails the test with its error, unless its store
// was too slow to grant the lease in the first place (ErrStoreTimeout, or
// ErrNotAcquired while that timed-out acquire is being abandoned): a
// loaded machine, before any fault, so it is started again, twice at most.
func runTakeover(t *testing.T, name string, holder func(fn func(context.Context)) error, fault func(), rival lease.Store) takeover {
	t.Helper()
	var in chan struct{}
	var cancelled atomic.Pointer[time.Time]
	var started, expiry time.Time // written before in closes
	var leaseEnded atomic.Pointer[time.Time]
	for attempt := 1; ; attempt++ {
		in = make(chan struct{})
		fnIn := in
		held := make(chan error, 1)
		go func() {
			held <- holder(func(ctx context.Context) {
				started = time.Now()
				if l, ok := lease.FromContext(ctx); ok {
					expiry = l.Expiry()
					context.AfterFunc(l.Context(), func() { now := time.Now(); leaseEnded.Store(&now) })
				}
				close(fnIn)
				<-ctx.Done()
				now := time.Now()
				cancelled.Store(&now)
			})
		}()
		var err error
		select {
		case <-in:
		case err = <-held:
			select {
			case <-in: // fn ran, and ended before the fault
				err = nil
			default:
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the holder did not get the lease within 5 s")
		}
		if err == nil {
			break
		}
		if attempt == 3 || !(errors.Is(err, lease.ErrStoreTimeout) || errors.Is(err, lease.ErrNotAcquired)) {
			t.Fatalf("the holder did not get the lease: %v", err)
		}
		t.Logf("the holder's attempt %d did not get the lease before any fault (a loaded store): %v; again", attempt, err)
		time.Sleep(500 * time.Millisecond) // the timed-out acquire's abandon frees the name
	}
	fault()
	g := &grantClock{Store: rival}
	l, err := lease.NewManager(g, lease.PollInterval(5*time.Millisecond)).
		Acquire(context.Background(), name, lease.TTL(10*time.Second), lease.WaitAtMost(5*time.Second))
	if err != nil {
		t.Logf("rival: %v", err)
		c := cancelled.Load()
		return takeover{overlap: c == nil}
	}
	defer func() { _ = l.Release(context.Background()) }()
	c := cancelled.Load()
	g.mu.Lock()
	sent, replied := g.sent, g.replied
	g.mu.Unlock()
	var late time.Duration
	if !expiry.IsZero() {
		end := time.Now()
		if le := leaseEnded.Load(); le != nil {
			end = *le
		}
		late = end.Sub(expiry)
	}
	if c == nil || !c.Before(sent) {
		at, lat := "not yet", "not yet"
		if c != nil {
			at = c.Sub(started).String()
		}
		if le := leaseEnded.Load(); le != nil {
			lat = le.Sub(started).String()
		}
		// The store granted the rival somewhere between the acquire's send
		// and its reply. When fn's context ended inside that window and the
		// window is wide (the database ran the statement late, on a loaded
		// machine), the run cannot tell an overlap from a late start.
		ambiguous := c != nil && c.Before(replied) && replied.Sub(sent) > starvedAfter
		starved := !expiry.IsZero() && (late > starvedAfter || ambiguous)
		if !expiry.IsZero() {
			t.Logf("OVERLAP on %q (starved: %v): from fn's start, holder's safety deadline %v, rival's grant sent %v and answered %v, lease ctx ended %s, fn's ctx ended %s",
				name, starved, expiry.Sub(started), sent.Sub(started), replied.Sub(started), lat, at)
		}
		return takeover{overlap: !starved, starved: starved, got: true, late: late}
	}
	return takeover{margin: sent.Sub(*c), got: true, late: late}
}

// summary counts overlaps and reports the margins of a series of runs.
// ok: no overlap, and at most 2 starved runs in a series.
type summary struct {
	runs, overlaps, takeovers, starved int
	margins                            []time.Duration
	maxLate                            time.Duration
}

func (s *summary) add(r takeover) {
	s.runs++
	s.maxLate = max(s.maxLate, r.late)
	if r.overlap {
		s.overlaps++
	}
	if r.starved {
		s.starved++
	}
	if r.got {
		s.takeovers++
	}
	if !r.overlap && r.got {
		s.margins = append(s.margins, r.margin)
	}
}

func (s *summary) String() string {
	out := fmt.Sprintf("%d overlaps in %d runs (%d takeovers)", s.overlaps, s.runs, s.takeovers)
	if s.starved > 0 {
		out += fmt.Sprintf(", %d runs starved (holder's timer, or the rival's grant, > %v late)", s.starved, starvedAfter)
	}
	if s.maxLate > 0 {
		out += fmt.Sprintf("; the lease's context ended at most %v after its deadline", s.maxLate.Round(time.Millisecond))
	}
	if len(s.margins) > 0 {
		m := append([]time.Duration(nil), s.margins...)
		sort.Slice(m, func(i, j int) bool { return m[i] < m[j] })
		out += fmt.Sprintf("; fn's ctx ended before the rival's grant by min %v, median %v",
			m[0].Round(time.Millisecond), m[len(m)/2].Round(time.Millisecond))
	}
	return out
}

func (s *summary) ok() bool { return s.overlaps == 0 && s.starved <= 2 }
