package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// Holder reads, without taking anything, name's fencing counter (the
// fence of its latest lease) and whether the lease is held now (its key
// exists: Redis deletes it at expiry, by its own clock): 0 and false for
// a name never taken, and for a name whose counter has gone with its
// lease (Release deletes it once the server clock has passed it, and it
// expires a second after the lease does). One MGET of the two keys, which share a Cluster
// slot. Package election uses it for Leader and Observe.
//
// Like every read, it sees what the server it reaches has: after a
// failover, the promoted replica's view (see WaitAllReplicas).
func (s *Store) Holder(ctx context.Context, name string) (fence int64, held bool, err error) {
	if err := s.usable(); err != nil {
		return 0, false, err
	}
	if ctx == nil {
		return 0, false, errors.New("redisstore: nil context")
	}
	if name == "" {
		return 0, false, errors.New("redisstore: empty lock name")
	}
	k := s.Key(name)
	vals, err := s.client.MGet(ctx, k, k+":fence").Result()
	if err != nil {
		return 0, false, s.failed(ctx, "holder", err)
	}
	held = vals[0] != nil
	if f, ok := vals[1].(string); ok {
		fence, err = strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("redisstore: holder: fencing counter %s:fence holds %q, not a number", k, f)
		}
	}
	return fence, held, nil
}
