// Package etcdstore is a lease.Store on etcd (v3 API, through
// go.etcd.io/etcd/client/v3), for leases that must survive the loss of a
// machine: etcd replicates every write through Raft to a majority before
// it answers.
//
//	// fragment: needs endpoints []string
//	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints})
//	if err != nil {
//		return err
//	}
//	m := lease.NewManager(etcdstore.New(client))
//	_ = m
//
// What it survives, with no option to set: the crash or SIGKILL of any
// minority of members (one of three, two of five), the leader among them,
// since a write is answered only once a majority has it in its log on
// disk (unless etcd runs with --unsafe-no-fsync); tests/lease kills the
// leader 5 times while a holder works, with no two holders at once
// (TestEtcdLeaderKills). What it does not survive: a
// majority down at once stops every call (acquires fail; no lease is
// granted twice), and a majority's disks lost together lose the leases.
//
// It is a module of its own, so that lockplugin's root module does not
// pull in the etcd client.
//
// Each acquisition is one key, <prefix><name>, holding the owner token and
// attached to an etcd lease of its own: etcd deletes the key when that
// lease expires, on the leader's clock, and a new leader extends every
// lease it inherits rather than shortening it. The fence is the revision
// of the write that gave the key to its owner: the key's create revision
// when it was taken free, its mod revision when a releasing holder handed
// it to the first waiter in the queue (see AcquireQueued). etcd's revision
// counter is one for the whole cluster, raised by every write, kept
// through Raft, so fences strictly increase across holders, names, leader
// changes and restarts. A holder's own rewrite of its key (moving it to a
// new etcd lease: a repeated Acquire, a Refresh with another TTL) keeps
// its fence in a note key, <prefix>\x00f/<len>:<name>, written in the
// same transaction and attached to the same lease.
//
// etcd grants TTLs in whole seconds, and no shorter than its minimum
// (1.5 times the election timeout, rounded up: 2 s with the defaults). A
// TTL is therefore rounded UP, never down; the Grant (lease.GrantStore)
// tells the Manager the TTL etcd really granted, and Lease.TTL shows it.
//
// The Store implements lease.GrantStore (the etcd lease ID is the handle:
// a refresh is one keep-alive; a release is a handoff to the first
// waiter or a conditional delete, the etcd lease kept as a spare for the
// next grant), lease.Queuer (a waiting Acquire queues by revision and is
// handed the name in turn; see AcquireQueued), lease.Waiter, and Holder,
// WatchHolder and WatchRelease (who holds a name, and a watch on it, for
// package election's Leader, Observe and Campaign). Lock names starting
// with "\x00" are refused: the wait queues' keys and the fence notes
// start so.
package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockplugin/lockplugin/lease"
)

// DefaultPrefix starts every key unless Prefix says otherwise.
const DefaultPrefix = "lockplugin/lease/"

// DefaultMinTTL is the shortest TTL etcd grants with its default timing
// (heartbeat 100 ms, election timeout 1 s).
const DefaultMinTTL = 2 * time.Second

// Store is a lease.Store on etcd. It is safe for concurrent use. Make it
// with New: every method of a zero Store or a nil *Store returns an error
// naming etcdstore.New.
type Store struct {
	client *clientv3.Client
	prefix string
	minTTL time.Duration
	err    error // an invalid Option or a nil client, reported by every call
	// inFlight bounds the writes (and the reads before them) that
	// acquires and releases have in flight at once: MaxInFlight.
	inFlight chan struct{}
	spare    spares // etcd leases a handoff left without keys, for the next grant
}

// spares holds etcd leases that hold no key (a handoff moved the name's
// key off them), by granted TTL, so that the next acquisition with that
// TTL renews one (a keep-alive, answered by the etcd leader without a
// Raft proposal) instead of granting a new lease and revoking the old:
// two writes fewer per handoff. A spare not taken within half its TTL is
// left to expire (etcd revokes it; it holds no key).
type spares struct {
	mu    sync.Mutex
	byTTL map[int64][]spare
	n     int
}

type spare struct {
	id clientv3.LeaseID
	at time.Time // when it was kept (a guess at its life: a renewal that fails sends take on)
}

// maxSpares bounds the spare leases a Store keeps (beyond it they are
// revoked).
const maxSpares = 64

// keep files h, which holds no key, as a spare kept at at; false when
// there is no room (the caller revokes it).
func (sp *spares) keep(h handle, at time.Time) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.n >= maxSpares || h.id == 0 {
		return false
	}
	if sp.byTTL == nil {
		sp.byTTL = map[int64][]spare{}
	}
	sp.byTTL[h.ttl] = append(sp.byTTL[h.ttl], spare{h.id, at})
	sp.n++
	return true
}

// take returns the most recently kept spare of ttl seconds that still has
// more than half its TTL left, dropping older ones.
func (sp *spares) take(ttl int64, now time.Time) (clientv3.LeaseID, bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	l := sp.byTTL[ttl]
	for len(l) > 0 {
		x := l[len(l)-1]
		l = l[:len(l)-1]
		sp.n--
		if now.Sub(x.at) < time.Duration(ttl)*time.Second/2 {
			sp.byTTL[ttl] = l
			return x.id, true
		}
		sp.n -= len(l) // the rest are older still: let them expire
		l = nil
	}
	delete(sp.byTTL, ttl)
	return 0, false
}

// errZeroStore answers every call on a Store not made by New.
var errZeroStore = errors.New("etcdstore: Store has no client (zero value or nil); use etcdstore.New")

// usable returns why s cannot be used: not made by New, an invalid Option
// or a nil client.
func (s *Store) usable() error {
	switch {
	case s == nil:
		return errZeroStore
	case s.err != nil:
		return s.err
	case s.client == nil:
		return errZeroStore
	}
	return nil
}

var (
	_ lease.Store      = (*Store)(nil)
	_ lease.GrantStore = (*Store)(nil)
	_ lease.Waiter     = (*Store)(nil)
	_ lease.Queuer     = (*Store)(nil)
)

// Option configures New. A nil Option is ignored; an invalid value is
// returned as an error by every call on the Store.
type Option func(*options)

type options struct {
	prefix   string
	minTTL   time.Duration
	inFlight int
	err      error // the first invalid value
}

// DefaultMaxInFlight is MaxInFlight's default.
const DefaultMaxInFlight = 128

// MaxInFlight bounds the requests that the Store's acquires and releases
// have in flight at once (default 128; 0 for no bound); the others wait
// their turn, within their context. etcd answers "too many requests" (and,
// when its disk cannot keep up, "request timed out", leaving the outcome
// unknown) to a burst of thousands of writes at once; a bounded burst is
// applied as fast, without either. n must not be negative.
func MaxInFlight(n int) Option {
	return func(o *options) {
		if n < 0 {
			if o.err == nil {
				o.err = fmt.Errorf("etcdstore: MaxInFlight must not be negative, got %d", n)
			}
			return
		}
		o.inFlight = n
	}
}

// Prefix sets the start of every key (default "lockplugin/lease/").
func Prefix(p string) Option { return func(o *options) { o.prefix = p } }

// MinTTL sets the shortest TTL the store asks etcd for (default 2 s, etcd's
// minimum with its default timing). Set it to the cluster's minimum when
// it runs with a longer election timeout; whatever it is, the TTL etcd
// answers is the one the Manager keeps. d must be at least a second.
func MinTTL(d time.Duration) Option {
	return func(o *options) {
		if d < time.Second {
			if o.err == nil {
				o.err = fmt.Errorf("etcdstore: MinTTL must be at least 1s (etcd grants whole seconds), got %v", d)
			}
			return
		}
		o.minTTL = d
	}
}

// New returns a Store on client. An invalid option or a nil client is
// reported by every call; nil options are ignored.
func New(client *clientv3.Client, opts ...Option) *Store {
	o := options{prefix: DefaultPrefix, minTTL: DefaultMinTTL, inFlight: DefaultMaxInFlight}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	s := &Store{client: client, prefix: o.prefix, minTTL: o.minTTL, err: o.err}
	if o.inFlight > 0 {
		s.inFlight = make(chan struct{}, o.inFlight)
	}
	if client == nil && s.err == nil {
		s.err = errors.New("etcdstore: New needs a client, got nil")
	}
	return s
}

// Key returns the etcd key of name's lease. A Store not made by New keys
// as New's default would.
func (s *Store) Key(name string) string {
	if s == nil || s.client == nil {
		return DefaultPrefix + name
	}
	return s.prefix + name
}

// handle is a Grant's Handle: the etcd lease the key is attached to (0 for
// a lease without expiry) and its granted TTL in seconds.
type handle struct {
	id  clientv3.LeaseID
	ttl int64
}

// seconds is the TTL, in whole seconds, that the store asks etcd for: ttl
// rounded up, at least the minimum.
func (s *Store) seconds(ttl time.Duration) int64 {
	secs := int64(ttl / time.Second)
	if ttl%time.Second != 0 {
		secs++
	}
	minSecs := int64((s.minTTL + time.Second - 1) / time.Second)
	return max(secs, minSecs)
}

// grant asks etcd for a lease of ttl (none for 0): a spare lease of that
// TTL renewed (see spares), else a new one. The granted TTL runs from no
// earlier than the call.
func (s *Store) grant(ctx context.Context, ttl time.Duration) (handle, error) {
	if ttl == 0 {
		return handle{}, nil
	}
	secs := s.seconds(ttl)
	for {
		id, ok := s.spare.take(secs, time.Now())
		if !ok {
			break
		}
		r, err := s.client.KeepAliveOnce(ctx, id)
		if err == nil && r.TTL > 0 {
			return handle{id: id, ttl: r.TTL}, nil
		}
		if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			s.revoke(ctx, handle{id: id}) // may be alive: don't leave it to expire unnoticed
			if ctx.Err() != nil {
				return handle{}, fmt.Errorf("etcdstore: granting a lease: %w", err)
			}
		}
	}
	r, err := retry(ctx, s, func() (*clientv3.LeaseGrantResponse, error) { return s.client.Grant(ctx, s.seconds(ttl)) })
	if err != nil {
		return handle{}, fmt.Errorf("etcdstore: granting a lease: %w", err)
	}
	return handle{id: r.ID, ttl: r.TTL}, nil
}

// revoke revokes h's etcd lease, if it has one, on a context of its own
// (the caller's may be the reason to revoke); a lease not found has
// expired already. Errors are dropped: an unrevoked lease expires at its
// TTL, holding no key.
func (s *Store) revoke(ctx context.Context, h handle) {
	if h.id == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = retry(rctx, s, func() (*clientv3.LeaseRevokeResponse, error) { return s.client.Revoke(rctx, h.id) })
}

func (g handle) grantOf(fence int64) lease.Grant {
	return lease.Grant{Fence: fence, TTL: time.Duration(g.ttl) * time.Second, Handle: g}
}

// Acquire takes name for owner; see AcquireGrant.
func (s *Store) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	g, ok, err := s.AcquireGrant(ctx, name, owner, ttl)
	return g.Fence, ok, err
}

// AcquireGrant takes name for owner when its key is absent (free, or
// deleted by its lease's expiry) and nobody queues for it (see
// AcquireQueued), attached to a new etcd lease of ttl rounded up (none for
// 0), in one transaction. The fence is the key's create revision. When
// owner already holds it, the key moves to the new lease (the fence stays:
// the move writes it in the note key) and the old lease is revoked: the
// expiry is reset to ttl from now. A name held by another owner, or queued for, is
// refused after one read, without a write.
func (s *Store) AcquireGrant(ctx context.Context, name, owner string, ttl time.Duration) (lease.Grant, bool, error) {
	if err := s.check(ctx, name, owner, ttl); err != nil {
		return lease.Grant{}, false, err
	}
	key := s.Key(name)
	pre, err := retry(ctx, s, func() (*clientv3.TxnResponse, error) {
		return s.client.Txn(ctx).Then(
			clientv3.OpGet(key),
			clientv3.OpGet(s.queueDir(name), clientv3.WithPrefix(), clientv3.WithCountOnly()),
		).Commit()
	})
	if err != nil {
		return lease.Grant{}, false, fmt.Errorf("etcdstore: acquire: %w", err)
	}
	if kvs := pre.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 && string(kvs[0].Value) != owner {
		return lease.Grant{}, false, nil
	} else if len(kvs) == 0 && pre.Responses[1].GetResponseRange().Count > 0 {
		return lease.Grant{}, false, nil
	}
	h, err := s.grant(ctx, ttl)
	if err != nil {
		return lease.Grant{}, false, err
	}
	r, err := retry(ctx, s, func() (*clientv3.TxnResponse, error) {
		return s.client.Txn(ctx).
			If(s.freeCmps(name)...).
			Then(clientv3.OpPut(key, owner, clientv3.WithLease(h.id))).
			Else(clientv3.OpGet(key), clientv3.OpGet(s.noteKey(name))).
			Commit()
	})
	if err != nil {
		s.revoke(ctx, h)
		return lease.Grant{}, false, fmt.Errorf("etcdstore: acquire: %w", err)
	}
	if r.Succeeded {
		return h.grantOf(r.Header.Revision), true, nil
	}
	kvs := r.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 || string(kvs[0].Value) != owner {
		s.revoke(ctx, h)
		return lease.Grant{}, false, nil
	}
	// The same owner again: a retry whose first reply was lost.
	old := kvs[0]
	fence := fenceOf(old, r.Responses[1].GetResponseRange().Kvs)
	moved, err := s.move(ctx, name, owner, clientv3.LeaseID(old.Lease), h, fence)
	if err != nil || !moved {
		s.revoke(ctx, h)
		return lease.Grant{}, false, err
	}
	return h.grantOf(fence), true, nil
}

// noteKey is the key of name's fence note (see the package doc): the
// fence of a holding whose key its owner rewrote.
func (s *Store) noteKey(name string) string {
	return s.Key("\x00f/" + strconv.Itoa(len(name)) + ":" + name)
}

// fenceOf returns the fence of the holding whose key is k, given what was
// read of name's note key: the fence the note records when it belongs to
// this holding (same owner, same etcd lease), else k's mod revision, the
// revision of the write that gave the key to its owner (for a key taken
// free, its create revision).
func fenceOf(k *mvccpb.KeyValue, note []*mvccpb.KeyValue) int64 {
	if len(note) > 0 && note[0].Lease == k.Lease {
		if f, o, ok := strings.Cut(string(note[0].Value), " "); ok && o == string(k.Value) {
			if n, err := strconv.ParseInt(f, 10, 64); err == nil && n > 0 {
				return n
			}
		}
	}
	return k.ModRevision
}

// move re-attaches owner's key of name from lease old to h's (none when h
// has none), writing fence in the note key on the same lease, and revokes
// old, reporting whether owner still held the key.
func (s *Store) move(ctx context.Context, name, owner string, old clientv3.LeaseID, h handle, fence int64) (bool, error) {
	key := s.Key(name)
	opts := []clientv3.OpOption{}
	if h.id != 0 {
		opts = append(opts, clientv3.WithLease(h.id))
	}
	r, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(key), "=", owner), clientv3.Compare(clientv3.LeaseValue(key), "=", old)).
		Then(clientv3.OpPut(key, owner, opts...), clientv3.OpPut(s.noteKey(name), strconv.FormatInt(fence, 10)+" "+owner, opts...)).
		Commit()
	if err != nil {
		return false, fmt.Errorf("etcdstore: moving a lease: %w", err)
	}
	if !r.Succeeded {
		return false, nil
	}
	s.revoke(ctx, handle{id: old})
	return true, nil
}

// Release frees name if owner holds it: one transaction that deletes the
// key (and the fence note) if it holds owner, then a revoke of its etcd
// lease.
func (s *Store) Release(ctx context.Context, name, owner string) (bool, error) {
	if err := s.check(ctx, name, owner, 0); err != nil {
		return false, err
	}
	key := s.Key(name)
	r, err := retry(ctx, s, func() (*clientv3.TxnResponse, error) {
		return s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.Value(key), "=", owner)).
			Then(clientv3.OpGet(key), clientv3.OpDelete(key), clientv3.OpDelete(s.noteKey(name))).
			Commit()
	})
	if err != nil {
		return false, fmt.Errorf("etcdstore: release: %w", err)
	}
	if !r.Succeeded {
		return false, nil
	}
	if kvs := r.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		s.revoke(ctx, handle{id: clientv3.LeaseID(kvs[0].Lease)})
	}
	return true, nil
}

// ReleaseGrant frees the acquisition g: when somebody waits in name's
// queue, it hands the name to the first waiter (handOff: one serializable
// read, one transaction that is the waiter's take too); otherwise one
// transaction deletes the key if owner still holds it on g's etcd lease.
// Either way g's etcd lease, now without keys, is kept as a spare for the
// next grant (or revoked when there are enough). When a handoff's outcome
// is unknown, g's etcd lease is revoked: that frees the name if the
// handoff did not happen, and nothing if it did. A lease without expiry
// is released as Release does.
//
// The lease is never revoked on a guess: once kept as a spare it may
// carry another acquisition's key, so a release repeated after its first
// reply was lost must not revoke it; the conditional delete answers such
// a release "not held".
func (s *Store) ReleaseGrant(ctx context.Context, name, owner string, g lease.Grant) (bool, error) {
	h, ok := g.Handle.(handle)
	if !ok || h.id == 0 {
		return s.Release(ctx, name, owner)
	}
	if err := s.check(ctx, name, owner, 0); err != nil {
		return false, err
	}
	at := time.Now()
	handed, err := s.handOff(ctx, name, owner, h)
	if err != nil {
		// The handoff's outcome is unknown. h is this acquisition's alone
		// still (only this call could make it a spare): owner's key, if it
		// is still there, is the only key on it (the key moves off a lease
		// only by owner's own calls, which Manager serialises), so revoking
		// h frees exactly owner's lease, or nothing.
		_, err := retry(ctx, s, func() (*clientv3.LeaseRevokeResponse, error) { return s.client.Revoke(ctx, h.id) })
		switch {
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			return false, nil // expired
		case err != nil:
			return false, fmt.Errorf("etcdstore: release: %w", err)
		}
		return true, nil
	}
	if !handed {
		key := s.Key(name)
		r, err := retry(ctx, s, func() (*clientv3.TxnResponse, error) {
			return s.client.Txn(ctx).
				If(clientv3.Compare(clientv3.Value(key), "=", owner), clientv3.Compare(clientv3.LeaseValue(key), "=", h.id)).
				Then(clientv3.OpDelete(key), clientv3.OpDelete(s.noteKey(name))).
				Commit()
		})
		if err != nil {
			return false, fmt.Errorf("etcdstore: release: %w", err)
		}
		if !r.Succeeded {
			return false, nil // expired, or released already
		}
	}
	// No key is left on h: keep it for the next grant.
	if !s.spare.keep(h, at) {
		s.revoke(ctx, h)
	}
	return true, nil
}

// Refresh sets name's lease to expire ttl (rounded up) from now, if owner
// holds it: the key moves to a new etcd lease; see RefreshGrant for the
// cheaper way with a handle.
func (s *Store) Refresh(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	_, ok, err := s.refreshByMove(ctx, name, owner, ttl)
	return ok, err
}

func (s *Store) refreshByMove(ctx context.Context, name, owner string, ttl time.Duration) (lease.Grant, bool, error) {
	if err := s.check(ctx, name, owner, ttl); err != nil {
		return lease.Grant{}, false, err
	}
	r, err := s.client.Txn(ctx).Then(clientv3.OpGet(s.Key(name)), clientv3.OpGet(s.noteKey(name))).Commit()
	if err != nil {
		return lease.Grant{}, false, fmt.Errorf("etcdstore: refresh: %w", err)
	}
	kvs := r.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 || string(kvs[0].Value) != owner {
		return lease.Grant{}, false, nil
	}
	kv := kvs[0]
	fence := fenceOf(kv, r.Responses[1].GetResponseRange().Kvs)
	h, err := s.grant(ctx, ttl)
	if err != nil {
		return lease.Grant{}, false, err
	}
	moved, err := s.move(ctx, name, owner, clientv3.LeaseID(kv.Lease), h, fence)
	if err != nil || !moved {
		s.revoke(ctx, h)
		return lease.Grant{}, false, err
	}
	return h.grantOf(fence), true, nil
}

// RefreshGrant renews the acquisition g. When ttl rounds to g's granted
// TTL it is one keep-alive of g's etcd lease (etcd renews a lease only to
// its granted TTL); otherwise the key moves to a new lease of ttl.
func (s *Store) RefreshGrant(ctx context.Context, name, owner string, g lease.Grant, ttl time.Duration) (lease.Grant, bool, error) {
	if err := s.check(ctx, name, owner, ttl); err != nil {
		return lease.Grant{}, false, err
	}
	h, ok := g.Handle.(handle)
	if !ok || h.id == 0 || ttl == 0 || s.seconds(ttl) != h.ttl {
		return s.refreshByMove(ctx, name, owner, ttl)
	}
	r, err := s.client.KeepAliveOnce(ctx, h.id)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return lease.Grant{}, false, nil // expired
	case err != nil:
		return lease.Grant{}, false, fmt.Errorf("etcdstore: refresh: %w", err)
	case r.TTL <= 0:
		return lease.Grant{}, false, nil
	}
	// The key is still attached to h: it leaves h only by owner's own
	// calls, and goes with h's expiry.
	return h.grantOf(g.Fence), true, nil
}

// Holder reads, without taking anything, who holds name: the fence of
// the lease (see the package doc) and true while its key exists
// (etcd deletes it when its lease expires); 0 and false while nobody
// holds it. etcd keeps no record of a released lease (the key is gone, and
// the fence with it), so unlike the table store it cannot tell the last
// term of a free name. One linearizable read (the key and its fence note). Package election uses it for
// Leader and Observe.
func (s *Store) Holder(ctx context.Context, name string) (fence int64, held bool, err error) {
	if err := s.usable(); err != nil {
		return 0, false, err
	}
	if ctx == nil {
		return 0, false, errors.New("etcdstore: nil context")
	}
	if name == "" {
		return 0, false, errors.New("etcdstore: empty lock name")
	}
	r, err := s.client.Txn(ctx).Then(clientv3.OpGet(s.Key(name)), clientv3.OpGet(s.noteKey(name))).Commit()
	if err != nil {
		return 0, false, fmt.Errorf("etcdstore: holder: %w", err)
	}
	kvs := r.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, false, nil
	}
	return fenceOf(kvs[0], r.Responses[1].GetResponseRange().Kvs), true, nil
}

// WatchHolder returns a channel that receives a signal each time name's
// key changes (taken, moved to a new lease, released, expired), from
// about when it is called until ctx ends or the watch breaks (no leader,
// a compaction); the channel is then closed. A signal is a hint to read
// Holder again, not a value: signals are merged while unread, and the
// watch starts asynchronously, so a change just before it is registered
// gives none (package election's Observe keeps polling besides).
func (s *Store) WatchHolder(ctx context.Context, name string) (<-chan struct{}, error) {
	return s.watch(ctx, name, false)
}

// WatchRelease is WatchHolder for releases and expiries only (package
// election's Watcher): a campaigning candidate tries at once instead of
// at its next poll.
func (s *Store) WatchRelease(ctx context.Context, name string) (<-chan struct{}, error) {
	return s.watch(ctx, name, true)
}

func (s *Store) watch(ctx context.Context, name string, deletes bool) (<-chan struct{}, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, errors.New("etcdstore: nil context")
	}
	if name == "" {
		return nil, errors.New("etcdstore: empty lock name")
	}
	opts := []clientv3.OpOption{}
	if deletes {
		opts = append(opts, clientv3.WithFilterPut())
	}
	wch := s.client.Watch(clientv3.WithRequireLeader(ctx), s.Key(name), opts...)
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		for wr := range wch {
			if wr.Err() != nil {
				return
			}
			if len(wr.Events) > 0 {
				select {
				case out <- struct{}{}:
				default: // one unread signal says it all
				}
			}
		}
	}()
	return out, nil
}

// WaitFree returns when name's key is absent, or once it is deleted
// (released, expired), watching from the revision it was read at, so that
// no deletion between the read and the watch is missed. It returns
// ctx's error when ctx ends first, and nil when the watch ends otherwise
// (a compaction, a lost connection): the Manager then tries again.
func (s *Store) WaitFree(ctx context.Context, name string) error {
	if err := s.usable(); err != nil {
		return err
	}
	if ctx == nil {
		return errors.New("etcdstore: nil context")
	}
	key := s.Key(name)
	r, err := s.client.Get(ctx, key, clientv3.WithKeysOnly())
	if err != nil {
		return fmt.Errorf("etcdstore: watching %q: %w", name, err)
	}
	if len(r.Kvs) == 0 {
		return nil
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	ch := s.client.Watch(wctx, key, clientv3.WithRev(r.Header.Revision+1), clientv3.WithFilterPut())
	for wr := range ch {
		if err := wr.Err(); err != nil {
			return nil
		}
		if len(wr.Events) > 0 {
			return nil
		}
	}
	return ctx.Err()
}

// check refuses a Store that cannot be used, the arguments lease.CheckCall
// refuses, and an ended ctx.
func (s *Store) check(ctx context.Context, name, owner string, ttl time.Duration) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := lease.CheckCall(ctx, name, owner, ttl); err != nil {
		return fmt.Errorf("etcdstore: %w", err)
	}
	if strings.HasPrefix(name, "\x00") {
		return errReserved
	}
	return ctx.Err()
}
