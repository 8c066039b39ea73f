package version_test

// Issue 11: after any successful write through a struct, its version
// equals its row's: association upserts and OnConflict upserts.

import (
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MemPost has many MemComments and one MemCover; all versioned.
type MemPost struct {
	ID       uint
	Title    string
	Comments []MemComment `gorm:"foreignKey:PostID"`
	Cover    MemCover     `gorm:"foreignKey:PostID"`
	lockplugin.Version
}

func (MemPost) TableName() string { return "i11_posts" }

type MemComment struct {
	ID     uint
	PostID uint
	Body   string
	lockplugin.Version
}

func (MemComment) TableName() string { return "i11_comments" }

type MemCover struct {
	ID     uint
	PostID uint
	URL    string
	lockplugin.Version
}

func (MemCover) TableName() string { return "i11_covers" }

// inSync fails unless every comment's and the cover's version in memory is
// its row's.
func inSync(t *testing.T, db *gorm.DB, p *MemPost) {
	t.Helper()
	for i, c := range p.Comments {
		row := load[MemComment](t, db, c.ID)
		assert.EqualValues(t, row.Version, c.Version, "comment %d: memory says %d, the row %d", i, c.Version, row.Version)
	}
	if p.Cover.ID != 0 {
		assert.EqualValues(t, load[MemCover](t, db, p.Cover.ID).Version, p.Cover.Version, "cover")
	}
	assert.EqualValues(t, load[MemPost](t, db, p.ID).Version, p.Version, "post")
}

func TestAssociationSaveKeepsVersionsInSync(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		fresh := func(t *testing.T) MemPost {
			tg.Reset(t, &MemPost{}, &MemComment{}, &MemCover{})
			p := MemPost{Title: "orig", Comments: []MemComment{{Body: "a"}, {Body: "b"}}, Cover: MemCover{URL: "u"}}
			require.NoError(t, db.Create(&p).Error)
			var got MemPost
			require.NoError(t, db.Preload("Comments").Preload("Cover").First(&got, p.ID).Error)
			return got
		}

		t.Run("Save with unchanged preloaded associations bumps none of them", func(t *testing.T) {
			p := fresh(t)
			p.Title = "edited"
			require.NoError(t, db.Save(&p).Error)
			assert.EqualValues(t, 2, p.Version)
			for _, c := range p.Comments {
				assert.EqualValues(t, 1, load[MemComment](t, db, c.ID).Version, "an unchanged comment keeps its version")
			}
			assert.EqualValues(t, 1, load[MemCover](t, db, p.Cover.ID).Version)
			inSync(t, db, &p)

			// The comment saves from the same struct, and so does anyone
			// else holding it: no conflict against itself.
			p.Comments[0].Body = "edited"
			require.NoError(t, db.Save(&p.Comments[0]).Error)
			var other MemComment
			require.NoError(t, db.First(&other, p.Comments[1].ID).Error)
			other.Body = "other user"
			require.NoError(t, db.Save(&other).Error)
			inSync(t, db, &MemPost{ID: p.ID, Version: p.Version, Comments: []MemComment{p.Comments[0], other}})
		})

		t.Run("repeated Saves stay in sync", func(t *testing.T) {
			p := fresh(t)
			for i := 0; i < 5; i++ {
				p.Title = "edit"
				require.NoError(t, db.Save(&p).Error)
				inSync(t, db, &p)
			}
			p.Comments = append(p.Comments, MemComment{Body: "new"})
			require.NoError(t, db.Save(&p).Error)
			assert.EqualValues(t, 1, p.Comments[2].Version)
			inSync(t, db, &p)
		})

		// GORM's association save writes a child's foreign key by upsert,
		// unguarded: a child another user moved to another post since it
		// was preloaded is moved back. This is the one association write
		// that cannot be guarded without refusing GORM's own Save of a
		// parent; the version is incremented, so the other user's copy
		// conflicts, and the struct in memory carries the row's version.
		t.Run("a child moved away by another user is re-attached, visibly", func(t *testing.T) {
			p := fresh(t)
			other := MemPost{Title: "other"}
			require.NoError(t, db.Create(&other).Error)
			var moved MemComment
			require.NoError(t, db.First(&moved, p.Comments[0].ID).Error)
			moved.PostID = other.ID
			require.NoError(t, db.Save(&moved).Error)
			assert.EqualValues(t, 2, moved.Version)

			p.Title = "edited"
			require.NoError(t, db.Save(&p).Error)
			row := load[MemComment](t, db, p.Comments[0].ID)
			assert.EqualValues(t, p.ID, row.PostID, "GORM's upsert re-attached the comment")
			assert.EqualValues(t, 3, row.Version, "and the version moved")
			inSync(t, db, &p)
			moved.Body = "stale"
			requireConflict(t, db.Save(&moved).Error, &moved, "update", 2, 3, false)
		})
	})
}

func TestUpsertReportsTheRowsVersion(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &ShapeBook{})
		b := ShapeBook{Title: "orig", Pages: 1}
		require.NoError(t, db.Create(&b).Error)

		up := ShapeBook{ID: b.ID, Title: "upserted", Pages: 1, Version: 1}
		require.NoError(t, db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&up).Error)
		row := load[ShapeBook](t, db, b.ID)
		assert.EqualValues(t, 2, row.Version)
		assert.EqualValues(t, 2, up.Version, "the struct carries the row's new version")

		same := ShapeBook{ID: b.ID, Title: "upserted", Pages: 1, Version: 1}
		require.NoError(t, db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&same).Error)
		assert.EqualValues(t, 2, load[ShapeBook](t, db, b.ID).Version, "an upsert that changes nothing leaves the version")
		assert.EqualValues(t, 2, same.Version)

		batch := []ShapeBook{{ID: b.ID, Title: "batch", Pages: 1}, {Title: "new"}}
		require.NoError(t, db.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "id"}},
			DoUpdates: clause.AssignmentColumns([]string{"title", "pages"}),
		}).Create(&batch).Error)
		assert.EqualValues(t, 3, batch[0].Version)
		assert.EqualValues(t, 3, load[ShapeBook](t, db, b.ID).Version)
		assert.EqualValues(t, 1, batch[1].Version)
		assert.EqualValues(t, 1, load[ShapeBook](t, db, batch[1].ID).Version)

		// The struct saves at once, without a conflict against itself.
		up = batch[0]
		up.Title = "after"
		require.NoError(t, db.Save(&up).Error)
		assert.EqualValues(t, 4, up.Version)
	})
}

// TimedBook has GORM's update time.
type TimedBook struct {
	ID        uint
	Title     string
	UpdatedAt time.Time
	lockplugin.Version
}

func (TimedBook) TableName() string { return "i11_timed_books" }

// A guarded slice Save writes the update time, as GORM's own slice Save
// does, in the row and in the structs.
func TestSliceSaveWritesUpdateTime(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &TimedBook{})
		old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
		books := []TimedBook{{Title: "a"}, {Title: "b"}}
		require.NoError(t, db.Create(&books).Error)
		require.NoError(t, db.Model(&TimedBook{}).Where("id IN ?", []uint{books[0].ID, books[1].ID}).UpdateColumn("updated_at", old).Error)
		books[0] = load[TimedBook](t, db, books[0].ID)
		books[1] = load[TimedBook](t, db, books[1].ID)

		books[0].Title = "a2"
		require.NoError(t, db.Save(&books).Error)
		for i, b := range books {
			row := load[TimedBook](t, db, b.ID)
			assert.True(t, row.UpdatedAt.After(old), "row %d: updated_at %v not moved", i, row.UpdatedAt)
			assert.True(t, b.UpdatedAt.After(old), "struct %d", i)
			assert.EqualValues(t, row.Version, b.Version)
		}
	})
}

// BTAuthor and BTPost: a versioned belongs-to.
type BTAuthor struct {
	ID   uint
	Name string
	lockplugin.Version
}

func (BTAuthor) TableName() string { return "i11_bt_authors" }

type BTPost struct {
	ID       uint
	Title    string
	AuthorID *uint
	Author   *BTAuthor
	lockplugin.Version
}

func (BTPost) TableName() string { return "i11_bt_posts" }

// The association write that cannot keep the struct in sync: GORM's
// Association(...).Delete (and Clear, and Replace's clean-up) updates the
// owner, or the children, by condition on a fresh model, never through
// the struct the association was opened on. The row's version moves, so
// the struct is stale and its next write is ErrConcurrency: safe (nothing
// is lost), but the struct must be read again.
func TestAssociationDeleteLeavesTheOwnerStale(t *testing.T) {
	testdb.Each(t, func(t *testing.T, tg *testdb.Target) {
		db := tg.DB.WithContext(ctxOf(t))
		tg.Reset(t, &BTAuthor{}, &BTPost{})
		p := BTPost{Title: "p", Author: &BTAuthor{Name: "a"}}
		require.NoError(t, db.Create(&p).Error)
		require.NoError(t, db.Model(&p).Association("Author").Delete(p.Author))
		row := load[BTPost](t, db, p.ID)
		assert.Nil(t, row.AuthorID)
		assert.EqualValues(t, 2, row.Version, "the owner's row moved")
		assert.EqualValues(t, 1, p.Version, "GORM's struct did not: the documented limit")

		p.Title = "stale"
		requireConflict(t, db.Save(&p).Error, &p, "update", 1, 2, false)
		p = load[BTPost](t, db, p.ID)
		p.Title = "re-read"
		require.NoError(t, db.Save(&p).Error)
	})
}
