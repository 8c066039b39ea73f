package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// conn returns one connection to the primary that serves key: WAIT counts
// the replicas that acknowledged the writes of ITS connection, so the
// script and WAIT must share one.
func (s *Store) conn(ctx context.Context, key string) (*redis.Conn, error) {
	switch c := s.client.(type) {
	case *redis.Client:
		return c.Conn(), nil
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		return node.Conn(), nil
	}
	return nil, fmt.Errorf("redisstore: WaitReplicas needs a *redis.Client or *redis.ClusterClient, got %T", s.client)
}

// connectedReplicas reads, on conn, how many replicas the primary has
// connected (ROLE: the third element of a master's reply lists them).
func connectedReplicas(ctx context.Context, conn *redis.Conn) (int, error) {
	r, err := conn.Do(ctx, "ROLE").Slice()
	if err != nil {
		return 0, err
	}
	if len(r) < 3 || r[0] != "master" {
		return 0, fmt.Errorf("ROLE answered %v, not a primary's reply: the client reached a replica", r)
	}
	list, ok := r[2].([]any)
	if !ok {
		return 0, fmt.Errorf("ROLE answered %v: no replica list", r)
	}
	return len(list), nil
}

// needed returns how many replicas must acknowledge the next write on
// conn: WaitAllReplicas' every connected replica (at least its minimum),
// or WaitReplicas' n, refused before anything is written when more than n
// are connected (one that does not acknowledge may be promoted) unless
// AllowUnackedReplicas.
func (s *Store) needed(ctx context.Context, conn *redis.Conn) (int, error) {
	if s.partial && !s.waitAll {
		return s.replicas, nil
	}
	c, err := connectedReplicas(ctx, conn)
	if err != nil {
		return 0, err
	}
	if s.waitAll {
		return max(s.replicas, c), nil
	}
	if c > s.replicas {
		return 0, fmt.Errorf("%w: the primary has %d connected replicas and WaitReplicas(%d) would let a failover promote one that did not acknowledge; "+
			"use redisstore.WaitAllReplicas (or WaitReplicas(%d)), or AllowUnackedReplicas to accept the weaker guarantee",
			ErrNotReplicated, c, s.replicas, c)
	}
	return s.replicas, nil
}

// wait sends WAIT on conn and returns an error matching ErrNotReplicated
// when fewer than need replicas acknowledged in time.
func (s *Store) wait(ctx context.Context, conn *redis.Conn, need int) error {
	n, err := conn.Do(ctx, "WAIT", need, s.waitTimeout.Milliseconds()).Int64()
	if err != nil {
		return err
	}
	if n < int64(need) {
		return fmt.Errorf("%w: %d of %d within %v", ErrNotReplicated, n, need, s.waitTimeout)
	}
	return nil
}

func (s *Store) acquireReplicated(ctx context.Context, k, owner string, ttl time.Duration) (int64, bool, error) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	conn, err := s.conn(ctx, k)
	if err != nil {
		return 0, false, s.failed(ctx, "acquire", err)
	}
	defer conn.Close()
	need, err := s.needed(ctx, conn)
	if err != nil {
		return 0, false, s.failed(ctx, "acquire", err)
	}
	fence, err := acquireScript.Run(ctx, conn, []string{k, k + ":fence"}, owner, millis(ttl)).Int64()
	if err != nil {
		return 0, false, s.failed(ctx, "acquire", err)
	}
	if fence <= 0 {
		return 0, false, nil
	}
	if err := s.wait(ctx, conn, need); err != nil {
		// Undo it: a lease the replicas may not have is no lease. If this
		// release is lost too, the caller's error makes the Manager release
		// under the same owner again.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.waitTimeout+time.Second)
		defer cancel()
		_ = releaseScript.Run(rctx, conn, []string{k, k + ":fence"}, owner).Err()
		return 0, false, s.failed(ctx, "acquire", err)
	}
	return fence, true, nil
}

func (s *Store) refreshReplicated(ctx context.Context, k, owner string, ttl time.Duration) (bool, error) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	conn, err := s.conn(ctx, k)
	if err != nil {
		return false, s.failed(ctx, "refresh", err)
	}
	defer conn.Close()
	need, err := s.needed(ctx, conn)
	if err != nil {
		return false, s.failed(ctx, "refresh", err)
	}
	n, err := refreshScript.Run(ctx, conn, []string{k, k + ":fence"}, owner, millis(ttl)).Int64()
	if err != nil {
		return false, s.failed(ctx, "refresh", err)
	}
	if n != 1 {
		return false, nil
	}
	if err := s.wait(ctx, conn, need); err != nil {
		return false, s.failed(ctx, "refresh", err)
	}
	return true, nil
}

// failed wraps err from operation op and, on a Cluster client, has it
// reload the cluster's layout after a connection error: go-redis keeps
// sending to a failed primary's address until its state is reloaded
// (redis/go-redis#3979), so without it a failover would leave every
// later call refused for as long as the client's periodic reload takes.
func (s *Store) failed(ctx context.Context, op string, err error) error {
	if cc, ok := s.client.(*redis.ClusterClient); ok && connectionError(err) {
		cc.ReloadState(ctx)
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// connectionError reports whether err is a failure to reach or hear from
// a server (not a Redis error reply, nor the caller's context ending),
// or a reply that the node no longer serves the key.
func connectionError(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		// MOVED and friends are followed by go-redis itself; a node that
		// lost its role or the cluster's quorum answers these.
		return redis.HasErrorPrefix(err, "CLUSTERDOWN") || redis.HasErrorPrefix(err, "READONLY") ||
			redis.HasErrorPrefix(err, "MASTERDOWN") || redis.HasErrorPrefix(err, "LOADING")
	}
	var nerr net.Error
	return errors.As(err, &nerr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF)
}
