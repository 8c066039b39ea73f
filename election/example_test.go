package election_test

import (
	"context"
	"fmt"
	"os"

	"github.com/lockplugin/lockplugin/election"
	"github.com/lockplugin/lockplugin/lease"
)

// Two candidates on one store: the first leads; when it resigns, the
// second is elected with a greater term number.
func Example() {
	dir, _ := os.MkdirTemp("", "election-example")
	defer os.RemoveAll(dir)
	store, _ := lease.NewLocalStore(dir)
	ctx := context.Background()

	a, _ := election.New(store, "reports-leader")
	b, _ := election.New(store, "reports-leader")

	t1, _ := a.Campaign(ctx)
	fmt.Println("a leads:", t1.Leading())

	won := make(chan *election.Term)
	go func() {
		t2, _ := b.Campaign(ctx) // blocks while a leads
		won <- t2
	}()
	_ = t1.Resign(ctx)
	t2 := <-won
	fmt.Println("b leads:", t2.Leading(), "a leads:", t1.Leading(), "later term:", t2.Number() > t1.Number())
	_ = t2.Resign(ctx)
	// Output:
	// a leads: true
	// b leads: true a leads: false later term: true
}
