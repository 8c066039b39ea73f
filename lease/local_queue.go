package lease

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// The local store's waiting (lease.Queuer). flock(2) has no queue: a lock
// freed goes to whichever process tries first, and a waiter polling it can
// lose to others indefinitely. So waiters queue where they can, in their
// process: the waiting Acquires of one process on one name (through any
// LocalStore of the process on the same directory) form a queue, first
// come, first served, and only its head tries the file lock. A release in
// the process wakes the head at once. A plain Acquire (one that does not
// wait) is refused while the process has waiters for the name, so it
// cannot take the name from under them.
//
// Across processes there is no queue: each process's head tries the lock
// when its process's holder releases it, and polls while another process
// holds it, more often the longer it has waited (localPoll), so that an
// old waiter is more likely than a young one to find the name free.
// Unfairness between processes is bounded that way, not removed.

// localQueues are the process's queues, by lock file path.
var localQueues = &localQueueSet{m: map[string]*localQueue{}}

type localQueueSet struct {
	mu    sync.Mutex
	m     map[string]*localQueue
	spare *localQueue // the last queue forgotten, for queueOf to reuse
}

// localQueue is one name's queue in this process. It exists while the
// name is held here or waited for here.
type localQueue struct {
	held    bool           // held through a LocalStore of this process
	waiters []*localWaiter // in arrival order; waiters[0] tries the lock
}

// localWaiter is one waiting Acquire.
type localWaiter struct {
	since time.Time
	wake  chan struct{} // 1 buffered: now the head, or the name was released here
}

// mayTake reports whether a lock attempt on key may go ahead: the name is
// not held in this process, and w (nil for a plain Acquire) is at the head
// of its queue, or nobody waits.
func mayTake(key string, w *localWaiter) bool {
	localQueues.mu.Lock()
	defer localQueues.mu.Unlock()
	q := localQueues.m[key]
	if q == nil {
		return true
	}
	if q.held {
		return false
	}
	if w == nil {
		return len(q.waiters) == 0
	}
	return len(q.waiters) > 0 && q.waiters[0] == w
}

// taken records that key was locked in this process, by w if not nil,
// which leaves the queue. The new head is not woken: it waits for the
// release.
func taken(key string, w *localWaiter) {
	localQueues.mu.Lock()
	defer localQueues.mu.Unlock()
	q := queueOf(key)
	q.held = true
	if w != nil {
		q.remove(w)
	}
}

// released records that key's lock was let go in this process, and wakes
// the head of its queue.
func released(key string) {
	localQueues.mu.Lock()
	defer localQueues.mu.Unlock()
	q := localQueues.m[key]
	if q == nil {
		return
	}
	q.held = false
	q.wakeHead()
	localQueues.forget(key, q)
}

// queueOf is key's queue, made if it has none; under localQueues.mu.
func queueOf(key string) *localQueue {
	q := localQueues.m[key]
	if q == nil {
		q = localQueues.spare
		localQueues.spare = nil
		if q == nil {
			q = &localQueue{}
		}
		localQueues.m[key] = q
	}
	return q
}

// joinQueue queues a new waiter for key; the head is woken at once.
func joinQueue(key string) *localWaiter {
	localQueues.mu.Lock()
	defer localQueues.mu.Unlock()
	q := queueOf(key)
	w := &localWaiter{since: time.Now(), wake: make(chan struct{}, 1)}
	q.waiters = append(q.waiters, w)
	q.wakeHead()
	return w
}

// leaveQueue takes w out of key's queue (it gave up, or failed); a new head is
// woken.
func leaveQueue(key string, w *localWaiter) {
	localQueues.mu.Lock()
	defer localQueues.mu.Unlock()
	q := localQueues.m[key]
	if q == nil {
		return
	}
	q.remove(w)
	q.wakeHead()
	localQueues.forget(key, q)
}

// heldHere reports whether key is held through a LocalStore of this
// process.
func heldHere(key string) bool {
	localQueues.mu.Lock()
	defer localQueues.mu.Unlock()
	q := localQueues.m[key]
	return q != nil && q.held
}

// forget drops q once nothing holds or waits for it. Called with mu held.
func (qs *localQueueSet) forget(key string, q *localQueue) {
	if !q.held && len(q.waiters) == 0 {
		delete(qs.m, key)
		clear(q.waiters[:cap(q.waiters)]) // no waiter kept reachable
		q.waiters = q.waiters[:0]
		qs.spare = q
	}
}

func (q *localQueue) remove(w *localWaiter) {
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			return
		}
	}
}

// wakeHead wakes the head of the queue, if the name is free here.
func (q *localQueue) wakeHead() {
	if q.held || len(q.waiters) == 0 {
		return
	}
	select {
	case q.waiters[0].wake <- struct{}{}:
	default: // already woken
	}
}

// localPoll is how long a queue's head that found the name held by
// another process waits before it tries again: 50 ms for a new waiter,
// shrinking with its age (50 ms / (1 + age/100 ms): 4.5 ms after 1 s,
// 1 ms from 5 s on), drawn from [d/2, 3d/2) so that processes do not try
// in step. One waiter per process and name polls, whatever the number
// waiting.
func localPoll(age time.Duration) time.Duration {
	d := max(time.Duration(float64(50*time.Millisecond)/(1+age.Seconds()*10)), time.Millisecond)
	return d/2 + rand.N(d)
}

// localHeldHereGuard bounds the wait of a head whose name is held in its
// own process, which wakes it on release: a guard, never needed.
const localHeldHereGuard = time.Second

// acquireQueued takes name for owner, queued behind the process's earlier
// waiters for it (Queuer's AcquireQueued, and the comment above): for
// Manager's waiting Acquire and Do, with a TTL or without expiry (ttl is
// ignored). sent is the time of the lock attempt that succeeded.
func (s *LocalStore) acquireQueued(ctx context.Context, name, owner string, ttl time.Duration) (Grant, time.Time, bool, error) {
	if err := s.checkArgs(ctx, name, owner); err != nil {
		return Grant{}, time.Time{}, false, err
	}
	key := s.path(name)
	w := joinQueue(key)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			leaveQueue(key, w)
			return Grant{}, time.Time{}, false, ctx.Err()
		case <-w.wake:
		case <-timer.C:
		}
		if mayTake(key, w) {
			sent := time.Now()
			fence, ok, err := s.take(ctx, name, owner, w)
			if err != nil {
				leaveQueue(key, w)
				return Grant{}, time.Time{}, false, err
			}
			if ok {
				return Grant{Fence: fence, TTL: ttl}, sent, true, nil
			}
		}
		d := localPoll(time.Since(w.since))
		if heldHere(key) {
			d = localHeldHereGuard
		}
		timer.Reset(d)
	}
}

// localQueuer hands a LocalStore's queue to Manager's acquireQueued
// (queue.go), as a Queuer's would be. LocalStore is no GrantStore, hence
// no Queuer: its leases are held by the LocalStore value that took them
// (leasetest.InstanceHolds), and a Grant adds nothing to them.
type localQueuer struct{ s *LocalStore }

func (q localQueuer) AcquireQueued(ctx context.Context, name, owner string, ttl time.Duration) (Grant, time.Time, bool, error) {
	return q.s.acquireQueued(ctx, name, owner, ttl)
}

// queueAcquirer is what acquireQueued needs of a store: a Queuer, or a
// LocalStore through localQueuer.
type queueAcquirer interface {
	AcquireQueued(ctx context.Context, name, owner string, ttl time.Duration) (Grant, time.Time, bool, error)
}
