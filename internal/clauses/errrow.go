package clauses

import (
	"context"
	"database/sql"
	"database/sql/driver"
)

// errRow returns a *sql.Row whose Scan (and Err) reports err.
//
// database/sql has no exported way to make a *sql.Row, and a nil one makes
// row.Scan panic. A QueryRow on a database whose connector cannot connect
// is the one public route to a Row that carries an error: database/sql
// returns the connector's error unchanged (it retries only on
// driver.ErrBadConn), and no connection is ever opened. The pool is closed
// at once, so nothing is left running.
func errRow(err error) *sql.Row {
	db := sql.OpenDB(failingConnector{err: err})
	defer func() { _ = db.Close() }()
	return db.QueryRowContext(context.Background(), "")
}

// failingConnector is a driver.Connector that fails every Connect with err.
type failingConnector struct{ err error }

func (c failingConnector) Connect(context.Context) (driver.Conn, error) { return nil, c.err }

func (c failingConnector) Driver() driver.Driver { return failingDriver(c) }

// failingDriver is failingConnector's driver, for sql.DB.Driver.
type failingDriver failingConnector

func (d failingDriver) Open(string) (driver.Conn, error) { return nil, d.err }
