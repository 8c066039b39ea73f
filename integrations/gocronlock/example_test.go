package gocronlock_test

import (
	"log"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/integrations/gocronlock"
	"github.com/lockplugin/lockplugin/lease"
)

// Every node runs the same scheduler; each run takes the job's lease and
// keeps it at least 5 s, so one node runs each occurrence.
func ExampleNewLocker() {
	var store lease.Store // sqlstore, redisstore, ...
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(
		gocronlock.NewLocker(lease.NewManager(store), gocronlock.HoldAtLeast(5*time.Second))))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = s.NewJob(gocron.DurationJob(time.Minute), gocron.NewTask(func() { log.Print("sync") }), gocron.WithName("sync"))
	s.Start()
}

// One node, the elected leader, schedules every job.
func ExampleNewElector() {
	var store lease.Store
	e, err := election.New(store, "scheduler-leader")
	if err != nil {
		log.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(gocronlock.NewElector(e)))
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
}
