package driverhook

import (
	"context"
	"database/sql/driver"
	"io"
)

// Wrap returns a connector whose connections come from inner and run h.
func Wrap(inner driver.Connector, h Hooks) driver.Connector {
	return &connector{inner: inner, h: &h}
}

// DSNConnector is a connector that opens its connections with
// d.Open(dsn), for drivers known only by their driver.Driver; Wrap it.
func DSNConnector(d driver.Driver, dsn string) driver.Connector {
	return dsnConnector{drv: d, dsn: dsn}
}

type connector struct {
	inner driver.Connector
	h     *Hooks
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &wrappedConn{Conn: conn, h: c.h}, nil
}

func (c *connector) Driver() driver.Driver { return c.inner.Driver() }

// Close closes the wrapped connector when it has a Close (database/sql
// calls it when the pool closes).
func (c *connector) Close() error {
	if cl, ok := c.inner.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

type dsnConnector struct {
	drv driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }
