package version_test

// Issue 11: a version the caller supplies in any form GORM accepts is a
// guard. Tables start with "i11_".

import (
	"context"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ShapeBook is the versioned model of the write-shape tests.
type ShapeBook struct {
	ID    uint
	Title string
	Pages int
	lockplugin.Version
}

func (ShapeBook) TableName() string { return "i11_books" }

// plainShapeBook is the same table to plain GORM: its version is an
// ordinary integer column, which is what every shape below amounts to
// without the plugin.
type plainShapeBook struct {
	ID      uint
	Title   string
	Pages   int
	Version int64
}

func (plainShapeBook) TableName() string { return "i11_books" }

// shape writes title and pages to row id, carrying version v, the way one
// kind of handler does. got is the struct the caller passed, when it can
// receive the new version (nil otherwise).
type shape struct {
	name  string
	write func(ctx context.Context, db *gorm.DB, id uint, v lockplugin.Version, title string, pages int) (got *ShapeBook, err error)
	plain func(db *gorm.DB, id uint, v int64, title string, pages int) error
}

var shapes = []shape{
	{
		name: "PATCH: Model(&T{}).Where(id).Updates(T{..., Version})",
		write: func(_ context.Context, db *gorm.DB, id uint, v lockplugin.Version, title string, pages int) (*ShapeBook, error) {
			return nil, db.Model(&ShapeBook{}).Where("id = ?", id).Updates(ShapeBook{Title: title, Pages: pages, Version: v}).Error
		},
		plain: func(db *gorm.DB, id uint, v int64, title string, pages int) error {
			return db.Model(&plainShapeBook{}).Where("id = ?", id).Updates(plainShapeBook{Title: title, Pages: pages, Version: v}).Error
		},
	},
	{
		name: "PATCH into a pointer: Model(&T{}).Where(id).Updates(&T{...})",
		write: func(_ context.Context, db *gorm.DB, id uint, v lockplugin.Version, title string, pages int) (*ShapeBook, error) {
			b := &ShapeBook{Title: title, Pages: pages, Version: v}
			return b, db.Model(&ShapeBook{}).Where("id = ?", id).Updates(b).Error
		},
	},
	{
		name: "JSON merge, column names: Model(&T{ID}).Updates(map)",
		write: func(_ context.Context, db *gorm.DB, id uint, v lockplugin.Version, title string, pages int) (*ShapeBook, error) {
			m := &ShapeBook{ID: id}
			return m, db.Model(m).Updates(map[string]any{"title": title, "pages": pages, "version": int64(v)}).Error
		},
		plain: func(db *gorm.DB, id uint, v int64, title string, pages int) error {
			return db.Model(&plainShapeBook{ID: id}).Updates(map[string]any{"title": title, "pages": pages, "version": v}).Error
		},
	},
	{
		name: "JSON merge, field names: Model(&T{ID}).Updates(map)",
		write: func(_ context.Context, db *gorm.DB, id uint, v lockplugin.Version, title string, pages int) (*ShapeBook, error) {
			m := &ShapeBook{ID: id}
			return m, db.Model(m).Updates(map[string]any{"Title": title, "Pages": pages, "Version": v}).Error
		},
	},
	{
		name: "JSON merge, decoded numbers: Model(&T{ID}).Updates(map of float64)",
		write: func(_ context.Context, db *gorm.DB, id uint, v lockplugin.Version, title string, pages int) (*ShapeBook, error) {
			m := &ShapeBook{ID: id}
			return m, db.Model(m).Updates(map[string]any{"title": title, "pages": float64(pages), "version": float64(v)}).Error
		},
	},
	{
		name: "no Model: Where(id).Updates(&T{...})",
		write: func(_ context.Context, db *gorm.DB, id uint, v lockplugin.Version, title string, pages int) (*ShapeBook, error) {
			b := &ShapeBook{Title: title, Pages: pages, Version: v}
			return b, db.Where("id = ?", id).Updates(b).Error
		},
		plain: func(db *gorm.DB, id uint, v int64, title string, pages int) error {
			return db.Where("id = ?", id).Updates(&plainShapeBook{Title: title, Pages: pages, Version: v}).Error
		},
	},
	{
		name: "generics: G[T].Where(id).Updates(ctx, T{...})",
		write: func(ctx context.Context, db *gorm.DB, id uint, v lockplugin.Version, title string, pages int) (*ShapeBook, error) {
			_, err := gorm.G[ShapeBook](db).Where("id = ?", id).Updates(ctx, ShapeBook{Title: title, Pages: pages, Version: v})
			return nil, err
		},
		plain: func(db *gorm.DB, id uint, v int64, title string, pages int) error {
			_, err := gorm.G[plainShapeBook](db).Where("id = ?", id).Updates(context.Background(), plainShapeBook{Title: title, Pages: pages, Version: v})
			return err
		},
	},
	{
		name: "key and version in the Model: Model(&T{ID, Version}).Updates(map)",
		write: func(_ context.Context, db *gorm.DB, id uint, v lockplugin.Version, title string, pages int) (*ShapeBook, error) {
			m := &ShapeBook{ID: id, Version: v}
			return m, db.Model(m).Updates(map[string]any{"title": title, "pages": pages}).Error
		},
	},
}

// seedAt2 creates a row and brings it to version 2, as another user's
// write would.
func seedAt2(t *testing.T, db *gorm.DB) ShapeBook {
	t.Helper()
	b := ShapeBook{Title: "orig", Pages: 10}
	require.NoError(t, db.Create(&b).Error)
	b.Title = "theirs"
	require.NoError(t, db.Save(&b).Error)
	require.EqualValues(t, 2, b.Version)
	return b
}

// Without the plugin, each shape sent with version 1 overwrites the row at
// version 2 and even sets its version back: a lost update. With it, the
// stale write is ErrConcurrency with nothing written, and the current
// version writes and moves the row up by exactly one; the struct the
// caller passed carries the new version.
func TestSuppliedVersionEveryShape(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg *testdb.Target) {
		ctx := ctxOf(t)
		db := tg.DB.WithContext(ctx)
		for _, s := range shapes {
			t.Run(s.name, func(t *testing.T) {
				if s.plain != nil {
					tg.Reset(t, &ShapeBook{})
					b := seedAt2(t, db)
					require.NoError(t, s.plain(tg.Plain.WithContext(ctx), b.ID, 1, "stale", 99))
					row := load[ShapeBook](t, db, b.ID)
					assert.EqualValues(t, "stale", row.Title, "without the plugin the stale write lands")
					assert.EqualValues(t, 1, row.Version, "and sets the version back")
				}

				tg.Reset(t, &ShapeBook{})
				b := seedAt2(t, db)
				_, err := s.write(ctx, db, b.ID, 1, "stale", 99)
				ce := requireStale(t, err, "update", 1, 2, false)
				assert.EqualValues(t, []any{b.ID}, ce.PrimaryKey, "the conflict names the row")
				row := load[ShapeBook](t, db, b.ID)
				assert.EqualValues(t, "theirs", row.Title, "nothing of the stale write landed")
				assert.EqualValues(t, 10, row.Pages)
				assert.EqualValues(t, 2, row.Version)

				got, err := s.write(ctx, db, b.ID, 2, "mine", 11)
				require.NoError(t, err)
				row = load[ShapeBook](t, db, b.ID)
				assert.EqualValues(t, "mine", row.Title)
				assert.EqualValues(t, 11, row.Pages)
				assert.EqualValues(t, 3, row.Version, "the version goes up by exactly one")
				if got != nil {
					assert.EqualValues(t, 3, got.Version, "the struct the caller passed carries the new version")
				}

				// A version the row never had, and a deleted row.
				_, err = s.write(ctx, db, b.ID, 7, "future", 1)
				requireStale(t, err, "update", 7, 3, false)
				require.NoError(t, db.Delete(&row).Error)
				_, err = s.write(ctx, db, b.ID, 4, "gone", 1)
				requireStale(t, err, "update", 4, 0, true)
			})
		}
	})
}

// A map or struct version that disagrees with the Model's is refused
// before any SQL; a supplied version without any condition is GORM's
// ErrMissingWhereClause, not an update of every row at that version.
func TestSuppliedVersionBadInput(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &ShapeBook{})
		b := seedAt2(t, db)
		other := ShapeBook{Title: "other"}
		require.NoError(t, db.Create(&other).Error)

		err := db.Model(&b).Updates(map[string]any{"title": "x", "version": 1}).Error
		require.ErrorIs(t, err, gorm.ErrInvalidData)
		assert.Contains(t, err.Error(), "two versions")
		err = db.Model(&ShapeBook{ID: b.ID}).Updates(map[string]any{"title": "x", "version": "2"}).Error
		require.ErrorIs(t, err, gorm.ErrInvalidData)
		require.ErrorIs(t, db.Model(&ShapeBook{}).Updates(ShapeBook{Title: "all", Version: 1}).Error, gorm.ErrMissingWhereClause)

		assert.EqualValues(t, "theirs", load[ShapeBook](t, db, b.ID).Title)
		assert.EqualValues(t, "other", load[ShapeBook](t, db, other.ID).Title, "no row was written")
	})
}

// Real goroutines on real connections, behind a barrier: every round,
// writers read the same row at the same version and each adds one page
// through the PATCH shape. Without the plugin the increments are lost;
// with it every acknowledged increment is in the row.
func TestSuppliedVersionConcurrentPatch(t *testing.T) {
	const writers, rounds = 6, 8
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		ctx := ctxOf(t)
		tg.Reset(t, &ShapeBook{})
		db := tg.DB.WithContext(ctx)
		seed := ShapeBook{Title: "counter"}
		require.NoError(t, db.Create(&seed).Error)

		run := func(write func(v int64, pages int) error, read func() (int64, int)) (acked int) {
			for r := 0; r < rounds; r++ {
				v, pages := read()
				var wg sync.WaitGroup
				var mu sync.Mutex
				start := make(chan struct{})
				for w := 0; w < writers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						if err := write(v, pages+1); err == nil {
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
		read := func() (int64, int) {
			row := load[ShapeBook](t, db, seed.ID)
			return int64(row.Version), row.Pages
		}

		plain := tg.Plain.WithContext(ctx)
		require.NoError(t, db.Model(&ShapeBook{}).Where("id = ?", seed.ID).UpdateColumn("pages", 0).Error)
		acked := run(func(v int64, pages int) error {
			return plain.Model(&plainShapeBook{}).Where("id = ?", seed.ID).Updates(plainShapeBook{Pages: pages, Version: v}).Error
		}, read)
		_, pages := read()
		lostPlain := acked - pages
		t.Logf("%s without the plugin: %d acknowledged increments, %d in the row, %d lost", tg.Name, acked, pages, lostPlain)
		assert.Positive(t, lostPlain, "the unprotected PATCH shape must lose updates, or this test proves nothing")

		require.NoError(t, db.Model(&ShapeBook{}).Where("id = ?", seed.ID).UpdateColumn("pages", 0).Error)
		v0, _ := read()
		acked = run(func(v int64, pages int) error {
			return db.Model(&ShapeBook{}).Where("id = ?", seed.ID).Updates(ShapeBook{Pages: pages, Version: lockplugin.Version(v)}).Error
		}, read)
		v1, pages := read()
		t.Logf("%s with the plugin: %d acknowledged increments, %d in the row, %d lost", tg.Name, acked, pages, acked-pages)
		assert.EqualValues(t, acked, pages, "every acknowledged increment is in the row")
		assert.EqualValues(t, rounds, acked, "exactly one writer wins each round")
		assert.EqualValues(t, v0+int64(acked), v1, "the version went up once per write")
	})
}

// Writes GORM cannot tie to a model (Table with a map, Update,
// UpdateColumn) increment the version of the rows they change, so that a
// holder of the old version gets ErrConcurrency instead of saving over
// them; a version value in such a write is refused.
func TestTableWritesBump(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		ctx := ctxOf(t)
		db := tg.DB.WithContext(ctx)
		writes := map[string]func(id uint) *gorm.DB{
			"Updates(map)": func(id uint) *gorm.DB {
				return db.Table("i11_books").Where("id = ?", id).Updates(map[string]any{"title": "table"})
			},
			"Update": func(id uint) *gorm.DB { return db.Table("i11_books").Where("id = ?", id).Update("title", "table") },
			"UpdateColumn": func(id uint) *gorm.DB {
				return db.Table("i11_books").Where("id = ?", id).UpdateColumn("title", "table")
			},
		}
		for name, write := range writes {
			t.Run(name, func(t *testing.T) {
				if name == "Updates(map)" {
					// Without the plugin the stale holder overwrites the
					// table write.
					tg.Reset(t, &ShapeBook{})
					held := ShapeBook{Title: "orig"}
					require.NoError(t, db.Create(&held).Error)
					require.NoError(t, tg.Plain.WithContext(ctx).Table("i11_books").Where("id = ?", held.ID).Updates(map[string]any{"title": "table"}).Error)
					held.Title = "stale"
					require.NoError(t, db.Save(&held).Error)
					assert.EqualValues(t, "stale", load[ShapeBook](t, db, held.ID).Title, "without the bump the table write is lost")
				}
				tg.Reset(t, &ShapeBook{})
				held := ShapeBook{Title: "orig"}
				require.NoError(t, db.Create(&held).Error)
				res := write(held.ID)
				require.NoError(t, res.Error)
				assert.EqualValues(t, 1, res.RowsAffected)
				row := load[ShapeBook](t, db, held.ID)
				assert.EqualValues(t, "table", row.Title)
				assert.EqualValues(t, 2, row.Version, "the table write incremented the version")

				held.Title = "stale"
				requireConflict(t, db.Save(&held).Error, &held, "update", 1, 2, false)
				assert.EqualValues(t, "table", load[ShapeBook](t, db, held.ID).Title)
			})
		}

		t.Run("a version in a table write is refused", func(t *testing.T) {
			tg.Reset(t, &ShapeBook{})
			b := ShapeBook{Title: "orig"}
			require.NoError(t, db.Create(&b).Error)
			err := db.Table("i11_books").Where("id = ?", b.ID).Updates(map[string]any{"title": "x", "version": 1}).Error
			require.ErrorIs(t, err, gorm.ErrInvalidData)
			assert.Contains(t, err.Error(), "db.Model(&T{})")
			assert.EqualValues(t, "orig", load[ShapeBook](t, db, b.ID).Title)
		})

		t.Run("a *gorm.DB that never saw the model does not know the table", func(t *testing.T) {
			// The documented limit: the table is learnt from the first
			// read or write of the model through this *gorm.DB.
			tg.Reset(t, &ShapeBook{})
			b := ShapeBook{Title: "orig"}
			require.NoError(t, db.Create(&b).Error)
			fresh := openWith(t, tg)
			require.NoError(t, fresh.Table("i11_books").Where("id = ?", b.ID).Update("title", "unknown").Error)
			assert.EqualValues(t, 1, load[ShapeBook](t, db, b.ID).Version, "not bumped: this *gorm.DB had not seen ShapeBook")
			var seen ShapeBook
			require.NoError(t, fresh.First(&seen, b.ID).Error)
			require.NoError(t, fresh.Table("i11_books").Where("id = ?", b.ID).Update("title", "known").Error)
			assert.EqualValues(t, 2, load[ShapeBook](t, db, b.ID).Version, "bumped once the model was read")
		})
	})
}

// openWith opens a new *gorm.DB with its own pool on tg's database, with
// the plugin registered with opts, closed when the test ends.
func openWith(t *testing.T, tg *testdb.Target, opts ...lockplugin.Option) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(testdb.Dialector(tg.Kind(), tg.DSN), &gorm.Config{Logger: tg.DB.Logger})
	require.NoError(t, err)
	sqlDB, err := db.DB()
	require.NoError(t, err)
	t.Cleanup(func() { _ = sqlDB.Close() })
	require.NoError(t, db.Use(lockplugin.New(opts...)))
	return db.WithContext(ctxOf(t))
}

// requireStale is requireConflict without the Entity, which depends on
// the shape.
func requireStale(t *testing.T, err error, op string, read, current lockplugin.Version, deleted bool) *lockplugin.ConcurrencyError {
	t.Helper()
	require.ErrorIs(t, err, lockplugin.ErrConcurrency)
	var ce *lockplugin.ConcurrencyError
	require.ErrorAs(t, err, &ce)
	assert.EqualValues(t, op, ce.Op)
	assert.EqualValues(t, read, ce.Version, "the version the write carried")
	assert.EqualValues(t, current, ce.Current, "the row's version now")
	assert.EqualValues(t, deleted, ce.Deleted)
	return ce
}

// Delete with the version in the struct and the key in the condition is
// guarded the same way.
func TestSuppliedVersionDelete(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &ShapeBook{})
		b := seedAt2(t, db)
		requireStale(t, db.Where("id = ?", b.ID).Delete(&ShapeBook{Version: 1}).Error, "delete", 1, 2, false)
		requireStale(t, db.Delete(&ShapeBook{Version: 1}, b.ID).Error, "delete", 1, 2, false)
		assert.EqualValues(t, "theirs", load[ShapeBook](t, db, b.ID).Title, "the row is still there")
		require.ErrorIs(t, db.Delete(&ShapeBook{Version: 2}).Error, gorm.ErrMissingWhereClause)

		res := db.Where("id = ?", b.ID).Delete(&ShapeBook{Version: 2})
		require.NoError(t, res.Error)
		assert.EqualValues(t, 1, res.RowsAffected)
		var n int64
		require.NoError(t, db.Model(&ShapeBook{}).Count(&n).Error)
		assert.Zero(t, n)
	})
}
