package fence_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/sqlstore"
	"github.com/lockplugin/lockplugin/tests/internal/faultproxy"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// doorRow is the protected row of the door tests: soft delete and a fence.
type doorRow struct {
	ID      uint `gorm:"primaryKey;autoIncrement:false"`
	Balance int64
	Deleted gorm.DeletedAt
	lockplugin.Fence
}

func (doorRow) TableName() string { return "i24f_rows" }

// doorRowBefore is the table as it was before the fence column was added.
type doorRowBefore struct {
	ID      uint `gorm:"primaryKey;autoIncrement:false"`
	Balance int64
	Deleted gorm.DeletedAt
}

func (doorRowBefore) TableName() string { return "i24f_rows" }

// seededRows is how many rows the table had before it had a fence column.
const seededRows = 500

// seedDoors makes i24f_rows a lived-in table: rows written (some of them
// soft-deleted) before the fence column existed, which it then gets.
func seedDoors(t *testing.T, tg *testdb.Target) {
	t.Helper()
	m := tg.DB.Migrator()
	if m.HasTable(&doorRow{}) {
		noErr(t, m.DropTable(&doorRow{}))
	}
	noErr(t, tg.DB.AutoMigrate(&doorRowBefore{}))
	var sb strings.Builder
	sb.WriteString("INSERT INTO i24f_rows (id, balance, deleted) VALUES ")
	vals := make([]any, 0, seededRows)
	for i := 1; i <= seededRows; i++ {
		if i > 1 {
			sb.WriteString(", ")
		}
		if i%10 == 0 {
			sb.WriteString("(?, 7, ?)")
			vals = append(vals, i, time.Now().Add(-time.Hour))
		} else {
			fmt.Fprintf(&sb, "(%d, 7, NULL)", i)
		}
	}
	noErr(t, tg.DB.Exec(sb.String(), vals...).Error, "seeding")
	noErr(t, tg.DB.AutoMigrate(&doorRow{}), "adding the fence column")
}

// sentKey marks a context whose statement signals, through the hook
// holderPath installs, that it passed every lockplugin check and is about
// to be sent: the moment the attack pauses the holder.
type sentKey struct{}

type sentSignal struct {
	once sync.Once
	ch   chan struct{}
}

func (s *sentSignal) fire() { s.once.Do(func() { close(s.ch) }) }

// holder is A's path to the database: on PostgreSQL and MariaDB a pool of
// its own through the fault proxy, whose partition holds A's statements
// after lockplugin checked A's lease and before they reach the server;
// on SQLite, which has no wire, the shared pool (A's writes are sent after
// the takeover, with a holder that shows only its fence, as if its lease
// check had come just before the pause).
type holder struct {
	db    *gorm.DB
	proxy *faultproxy.Proxy
}

func holderPath(t *testing.T, tg *testdb.Target) holder {
	t.Helper()
	if tg.Is(dialects.SQLite) {
		return holder{db: tg.DB}
	}
	var target string
	var edit func(string) string
	switch {
	case tg.Is(dialects.Postgres):
		target, edit = pgViaProxy(t, tg.DSN)
	default:
		re := regexp.MustCompile(`tcp\(([^)]*)\)`)
		m := re.FindStringSubmatch(tg.DSN)
		want(t, m != nil, "no tcp(...) address in the MySQL DSN")
		target = m[1]
		edit = func(addr string) string { return re.ReplaceAllString(tg.DSN, "tcp("+addr+")") }
	}
	p := faultproxy.Start(t, target)
	own := testdb.Open(t, tg.Kind(), func(string) string { return edit(p.Addr()) })
	db := own.DB.Session(&gorm.Session{SkipDefaultTransaction: true})
	fire := func(db *gorm.DB) {
		if s, ok := db.Statement.Context.Value(sentKey{}).(*sentSignal); ok && db.Error == nil {
			s.fire()
		}
	}
	cb := own.DB.Callback()
	noErr(t, cb.Update().After("lockplugin:fence_guard").Before("gorm:update").Register("i24f:sent", fire))
	noErr(t, cb.Delete().After("lockplugin:fence_guard").Before("gorm:delete").Register("i24f:sent", fire))
	noErr(t, cb.Create().After("lockplugin:fence_create").Before("gorm:create").Register("i24f:sent", fire))
	noErr(t, cb.Row().After("lockplugin:fence_raw_read").Before("gorm:row").Register("i24f:sent", fire))
	noErr(t, cb.Query().After("lockplugin:fence_raw_read").Before("gorm:query").Register("i24f:sent", fire))
	return holder{db: db, proxy: p}
}

// pgViaProxy returns the PostgreSQL server's address in dsn (key=value or
// URL form) and an editor pointing dsn at another address.
func pgViaProxy(t *testing.T, dsn string) (string, func(string) string) {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		noErr(t, err)
		target := u.Host
		if u.Port() == "" {
			target = net.JoinHostPort(u.Hostname(), "5432")
		}
		return target, func(addr string) string { v := *u; v.Host = addr; return v.String() }
	}
	host, port := "127.0.0.1", "5432"
	var rest []string
	for _, kv := range strings.Fields(dsn) {
		switch {
		case strings.HasPrefix(kv, "host="):
			host = strings.TrimPrefix(kv, "host=")
		case strings.HasPrefix(kv, "port="):
			port = strings.TrimPrefix(kv, "port=")
		default:
			rest = append(rest, kv)
		}
	}
	return net.JoinHostPort(host, port), func(addr string) string {
		h, p, _ := net.SplitHostPort(addr)
		return strings.Join(append(rest, "host="+h, "port="+p), " ")
	}
}

// doorShape is one stale write: what the successor did to the row first,
// and the write the paused holder then sends.
type doorShape struct {
	name      string
	successor func(b *gorm.DB, id uint) error
	stale     func(a *gorm.DB, tg *testdb.Target, row doorRow) error
	landed    func(got *doorRow) bool // got is nil when the row is gone
	// want is the error a fenced stale write must return on tg (nil: it
	// lands, a door the README documents).
	want func(tg *testdb.Target) error
}

const staleBalance = 150

func softDelete(b *gorm.DB, id uint) error { return b.Delete(&doorRow{ID: id}).Error }

func doorShapes() []doorShape {
	balanceIs := func(got *doorRow) bool { return got != nil && got.Balance == staleBalance }
	stale := func(*testdb.Target) error { return lockplugin.ErrStaleFence }
	upsertErr := func(tg *testdb.Target) error {
		if tg.Is(dialects.Postgres, dialects.SQLite) {
			return lockplugin.ErrStaleFence
		}
		return lockplugin.ErrUnsupported
	}
	upsert := func(a *gorm.DB, _ *testdb.Target, row doorRow) error {
		return a.Clauses(clause.OnConflict{UpdateAll: true}).Create(&doorRow{ID: row.ID, Balance: staleBalance}).Error
	}
	rawUpdate := func(cte bool) func(a *gorm.DB, tg *testdb.Target, row doorRow) error {
		return func(a *gorm.DB, tg *testdb.Target, row doorRow) error {
			var q string
			switch {
			case tg.Is(dialects.MariaDB, dialects.MySQL) && cte:
				// MariaDB has no writing CTE: a comment leads instead.
				q = "-- a note\n/* and another */ UPDATE i24f_rows SET balance = ? WHERE id = ?"
			case tg.Is(dialects.MariaDB, dialects.MySQL):
				q = "UPDATE i24f_rows SET balance = ? WHERE id = ?" // no UPDATE ... RETURNING there
			case tg.Is(dialects.Postgres) && cte:
				q = "WITH u AS (UPDATE i24f_rows SET balance = ? WHERE id = ? RETURNING balance) SELECT balance FROM u"
			case cte: // SQLite: a CTE leading an UPDATE
				q = "WITH v(x) AS (SELECT ?) UPDATE i24f_rows SET balance = (SELECT x FROM v) WHERE id = ? RETURNING balance"
			default:
				q = "UPDATE i24f_rows SET balance = ? WHERE id = ? RETURNING balance"
			}
			var out []int64
			return a.Raw(q, staleBalance, row.ID).Scan(&out).Error
		}
	}
	successorWrites := func(b *gorm.DB, id uint) error {
		return b.Model(&doorRow{ID: id}).Update("balance", 200).Error
	}
	return []doorShape{
		{"soft delete, then Unscoped Updates", softDelete,
			func(a *gorm.DB, _ *testdb.Target, row doorRow) error {
				return a.Unscoped().Model(&doorRow{ID: row.ID}).Updates(map[string]any{"balance": staleBalance}).Error
			}, balanceIs, stale},
		{"soft delete, then Unscoped Save", softDelete,
			func(a *gorm.DB, _ *testdb.Target, row doorRow) error {
				row.Balance = staleBalance
				return a.Unscoped().Save(&row).Error
			}, balanceIs, stale},
		{"soft delete, then Unscoped Delete", softDelete,
			func(a *gorm.DB, _ *testdb.Target, row doorRow) error {
				return a.Unscoped().Delete(&doorRow{ID: row.ID}).Error
			}, func(got *doorRow) bool { return got == nil }, stale},
		{"soft delete, then upsert", softDelete, upsert, balanceIs, upsertErr},
		{"hard delete, then upsert",
			func(b *gorm.DB, id uint) error { return b.Unscoped().Delete(&doorRow{ID: id}).Error },
			upsert, balanceIs,
			func(tg *testdb.Target) error {
				if tg.Is(dialects.Postgres, dialects.SQLite) {
					return nil // the documented door: nothing left to compare
				}
				return lockplugin.ErrUnsupported
			}},
		{"writing Raw", successorWrites, rawUpdate(false), balanceIs,
			func(*testdb.Target) error { return lockplugin.ErrUnguarded }},
		{"writing Raw, CTE or comment first", successorWrites, rawUpdate(true), balanceIs,
			func(*testdb.Target) error { return lockplugin.ErrUnguarded }},
	}
}

// TestI24FencedDoors: holder A (a real table-store lease) loads rows and
// sends a stale write; on PostgreSQL and MariaDB the fault proxy holds it
// after lockplugin checked A's lease and before it reaches the server.
// Meanwhile A's lease expires, B takes it over (greater fence) and
// soft-deletes, hard-deletes or writes the row; then the write arrives.
// Unfenced (the baseline), every shape lands; fenced, none does, but the
// upsert of a row B hard-deleted, on PostgreSQL and SQLite: the documented
// door (a hard delete leaves no fence; the soft-deleted tombstone does, and
// the same upsert over it is refused). Rounds repeated, landings counted,
// on a table whose rows predate its fence column.
func TestI24FencedDoors(t *testing.T) {
	const rounds = 3
	const ttl = time.Second
	ctx := context.Background()
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if refusedOnTiDB(t, tg) {
			return
		}
		if tg.Is(dialects.SQLServer) {
			t.Skip("the door shapes use RETURNING and the table-store lease, not run on SQL Server here")
		}
		seedDoors(t, tg)
		store, err := sqlstore.New(tg.DB, sqlstore.Table(leaseTable))
		noErr(t, err)
		m := lease.NewManager(store)
		a0 := holderPath(t, tg)
		sc := storeCase{name: "table", store: store, ttl: true}
		shapes := doorShapes()
		landed := make([][2]int, len(shapes)) // [shape][baseline, fenced]
		dbGuarded := 0                        // fenced stale writes the database itself refused
		for r := range rounds {
			name := testdb.Unique(t, "i24f_door") + fmt.Sprint(r)
			a, err := m.Acquire(ctx, name, lease.TTL(ttl))
			noErr(t, err)
			aFenced := tg.DB.WithContext(lockplugin.WithFence(ctx, a))
			// Two rows per shape, written by A under its lease: one for the
			// unfenced baseline, one for the fenced write.
			rows := make([][2]doorRow, len(shapes))
			for i := range shapes {
				for mode := range 2 {
					row := doorRow{ID: uint(100000 + r*100 + i*2 + mode), Balance: 100}
					noErr(t, aFenced.Create(&row).Error)
					want(t, int64(row.Fence) == a.Fence(), "A's insert set fence %d, want %d", row.Fence, a.Fence())
					rows[i][mode] = row
				}
			}
			type result struct {
				shape, mode int
				err         error
			}
			results := make(chan result, 2*len(shapes))
			send := func(i, mode int, db *gorm.DB) {
				results <- result{i, mode, shapes[i].stale(db, tg, rows[i][mode])}
			}
			var b *lease.Lease
			if a0.proxy != nil {
				// A's writes pass lockplugin's checks (A still holds its
				// lease) and are held in the partition.
				a0.proxy.Blackhole(true)
				for i := range shapes {
					for mode := range 2 {
						s := &sentSignal{ch: make(chan struct{})}
						c := context.WithValue(ctx, sentKey{}, s)
						if mode == 1 {
							c = lockplugin.WithFence(c, a)
						}
						done := make(chan struct{})
						go func() { defer close(done); send(i, mode, a0.db.WithContext(c)) }()
						select {
						case <-s.ch: // held in the partition
						case <-done: // refused before any SQL
						}
					}
				}
				want(t, a.Context().Err() == nil, "A's lease ended before its writes were sent: the machine is too slow for a %v TTL", ttl)
			}
			b = takeover(t, sc, m, a, ttl)
			bDB := tg.DB.WithContext(lockplugin.WithFence(ctx, b))
			for i, s := range shapes {
				for mode := range 2 {
					noErr(t, s.successor(bDB, rows[i][mode].ID), s.name+": the successor")
				}
			}
			// A soft delete writes its fence: the tombstone keeps it.
			var tomb doorRow
			noErr(t, tg.DB.Unscoped().First(&tomb, rows[0][1].ID).Error)
			want(t, tomb.Deleted.Valid && int64(tomb.Fence) == b.Fence(), "soft-deleted row %+v, want deleted with fence %d", tomb, b.Fence())
			if a0.proxy != nil {
				a0.proxy.Blackhole(false) // the writes arrive
			} else {
				for i := range shapes {
					send(i, 0, tg.DB)
					send(i, 1, tg.DB.WithContext(lockplugin.WithFence(ctx, fenceOnly{a})))
				}
			}
			for range 2 * len(shapes) {
				res := <-results
				s := shapes[res.shape]
				var wantErr error
				if res.mode == 1 {
					wantErr = s.want(tg)
				}
				switch {
				case wantErr == nil && res.err != nil:
					t.Fatalf("%s (mode %d): %v", s.name, res.mode, res.err)
				case wantErr != nil && !errors.Is(res.err, wantErr):
					t.Fatalf("%s, fenced: error %v, want %v", s.name, res.err, wantErr)
				}
				if res.mode == 1 && errors.Is(res.err, lockplugin.ErrStaleFence) {
					dbGuarded++
				}
			}
			for i, s := range shapes {
				for mode := range 2 {
					var got doorRow
					err := tg.DB.Unscoped().First(&got, rows[i][mode].ID).Error
					var p *doorRow
					if err == nil {
						p = &got
					} else if !errors.Is(err, gorm.ErrRecordNotFound) {
						noErr(t, err)
					}
					if s.landed(p) {
						landed[i][mode]++
					}
				}
			}
			noErr(t, b.Release(ctx))
		}

		// The lived-in rows: a fenced write of a row from before the fence
		// column (its fence NULL) lands, and takes the fence.
		l, err := m.Acquire(ctx, testdb.Unique(t, "i24f_old"), lease.TTL(10*time.Second))
		noErr(t, err)
		lDB := tg.DB.WithContext(lockplugin.WithFence(ctx, l))
		noErr(t, lDB.Model(&doorRow{ID: 1}).Update("balance", 8).Error)
		var old doorRow
		noErr(t, tg.DB.First(&old, 1).Error)
		want(t, old.Balance == 8 && int64(old.Fence) == l.Fence(), "pre-fence row after a fenced update: %+v", old)
		noErr(t, l.Release(ctx))
		var n int64
		noErr(t, tg.DB.Unscoped().Model(&doorRow{}).Where("id <= ?", seededRows).Count(&n).Error)
		want(t, n == seededRows, "the seeded rows: %d of %d left", n, seededRows)

		for i, s := range shapes {
			base, fenced := landed[i][0], landed[i][1]
			t.Logf("%s: %s: unfenced %d of %d landed, fenced %d of %d", tg.Name, s.name, base, rounds, fenced, rounds)
			want(t, base == rounds, "%s: the unfenced baseline must land every time (%d of %d)", s.name, base, rounds)
			if s.want(tg) == nil {
				want(t, fenced == rounds, "%s: the documented door must be what the README says (%d of %d landed)", s.name, fenced, rounds)
			} else {
				want(t, fenced == 0, "%s: %d of %d fenced stale writes landed", s.name, fenced, rounds)
			}
		}
		t.Logf("%s: %d fenced stale writes refused by the database's fence comparison over %d rounds", tg.Name, dbGuarded, rounds)
	})
}

// TestI24FencedStatementKinds: every other statement a fenced context can
// send is guarded or refused before any SQL. Raw reads pass (a locking
// read among them); db.Exec, a writing db.Raw (through Scan, Row, Rows
// and Find), a Table() write without a model and INSERT OR REPLACE are
// refused with ErrUnguarded and write nothing; a Table() write with a
// model is guarded; an upsert naming its own DO UPDATE columns writes the
// fence too on PostgreSQL and SQLite, so that an older holder's upsert
// after it is refused.
func TestI24FencedStatementKinds(t *testing.T) {
	ctx := context.Background()
	old, cur := token(5), token(9)
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if refusedOnTiDB(t, tg) {
			return
		}
		tg.Reset(t, &doorRow{})
		oldDB := tg.DB.WithContext(lockplugin.WithFence(ctx, old))
		curDB := tg.DB.WithContext(lockplugin.WithFence(ctx, cur))
		noErr(t, oldDB.Create(&doorRow{ID: 1, Balance: 10}).Error)
		noErr(t, curDB.Create(&doorRow{ID: 2, Balance: 20}).Error)

		// Reads pass.
		var bal []int64
		noErr(t, curDB.Raw("/* read */ SELECT balance FROM i24f_rows WHERE id = ?", 1).Scan(&bal).Error)
		want(t, len(bal) == 1 && bal[0] == 10, "raw read: %v", bal)
		if tg.Is(dialects.Postgres, dialects.MySQL, dialects.MariaDB) {
			noErr(t, curDB.Transaction(func(tx *gorm.DB) error {
				return tx.Raw("SELECT balance FROM i24f_rows WHERE id = ? FOR UPDATE", 1).Scan(&bal).Error
			}))
		}
		rows, err := curDB.Raw("WITH r AS (SELECT id FROM i24f_rows) SELECT count(*) FROM r").Rows()
		noErr(t, err)
		noErr(t, rows.Close())

		// Refused before any SQL.
		refused := 0
		for what, err := range map[string]error{
			"Exec":              oldDB.Exec("UPDATE i24f_rows SET balance = 0 WHERE id = 2").Error,
			"Raw Scan":          oldDB.Raw("DELETE FROM i24f_rows WHERE id = ?", 2).Scan(&bal).Error,
			"Raw Find":          oldDB.Raw(" update i24f_rows set balance = 0 where id = ?", 2).Find(&bal).Error,
			"Raw Row":           oldDB.Raw("INSERT INTO i24f_rows (id, balance) VALUES (3, 0)").Row().Err(),
			"Raw, clause":       tg.DB.Clauses(lockplugin.Fenced(old)).Raw("REPLACE INTO i24f_rows (id, balance) VALUES (2, 0)").Scan(&bal).Error,
			"Raw, statements":   oldDB.Raw("SELECT 1; DELETE FROM i24f_rows").Scan(&bal).Error,
			"Table Update":      oldDB.Table("i24f_rows").Where("id = ?", 2).Update("balance", 0).Error,
			"Table Create":      oldDB.Table("i24f_rows").Create(map[string]any{"id": 3, "balance": 0}).Error,
			"INSERT OR REPLACE": oldDB.Clauses(clause.Insert{Modifier: "OR REPLACE"}).Create(&doorRow{ID: 2, Balance: 0}).Error,
		} {
			want(t, errors.Is(err, lockplugin.ErrUnguarded), "%s under a fence: %v, want ErrUnguarded", what, err)
			refused++
		}
		if rows, err := oldDB.Raw("DELETE FROM i24f_rows WHERE id = 2").Rows(); err == nil {
			_ = rows.Close()
			t.Fatal("Raw Rows of a DELETE under a fence was sent")
		} else {
			isErr(t, err, lockplugin.ErrUnguarded)
			refused++
		}
		var got doorRow
		noErr(t, tg.DB.First(&got, 2).Error)
		want(t, got.Balance == 20 && got.Fence == 9, "a refused statement wrote: %+v", got)
		var n int64
		noErr(t, tg.DB.Unscoped().Model(&doorRow{}).Count(&n).Error)
		want(t, n == 2, "%d rows, want 2", n)

		// Table() with a model is guarded.
		isErr(t, oldDB.Table("i24f_rows").Model(&doorRow{}).Where("id = ?", 2).Update("balance", 0).Error, lockplugin.ErrStaleFence)

		// An upsert naming its DO UPDATE columns writes the fence.
		up := func(db *gorm.DB, balance int64) error {
			return db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"balance"})}).
				Create(&doorRow{ID: 1, Balance: balance}).Error
		}
		if tg.Is(dialects.Postgres, dialects.SQLite) {
			noErr(t, up(curDB, 11))
			got = doorRow{}
			noErr(t, tg.DB.First(&got, 1).Error)
			want(t, got.Balance == 11 && got.Fence == 9, "after the successor's upsert: %+v, want fence 9", got)
			isErr(t, up(oldDB, 12), lockplugin.ErrStaleFence)
			got = doorRow{}
			noErr(t, tg.DB.First(&got, 1).Error)
			want(t, got.Balance == 11, "a stale upsert landed: %+v", got)
		} else {
			err := up(curDB, 11)
			isErr(t, err, lockplugin.ErrUnsupported)
			reason := "MERGE"
			if tg.Dialect.IsMySQLFamily() {
				reason = "ON DUPLICATE KEY UPDATE"
			}
			want(t, strings.Contains(err.Error(), reason), "refusal on %s: %v", tg.Name, err)
		}
		t.Logf("%s: %d statement kinds refused before any SQL, reads passed, Table() with a model and named-column upserts guarded", tg.Name, refused)
	})
}

// TestI24FencedUpsertSQL: the upsert a fenced context sends, or the reason
// it is refused, per database (no server): PostgreSQL and SQLite compare
// the fence on the update branch and write it; the MySQL family is refused
// for its ON DUPLICATE KEY UPDATE, SQL Server and Oracle for GORM's MERGE,
// each error naming the database.
func TestI24FencedUpsertSQL(t *testing.T) {
	ctx := context.Background()
	for _, name := range testdb.DryRunNames {
		t.Run(name, func(t *testing.T) {
			db := testdb.DryRun(t, name).WithContext(lockplugin.WithFence(ctx, token(7)))
			res := db.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"balance"})}).
				Create(&account{ID: 1, Balance: 2})
			switch {
			case strings.HasPrefix(name, "postgres"), strings.HasPrefix(name, "sqlite"):
				noErr(t, res.Error)
				sql := res.Statement.SQL.String()
				want(t, strings.Contains(sql, "excluded") && strings.Count(sql, "fence") >= 4 && strings.Contains(sql, "COALESCE"), "upsert: %s", sql)
				t.Logf("%s: %s", name, sql)
			default:
				isErr(t, res.Error, lockplugin.ErrUnsupported)
				msg := res.Error.Error()
				mysql := strings.HasPrefix(name, "mysql") || strings.HasPrefix(name, "mariadb")
				want(t, mysql == strings.Contains(msg, "ON DUPLICATE KEY UPDATE"), "%s: %s", name, msg)
				want(t, mysql != strings.Contains(msg, "MERGE"), "%s: %s", name, msg)
				d := dialects.Of(testdb.DryRun(t, name))
				want(t, strings.Contains(msg, d.String()), "%s: the error does not name %s: %s", name, d, msg)
				t.Logf("%s: %s", name, msg)
			}
		})
	}
}

// softVersioned has soft delete, a version and a fence.
type softVersioned struct {
	ID      uint `gorm:"primaryKey"`
	Balance int64
	Deleted gorm.DeletedAt
	lockplugin.Version
	lockplugin.Fence
}

func (softVersioned) TableName() string { return "i24f_soft_versioned" }

// TestI24SoftDeleteVersionAndFence: on a model with both guards, a fenced
// soft delete bumps the version and writes the fence in its one UPDATE,
// and an older holder's Unscoped Save of the row it loaded before is
// refused as a stale fence.
func TestI24SoftDeleteVersionAndFence(t *testing.T) {
	ctx := context.Background()
	old, cur := token(5), token(9)
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		if refusedOnTiDB(t, tg) {
			return
		}
		tg.Reset(t, &softVersioned{})
		oldDB := tg.DB.WithContext(lockplugin.WithFence(ctx, old))
		curDB := tg.DB.WithContext(lockplugin.WithFence(ctx, cur))
		row := softVersioned{Balance: 1}
		noErr(t, oldDB.Create(&row).Error)
		loaded := row
		var mine softVersioned
		noErr(t, tg.DB.First(&mine, row.ID).Error)
		noErr(t, curDB.Delete(&mine).Error)
		var got softVersioned
		noErr(t, tg.DB.Unscoped().First(&got, row.ID).Error)
		want(t, got.Deleted.Valid && got.Fence == 9 && got.Version == loaded.Version+1, "after the fenced soft delete: %+v (loaded %+v)", got, loaded)
		loaded.Balance = 2
		isErr(t, oldDB.Unscoped().Save(&loaded).Error, lockplugin.ErrStaleFence)
		got = softVersioned{}
		noErr(t, tg.DB.Unscoped().First(&got, row.ID).Error)
		want(t, got.Deleted.Valid && got.Balance == 1, "a stale Save undeleted or overwrote the row: %+v", got)
	})
}
