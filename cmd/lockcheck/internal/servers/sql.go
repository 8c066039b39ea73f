package servers

import (
	"context"
	"database/sql"
)

// sqlPing opens dsn and pings it once.
func sqlPing(ctx context.Context, driver, dsn string) error {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

func openDB(driver, dsn string) (*sql.DB, error) { return sql.Open(driver, dsn) }
