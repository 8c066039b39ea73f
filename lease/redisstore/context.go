package redisstore

import "github.com/redis/go-redis/v9"

// HonoursContext reports whether every call of the store ends by its
// context's deadline: true when the client was made with
// ContextTimeoutEnabled (a *redis.Client, including a Sentinel failover
// client, or a *redis.ClusterClient), which makes go-redis set its socket
// deadlines from the context. lease.Manager then runs the store's calls on
// the caller's goroutine instead of one of its own
// (lease.ContextHonourer). Without it go-redis ignores context deadlines
// during a command, and the Manager keeps bounding the calls itself. With
// WaitReplicas it answers false too: an acquire the replicas did not
// acknowledge is undone on a context of its own, which may outlast the
// caller's by up to the WAIT timeout.
func (s *Store) HonoursContext() bool {
	if s.usable() != nil || s.replicas > 0 {
		return false
	}
	switch c := s.client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}
