package lease_test

import (
	"context"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/lockplugin/lockplugin/lease/sqlstore/pgnotify"
)

// TestI25TableListenOlderWaiter: a waiter of an older lockplugin LISTENs on
// the table's channel (the table's name), not on a name's; during a rolling
// upgrade the release of a newer store must still reach it, with the name
// as the payload. Without Listen the release announces nothing (the
// baseline: the older waiter hears nothing in the same time).
func TestI25TableListenOlderWaiter(t *testing.T) {
	e := newListenEnv(t)
	ctx := context.Background()
	conn, err := e.admin.Conn(ctx)
	noErr(t, err)
	defer conn.Close()
	// Never back to the shared pool LISTENing: discarded at the end.
	defer func() { _ = conn.Raw(func(any) error { return driver.ErrBadConn }) }()
	_, err = conn.ExecContext(ctx, `LISTEN "`+e.table+`"`)
	noErr(t, err, "the older waiter's LISTEN")
	heard := func() (string, bool) {
		var payload string
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		err := conn.Raw(func(dc any) error {
			_, p, err := pgnotify.Receive(rctx, dc)
			payload = p
			return err
		})
		return payload, err == nil
	}
	for _, listen := range []bool{false, true} {
		s := e.store(t, listen)
		name := uniqueName(t)
		_, ok, err := s.Acquire(ctx, name, "owner-a", time.Minute)
		noErr(t, err)
		want(t, ok, "not acquired")
		ok, err = s.Release(ctx, name, "owner-a")
		noErr(t, err)
		want(t, ok, "not released")
		payload, got := heard()
		t.Logf("Listen %v: the older waiter heard %q (%v)", listen, payload, got)
		want(t, got == listen, "Listen %v: the older waiter heard the release: %v, want %v", listen, got, listen)
		if listen {
			want(t, payload == name, "payload %q, want the name %q", payload, name)
		}
	}
}
