package testdb

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	redisOnce sync.Once
	redisAddr string
	redisErr  error
)

// RedisAddr returns the address of a reachable Redis: LOCKPLUGIN_REDIS_ADDR,
// the default, or a container. It skips the test when none answers, and
// fails it under CI.
func RedisAddr(t testing.TB) string {
	t.Helper()
	redisOnce.Do(func() {
		addr := envOr("LOCKPLUGIN_REDIS_ADDR", DefaultRedisAddr)
		redisErr = ping("redis", addr)
		if redisErr != nil && os.Getenv("LOCKPLUGIN_REDIS_ADDR") == "" {
			if a, err := startContainer("redis"); err == nil {
				addr, redisErr = a, nil
			}
		}
		redisAddr = addr
	})
	if redisErr != nil {
		if CI() {
			t.Fatalf("testdb: Redis is required under CI and is not reachable at %s: %v", redisAddr, redisErr)
		}
		t.Skipf("testdb: Redis not reachable at %s, skipping: %v", redisAddr, redisErr)
	}
	return redisAddr
}

// Redis returns a new client for the reachable Redis, closed when the test
// ends.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: RedisAddr(t), DialTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("testdb: Redis ping: %v", err)
	}
	return c
}
