package locks

import (
	"errors"
	"strings"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// A want is either the exact SQL or, starting with "error: " or
// "invalid: ", a substring of an error that must match ErrUnsupported or
// ErrInvalidLock.
type renderCase struct {
	name  string
	query func(db *gorm.DB) *gorm.DB
}

func find(lock clause.Expression) func(db *gorm.DB) *gorm.DB {
	return func(db *gorm.DB) *gorm.DB {
		var jobs []lkJob
		return db.Clauses(lock).Where("state = ?", "queued").Find(&jobs)
	}
}

// matrixCells are the columns of the matrix, one query each.
var matrixCells = []renderCase{
	{"FOR UPDATE", find(lockplugin.ForUpdate())},
	{"FOR SHARE", find(lockplugin.ForShare())},
	{"FOR NO KEY UPDATE", find(lockplugin.ForNoKeyUpdate())},
	{"FOR KEY SHARE", find(lockplugin.ForKeyShare())},
	{"FOR UPDATE NOWAIT", find(lockplugin.ForUpdate(lockplugin.NoWait))},
	{"FOR UPDATE SKIP LOCKED", find(lockplugin.ForUpdate(lockplugin.SkipLocked))},
	{"FOR SHARE NOWAIT", find(lockplugin.ForShare(lockplugin.NoWait))},
	{"FOR SHARE SKIP LOCKED", find(lockplugin.ForShare(lockplugin.SkipLocked))},
	{"FOR UPDATE OF", find(lockplugin.ForUpdate(lockplugin.Of("lk_jobs")))},
	{"FOR NO KEY UPDATE OF SKIP LOCKED", find(lockplugin.ForNoKeyUpdate(lockplugin.Of("lk_jobs"), lockplugin.SkipLocked))},
	{"NOWAIT with SKIP LOCKED", find(lockplugin.ForUpdate(lockplugin.NoWait, lockplugin.SkipLocked))},
}

const conflict = "invalid: NOWAIT and SKIP LOCKED cannot be combined"

// matrix is the exact SQL (or error) per database, in matrixCells order.
var matrix = map[string][]string{
	"postgres": {
		`SELECT * FROM "lk_jobs" WHERE state = $1 FOR UPDATE`,
		`SELECT * FROM "lk_jobs" WHERE state = $1 FOR SHARE`,
		`SELECT * FROM "lk_jobs" WHERE state = $1 FOR NO KEY UPDATE`,
		`SELECT * FROM "lk_jobs" WHERE state = $1 FOR KEY SHARE`,
		`SELECT * FROM "lk_jobs" WHERE state = $1 FOR UPDATE NOWAIT`,
		`SELECT * FROM "lk_jobs" WHERE state = $1 FOR UPDATE SKIP LOCKED`,
		`SELECT * FROM "lk_jobs" WHERE state = $1 FOR SHARE NOWAIT`,
		`SELECT * FROM "lk_jobs" WHERE state = $1 FOR SHARE SKIP LOCKED`,
		`SELECT * FROM "lk_jobs" WHERE state = $1 FOR UPDATE OF "lk_jobs"`,
		`SELECT * FROM "lk_jobs" WHERE state = $1 FOR NO KEY UPDATE OF "lk_jobs" SKIP LOCKED`,
		conflict,
	},
	"mysql-8.0.36": {
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR SHARE",
		"error: FOR NO KEY UPDATE is not supported on MySQL 8.0.36",
		"error: FOR KEY SHARE is not supported on MySQL 8.0.36",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE NOWAIT",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE SKIP LOCKED",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR SHARE NOWAIT",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR SHARE SKIP LOCKED",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE OF `lk_jobs`",
		"error: FOR NO KEY UPDATE is not supported on MySQL 8.0.36",
		conflict,
	},
	"mysql-5.7.44": {
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE",
		"SELECT * FROM `lk_jobs` WHERE state = ? LOCK IN SHARE MODE",
		"error: FOR NO KEY UPDATE is not supported on MySQL 5.7.44",
		"error: FOR KEY SHARE is not supported on MySQL 5.7.44",
		"error: NOWAIT is not supported on MySQL 5.7.44 (needs MySQL 8.0.1 or later)",
		"error: SKIP LOCKED is not supported on MySQL 5.7.44 (needs MySQL 8.0.1 or later)",
		"error: NOWAIT is not supported on MySQL 5.7.44 (needs MySQL 8.0.1 or later)",
		"error: SKIP LOCKED is not supported on MySQL 5.7.44 (needs MySQL 8.0.1 or later)",
		// OF naming the query's only table: sent without OF (issue 13).
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE",
		"error: FOR NO KEY UPDATE is not supported on MySQL 5.7.44",
		conflict,
	},
	"mariadb-10.11.6": {
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE",
		"SELECT * FROM `lk_jobs` WHERE state = ? LOCK IN SHARE MODE",
		"error: FOR NO KEY UPDATE is not supported on MariaDB 10.11.6",
		"error: FOR KEY SHARE is not supported on MariaDB 10.11.6",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE NOWAIT",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE SKIP LOCKED",
		"SELECT * FROM `lk_jobs` WHERE state = ? LOCK IN SHARE MODE NOWAIT",
		"SELECT * FROM `lk_jobs` WHERE state = ? LOCK IN SHARE MODE SKIP LOCKED",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE",
		"error: FOR NO KEY UPDATE is not supported on MariaDB 10.11.6",
		conflict,
	},
	"mariadb-10.5.23": {
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE",
		"SELECT * FROM `lk_jobs` WHERE state = ? LOCK IN SHARE MODE",
		"error: FOR NO KEY UPDATE is not supported on MariaDB 10.5.23",
		"error: FOR KEY SHARE is not supported on MariaDB 10.5.23",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE NOWAIT",
		"error: SKIP LOCKED is not supported on MariaDB 10.5.23 (needs MariaDB 10.6.0 or later)",
		"SELECT * FROM `lk_jobs` WHERE state = ? LOCK IN SHARE MODE NOWAIT",
		"error: SKIP LOCKED is not supported on MariaDB 10.5.23 (needs MariaDB 10.6.0 or later)",
		"SELECT * FROM `lk_jobs` WHERE state = ? FOR UPDATE",
		"error: FOR NO KEY UPDATE is not supported on MariaDB 10.5.23",
		conflict,
	},
	"sqlserver": {
		`SELECT * FROM "lk_jobs" WITH (XLOCK, ROWLOCK) WHERE state = @p1`,
		`SELECT * FROM "lk_jobs" WITH (REPEATABLEREAD, ROWLOCK) WHERE state = @p1`,
		"error: FOR NO KEY UPDATE is not supported on SQL Server",
		"error: FOR KEY SHARE is not supported on SQL Server",
		`SELECT * FROM "lk_jobs" WITH (XLOCK, ROWLOCK, NOWAIT) WHERE state = @p1`,
		`SELECT * FROM "lk_jobs" WITH (XLOCK, ROWLOCK, READPAST) WHERE state = @p1`,
		`SELECT * FROM "lk_jobs" WITH (REPEATABLEREAD, ROWLOCK, NOWAIT) WHERE state = @p1`,
		"error: FOR SHARE SKIP LOCKED is not supported on SQL Server (lockplugin does not combine READPAST with the REPEATABLEREAD hint",
		`SELECT * FROM "lk_jobs" WITH (XLOCK, ROWLOCK) WHERE state = @p1`,
		"error: FOR NO KEY UPDATE is not supported on SQL Server",
		conflict,
	},
	"sqlite": {
		"error: FOR UPDATE is not supported on SQLite",
		"error: FOR SHARE is not supported on SQLite",
		"error: FOR NO KEY UPDATE is not supported on SQLite",
		"error: FOR KEY SHARE is not supported on SQLite",
		"error: FOR UPDATE is not supported on SQLite",
		"error: FOR UPDATE is not supported on SQLite",
		"error: FOR SHARE is not supported on SQLite",
		"error: FOR SHARE is not supported on SQLite",
		"error: FOR UPDATE is not supported on SQLite",
		"error: FOR NO KEY UPDATE is not supported on SQLite",
		conflict,
	},
	"oracle": {
		`SELECT * FROM "lk_jobs" WHERE state = :1 FOR UPDATE`,
		"error: FOR SHARE is not supported on Oracle",
		"error: FOR NO KEY UPDATE is not supported on Oracle",
		"error: FOR KEY SHARE is not supported on Oracle",
		`SELECT * FROM "lk_jobs" WHERE state = :1 FOR UPDATE NOWAIT`,
		`SELECT * FROM "lk_jobs" WHERE state = :1 FOR UPDATE SKIP LOCKED`,
		"error: FOR SHARE is not supported on Oracle",
		"error: FOR SHARE is not supported on Oracle",
		`SELECT * FROM "lk_jobs" WHERE state = :1 FOR UPDATE`,
		"error: FOR NO KEY UPDATE is not supported on Oracle",
		conflict,
	},
}

// checkRender runs query on a DryRun db and compares the SQL or the error
// with want.
func checkRender(t *testing.T, db *gorm.DB, query func(*gorm.DB) *gorm.DB, want string) {
	t.Helper()
	tx := query(db.Session(&gorm.Session{}))
	got := tx.Statement.SQL.String()
	sentinel, msg := error(nil), ""
	if m, ok := strings.CutPrefix(want, "error: "); ok {
		sentinel, msg = lockplugin.ErrUnsupported, m
	} else if m, ok := strings.CutPrefix(want, "invalid: "); ok {
		sentinel, msg = lockplugin.ErrInvalidLock, m
	}
	if sentinel != nil {
		if tx.Error == nil {
			t.Fatalf("want an error containing %q, got none and SQL %q", msg, got)
		}
		if !strings.Contains(tx.Error.Error(), msg) {
			t.Fatalf("want an error containing %q, got %v", msg, tx.Error)
		}
		if !errors.Is(tx.Error, sentinel) {
			t.Fatalf("error %v does not match %v", tx.Error, sentinel)
		}
		if strings.Count(tx.Error.Error(), "lockplugin:") != 1 {
			t.Fatalf("want exactly one error, got %v", tx.Error)
		}
		return
	}
	if tx.Error != nil {
		t.Fatalf("want SQL %q, got error %v", want, tx.Error)
	}
	if got != want {
		t.Fatalf("SQL\n got: %s\nwant: %s", got, want)
	}
}

func TestRenderMatrix(t *testing.T) {
	for _, name := range testdb.DryRunNames {
		t.Run(name, func(t *testing.T) {
			db := openDry(t, name)
			want, ok := matrix[name]
			if !ok || len(want) != len(matrixCells) {
				t.Fatalf("matrix row for %s has %d cells, want %d", name, len(want), len(matrixCells))
			}
			for i, cell := range matrixCells {
				t.Run(cell.name, func(t *testing.T) { checkRender(t, db, cell.query, want[i]) })
			}
		})
	}
}

// TestRenderShapes covers the query shapes around the lock: row limits,
// joins, aliases, GORM's own clause.Locking, NoLock, Raw SQL.
func TestRenderShapes(t *testing.T) {
	first := func(lock clause.Expression) func(db *gorm.DB) *gorm.DB {
		return func(db *gorm.DB) *gorm.DB {
			var j lkJob
			return db.Clauses(lock).Where("state = ?", "queued").First(&j)
		}
	}
	joined := func(lock clause.Expression) func(db *gorm.DB) *gorm.DB {
		return func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lock).Joins("Company").Where("state = ?", "queued").Find(&jobs)
		}
	}
	rawJoin := func(lock clause.Expression) func(db *gorm.DB) *gorm.DB {
		return func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lock).Joins("JOIN lk_companies c ON c.id = lk_jobs.company_id").Find(&jobs)
		}
	}
	cases := []struct {
		db, name string
		query    func(*gorm.DB) *gorm.DB
		want     string
	}{
		// Row limits.
		{"postgres", "First", first(lockplugin.ForUpdate()),
			`SELECT * FROM "lk_jobs" WHERE state = $1 ORDER BY "lk_jobs"."id" LIMIT $2 FOR UPDATE`},
		{"mysql-8.0.36", "First", first(lockplugin.ForUpdate(lockplugin.SkipLocked)),
			"SELECT * FROM `lk_jobs` WHERE state = ? ORDER BY `lk_jobs`.`id` LIMIT ? FOR UPDATE SKIP LOCKED"},
		{"sqlserver", "First", first(lockplugin.ForUpdate()),
			`SELECT * FROM "lk_jobs" WITH (XLOCK, ROWLOCK) WHERE state = @p1 ORDER BY "lk_jobs"."id" OFFSET 0 ROW FETCH NEXT 1 ROWS ONLY`},
		{"oracle", "First", first(lockplugin.ForUpdate()),
			"error: FOR UPDATE with a row limit (First, Take, Last, Limit, Offset) is not supported on Oracle (ORA-02014"},
		{"oracle", "Limit", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate(lockplugin.SkipLocked)).Limit(10).Find(&jobs)
		}, "error: ORA-02014"},
		{"oracle", "Offset", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Offset(5).Find(&jobs)
		}, "error: ORA-02014"},
		{"oracle", "Limit(-1) cancels the limit", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Limit(10).Limit(-1).Find(&jobs)
			// GORM keeps an empty LIMIT clause, hence the double space.
		}, `SELECT * FROM "lk_jobs"  FOR UPDATE`},

		// Joins.
		{"postgres", "Joins", joined(lockplugin.ForUpdate(lockplugin.Of("lk_jobs"))),
			`SELECT "lk_jobs"."id","lk_jobs"."state","lk_jobs"."company_id","Company"."id" AS "Company__id","Company"."name" AS "Company__name" FROM "lk_jobs" LEFT JOIN "lk_companies" "Company" ON "lk_jobs"."company_id" = "Company"."id" WHERE state = $1 FOR UPDATE OF "lk_jobs"`},
		{"sqlserver", "Joins", joined(lockplugin.ForUpdate()),
			`SELECT "lk_jobs"."id","lk_jobs"."state","lk_jobs"."company_id","Company"."id" AS "Company__id","Company"."name" AS "Company__name" FROM "lk_jobs" WITH (XLOCK, ROWLOCK) LEFT JOIN "lk_companies" "Company" WITH (XLOCK, ROWLOCK) ON "lk_jobs"."company_id" = "Company"."id" WHERE state = @p1`},
		{"sqlserver", "Joins Of main table", joined(lockplugin.ForUpdate(lockplugin.Of("lk_jobs"), lockplugin.SkipLocked)),
			`SELECT "lk_jobs"."id","lk_jobs"."state","lk_jobs"."company_id","Company"."id" AS "Company__id","Company"."name" AS "Company__name" FROM "lk_jobs" WITH (XLOCK, ROWLOCK, READPAST) LEFT JOIN "lk_companies" "Company" ON "lk_jobs"."company_id" = "Company"."id" WHERE state = @p1`},
		{"sqlserver", "Joins Of alias", joined(lockplugin.ForUpdate(lockplugin.Of("company"))),
			`SELECT "lk_jobs"."id","lk_jobs"."state","lk_jobs"."company_id","Company"."id" AS "Company__id","Company"."name" AS "Company__name" FROM "lk_jobs" LEFT JOIN "lk_companies" "Company" WITH (XLOCK, ROWLOCK) ON "lk_jobs"."company_id" = "Company"."id" WHERE state = @p1`},
		{"sqlserver", "raw JOIN", rawJoin(lockplugin.ForUpdate()),
			"error: FOR UPDATE on a JOIN written as SQL is not supported on SQL Server"},
		{"sqlserver", "raw JOIN with Of", rawJoin(lockplugin.ForUpdate(lockplugin.Of("lk_jobs"))),
			`SELECT "lk_jobs"."id","lk_jobs"."state","lk_jobs"."company_id" FROM "lk_jobs" WITH (XLOCK, ROWLOCK) JOIN lk_companies c ON c.id = lk_jobs.company_id`},
		{"sqlserver", "Of a table not in the query", find(lockplugin.ForUpdate(lockplugin.Of("lk_nothere"))),
			`invalid: Of names "lk_nothere", which the query's FROM and JOINs do not contain`},
		{"sqlserver", "Table with alias", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Table("lk_jobs j").Where("j.state = ?", "queued").Find(&jobs)
		}, `SELECT * FROM lk_jobs j WITH (XLOCK, ROWLOCK) WHERE j.state = @p1`},
		{"sqlserver", "Table with AS alias", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Table("lk_jobs AS j").Find(&jobs)
		}, `SELECT * FROM lk_jobs AS j WITH (XLOCK, ROWLOCK)`},
		{"sqlserver", "Table schema-qualified", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Table("dbo.lk_jobs").Find(&jobs)
		}, `SELECT * FROM "dbo"."lk_jobs" WITH (XLOCK, ROWLOCK)`},
		{"sqlserver", "Table alias then Joins", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Table("lk_jobs j").Joins("Company").Find(&jobs)
		}, `SELECT "j"."id","j"."state","j"."company_id","Company"."id" AS "Company__id","Company"."name" AS "Company__name" FROM lk_jobs j WITH (XLOCK, ROWLOCK) LEFT JOIN "lk_companies" "Company" WITH (XLOCK, ROWLOCK) ON "j"."company_id" = "Company"."id"`},
		{"sqlserver", "InnerJoins", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate(lockplugin.NoWait)).InnerJoins("Company").Find(&jobs)
		}, `SELECT "lk_jobs"."id","lk_jobs"."state","lk_jobs"."company_id","Company"."id" AS "Company__id","Company"."name" AS "Company__name" FROM "lk_jobs" WITH (XLOCK, ROWLOCK, NOWAIT) INNER JOIN "lk_companies" "Company" WITH (XLOCK, ROWLOCK, NOWAIT) ON "lk_jobs"."company_id" = "Company"."id"`},
		{"sqlserver", "Joins with conditions", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Joins("Company", db.Where(&lkCompany{Name: "acme"})).Find(&jobs)
		}, `SELECT "lk_jobs"."id","lk_jobs"."state","lk_jobs"."company_id","Company"."id" AS "Company__id","Company"."name" AS "Company__name" FROM "lk_jobs" WITH (XLOCK, ROWLOCK) LEFT JOIN "lk_companies" "Company" WITH (XLOCK, ROWLOCK) ON "lk_jobs"."company_id" = "Company"."id" AND "Company"."name" = @p1`},
		{"sqlserver", "FROM clause with raw tables", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate(), clause.From{Tables: []clause.Table{{Name: "lk_jobs", Alias: "j", Raw: true}}}).Find(&jobs)
		}, `SELECT * FROM lk_jobs j WITH (XLOCK, ROWLOCK)`},
		// A Table expression naming more than one table would be locked
		// only in part (the hint follows the last one) or be a syntax error.
		{"sqlserver", "Table with a comma list", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Table("lk_jobs j, lk_companies c").Find(&jobs)
		}, `error: FOR UPDATE on a table expression that is not one table is not supported on SQL Server`},
		{"sqlserver", "Table with a JOIN written in it", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Table("lk_jobs j JOIN lk_companies c ON c.id = j.company_id").Find(&jobs)
		}, `error: "lk_jobs j JOIN lk_companies c ON c.id = j.company_id" is not a single table`},
		{"sqlserver", "Table with a literal subquery", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Table("(SELECT * FROM lk_jobs) AS j").Find(&jobs)
		}, `error: FOR UPDATE on a table expression that is not one table is not supported on SQL Server`},
		{"sqlserver", "raw FROM table that is a list", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate(), clause.From{Tables: []clause.Table{{Name: "lk_jobs j, lk_companies", Raw: true}}}).Find(&jobs)
		}, `error: FOR UPDATE on a table expression that is not one table is not supported on SQL Server`},
		{"sqlserver", "Table with a comma list, Of a joined table", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate(lockplugin.Of("c"))).Table("lk_jobs j, lk_companies c").Find(&jobs)
		}, `invalid: Of names "c", which the query's FROM and JOINs do not contain`},
		{"sqlserver", "Table as subquery", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Table("(?) AS j", db.Model(&lkJob{})).Find(&jobs)
		}, "error: FOR UPDATE on a derived table is not supported on SQL Server"},
		{"sqlserver", "Delete with a lock left on the query takes no hints", func(db *gorm.DB) *gorm.DB {
			// READPAST on a DELETE would leave locked rows undeleted; every
			// other database ignores a lock on a write, and so does SQL Server.
			return db.Session(&gorm.Session{SkipDefaultTransaction: true}).Clauses(lockplugin.ForUpdate(lockplugin.SkipLocked)).Where("state = ?", "done").Delete(&lkJob{})
		}, `DELETE FROM "lk_jobs" WHERE state = @p1`},
		{"sqlserver", "Count", func(db *gorm.DB) *gorm.DB {
			var n int64
			return db.Clauses(lockplugin.ForUpdate()).Model(&lkJob{}).Count(&n)
		}, `SELECT count(*) FROM "lk_jobs" WITH (XLOCK, ROWLOCK)`},

		// GORM's own clause.Locking is rendered per database, not dropped.
		{"sqlserver", "clause.Locking", find(clause.Locking{Strength: clause.LockingStrengthUpdate, Options: clause.LockingOptionsSkipLocked}),
			`SELECT * FROM "lk_jobs" WITH (XLOCK, ROWLOCK, READPAST) WHERE state = @p1`},
		{"sqlite", "clause.Locking", find(clause.Locking{Strength: clause.LockingStrengthUpdate}),
			"error: FOR UPDATE is not supported on SQLite"},
		{"mariadb-10.11.6", "clause.Locking", find(clause.Locking{Strength: clause.LockingStrengthShare, Options: clause.LockingOptionsNoWait}),
			"SELECT * FROM `lk_jobs` WHERE state = ? LOCK IN SHARE MODE NOWAIT"},
		{"postgres", "clause.Locking OF", find(clause.Locking{Strength: "NO KEY UPDATE", Table: clause.Table{Name: clause.CurrentTable}}),
			`SELECT * FROM "lk_jobs" WHERE state = $1 FOR NO KEY UPDATE OF "lk_jobs"`},
		{"postgres", "clause.Locking bad strength", find(clause.Locking{Strength: "EXCLUSIVE"}),
			`invalid: clause.Locking strength "EXCLUSIVE"`},

		// Last lock wins; NoLock removes it.
		{"postgres", "second lock replaces the first", func(db *gorm.DB) *gorm.DB {
			return find(lockplugin.ForShare())(db.Clauses(lockplugin.ForUpdate()))
		}, `SELECT * FROM "lk_jobs" WHERE state = $1 FOR SHARE`},
		{"postgres", "NoLock", func(db *gorm.DB) *gorm.DB {
			return find(lockplugin.NoLock())(db.Clauses(lockplugin.ForUpdate()))
		}, `SELECT * FROM "lk_jobs" WHERE state = $1`},
		{"sqlserver", "NoLock", func(db *gorm.DB) *gorm.DB {
			return find(lockplugin.NoLock())(db.Clauses(lockplugin.ForUpdate()))
		}, `SELECT * FROM "lk_jobs" WHERE state = @p1`},
		{"sqlite", "NoLock removes clause.Locking", func(db *gorm.DB) *gorm.DB {
			return find(lockplugin.NoLock())(db.Clauses(clause.Locking{Strength: "UPDATE"}))
		}, "SELECT * FROM `lk_jobs` WHERE state = ?"},

		// What GORM would ignore is refused.
		{"postgres", "Raw", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Raw("SELECT * FROM lk_jobs").Scan(&jobs)
		}, "invalid: FOR UPDATE on Raw or Exec SQL"},
		{"postgres", "Raw Find", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Clauses(lockplugin.ForUpdate()).Raw("SELECT * FROM lk_jobs").Find(&jobs)
		}, "invalid: FOR UPDATE on Raw or Exec SQL"},
		{"postgres", "Exec", func(db *gorm.DB) *gorm.DB {
			return db.Clauses(lockplugin.ForUpdate()).Exec("UPDATE lk_jobs SET state = ?", "x")
		}, "invalid: FOR UPDATE on Raw or Exec SQL"},
		{"postgres", "lock as a value", func(db *gorm.DB) *gorm.DB {
			var jobs []lkJob
			return db.Where("state = ?", "queued").Find(&jobs, lockplugin.ForUpdate())
		}, "invalid: FOR UPDATE is a clause"},

		// Bad input to Of.
		{"postgres", "Of()", find(lockplugin.ForUpdate(lockplugin.Of())), "invalid: Of needs at least one table name"},
		{"postgres", "Of empty", find(lockplugin.ForUpdate(lockplugin.Of(""))), "invalid: empty table name in Of"},
		{"postgres", "Of dotted", find(lockplugin.ForUpdate(lockplugin.Of("public.lk_jobs"))), "invalid: is qualified"},
		{"postgres", "Of control", find(lockplugin.ForUpdate(lockplugin.Of("lk\x00jobs"))), "invalid: control character"},
		{"postgres", "Of too long", find(lockplugin.ForUpdate(lockplugin.Of(strings.Repeat("x", 129)))), "invalid: 129 bytes long"},
		{"postgres", "Of quoting", find(lockplugin.ForUpdate(lockplugin.Of(`lk"jobs`))),
			`SELECT * FROM "lk_jobs" WHERE state = $1 FOR UPDATE OF "lk""jobs"`},
	}
	for _, c := range cases {
		t.Run(c.db+"/"+c.name, func(t *testing.T) {
			checkRender(t, openDry(t, c.db), c.query, c.want)
		})
	}
}

// TestRenderGenerics: the generics API carries the lock like the classic
// one.
func TestRenderGenerics(t *testing.T) {
	for _, c := range []struct{ db, want string }{
		{"postgres", `SELECT * FROM "lk_jobs" WHERE state = $1 LIMIT $2 FOR UPDATE SKIP LOCKED`},
		{"sqlserver", `SELECT * FROM "lk_jobs" WITH (XLOCK, ROWLOCK, READPAST) WHERE state = @p1 ORDER BY "id" OFFSET 0 ROW FETCH NEXT 10 ROWS ONLY`},
	} {
		t.Run(c.db, func(t *testing.T) {
			db := openDry(t, c.db)
			var got string
			if err := db.Callback().Query().After("gorm:query").Register("lk:capture", func(tx *gorm.DB) {
				got = tx.Statement.SQL.String()
			}); err != nil {
				t.Fatal(err)
			}
			_, err := gorm.G[lkJob](db, lockplugin.ForUpdate(lockplugin.SkipLocked)).
				Where("state = ?", "queued").Limit(10).Find(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("SQL\n got: %s\nwant: %s", got, c.want)
			}
		})
	}
}

// TestRenderGenericsJoins: the generics API's association joins take the
// SQL Server hints like Joins; a join of a subquery cannot, and is refused.
func TestRenderGenericsJoins(t *testing.T) {
	db := openDry(t, "sqlserver")
	var got string
	if err := db.Callback().Query().After("gorm:query").Register("lk:capture", func(tx *gorm.DB) {
		got = tx.Statement.SQL.String()
	}); err != nil {
		t.Fatal(err)
	}
	_, err := gorm.G[lkJob](db, lockplugin.ForUpdate()).Joins(clause.InnerJoin.Association("Company"), nil).Find(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := `SELECT "lk_jobs"."id","lk_jobs"."state","lk_jobs"."company_id","Company"."id" AS "Company__id","Company"."name" AS "Company__name" FROM "lk_jobs" WITH (XLOCK, ROWLOCK) INNER JOIN "lk_companies" "Company" WITH (XLOCK, ROWLOCK) ON "lk_jobs"."company_id" = "Company"."id"`
	if got != want {
		t.Fatalf("SQL\n got: %s\nwant: %s", got, want)
	}
	_, err = gorm.G[lkJob](db, lockplugin.ForUpdate()).
		Joins(clause.InnerJoin.AssociationFrom("Company", gorm.G[lkCompany](db)), nil).Find(t.Context())
	if !errors.Is(err, lockplugin.ErrUnsupported) || !strings.Contains(err.Error(), "JOIN written as SQL") {
		t.Fatalf("a join of a subquery: want ErrUnsupported, got %v", err)
	}
}

// TestRenderWithoutPlugin: a lock on a *gorm.DB without lockplugin fails
// instead of being sent unchecked.
func TestRenderWithoutPlugin(t *testing.T) {
	for _, name := range testdb.DryRunNames {
		t.Run(name, func(t *testing.T) {
			db := testdb.DryRunPlain(t, name)
			var jobs []lkJob
			tx := db.Clauses(lockplugin.ForUpdate()).Find(&jobs)
			if !errors.Is(tx.Error, lockplugin.ErrNotRegistered) {
				t.Fatalf("want ErrNotRegistered, got %v (SQL %q)", tx.Error, tx.Statement.SQL.String())
			}
		})
	}
}
