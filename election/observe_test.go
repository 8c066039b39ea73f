package election

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease"
)

// flakyHolder is a local store with a Holder that can fail or hang,
// ignoring its context (the worst client there is), until healed.
type flakyHolder struct {
	*lease.LocalStore
	mu    sync.Mutex
	fence int64
	held  bool
	fail  bool          // answer an error
	gate  chan struct{} // open: answer; otherwise hang until closed
}

func (f *flakyHolder) Holder(ctx context.Context, name string) (int64, bool, error) {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	<-gate
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return 0, false, errors.New("store down")
	}
	return f.fence, f.held, nil
}

func (f *flakyHolder) set(fence int64, held bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fence, f.held = fence, held
}

// TestObserveReportsErrors: a failing read and a hanging one are each
// reported once as a Leadership with Err (carrying the last values
// read), within CallTimeout for the hang; the first read after the heal
// is sent with the current term even when the store changed while it was
// unreachable, and even when nothing changed.
func TestObserveReportsErrors(t *testing.T) {
	ls, err := lease.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	open := make(chan struct{})
	close(open)
	f := &flakyHolder{LocalStore: ls, gate: open}
	f.set(7, true)
	e, err := New(f, "i24-observe", PollInterval(10*time.Millisecond), CallTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := e.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recv := func(what string) Leadership {
		t.Helper()
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatalf("%s: channel closed", what)
			}
			return l
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: nothing within 5 s", what)
		}
		return Leadership{}
	}
	if l := recv("first"); l != (Leadership{Term: 7, Led: true}) {
		t.Fatalf("first observation %+v", l)
	}

	// A failing store: one error event, then silence while it fails.
	f.mu.Lock()
	f.fail = true
	f.mu.Unlock()
	if l := recv("failing"); l.Err == nil || l.Term != 7 || !l.Led {
		t.Fatalf("while failing: %+v, want Err with the last term 7 led", l)
	}
	select {
	case l := <-ch:
		t.Fatalf("a second event while still failing: %+v", l)
	case <-time.After(100 * time.Millisecond):
	}
	f.set(9, true) // the term changes during the outage
	f.mu.Lock()
	f.fail = false
	f.mu.Unlock()
	if l := recv("healed"); l != (Leadership{Term: 9, Led: true}) {
		t.Fatalf("after the heal: %+v, want term 9 led", l)
	}

	// A hanging store: the error comes from CallTimeout.
	f.mu.Lock()
	f.gate = make(chan struct{})
	gate := f.gate
	f.mu.Unlock()
	start := time.Now()
	if l := recv("hanging"); !errors.Is(l.Err, context.DeadlineExceeded) || l.Term != 9 {
		t.Fatalf("while hanging: %+v, want a deadline error with term 9", l)
	}
	t.Logf("hanging store reported after %v (CallTimeout 200ms)", time.Since(start))
	close(gate) // nothing changed: the heal is still sent
	if l := recv("healed again"); l != (Leadership{Term: 9, Led: true}) {
		t.Fatalf("after the second heal: %+v", l)
	}
	cancel()
	for range ch {
	}
}

// TestCampaignWhileLeading: a leader's Campaign and TryCampaign return
// its term at once; a Campaign running in another goroutine of the same
// Elector when it wins returns the same term; after Resign a new term is
// taken.
func TestCampaignWhileLeading(t *testing.T) {
	ls, err := lease.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	e, err := New(ls, "i24-again", PollInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	terms := make([]*Term, 4)
	for i := range terms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var err error
			terms[i], err = e.Campaign(cctx)
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, x := range terms {
		if x != terms[0] {
			t.Fatalf("concurrent Campaigns of one Elector got different terms")
		}
	}
	again, err := e.TryCampaign(ctx)
	if err != nil || again != terms[0] {
		t.Fatalf("TryCampaign while leading: %v, same term %v", err, again == terms[0])
	}
	if err := terms[0].Resign(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := e.TryCampaign(ctx)
	if err != nil || next == terms[0] || next.Number() <= terms[0].Number() {
		t.Fatalf("after Resign: %v, want a new, higher term", err)
	}
	_ = next.Resign(ctx)
}
