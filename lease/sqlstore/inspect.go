package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// Entry is one lease held in the table, as Leases reads it.
type Entry struct {
	// Name is the stored name: the lock name, or "sha256:<hex>" of it for
	// names the table keeps as a hash (see the package documentation).
	Name string
	// Owner is the holder's owner token.
	Owner string
	// Fence is the holder's fencing token.
	Fence int64
	// ExpiresAt is when the lease expires by the database clock; zero for
	// a lease without expiry (lease.NoExpiry).
	ExpiresAt time.Time
}

// Leases lists the leases held now, by the database clock, in name order:
// for an operator's "who holds what" (lockcheck who). It reads the table
// without locking it.
func (s *Store) Leases(ctx context.Context) ([]Entry, error) {
	if ctx == nil {
		return nil, errors.New("sqlstore: nil context")
	}
	ctx, cancel, err := s.join(ctx, "listing leases")
	if err != nil {
		return nil, err
	}
	defer cancel()
	rows, err := s.pool.QueryContext(ctx, leasesSQL(s.dr, s.quoted))
	if err != nil {
		return nil, s.wrap("listing leases", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var exp int64
		if err := rows.Scan(&e.Name, &e.Owner, &exp, &e.Fence); err != nil {
			return nil, s.wrap("listing leases", err)
		}
		if exp > 0 {
			e.ExpiresAt = time.UnixMilli(exp)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("listing leases", err)
	}
	return out, nil
}

// leasesSQL lists the leases held now, by the database clock, in name
// order.
func leasesSQL(p sqldriver.Phrasing, table string) string {
	return "SELECT lock_name, owner, expires_at, fence FROM " + table +
		" WHERE expires_at = 0 OR expires_at > " + p.NowMillis() + " ORDER BY lock_name"
}

// forceReleaseTmpl ends a held lease whoever holds it, and bumps its
// fence: the old holder's Refresh and Release then find it gone
// (ErrLeaseLost), and the next holder's fence is above every fence the
// old holder could have written with, even one it reads back later.
const forceReleaseTmpl = `UPDATE {t} SET expires_at = -1, fence = fence + 1 WHERE lock_name = {name} AND (expires_at = 0 OR expires_at > {now})`

// ForceRelease is an operator's release of name's lease whoever holds it
// (a holder that hangs, a NoExpiry lease whose holder died). It reports
// whether a held lease was ended. The old holder learns it at its next
// Refresh (ErrLeaseLost), and may still act until its own safety
// deadline: what the lease protects must check fences for the release to
// be safe at once (lockplugin.WithFence).
func (s *Store) ForceRelease(ctx context.Context, name string) (bool, error) {
	if ctx == nil {
		return false, errors.New("sqlstore: nil context")
	}
	if name == "" {
		return false, errors.New("sqlstore: empty lock name")
	}
	ctx, cancel, err := s.join(ctx, "force-release")
	if err != nil {
		return false, err
	}
	defer cancel()
	st := renderOne(s.dr, s.quoted, forceReleaseTmpl)
	res, err := s.exec(ctx, st.SQL, st.bind(values{name: key(name)}))
	if err != nil {
		return false, s.wrap("force-release", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlstore: force-release of %q: %w", name, err)
	}
	return n > 0, nil
}
