package version_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// BenchBook is the versioned model of BenchmarkSave.
type BenchBook struct {
	ID    uint
	Title string
	Pages int
	lockplugin.Version
}

func (BenchBook) TableName() string { return "ver_bench_books" }

// PlainBenchBook has the same columns with a plain int64 version, for plain
// GORM.
type PlainBenchBook struct {
	ID      uint
	Title   string
	Pages   int
	Version int64
}

func (PlainBenchBook) TableName() string { return "ver_bench_plain_books" }

// stmtCounter is a GORM logger that counts the statements sent.
type stmtCounter struct{ n atomic.Int64 }

func (c *stmtCounter) LogMode(logger.LogLevel) logger.Interface      { return c }
func (c *stmtCounter) Info(context.Context, string, ...interface{})  {}
func (c *stmtCounter) Warn(context.Context, string, ...interface{})  {}
func (c *stmtCounter) Error(context.Context, string, ...interface{}) {}
func (c *stmtCounter) Trace(context.Context, time.Time, func() (string, int64), error) {
	c.n.Add(1)
}

var benchTitles = [...]string{"alpha", "beta"}

// warmUp saves both models a few hundred times first, so that the leaf that
// runs first does not pay for a cold connection pool, cache and WAL alone.
func warmUp(b *testing.B, tg *testdb.Target) {
	b.Helper()
	v := BenchBook{Title: "warm"}
	p := PlainBenchBook{Title: "warm", Version: 1}
	if err := tg.DB.Create(&v).Error; err != nil {
		b.Fatal(err)
	}
	if err := tg.Plain.Create(&p).Error; err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		v.Pages, p.Pages = i, i
		p.Version++
		if err := tg.DB.Save(&v).Error; err != nil {
			b.Fatal(err)
		}
		if err := tg.Plain.Save(&p).Error; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSave: a guarded Save of a loaded model against plain GORM's Save
// of the same columns, in the same run, with GORM's default transaction.
// stmts/op counts the SQL statements GORM sends per Save (BEGIN and COMMIT,
// the same for both, are not counted).
func BenchmarkSave(b *testing.B) {
	for _, kind := range []string{testdb.SQLite, testdb.Postgres} {
		b.Run(kind, func(b *testing.B) {
			tg := testdb.Get(b, kind)
			tg.Reset(b, &BenchBook{}, &PlainBenchBook{})
			warmUp(b, tg)

			b.Run("lockplugin", func(b *testing.B) {
				count := &stmtCounter{}
				db := tg.DB.Session(&gorm.Session{Logger: count})
				book := BenchBook{Title: "start"}
				if err := db.Create(&book).Error; err != nil {
					b.Fatal(err)
				}
				count.n.Store(0)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					book.Title, book.Pages = benchTitles[i%2], i
					if err := db.Save(&book).Error; err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(count.n.Load())/float64(b.N), "stmts/op")
				if book.Version != lockplugin.Version(b.N+1) {
					b.Fatalf("version %d after %d saves", book.Version, b.N)
				}
			})

			b.Run("baseline=gorm-save", func(b *testing.B) {
				count := &stmtCounter{}
				db := tg.Plain.Session(&gorm.Session{Logger: count})
				book := PlainBenchBook{Title: "start", Version: 1}
				if err := db.Create(&book).Error; err != nil {
					b.Fatal(err)
				}
				count.n.Store(0)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					book.Title, book.Pages = benchTitles[i%2], i
					book.Version++
					if err := db.Save(&book).Error; err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(count.n.Load())/float64(b.N), "stmts/op")
			})
		})
	}
}
