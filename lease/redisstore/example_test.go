package redisstore_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
)

func ExampleNew() {
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	defer client.Close()

	m := lease.NewManager(redisstore.New(client, redisstore.Prefix("myapp:lease:")))
	err := m.Do(context.Background(), "order-42", func(ctx context.Context) error {
		return nil // ship order 42
	}, lease.TTL(30*time.Second), lease.KeepAlive(10*time.Second))
	if errors.Is(err, lease.ErrNotAcquired) {
		log.Print("order 42 is being shipped elsewhere")
	}
}
