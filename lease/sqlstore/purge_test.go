package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/internal/dryrun"
)

// purgePool answers each ExecContext with the next count of deleted rows
// and records what it was sent.
type purgePool struct {
	dryrunPool
	mu      sync.Mutex
	counts  []int64
	queries []string
	args    [][]any
}

type rowsResult int64

func (r rowsResult) LastInsertId() (int64, error) { return 0, nil }
func (r rowsResult) RowsAffected() (int64, error) { return int64(r), nil }

func (p *purgePool) ExecContext(_ context.Context, q string, args ...any) (sql.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queries = append(p.queries, q)
	p.args = append(p.args, args)
	var n int64
	if len(p.counts) > 0 {
		n, p.counts = p.counts[0], p.counts[1:]
	}
	return rowsResult(n), nil
}

func (p *purgePool) sent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queries)
}

func purgeStore(t *testing.T, pool *purgePool, opts ...Option) *Store {
	t.Helper()
	db, err := dryrun.Open("postgres", "")
	if err != nil {
		t.Fatal(err)
	}
	db.Statement.ConnPool = pool
	s, err := New(db, append([]Option{CreateTable(false)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPurgeBatches: Purge sends batches of the purge statement, with the
// age in ms, until one deletes fewer than PurgeBatch rows, and adds them up.
func TestPurgeBatches(t *testing.T) {
	pool := &purgePool{counts: []int64{PurgeBatch, PurgeBatch, 3}}
	s := purgeStore(t, pool)
	n, err := s.Purge(context.Background(), 90*time.Minute)
	if err != nil || n != 2*PurgeBatch+3 {
		t.Fatalf("Purge = %d, %v; want %d", n, err, 2*PurgeBatch+3)
	}
	if len(pool.queries) != 3 {
		t.Fatalf("%d statements, want 3", len(pool.queries))
	}
	for i, q := range pool.queries {
		if q != s.stmts.purge.SQL || !strings.HasPrefix(q, "DELETE FROM") {
			t.Errorf("statement %d: %s", i, q)
		}
		if len(pool.args[i]) != 1 || pool.args[i][0] != int64(90*60_000) {
			t.Errorf("statement %d args %v, want [5400000]", i, pool.args[i])
		}
	}
	// An age under PurgeMinAge counts as PurgeMinAge.
	pool.queries, pool.args = nil, nil
	if _, err := s.Purge(context.Background(), 0); err != nil || pool.args[0][0] != PurgeMinAge.Milliseconds() {
		t.Errorf("Purge(0): %v, args %v; want the age %d", err, pool.args, PurgeMinAge.Milliseconds())
	}
	if _, err := s.Purge(context.Background(), -time.Second); err == nil {
		t.Error("a negative age was accepted")
	}
	if _, err := (*Store)(nil).Purge(context.Background(), 0); err == nil {
		t.Error("Purge on a nil Store succeeded")
	}
}

// TestRetentionOption: 0 is the default, a negative value is kept (off).
func TestRetentionOption(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{{0, DefaultRetention}, {time.Hour, time.Hour}, {-1, -1}} {
		cfg, err := buildConfig([]Option{Retention(c.in)})
		if err != nil || cfg.retention != c.want {
			t.Errorf("Retention(%v): %v, %v; want %v", c.in, cfg.retention, err, c.want)
		}
	}
}

// TestAutoPurge: one batch with the retention's age at the first call, none
// again within the interval, none at all when turned off.
func TestAutoPurge(t *testing.T) {
	pool := &purgePool{}
	s := purgeStore(t, pool, Retention(time.Hour))
	for range 5 {
		s.autoPurge()
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.purging.Load() || pool.sent() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no background batch")
		}
		time.Sleep(time.Millisecond)
	}
	s.autoPurge()
	time.Sleep(20 * time.Millisecond)
	if n := pool.sent(); n != 1 || pool.args[0][0] != int64(time.Hour/time.Millisecond) {
		t.Fatalf("%d batches (args %v), want 1 with the retention", n, pool.args)
	}

	off := &purgePool{}
	s = purgeStore(t, off, Retention(-1))
	s.autoPurge()
	time.Sleep(20 * time.Millisecond)
	if off.sent() != 0 || s.purging.Load() {
		t.Fatalf("retention off sent %d statements", off.sent())
	}
}
