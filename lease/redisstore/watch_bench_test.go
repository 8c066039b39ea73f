package redisstore

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkGrantPublish measures what the grant's PUBLISH (acquire.lua,
// for WatchHolder and WatchRelease's expiry timer) costs: one grant and
// one release of a name per op, with the acquire script as shipped
// (publish), without its PUBLISH line (nopublish: the script before
// watch.go), and as shipped with 10 subscribers to the name's channels
// (subscribed: a 10-candidate election, where the message is delivered
// ten times, as the release's is in every variant). go test -count
// repeats each variant in a row: alternate them by running one at a time
// in a loop (-bench 'BenchmarkGrantPublish/^publish$', ...), and on a
// loaded machine read the server's own time from INFO commandstats on a
// Redis of your own (evalsha and publish usec_per_call), as the notes of
// issue 25 did. It uses the Redis at LOCKPLUGIN_REDIS_ADDR (default
// 127.0.0.1:6379) and is skipped when none answers.
func BenchmarkGrantPublish(b *testing.B) {
	addr := os.Getenv("LOCKPLUGIN_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		b.Skipf("no Redis at %s: %v", addr, err)
	}
	const line = `redis.call("PUBLISH", KEYS[1] .. ":acquired", "1")` + "\n"
	if !strings.Contains(acquireLua, line) {
		b.Fatal("acquire.lua has no grant PUBLISH line")
	}
	without := redis.NewScript(strings.Replace(acquireLua, line, "", 1))
	prefix := "i25-bench:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	run := func(b *testing.B, acquire *redis.Script, subscribers int) {
		s := New(c, Prefix(prefix))
		k := s.Key(b.Name())
		for range subscribers {
			sub := c.Subscribe(ctx, k+releasedSuffix, k+acquiredSuffix)
			defer sub.Close()
			ch := sub.Channel() // drained by go-redis into this channel: read it
			go func() {
				for range ch {
				}
			}()
		}
		b.ResetTimer()
		for range b.N {
			f, err := acquire.Run(ctx, c, []string{k, k + ":fence"}, "o", 10000).Int64()
			if err != nil || f == 0 {
				b.Fatalf("acquire: %d, %v", f, err)
			}
			if _, err := s.Release(ctx, b.Name(), "o"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("publish", func(b *testing.B) { run(b, acquireScript, 0) })
	b.Run("nopublish", func(b *testing.B) { run(b, without, 0) })
	b.Run("subscribed", func(b *testing.B) { run(b, acquireScript, 10) })
}
