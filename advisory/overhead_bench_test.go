package advisory

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"testing"

	"gorm.io/gorm"
)

// BenchmarkWithOverhead: With on a fake driver that answers at once, so
// that what is measured (allocations above all) is advisory's own work,
// beside the same cycle written by hand on a pinned *sql.Conn.
func BenchmarkWithOverhead(b *testing.B) {
	t := &testing.T{}
	for _, kind := range []string{"postgres", "mysql"} {
		f := &fakeDB{answer: func(c call) ([]driver.Value, error) {
			if kind == "mysql" && len(c.args) > 0 && c.sql == "SELECT GET_LOCK(?, 0), CONNECTION_ID()" {
				return []driver.Value{int64(1), int64(7)}, nil
			}
			if kind == "postgres" {
				return []driver.Value{true}, nil
			}
			return []driver.Value{int64(1)}, nil
		}}
		db := openFake(t, kind, versionOf(kind), f)
		ctx, cancel := context.WithCancel(context.Background())
		b.Run(kind+"/lockplugin", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if err := With(ctx, db, "bench", func(*gorm.DB) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(kind+"/baseline=raw-sql", func(b *testing.B) {
			pool, err := db.DB()
			if err != nil {
				b.Fatal(err)
			}
			lock, unlock, arg := "SELECT pg_advisory_lock($1)", "SELECT pg_advisory_unlock($1)", any(PostgresKey("bench"))
			if kind == "mysql" {
				lock, unlock, arg = "SELECT GET_LOCK(?, 31536000)", "SELECT RELEASE_LOCK(?)", "bench"
			}
			b.ReportAllocs()
			for range b.N {
				conn, err := pool.Conn(ctx)
				if err != nil {
					b.Fatal(err)
				}
				var got sql.NullString
				if err := conn.QueryRowContext(ctx, lock, arg).Scan(&got); err != nil {
					b.Fatal(err)
				}
				if err := conn.QueryRowContext(ctx, unlock, arg).Scan(&got); err != nil {
					b.Fatal(err)
				}
				_ = conn.Close()
			}
		})
		cancel()
	}
}

func versionOf(kind string) string {
	if kind == "mysql" {
		return "8.0.36"
	}
	return ""
}
