package election

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/internal/lockerr"
	"github.com/lockplugin/lockplugin/lease"
)

// TestZeroValues calls every method of a zero Elector, a nil *Elector, a
// zero Term and a nil *Term: errors name the constructor, nothing panics,
// and a Term not returned by Campaign does not lead.
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	for name, e := range map[string]*Elector{"Elector{}": {}, "(*Elector)(nil)": nil} {
		for method, call := range map[string]func() error{
			"Campaign":    func() error { _, err := e.Campaign(ctx); return err },
			"TryCampaign": func() error { _, err := e.TryCampaign(ctx); return err },
			"Leader":      func() error { _, _, err := e.Leader(ctx); return err },
			"Observe":     func() error { _, err := e.Observe(ctx); return err },
		} {
			noPanic(t, name+"."+method, func() {
				if err := call(); err == nil || !strings.Contains(err.Error(), "election.New") {
					t.Errorf("%s.%s = %v, want an error naming election.New", name, method, err)
				}
			})
		}
		noPanic(t, name+".Name", func() { _ = e.Name() })
	}
	for name, term := range map[string]*Term{"Term{}": {}, "(*Term)(nil)": nil} {
		noPanic(t, name, func() {
			if err := term.Resign(ctx); err == nil || !strings.Contains(err.Error(), "Campaign") {
				t.Errorf("%s.Resign = %v, want an error naming Campaign", name, err)
			}
			if term.Leading() || term.Number() != 0 || term.Fence() != 0 || term.Name() != "" || term.Lease() != nil {
				t.Errorf("%s leads or has a number", name)
			}
			select {
			case <-term.Done():
			default:
				t.Errorf("%s.Done is open", name)
			}
			if term.Context().Err() == nil {
				t.Errorf("%s.Context has not ended", name)
			}
		})
	}
}

func noPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	fn()
}

// TestOptions: nil options are ignored, invalid values are New's error,
// and a lost TryCampaign matches ErrNotLeader and the shared busy
// sentinel.
func TestOptions(t *testing.T) {
	store, err := lease.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e, err := New(store, "i18-election", nil, TTL(time.Second), nil, PollInterval(10*time.Millisecond))
	if err != nil {
		t.Fatalf("New with nil options: %v", err)
	}
	if e.ttl != time.Second || e.poll != 10*time.Millisecond {
		t.Fatalf("options not applied: ttl %v poll %v", e.ttl, e.poll)
	}
	for _, bad := range [][]Option{{TTL(time.Millisecond)}, {nil, PollInterval(0)}, {CallTimeout(0)}} {
		if _, err := New(store, "i18-election", bad...); err == nil {
			t.Errorf("New(%d options) accepted an invalid value", len(bad))
		}
	}
	ctx := context.Background()
	term, err := e.TryCampaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Resign(ctx)
	other, err := New(store, "i18-election")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryCampaign(ctx); !errors.Is(err, ErrNotLeader) || !errors.Is(err, lockerr.ErrBusy) {
		t.Fatalf("TryCampaign while another leads = %v, want ErrNotLeader and ErrBusy", err)
	}
}
