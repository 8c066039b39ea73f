// Package redisstore is a lease.Store on Redis, through go-redis: any
// redis.UniversalClient (a single server, Sentinel, or Cluster).
//
//	// fragment: needs client redis.UniversalClient
//	store := redisstore.New(client, redisstore.Prefix("myapp:lease:"))
//	m := lease.NewManager(store)
//	_ = m
//
// Each lease is one key, <prefix>{<name>}, holding the owner token with a
// PX expiry, so that expiry follows Redis's own clock. Each name also has a
// fencing counter, <prefix>{<name>}:fence, while its lease lives: Release
// deletes it, and it expires a second after an unreleased lease does (once
// the server clock has passed it, which the fences' clock floor below makes
// enough), so the keys are bounded by the live leases however many names
// come and go; the hash tag puts both keys in one Cluster slot. Every operation is one Lua script
// (EVALSHA), atomic on the server.
//
// Acquire is idempotent per owner: the same owner acquiring a lease it
// holds (a go-redis retry of a command whose reply was lost) gets the same
// fence back and its expiry reset, instead of a refusal that would leave
// the lease held by nobody.
//
// Fences are max(counter+1, the Redis server's clock in microseconds), so
// they keep increasing when the counter is lost: a restart without
// persistence, an older snapshot restored, an eviction. This relies on
// the server's clock not going back across the restart. What a restart
// without persistence still costs: the leases themselves are gone, so a
// new holder can take a name while the old one still works; the old
// holder's lower fence is then the only defence, which is why the
// resource the lease protects must check fences. Run Redis with a
// noeviction or volatile-* maxmemory policy (a counter evicted early costs
// only a retried Acquire's idempotence: the clock floor keeps fences
// increasing), and with AOF persistence
// (appendfsync always) where the leases themselves must survive a
// restart.
//
// Replication is asynchronous: on Sentinel or Cluster, a lease granted
// just before a failover may be missing on the promoted replica, which
// then grants it again. WaitAllReplicas(atLeast, timeout) closes that
// gap for the loss of the primary: every acquire and refresh waits for
// every replica the primary has connected (and at least atLeast), so whichever one
// Sentinel or Cluster promotes has it; an acquire not acknowledged is
// undone and fails with ErrNotReplicated. WaitReplicas(n, timeout) waits
// for a fixed n and refuses to write while more than n replicas are
// connected (one that did not acknowledge may be promoted), unless
// AllowUnackedReplicas accepts that. Each option's doc lists the failures
// it survives. On a *redis.ClusterClient the store reloads the
// cluster layout after a connection error, so that a failover is
// followed at once.
package redisstore

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/lease"
)

var (
	//go:embed acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(acquireLua)

	//go:embed release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)

	//go:embed refresh.lua
	refreshLua    string
	refreshScript = redis.NewScript(refreshLua)
)

// DefaultPrefix starts every key unless Prefix says otherwise.
const DefaultPrefix = "lockplugin:lease:"

// Store is a lease.Store on Redis. It is safe for concurrent use. Make it
// with New: every method of a zero Store or a nil *Store returns an error
// naming redisstore.New.
type Store struct {
	client      redis.UniversalClient
	prefix      string
	replicas    int           // WaitReplicas: replicas that must acknowledge (WaitAllReplicas: at least)
	waitAll     bool          // WaitAllReplicas: every connected replica must acknowledge
	partial     bool          // AllowUnackedReplicas: WaitReplicas(n) with more than n replicas
	waitTimeout time.Duration // WaitReplicas: how long WAIT waits
	err         error         // an invalid Option or a nil client, reported by every call
	// connMu serialises WaitReplicas' dedicated connections: go-redis
	// v9.17 initialises a new Conn by writing the client's shared options
	// (its maintenance-notifications fallback), a data race when two
	// Conns start at once (seen under -race in the conformance suite).
	connMu sync.Mutex
}

var _ lease.Store = (*Store)(nil)

// Option configures New. A nil Option is ignored; an invalid value is
// returned as an error by every call on the Store.
type Option func(*options)

type options struct {
	prefix      string
	replicas    int
	waitAll     bool
	partial     bool
	waitTimeout time.Duration
	err         error // the first invalid value
}

func (o *options) invalid(err error) {
	if o.err == nil {
		o.err = err
	}
}

// errZeroStore answers every call on a Store not made by New.
var errZeroStore = errors.New("redisstore: Store has no client (zero value or nil); use redisstore.New")

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

// Prefix sets the start of every key (default "lockplugin:lease:"). It
// must not contain braces, which would change the keys' Cluster hash tag.
func Prefix(p string) Option {
	return func(o *options) {
		if strings.ContainsAny(p, "{}") {
			o.invalid(fmt.Errorf("redisstore: Prefix %q must not contain { or }", p))
			return
		}
		o.prefix = p
	}
}

// ErrNotReplicated matches the error of an Acquire or Refresh that the
// store's replication option refused: fewer replicas acknowledged it in
// time than the option asks for (the primary applied it), or, before
// anything was written, the primary has more connected replicas than
// WaitReplicas(n) counts. An Acquire so refused has been undone
// (released), so it did not take the lease; a Refresh did not move the
// lease's safety deadline (the Manager retries it until then).
var ErrNotReplicated = errors.New("redisstore: write not acknowledged by enough replicas")

// WaitReplicas makes every Acquire and Refresh wait for n replicas: after
// the script runs on the primary, the store sends WAIT n timeout on the
// same connection, and an acquire that fewer than n replicas
// acknowledged is released again and reported as an error matching
// ErrNotReplicated, never as a lease.
//
// What it survives: the loss of the primary (one failure, SIGKILL or
// crash) when the replica promoted in its place is one that
// acknowledged. Sentinel picks the replica with the lowest
// replica-priority first and the most replicated data only second, and
// Cluster may elect any replica of the slot, so with more replicas than n
// a failover can promote one that did not acknowledge and lose the lease
// (measured with two replicas and WaitReplicas(1): the lagging, preferred
// replica promoted, the lease lost). The store therefore reads the
// primary's connected replicas (ROLE) before each write and refuses it,
// before writing, with ErrNotReplicated when there are more than n,
// unless AllowUnackedReplicas says the weaker guarantee is meant. Use
// WaitAllReplicas to follow the replica count instead of fixing it.
//
// What it does not survive: a replica that acknowledged and then restarts
// without persistence before it is promoted, a replica whose link is down
// at the write (it is not counted, yet Sentinel may still promote it for
// about ten times down-after-milliseconds), and more than one failure.
//
// It needs a *redis.Client (a single server with replicas, or
// redis.NewFailoverClient for Sentinel) or a *redis.ClusterClient; n
// must be at least 1 and timeout positive. See the README for what each
// deployment guarantees.
func WaitReplicas(n int, timeout time.Duration) Option {
	return func(o *options) {
		if n < 1 || timeout <= 0 {
			o.invalid(fmt.Errorf("redisstore: WaitReplicas needs n >= 1 and a positive timeout, got %d and %v", n, timeout))
			return
		}
		o.replicas, o.waitTimeout, o.waitAll = n, timeout, false
	}
}

// WaitAllReplicas makes every Acquire and Refresh wait for every replica
// the primary has connected when the write is made, and for no fewer than
// atLeast: before the script the store reads the primary's connected
// replicas (ROLE) on the connection the script and WAIT then use, and an
// acquire that fewer than max(atLeast, connected) replicas acknowledged
// within timeout is released again and reported as an error matching
// ErrNotReplicated, never as a lease.
//
// What it survives: the loss of the primary (one failure, SIGKILL or
// crash), whichever connected replica Sentinel or Cluster promotes, by
// priority, offset or rank: every one of them acknowledged every lease
// handed out and every refresh the Manager counted. Set atLeast to the
// number of replicas the deployment runs: a replica whose link is down at the
// write is not connected, so it is not waited for, yet Sentinel may still
// promote it for a while (about ten times down-after-milliseconds after
// its link went down); with atLeast at the full count, a write made while
// one is disconnected is refused instead. A replica with
// replica-priority 0 (never promoted) is waited for too.
//
// What it does not survive: a replica that acknowledged and then restarts
// without persistence before it is promoted, a replica that connects
// between the count and the write and is promoted before its first sync
// ends, and more than one failure. It trades availability for this: with
// a replica down or lagging past timeout, every acquire fails until it is
// back or the deployment's replica count (and atLeast) is lowered.
//
// It needs a *redis.Client (a single server with replicas, or
// redis.NewFailoverClient for Sentinel) or a *redis.ClusterClient;
// atLeast must be at least 1 and timeout positive.
func WaitAllReplicas(atLeast int, timeout time.Duration) Option {
	return func(o *options) {
		if atLeast < 1 || timeout <= 0 {
			o.invalid(fmt.Errorf("redisstore: WaitAllReplicas needs at least 1 replica and a positive timeout, got %d and %v", atLeast, timeout))
			return
		}
		o.replicas, o.waitTimeout, o.waitAll = atLeast, timeout, true
	}
}

// AllowUnackedReplicas lets WaitReplicas(n) write while the primary has
// more than n connected replicas: the weaker guarantee, that a lease
// survives a failover only when the promoted replica happens to be one of
// the n that acknowledged (Sentinel's replica-priority or Cluster's
// election decide which, not the replication offset). Without it such a
// write is refused. It has no effect without WaitReplicas.
func AllowUnackedReplicas() Option {
	return func(o *options) { o.partial = true }
}

// New returns a Store on client. An invalid option or a nil client is
// reported by every call; nil options are ignored.
func New(client redis.UniversalClient, opts ...Option) *Store {
	o := options{prefix: DefaultPrefix}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	s := &Store{client: client, prefix: o.prefix, replicas: o.replicas, waitAll: o.waitAll, partial: o.partial,
		waitTimeout: o.waitTimeout, err: o.err}
	if client == nil {
		s.err = errors.New("redisstore: New needs a client, got nil")
	}
	if s.err == nil && s.replicas > 0 {
		switch client.(type) {
		case *redis.Client, *redis.ClusterClient:
		default:
			s.err = fmt.Errorf("redisstore: WaitReplicas and WaitAllReplicas need a *redis.Client (single or Sentinel) or a *redis.ClusterClient, got %T", client)
		}
	}
	return s
}

// Key returns the Redis key of name's lease; its fencing counter is the
// same key followed by ":fence". Names containing braces, which would
// change the hash tag, are keyed by their SHA-256: <prefix>#{<hex>}.
// A Store not made by New keys as New's default would.
func (s *Store) Key(name string) string {
	prefix := DefaultPrefix
	if s != nil && s.client != nil {
		prefix = s.prefix
	}
	if !strings.ContainsAny(name, "{}") {
		return prefix + "{" + name + "}"
	}
	sum := sha256.Sum256([]byte(name))
	return prefix + "#{" + hex.EncodeToString(sum[:]) + "}"
}

// keys returns name's key and its fencing counter's key (Key and Key
// followed by ":fence"), the scripts' KEYS, with the two strings sharing
// one allocation.
func (s *Store) keys(name string) []string {
	const fence = ":fence"
	var kf string
	if s.client != nil && !strings.ContainsAny(name, "{}") {
		kf = s.prefix + "{" + name + "}" + fence
	} else {
		kf = s.Key(name) + fence
	}
	return []string{kf[:len(kf)-len(fence)], kf}
}

// Acquire takes name for owner when its key is absent (free or expired),
// raising the fencing counter, in one script. When owner already holds it,
// it returns the same fence and resets the expiry to ttl.
func (s *Store) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (int64, bool, error) {
	if err := s.check(ctx, name, owner, ttl); err != nil {
		return 0, false, err
	}
	if s.replicas > 0 {
		return s.acquireReplicated(ctx, s.Key(name), owner, ttl)
	}
	fence, err := acquireScript.Run(ctx, s.client, s.keys(name), owner, millis(ttl)).Int64()
	if err != nil {
		return 0, false, s.failed(ctx, "acquire", err)
	}
	return fence, fence > 0, nil
}

// Release deletes name's key if owner holds it.
func (s *Store) Release(ctx context.Context, name, owner string) (bool, error) {
	if err := s.check(ctx, name, owner, 0); err != nil {
		return false, err
	}
	n, err := releaseScript.Run(ctx, s.client, s.keys(name), owner).Int64()
	if err != nil {
		return false, s.failed(ctx, "release", err)
	}
	return n == 1, nil
}

// Refresh sets name's key to expire ttl from now (0: never) if owner holds
// it.
func (s *Store) Refresh(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	if err := s.check(ctx, name, owner, ttl); err != nil {
		return false, err
	}
	if s.replicas > 0 {
		return s.refreshReplicated(ctx, s.Key(name), owner, ttl)
	}
	n, err := refreshScript.Run(ctx, s.client, s.keys(name), owner, millis(ttl)).Int64()
	if err != nil {
		return false, s.failed(ctx, "refresh", err)
	}
	return n == 1, nil
}

// check refuses a Store that cannot be used, the arguments lease.CheckCall
// refuses, and an ended ctx.
func (s *Store) check(ctx context.Context, name, owner string, ttl time.Duration) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := lease.CheckCall(ctx, name, owner, ttl); err != nil {
		return fmt.Errorf("redisstore: %w", err)
	}
	return ctx.Err()
}

// millis rounds ttl up to whole milliseconds: a TTL under a millisecond
// must not become 0, "no expiry". It divides before rounding, so that the
// longest TTLs do not overflow into a negative one (which the scripts would
// read as no expiry).
func millis(ttl time.Duration) int64 {
	ms := int64(ttl / time.Millisecond)
	if ttl%time.Millisecond != 0 {
		ms++
	}
	return ms
}
