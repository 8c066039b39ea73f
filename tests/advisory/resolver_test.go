package advisory_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/advisory"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/require"
)

// withPGParam adds a connection parameter to a PostgreSQL DSN of either form.
func withPGParam(dsn, key, value string) string {
	if strings.Contains(dsn, "://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + key + "=" + value
	}
	return dsn + " " + key + "=" + value
}

// With dbresolver, writes go to the sources and reads to the replicas; the
// lock must go where writes go, not to the replicas and not to the pool GORM
// was opened with. The three pools reach the same server and are told apart
// by application_name (PostgreSQL) or by their default database (MariaDB).
func TestLockOnPrimaryWithDBResolver(t *testing.T) {
	for _, kind := range []string{testdb.Postgres, testdb.MySQL} {
		t.Run(kind, func(t *testing.T) {
			tg := testdb.Get(t, kind)
			var defaultDSN, primaryDSN, replicaDSN, primaryMark, replicaMark, markSQL string
			if kind == testdb.Postgres {
				primaryMark, replicaMark = "adv_primary", "adv_replica"
				defaultDSN = withPGParam(tg.DSN, "application_name", "adv_default")
				primaryDSN = withPGParam(tg.DSN, "application_name", primaryMark)
				replicaDSN = withPGParam(tg.DSN, "application_name", replicaMark)
				markSQL = "SELECT current_setting('application_name')"
			} else {
				primaryMark, replicaMark = dsnDB(tg.DSN), waiterDB
				defaultDSN = replaceDB(tg.DSN, "mysql")
				primaryDSN = tg.DSN
				replicaDSN = replaceDB(tg.DSN, replicaMark)
				markSQL = "SELECT DATABASE()"
			}
			db, err := gorm.Open(testdb.Dialector(kind, defaultDSN), &gorm.Config{Logger: logger.Discard})
			require.NoError(t, err, "open")
			resolver := dbresolver.Register(dbresolver.Config{
				Sources:  []gorm.Dialector{testdb.Dialector(kind, primaryDSN)},
				Replicas: []gorm.Dialector{testdb.Dialector(kind, replicaDSN)},
			})
			require.NoError(t, db.Use(resolver), "dbresolver")
			t.Cleanup(func() {
				_ = resolver.Call(func(p gorm.ConnPool) error {
					if c, ok := p.(interface{ Close() error }); ok {
						_ = c.Close()
					}
					return nil
				})
				if s, err := db.DB(); err == nil {
					_ = s.Close()
				}
			})

			// The resolver is live: plain reads go to the replica.
			var mark string
			require.NoError(t, db.Raw(markSQL).Scan(&mark).Error, "read")
			require.Truef(t, mark == replicaMark, "reads went to %q, not the replica: the test cannot tell the pools apart", mark)

			name := lockName(t)
			err = advisory.With(context.Background(), db, name, func(conn *gorm.DB) error {
				got := lockHolderMark(t, tg, name)
				require.Truef(t, got == primaryMark, "the lock is held by a %q session, want the primary %q", got, primaryMark)
				// A transaction in fn begins on the pinned connection, which
				// dbresolver leaves alone.
				var inTx string
				require.NoError(t, conn.Transaction(func(tx *gorm.DB) error { return tx.Raw(markSQL).Scan(&inTx).Error }), "transaction")
				require.Truef(t, inTx == primaryMark, "fn's transaction ran on %q", inTx)
				// Outside a transaction dbresolver re-routes conn's reads
				// (the README says so): logged, not asserted.
				var plain string
				require.NoError(t, conn.Raw(markSQL).Scan(&plain).Error, "plain read in fn")
				t.Logf("%s: a plain read in fn went to %q", kind, plain)
				return nil
			})
			require.NoError(t, err, "With")
		})
	}
}

// lockHolderMark returns the application_name (PostgreSQL) or default
// database (MySQL) of the session holding name.
func lockHolderMark(t *testing.T, tg *testdb.Target, name string) string {
	t.Helper()
	var mark sql.NullString
	var err error
	if tg.Is(dialects.Postgres) {
		k := advisory.PostgresKey(name)
		err = tg.Plain.Raw(`SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = ? AND l.objid::bigint = ? AND l.objsubid = 1`,
			k>>32, k&0xffffffff).Scan(&mark).Error
	} else {
		err = tg.Plain.Raw("SELECT DB FROM information_schema.PROCESSLIST WHERE ID = IS_USED_LOCK(?)", name).Scan(&mark).Error
	}
	require.NoError(t, err, "holder's mark")
	return mark.String
}

// dsnDB returns the database of a go-sql-driver DSN.
func dsnDB(dsn string) string {
	rest := dsn[strings.LastIndex(dsn, "/")+1:]
	if i := strings.Index(rest, "?"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// A server-wide lock_timeout does not cut an indefinite wait short, and a
// finite Timeout does not leave its lock_timeout on the pooled connection.
func TestPostgresLockTimeoutStaysLocal(t *testing.T) {
	tg := testdb.Get(t, testdb.Postgres)
	strict := testdb.Open(t, testdb.Postgres, func(dsn string) string {
		return withPGParam(dsn, "options", "'-c lock_timeout=100ms'")
	})
	strict.SQL.SetMaxOpenConns(1)
	var lt string
	require.NoError(t, strict.DB.Raw("SHOW lock_timeout").Scan(&lt).Error, "SHOW")
	require.Truef(t, lt == "100ms", "the pool's lock_timeout is %q: the test cannot fail", lt)

	name := lockName(t)
	release := hold(t, tg.DB, name, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := advisory.With(ctx, strict.DB, name, notRun(t))
	require.ErrorIs(t, err, context.DeadlineExceeded, "indefinite wait under a 100ms server lock_timeout")
	require.Truef(t, time.Since(start) >= 550*time.Millisecond, "the indefinite wait ended after %v", time.Since(start))

	require.ErrorIs(t, advisory.With(context.Background(), strict.DB, name, notRun(t), advisory.WaitAtMost(200*time.Millisecond)), advisory.ErrTimeout, "Timeout(200ms)")
	require.NoError(t, strict.DB.Raw("SHOW lock_timeout").Scan(&lt).Error, "SHOW")
	require.Truef(t, lt == "100ms", "the pooled connection kept lock_timeout %q", lt)

	require.NoError(t, release(), "holder")
	require.NoError(t, advisory.With(context.Background(), strict.DB, name, func(conn *gorm.DB) error {
		return conn.Raw("SHOW lock_timeout").Scan(&lt).Error
	}, advisory.WaitAtMost(time.Second)), "With")
	require.Truef(t, lt == "100ms", "fn saw lock_timeout %q", lt)
}

// SQL Server and MySQL through their real dialectors in DryRun mode, with
// no server: recognised, and refused before anything is sent.
func TestDryRunDialectors(t *testing.T) {
	ms := testdb.DryRun(t, "sqlserver")
	require.Truef(t, dialects.Of(ms).Kind == dialects.SQLServer && advisory.Supported(ms), "SQL Server not recognised")
	err := advisory.With(context.Background(), ms, lockName(t), notRun(t))
	require.Truef(t, err != nil && strings.Contains(err.Error(), "DryRun"), "DryRun With: %v", err)
	err = advisory.With(context.Background(), ms, strings.Repeat("x", 256), notRun(t))
	require.Truef(t, err != nil && strings.Contains(err.Error(), "255"), "256-character name on SQL Server: %v", err)
	require.Truef(t, advisory.WithTx(ms, lockName(t)) != nil, "DryRun WithTx")

	my := testdb.DryRun(t, "mysql-8.0.36")
	require.Truef(t, advisory.Supported(my), "MySQL not supported")
	err = advisory.WithTx(my, lockName(t))
	require.ErrorIs(t, err, lockplugin.ErrUnsupported, "WithTx on MySQL")
	require.Truef(t, strings.Contains(err.Error(), "MySQL 8.0.36"), "error does not name the database: %v", err)
}
