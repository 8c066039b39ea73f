package main

import (
	"context"

	"github.com/lockplugin/lockplugin/cmd/lockcheck/scenario"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

// fenceChecks runs the fenced-write and election scenarios on the table
// store of the database under test (table Prefix+"_leases").
func fenceChecks() []check {
	fenced := func(on bool) func(context.Context, *env, scenario.Config) (scenario.Result, error) {
		return func(ctx context.Context, e *env, cfg scenario.Config) (scenario.Result, error) {
			store, err := sqlstore.New(e.db.WithContext(ctx), sqlstore.Table(cfg.Prefix+"_leases"))
			if err != nil {
				return scenario.Result{}, err
			}
			return scenario.FencedTakeover(ctx, e.db, store, cfg, on)
		}
	}
	return []check{
		{id: "fence-unfenced", title: "fenced writes / forced takeover, unfenced", run: fenced(false)},
		{id: "fence", title: "fenced writes / forced takeover", run: fenced(true)},
		{id: "election", title: "election / one leader", run: func(ctx context.Context, e *env, cfg scenario.Config) (scenario.Result, error) {
			store, err := sqlstore.New(e.db.WithContext(ctx), sqlstore.Table(cfg.Prefix+"_leases"))
			if err != nil {
				return scenario.Result{}, err
			}
			return scenario.ElectionExclusive(ctx, store, cfg)
		}},
	}
}
