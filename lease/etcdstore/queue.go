package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockplugin/lockplugin/lease"
)

// The wait queue.
//
// A waiting acquire (lease.Queuer, which Manager uses for Acquire and Do
// with WaitAtMost) joins name's queue: a key <prefix>\x00q/<len>:<name>/<owner>
// attached to the etcd lease it will hold the name with, so that a waiter
// that dies leaves the queue when its lease expires. Its create revision
// is its place. A holder releasing through ReleaseGrant hands the name to
// the first waiter (handOff): one transaction puts the name's key with
// the waiter's owner token on the waiter's etcd lease and deletes its
// queue key. Each waiter watches the name's key, from before it queued
// (a watch registered at the current revision, so that etcd delivers each
// change as it applies it): the handoff's put tells the waiter it names
// that it holds the name, its fence that put's revision, with no request
// of its own; the other waiters pass over it. When the name's key goes
// otherwise (a Release without the grant, an expiry, a handoff that found
// nobody), the waiters read the queue, and the first takes the name in
// one transaction that also deletes its queue key (one that is not first
// watches its predecessor's queue key meanwhile, so that a predecessor
// that died in the queue does not hold it up past its lease). A plain
// Acquire takes a free name only when nobody queues for it.
//
// Writes per acquisition that had to wait: the queue put and the handoff
// (the previous holder's release and this one's take in one): 2 Raft
// proposals, both raising the revision. The etcd lease a handoff leaves
// without keys is kept as a spare and renewed (a keep-alive, not a
// proposal) for the store's next acquisition of the same TTL; a grant and
// a revoke are needed only when there is no spare. One that did not wait:
// the take and the release's delete (and a grant when there is no spare).
// A refused Acquire without waiting: no
// write (one read). Between two holders etcd's concurrency.Mutex waits for
// a delete, the next waiter's watch event and two reads; this queue for
// one serializable read (which waiter is first: the nearest member
// answers, no quorum round), the handoff and the watch event.

// queueDir is the prefix of name's queue keys. The name's length makes it
// prefix-free: the queue of "a" does not hold the queue of "a/b".
func (s *Store) queueDir(name string) string {
	return s.Key("\x00q/" + strconv.Itoa(len(name)) + ":" + name + "/")
}

// errReserved refuses names that could be read as queue keys.
var errReserved = errors.New(`etcdstore: lock names starting with "\x00" are reserved for the store's wait queues; choose another name`)

// tooManyRequests reports etcd's "too many requests", which it answers
// before proposing anything (its apply lags its commit too far): the
// request made no change and may be sent again.
func tooManyRequests(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrTooManyRequests) || strings.Contains(err.Error(), rpctypes.ErrTooManyRequests.Error()))
}

// retry runs op, holding one of s's in-flight slots (MaxInFlight), until
// it returns anything but etcd's "too many requests", backing off from
// 10 ms (jittered, doubling to 1 s) until ctx ends.
func retry[T any](ctx context.Context, s *Store, op func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		var zero T
		if s.inFlight != nil {
			select {
			case s.inFlight <- struct{}{}:
			case <-ctx.Done():
				return zero, ctx.Err()
			}
		}
		v, err := op()
		if s.inFlight != nil {
			<-s.inFlight
		}
		if !tooManyRequests(err) {
			return v, err
		}
		d := time.Duration(10<<min(attempt, 7)) * time.Millisecond
		t := time.NewTimer(d/2 + rand.N(d/2))
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
	}
}

// AcquireQueued takes name for owner, waiting in name's queue while it is
// held or others wait for it (see lease.Queuer). The fence is the
// revision of the write that gave owner the name's key (its take, or the
// previous holder's handoff), above every fence before it.
func (s *Store) AcquireQueued(ctx context.Context, name, owner string, ttl time.Duration) (lease.Grant, time.Time, bool, error) {
	if err := s.check(ctx, name, owner, ttl); err != nil {
		return lease.Grant{}, time.Time{}, false, err
	}
	if ttl == 0 {
		return lease.Grant{}, time.Time{}, false, errors.New("etcdstore: AcquireQueued needs a TTL (a queue key without a lease would outlive a dead waiter)")
	}
	key, qkey := s.Key(name), s.queueDir(name)+owner
	for {
		// The watch on the name's key starts before the queue key is
		// written, at the current revision (so that etcd delivers its events
		// at once, not from its history), and misses nothing after it.
		kw, err := s.watchKey(ctx, key)
		if err != nil {
			return lease.Grant{}, time.Time{}, false, err
		}
		sent := time.Now()
		h, err := s.grant(ctx, ttl)
		if err != nil {
			kw.stop()
			return lease.Grant{}, time.Time{}, false, err
		}
		r, err := retry(ctx, s, func() (*clientv3.TxnResponse, error) {
			return s.client.Txn(ctx).
				If(s.freeCmps(name)...).
				Then(clientv3.OpPut(key, owner, clientv3.WithLease(h.id))).
				Else(clientv3.OpPut(qkey, owner, clientv3.WithLease(h.id)), clientv3.OpGet(qkey), clientv3.OpGet(key)).
				Commit()
		})
		if err != nil {
			kw.stop()
			s.revoke(ctx, h)
			return lease.Grant{}, time.Time{}, false, fmt.Errorf("etcdstore: acquire: %w", err)
		}
		if r.Succeeded {
			kw.stop()
			return h.grantOf(r.Header.Revision), sent, true, nil
		}
		holder := r.Responses[2].GetResponseRange().Kvs
		if len(holder) > 0 && string(holder[0].Value) == owner {
			// A retry whose first reply was lost: owner holds it already.
			kw.stop()
			s.revoke(ctx, h)
			g, ok, err := s.AcquireGrant(ctx, name, owner, ttl)
			return g, sent, ok, err
		}
		mine := r.Responses[1].GetResponseRange().Kvs
		if len(mine) == 0 {
			kw.stop()
			s.revoke(ctx, h)
			return lease.Grant{}, time.Time{}, false, errors.New("etcdstore: acquire: the queue key vanished within its own transaction")
		}
		g, sent, ok, again, err := s.waitTurn(ctx, name, owner, mine[0].CreateRevision, h, sent, kw, len(holder) > 0)
		kw.stop()
		if ok {
			return g, sent, true, nil
		}
		s.revoke(ctx, h) // leaves the queue; frees the name if the take's reply was lost
		if !again {
			if err == nil {
				err = ctx.Err()
			}
			return lease.Grant{}, time.Time{}, false, err
		}
		// The queue key's lease expired under the wait (a stalled
		// process): queue again, at the end.
	}
}

// freeCmps holds when name is free and nobody waits for it.
func (s *Store) freeCmps(name string) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(s.Key(name)), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(s.queueDir(name)), "=", 0).WithPrefix(),
	}
}

// renewer keeps a waiter's etcd lease alive while it waits (a keep-alive
// is answered by the etcd leader, not written through Raft), and records
// when the last successful one was sent.
type renewer struct {
	mu   sync.Mutex
	last time.Time // when the last keep-alive that succeeded (or the grant) was sent
}

func (r *renewer) renewed(at time.Time) {
	r.mu.Lock()
	if at.After(r.last) {
		r.last = at
	}
	r.mu.Unlock()
}

func (r *renewer) lastSent() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// renewEvery: a waiter renews its lease every 1/renewEvery of its TTL,
// so that it has most of its TTL left when the waiter takes the name.
const renewEvery = 10

// keepAlive renews h every tenth of its TTL until ctx ends; it cancels
// lost when etcd no longer knows h.
func (s *Store) keepAlive(ctx context.Context, h handle, rn *renewer, lost context.CancelFunc) {
	every := time.Duration(h.ttl) * time.Second / renewEvery
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		at := time.Now()
		r, err := s.client.KeepAliveOnce(ctx, h.id)
		switch {
		case err == nil && r.TTL > 0:
			rn.renewed(at)
			t.Reset(every)
		case errors.Is(err, rpctypes.ErrLeaseNotFound) || (err == nil && r.TTL <= 0):
			lost()
			return
		default:
			t.Reset(every / 4) // try again soon
		}
	}
}

// keyWatch is a watch on a name's key, every event.
type keyWatch struct {
	ch     clientv3.WatchChan
	cancel context.CancelFunc
}

func (kw *keyWatch) stop() { kw.cancel() }

// watchKey starts a watch on key and returns once etcd has registered it,
// at the current revision: every change after that is delivered, as soon
// as it is applied (a watch from a past revision is caught up only by
// etcd's periodic sync, every 100 ms).
func (s *Store) watchKey(ctx context.Context, key string) (*keyWatch, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	ch := s.client.Watch(wctx, key, clientv3.WithCreatedNotify())
	select {
	case wr, open := <-ch:
		if open && wr.Created && wr.Err() == nil {
			return &keyWatch{ch, cancel}, nil
		}
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := wr.Err(); err != nil {
			return nil, fmt.Errorf("etcdstore: watching %q: %w", key, err)
		}
		return nil, fmt.Errorf("etcdstore: watching %q: the watch ended before it started", key)
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
}

// waitTurn waits until owner, queued with the queue key of create
// revision myRev on h, holds name: handed to it by the holder (handOff),
// or taken by it when the name's key is deleted while it is first in the
// queue. kw watches the name's key since before the queue key was
// written; held says the key existed when it was. again reports that the
// queue key is gone (its lease expired): the caller queues anew.
//
// Every waiter watches the name's key; a handoff's put, with the waiter's
// owner token and etcd lease, says whose turn it is, and the others pass
// over it without a request. A deletion of the key (an expiry, a Release
// without the grant, a handoff that found nobody) makes each waiter read
// the queue; the first takes the name, and one that is not first watches
// its predecessor's queue key until the name is taken, so that a
// predecessor dead in the queue (its key left to expire) does not hold it
// up.
func (s *Store) waitTurn(ctx context.Context, name, owner string, myRev int64, h handle, granted time.Time, kw *keyWatch, held bool) (g lease.Grant, sent time.Time, ok, again bool, err error) {
	key, qdir := s.Key(name), s.queueDir(name)
	qkey := qdir + owner
	rn := &renewer{last: granted}
	wctx, lost := context.WithCancel(ctx)
	defer lost()
	kaCtx, kaStop := context.WithCancel(ctx)
	defer kaStop()
	go s.keepAlive(kaCtx, h, rn, lost)

	take := func() (bool, error) {
		r, err := retry(wctx, s, func() (*clientv3.TxnResponse, error) {
			return s.client.Txn(wctx).
				If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0), clientv3.Compare(clientv3.CreateRevision(qkey), "=", myRev)).
				Then(clientv3.OpPut(key, owner, clientv3.WithLease(h.id)), clientv3.OpDelete(qkey)).
				Commit()
		})
		if err != nil {
			return false, fmt.Errorf("etcdstore: acquire: %w", err)
		}
		if !r.Succeeded {
			return false, nil
		}
		// The TTL runs from the last renewal, at most a tenth of it ago.
		g, sent = h.grantOf(r.Header.Revision), rn.lastSent()
		return true, nil
	}
	handed := func(fence int64) (lease.Grant, time.Time, bool, bool, error) {
		// The key is on our lease; only we would rewrite it. The TTL runs
		// from the last renewal.
		return h.grantOf(fence), rn.lastSent(), true, false, nil
	}

	// pred watches the predecessor's queue key while the name is free and
	// someone is before us.
	var pred clientv3.WatchChan
	predStop := func() {}
	defer func() { predStop() }()
	read := !held
	for {
		if read {
			read = false
			predStop()
			pred = nil
			r, err := s.client.Txn(wctx).Then(
				clientv3.OpGet(qdir, append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithMaxCreateRev(myRev - 1)}, clientv3.WithLastCreate()...)...),
				clientv3.OpGet(key),
				clientv3.OpGet(qkey, clientv3.WithKeysOnly()),
			).Commit()
			if err != nil {
				if wctx.Err() != nil {
					return g, sent, false, ctx.Err() == nil, ctx.Err()
				}
				return g, sent, false, false, fmt.Errorf("etcdstore: waiting for %q: %w", name, err)
			}
			before := r.Responses[0].GetResponseRange().Kvs
			holder := r.Responses[1].GetResponseRange().Kvs
			switch {
			case len(holder) > 0 && handedTo(holder[0], owner, h):
				return handed(holder[0].ModRevision)
			case len(r.Responses[2].GetResponseRange().Kvs) == 0:
				return g, sent, false, true, nil // our queue key has gone with its lease
			case len(holder) > 0:
				// Held: its release or expiry comes through kw.
			case len(before) > 0:
				pctx, cancel := context.WithCancel(clientv3.WithRequireLeader(wctx))
				pred, predStop = s.client.Watch(pctx, string(before[0].Key), clientv3.WithRev(r.Header.Revision+1), clientv3.WithFilterPut()), cancel
			default:
				if ok, err := take(); ok || err != nil {
					return g, sent, ok, false, err
				}
				read = true
				continue
			}
		}
		select {
		case <-wctx.Done():
			return g, sent, false, ctx.Err() == nil, ctx.Err()
		case wr, open := <-kw.ch:
			if !open || wr.Err() != nil {
				// Lost (no leader, a compaction, a broken connection): watch
				// again, and read what the watch may have missed.
				kw.stop()
				nw, err := s.watchKey(wctx, key)
				if err != nil {
					if wctx.Err() != nil {
						continue
					}
					return g, sent, false, false, err
				}
				*kw, read = *nw, true
				continue
			}
			for _, ev := range wr.Events {
				switch {
				case handedTo(ev.Kv, owner, h):
					return handed(ev.Kv.ModRevision)
				case ev.Type == clientv3.EventTypeDelete:
					read = true
				default:
					// Taken or handed to another: wait for its release.
					read = false
					predStop()
					pred = nil
				}
			}
		case wr, open := <-pred:
			if !open || wr.Err() != nil || len(wr.Events) > 0 {
				read = true
			}
		}
	}
}

// handedTo reports whether the name's key kv was handed to owner on h.
func handedTo(kv *mvccpb.KeyValue, owner string, h handle) bool {
	return string(kv.Value) == owner && kv.Lease == int64(h.id)
}

// handOff gives name, held by owner on h, to the first waiter in its
// queue, if any, in one transaction that puts the name's key with the
// waiter's owner token on the waiter's etcd lease and deletes the
// waiter's queue key and the fence note, on condition that owner still
// holds the key on h and the waiter is still queued. It reports whether
// it did, and an error when it sent a handoff whose outcome is unknown.
//
// Which waiter is first is read from the nearest member without a
// quorum round (a serializable read): the transaction's conditions make
// a stale answer safe, and its Else branch reads the queue afresh
// (linearizably, as every transaction) for the next try. A stale "nobody
// waits" makes it return false: the caller deletes the key, and the first
// waiter takes the name itself.
func (s *Store) handOff(ctx context.Context, name, owner string, h handle) (bool, error) {
	key, qdir := s.Key(name), s.queueDir(name)
	held := []clientv3.Cmp{
		clientv3.Compare(clientv3.Value(key), "=", owner),
		clientv3.Compare(clientv3.LeaseValue(key), "=", h.id),
	}
	r, err := retry(ctx, s, func() (*clientv3.GetResponse, error) {
		return s.client.Get(ctx, qdir, append(clientv3.WithFirstCreate(), clientv3.WithSerializable())...)
	})
	if err != nil {
		return false, nil // nothing written
	}
	first := r.Kvs
	for range 3 { // the first waiter may leave between the read and the handoff
		if len(first) == 0 || first[0].Lease == 0 {
			return false, nil // nobody waits
		}
		w := first[0]
		cmps := append(slices.Clip(held), clientv3.Compare(clientv3.CreateRevision(string(w.Key)), "=", w.CreateRevision))
		r, err := retry(ctx, s, func() (*clientv3.TxnResponse, error) {
			return s.client.Txn(ctx).If(cmps...).
				Then(clientv3.OpPut(key, string(w.Value), clientv3.WithLease(clientv3.LeaseID(w.Lease))), clientv3.OpDelete(string(w.Key)), clientv3.OpDelete(s.noteKey(name))).
				Else(clientv3.OpGet(qdir, clientv3.WithFirstCreate()...), clientv3.OpGet(key, clientv3.WithKeysOnly())).
				Commit()
		})
		if err != nil {
			return false, fmt.Errorf("etcdstore: release: handing %q on: %w", name, err)
		}
		if r.Succeeded {
			return true, nil
		}
		if k := r.Responses[1].GetResponseRange().Kvs; len(k) == 0 || k[0].Lease != int64(h.id) {
			return false, nil // not ours (any more)
		}
		first = r.Responses[0].GetResponseRange().Kvs
	}
	return false, nil
}
