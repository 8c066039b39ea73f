package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, err := lease.NewLocalStore(dir) // or sqlstore.New(db), redisstore.New(client)
	if err != nil {
		log.Fatal(err)
	}
	m := lease.NewManager(store)

	err = m.Do(context.Background(), "order-42", func(ctx context.Context) error {
		fmt.Println("shipping order 42")
		return nil
	}, lease.WaitAtMost(3*time.Second), lease.TTL(30*time.Second))
	fmt.Println("err:", err)
	// Output:
	// shipping order 42
	// err: <nil>
}

// A handler that answers 409 Conflict while another request works on the
// same order.
func ExampleManager_Do_http() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, _ := lease.NewLocalStore(dir)
	m := lease.NewManager(store)

	ship := func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("order")
		err := m.Do(r.Context(), "order-"+id, func(ctx context.Context) error {
			// ... ship the order, passing ctx down ...
			return nil
		}, lease.TTL(time.Minute))
		switch {
		case errors.Is(err, lease.ErrNotAcquired):
			http.Error(w, "order "+id+" is being shipped by another request", http.StatusConflict)
		case err != nil:
			http.Error(w, "internal error", http.StatusInternalServerError)
		default:
			fmt.Fprintln(w, "shipped")
		}
	}

	// Another request holds order 7 while this one arrives.
	busy, _ := m.Acquire(context.Background(), "order-7")
	rec := httptest.NewRecorder()
	ship(rec, httptest.NewRequest("POST", "/ship?order=7", nil))
	fmt.Print(rec.Code, " ", rec.Body.String())
	_ = busy.Release(context.Background())

	rec = httptest.NewRecorder()
	ship(rec, httptest.NewRequest("POST", "/ship?order=7", nil))
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output:
	// 409 order 7 is being shipped by another request
	// 200 shipped
}

// A scheduled job that runs on every replica but does its work on one:
// the others log and skip this run.
func ExampleManager_Do_scheduledJob() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, _ := lease.NewLocalStore(dir)
	m := lease.NewManager(store)
	logger := log.New(os.Stdout, "", 0)

	nightly := func(ctx context.Context, replica string) {
		err := m.Do(ctx, "nightly-invoice-run", func(ctx context.Context) error {
			logger.Printf("%s: running the invoice run", replica)
			return nil
		}, lease.TTL(10*time.Minute), lease.KeepAlive(time.Minute))
		if errors.Is(err, lease.ErrNotAcquired) {
			logger.Printf("%s: another replica runs it; skipping", replica)
			return
		}
		if err != nil {
			logger.Printf("%s: invoice run failed: %v", replica, err)
		}
	}

	// Replica b fires while replica a is still running.
	held, _ := m.Acquire(context.Background(), "nightly-invoice-run")
	nightly(context.Background(), "b")
	_ = held.Release(context.Background())
	nightly(context.Background(), "a")
	// Output:
	// b: another replica runs it; skipping
	// a: running the invoice run
}

// Long work refreshes its lease and passes the fencing token to the
// resource it writes, which rejects tokens older than one it has seen.
func ExampleManager_Acquire() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, _ := lease.NewLocalStore(dir)
	m := lease.NewManager(store)
	ctx := context.Background()

	l, err := m.Acquire(ctx, "report-2024", lease.TTL(30*time.Second), lease.WaitAtMost(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	for step := range 3 {
		// ... a step of the work, writing with l.Fence() ...
		if err := l.Refresh(ctx, 30*time.Second); errors.Is(err, lease.ErrLeaseLost) {
			fmt.Println("lost the lease; stopping")
			return
		}
		fmt.Printf("step %d with fence %d\n", step+1, l.Fence())
	}
	// Output:
	// step 1 with fence 1
	// step 2 with fence 1
	// step 3 with fence 1
}

// fn reads its lease from its context, to pass the fencing token to the
// resource it writes, and stops when the lease may no longer be held.
func ExampleFromContext() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, _ := lease.NewLocalStore(dir)
	m := lease.NewManager(store)

	err := m.Do(context.Background(), "invoice-7", func(ctx context.Context) error {
		l, _ := lease.FromContext(ctx)
		fmt.Println("writing with fence", l.Fence())
		select {
		case <-ctx.Done(): // the lease's safety deadline passed, or it was lost
			return context.Cause(ctx)
		default:
		}
		return nil
	}) // no TTL: DefaultTTL (30 s), refreshed every 10 s while fn runs
	fmt.Println("err:", err)
	// Output:
	// writing with fence 1
	// err: <nil>
}
