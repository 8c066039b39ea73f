package version_test

// Issue 11: the savepoints behind guarded multi-row writes inside a
// caller's transaction are released after use.

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sqlLog is a GORM logger that keeps the statements sent.
type sqlLog struct {
	mu   sync.Mutex
	sqls []string
}

func (l *sqlLog) LogMode(logger.LogLevel) logger.Interface      { return l }
func (l *sqlLog) Info(context.Context, string, ...interface{})  {}
func (l *sqlLog) Warn(context.Context, string, ...interface{})  {}
func (l *sqlLog) Error(context.Context, string, ...interface{}) {}
func (l *sqlLog) Trace(_ context.Context, _ time.Time, fc func() (string, int64), _ error) {
	s, _ := fc()
	l.mu.Lock()
	l.sqls = append(l.sqls, s)
	l.mu.Unlock()
}

func (l *sqlLog) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.sqls {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// Every savepoint a guarded batch (a multi-row Update, a slice Save)
// opens inside the caller's transaction is released, after success and
// after a conflict, and the transaction goes on.
func TestBatchSavepointsAreReleased(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		log := &sqlLog{}
		db := tg.DB.WithContext(ctxOf(t)).Session(&gorm.Session{Logger: log})
		tg.Reset(t, &ShapeBook{})
		books := []ShapeBook{{Title: "a"}, {Title: "b"}}
		require.NoError(t, db.Create(&books).Error)

		const n = 100
		err := db.Transaction(func(tx *gorm.DB) error {
			for i := 0; i < n; i++ {
				if err := tx.Model(&books).Update("pages", i).Error; err != nil {
					return err
				}
			}
			stale := []ShapeBook{books[0], books[1]}
			stale[1].Version--
			requireStale(t, tx.Model(&stale).Update("pages", -1).Error, "update", books[1].Version-1, books[1].Version, false)
			return tx.Save(&books).Error
		})
		require.NoError(t, err, "the transaction goes on after the released savepoints")
		opened := log.count("SAVEPOINT lockplugin_version_")
		released := log.count("RELEASE SAVEPOINT lockplugin_version_")
		locked := log.count(`SELECT "id" FROM "i11_books" WHERE`)
		t.Logf("%s: %d savepoints opened, %d released, %d batches locked first", tg.Name, opened, released, locked)
		if tg.Is(dialects.Postgres) {
			// No subtransaction for a batch: its rows are locked first.
			assert.EqualValues(t, n+1, locked, "%d Updates and the conflict lock their rows first", n)
			assert.EqualValues(t, 1, opened, "the slice Save's savepoint")
		} else {
			assert.EqualValues(t, n+2, opened, "one per batch: %d Updates, the conflict, the slice Save", n)
		}
		if tg.Is(dialects.SQLServer) {
			assert.Zero(t, released, "SQL Server has no RELEASE")
		} else {
			assert.EqualValues(t, opened, released, "every savepoint released")
		}
		assert.EqualValues(t, n+2, load[ShapeBook](t, db, books[0].ID).Version)
	})
}

// BenchmarkBatchSavepoints: the 1st and the 100th guarded two-row Update in
// one PostgreSQL transaction; as the baseline in the same run, the same
// writes behind GORM's nested Transaction, which never releases its
// savepoints; and, as the control, the plain two-row UPDATE without any
// savepoint, which shows what the 100th update of the same rows in one
// transaction costs by itself (PostgreSQL walks the rows' earlier versions
// of this transaction). Each op is one transaction; only the measured
// write is timed.
func BenchmarkBatchSavepoints(b *testing.B) {
	tg := testdb.Get(b, testdb.Postgres)
	tg.Reset(b, &ShapeBook{})
	books := []ShapeBook{{Title: "a"}, {Title: "b"}}
	if err := tg.DB.Create(&books).Error; err != nil {
		b.Fatal(err)
	}
	for _, nth := range []int{1, 100} {
		for _, how := range []string{"lockplugin", "baseline=gorm-nested-transaction", "control=no-savepoint"} {
			b.Run(how+"/write="+map[int]string{1: "1st", 100: "100th"}[nth], func(b *testing.B) {
				write := func(tx *gorm.DB, i int) error {
					switch how {
					case "lockplugin":
						return tx.Model(&books).Update("pages", i).Error
					case "control=no-savepoint":
						return tx.Exec("UPDATE i11_books SET pages = ?, version = version + 1 WHERE id IN (?, ?)", i, books[0].ID, books[1].ID).Error
					}
					return tx.Transaction(func(sp *gorm.DB) error {
						for j := range books {
							if err := sp.Model(&PlainShape{}).Where("id = ?", books[j].ID).Update("pages", i).Error; err != nil {
								return err
							}
						}
						return nil
					})
				}
				b.StopTimer()
				for i := 0; i < b.N; i++ {
					tx := tg.DB.Begin()
					for k := 1; k < nth; k++ {
						if err := write(tx, k); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					err := write(tx, nth)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					tx.Rollback()
					books[0].Version, books[1].Version = 1, 1
				}
			})
		}
	}
}

// PlainShape is i11_books without the version, for the baseline's plain
// GORM writes.
type PlainShape struct {
	ID    uint
	Title string
	Pages int
}

func (PlainShape) TableName() string { return "i11_books" }

// Writers in their own transactions, behind a barrier, each read two rows
// and write both with one guarded multi-row Update (on PostgreSQL: rows
// locked first, no savepoint; elsewhere: behind a savepoint). Exactly one
// writer per round wins, and no loser leaves half a write: both rows
// always carry the same count. Without the plugin the increments are lost.
func TestConcurrentBatchInTransactions(t *testing.T) {
	const writers, rounds = 5, 8
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		ctx := ctxOf(t)
		db := tg.DB.WithContext(ctx)
		tg.Reset(t, &ShapeBook{})
		seed := []ShapeBook{{Title: "x"}, {Title: "y"}}
		require.NoError(t, db.Create(&seed).Error)
		ids := []uint{seed[0].ID, seed[1].ID}

		run := func(write func(tx *gorm.DB) error) (acked int) {
			for r := 0; r < rounds; r++ {
				var wg sync.WaitGroup
				var mu sync.Mutex
				start := make(chan struct{})
				for w := 0; w < writers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						if err := db.Transaction(write); err == nil {
							mu.Lock()
							acked++
							mu.Unlock()
						}
					}()
				}
				close(start)
				wg.Wait()
			}
			return acked
		}
		rows := func() (a, b ShapeBook) { return load[ShapeBook](t, db, ids[0]), load[ShapeBook](t, db, ids[1]) }

		acked := run(func(tx *gorm.DB) error {
			var got []PlainShape
			if err := tx.Order("id").Find(&got, ids).Error; err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // let the others read too
			return tx.Model(&PlainShape{}).Where("id IN ?", ids).Update("pages", got[0].Pages+1).Error
		})
		a, _ := rows()
		t.Logf("%s without the plugin: %d acknowledged, %d in the rows, %d lost", tg.Name, acked, a.Pages, acked-a.Pages)
		if !tg.Is(dialects.SQLite) { // SQLite's immediate transactions serialise the writers
			assert.Positive(t, acked-a.Pages, "the unprotected batch must lose updates, or this proves nothing")
		}

		require.NoError(t, db.Model(&ShapeBook{}).Where("id IN ?", ids).UpdateColumn("pages", 0).Error)
		acked = run(func(tx *gorm.DB) error {
			var got []ShapeBook
			if err := tx.Order("id").Find(&got, ids).Error; err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
			return tx.Model(&got).Update("pages", got[0].Pages+1).Error
		})
		a, b := rows()
		t.Logf("%s with the plugin: %d acknowledged, rows at %d and %d, %d lost", tg.Name, acked, a.Pages, b.Pages, acked-a.Pages)
		assert.EqualValues(t, acked, a.Pages, "every acknowledged batch is in the rows")
		assert.EqualValues(t, a.Pages, b.Pages, "no half-written batch")
		assert.EqualValues(t, a.Version, b.Version)
	})
}
