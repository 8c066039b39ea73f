package advisory

import (
	"context"
	"database/sql"
	"sync/atomic"
)

// heldKey is the context key under which a call chain's held locks travel.
type heldKey struct{}

// held is one lock held by a call chain. The contexts of fn (With) and of
// Lock.DB carry it, linked to whatever the caller's context and db already
// carried, so a nested acquisition of the same name on the same pool is seen
// before it deadlocks.
type held struct {
	pool     *sql.DB
	conn     *sql.Conn
	name     string
	released atomic.Bool
	parents  [2]*held
}

func heldIn(ctx context.Context) *held {
	if ctx == nil {
		return nil
	}
	h, _ := ctx.Value(heldKey{}).(*held)
	return h
}

// find walks h and its ancestors for a live lock matching match.
func (h *held) find(match func(*held) bool) *held {
	for ; h != nil; h = h.parents[0] {
		if !h.released.Load() && match(h) {
			return h
		}
		if found := h.parents[1].find(match); found != nil {
			return found
		}
	}
	return nil
}

// holding reports whether ctx or db's context hold name on pool.
func holding(pool *sql.DB, name string, chains ...*held) bool {
	for _, c := range chains {
		if c.find(func(h *held) bool { return h.pool == pool && h.name == name }) != nil {
			return true
		}
	}
	return false
}

// poolOfConn finds the pool that one of the chain's pinned connections came
// from, for a db that is fn's own conn.
func poolOfConn(conn *sql.Conn, chains ...*held) *sql.DB {
	for _, c := range chains {
		if h := c.find(func(h *held) bool { return h.conn == conn }); h != nil {
			return h.pool
		}
	}
	return nil
}
