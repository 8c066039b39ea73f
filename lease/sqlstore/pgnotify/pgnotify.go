// Package pgnotify lets the table store (lease/sqlstore) wait with
// PostgreSQL's LISTEN/NOTIFY on pgx's database/sql driver
// (github.com/jackc/pgx/v5/stdlib), the one GORM's PostgreSQL driver
// (gorm.io/driver/postgres) uses:
//
//	// fragment: needs db *gorm.DB
//	store, err := sqlstore.New(db, pgnotify.Listen())
//	if err != nil {
//		return err
//	}
//	m := lease.NewManager(store) // waiting Acquires wake on releases
//	_ = m
//
// It is a module of its own so that lockplugin's root module requires no
// database driver: reading notifications is not part of database/sql, and
// this package is the pgx half of sqlstore.Listen (see there for what it
// does and costs).
package pgnotify

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lockplugin/lockplugin/lease/sqlstore"
)

// Listen is sqlstore.Listen(Receive): pass it to sqlstore.New.
func Listen() sqlstore.Option { return sqlstore.Listen(Receive) }

// Receive is a sqlstore.Receive for pgx: it waits for the next
// notification on driverConn, a *stdlib.Conn, or a driver.Conn wrapping
// one that has an Unwrap() driver.Conn method (statement-counting or
// tracing wrappers), and returns its channel and payload. It returns an
// error when ctx ends (pgx ends the read with a deadline and keeps the
// connection, as sqlstore.Receive requires, unless the pgx config's
// BuildContextWatcherHandler closes it), when the connection fails, and
// at once when driverConn is not pgx's.
func Receive(ctx context.Context, driverConn any) (channel, payload string, err error) {
	c, err := pgxConn(driverConn)
	if err != nil {
		return "", "", err
	}
	n, err := c.Conn().WaitForNotification(ctx)
	if err != nil {
		return "", "", err
	}
	if n == nil {
		return "", "", errors.New("pgnotify: pgx returned no notification and no error")
	}
	return n.Channel, n.Payload, nil
}

// pgxConn finds pgx's connection in driverConn, through wrappers that
// unwrap.
func pgxConn(driverConn any) (*stdlib.Conn, error) {
	c := driverConn
	for range 8 {
		switch v := c.(type) {
		case *stdlib.Conn:
			return v, nil
		case interface{ Unwrap() driver.Conn }:
			c = v.Unwrap()
			continue
		}
		break
	}
	return nil, fmt.Errorf("pgnotify: the connection is a %T, not pgx's database/sql driver (github.com/jackc/pgx/v5/stdlib): open PostgreSQL with gorm.io/driver/postgres or pgx/v5/stdlib, or leave sqlstore.Listen out (waits then poll)", driverConn)
}
