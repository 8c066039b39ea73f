package main

import (
	"context"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

// leaseChecks runs scenario.LeaseExclusive on the table store of the
// database under test and, with -redis, on the Redis store. The table is
// Prefix+"_leases" and the Redis keys start with Prefix+":".
func leaseChecks() []check {
	return []check{
		{id: "lease-sql", title: "lease / table store", run: func(ctx context.Context, e *env, cfg scenario.Config) (scenario.Result, error) {
			store, err := sqlstore.New(e.db.WithContext(ctx), sqlstore.Table(cfg.Prefix+"_leases"))
			if err != nil {
				return scenario.Result{}, err
			}
			return scenario.LeaseExclusive(ctx, store, cfg)
		}},
		{id: "lease-redis", title: "lease / Redis store", needsRedis: true, run: func(ctx context.Context, e *env, cfg scenario.Config) (scenario.Result, error) {
			return scenario.LeaseExclusive(ctx, redisstore.New(e.redis, redisstore.Prefix(cfg.Prefix+":")), cfg)
		}},
	}
}
