package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/lockplugin/lockplugin/lease"
)

// forceResult is what -force-release ended.
type forceResult struct {
	lease bool // a held lease (its fence bumped)
	holds int  // holds of the table/id resource
}

func (f forceResult) String() string {
	var parts []string
	if f.lease {
		parts = append(parts, "ended a held lease (fence bumped)")
	}
	if f.holds > 0 {
		parts = append(parts, fmt.Sprintf("ended %d hold(s); their holders' next Release or Extend returns holds.ErrLost", f.holds))
	}
	if len(parts) == 0 {
		return "nothing of that name was held"
	}
	return strings.Join(parts, "; ")
}

// holdName splits a -force-release name "table/id" (as `who` lists holds)
// into the resource's table and id; ok is false for a name without a
// table part.
func holdName(name string) (table, id string, ok bool) {
	table, id, ok = strings.Cut(name, "/")
	if !ok || table == "" || id == "" || !plainTable.MatchString(table) {
		return "", "", false
	}
	return table, id, true
}

// localLeases lists the leases held in a local store's directory, by any
// process. The directory must exist: listing never creates it.
func localLeases(ctx context.Context, dir string, names []string) ([]holding, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, fmt.Errorf("-local %s: not a directory of a local lease store", dir)
	}
	s, err := lease.NewLocalStore(dir)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ls, err := s.Leases(ctx, names...)
	if err != nil {
		return nil, err
	}
	var out []holding
	for _, l := range ls {
		h := holding{Mechanism: "lease-local", Name: l.Name, Fence: l.Fence, Holder: "unknown process", Source: srcProbe}
		if l.PID != 0 {
			h.Holder, h.Source = fmt.Sprintf("pid %d", l.PID), srcProcLocks
		}
		out = append(out, h)
	}
	return out, nil
}

// whoResult is what `lockcheck who` found.
type whoResult struct {
	rows   []holding
	forced forceResult
	// advisory says where advisory locks were read from ("" when no
	// -dsn was given).
	advisory string
}
