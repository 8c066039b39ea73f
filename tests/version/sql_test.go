package version_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

// dryDB opens a DryRun database of testdb.DryRun by the short name the
// wantSQL table uses, with a fixed clock for soft deletes.
func dryDB(t *testing.T, name string) *gorm.DB {
	t.Helper()
	if name == "mysql" {
		name = "mysql-8.0.36"
	}
	return testdb.DryRun(t, name, func(c *gorm.Config) {
		c.NowFunc = func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }
	})
}

type sqlCase struct {
	name string
	run  func(db *gorm.DB) *gorm.DB
}

var sqlCases = []sqlCase{
	{"Save", func(db *gorm.DB) *gorm.DB {
		return db.Save(&Book{ID: 7, Title: "t", Pages: 3, Version: 2})
	}},
	{"Update", func(db *gorm.DB) *gorm.DB {
		return db.Model(&Book{ID: 7, Version: 2}).Update("title", "t")
	}},
	{"Delete", func(db *gorm.DB) *gorm.DB {
		return db.Delete(&Book{ID: 7, Version: 2})
	}},
	{"unloaded Update", func(db *gorm.DB) *gorm.DB {
		return db.Model(&Book{}).Where("pages > ?", 1).Update("title", "t")
	}},
	{"named column", func(db *gorm.DB) *gorm.DB {
		return db.Model(&Invoice{ID: 7, Rev: 2}).Update("amount", 5)
	}},
	{"slice Delete", func(db *gorm.DB) *gorm.DB {
		return db.Delete(&[]Book{{ID: 7, Version: 2}, {ID: 8, Version: 5}})
	}},
	{"soft Delete", func(db *gorm.DB) *gorm.DB {
		return db.Delete(&SoftBook{ID: 7, Version: 2})
	}},
	{"SkipVersionCheck Save", func(db *gorm.DB) *gorm.DB {
		return db.Clauses(lockplugin.SkipVersionCheck()).Save(&Book{ID: 7, Title: "t", Pages: 3, Version: 2})
	}},
	{"generics Updates", func(db *gorm.DB) *gorm.DB {
		var sent *gorm.DB
		if err := db.Callback().Update().Register("ver_test:capture", func(tx *gorm.DB) { sent = tx }); err != nil {
			panic(err)
		}
		if _, err := gorm.G[Book](db).Where("id = ?", 7).Updates(context.Background(), Book{ID: 7, Title: "t", Version: 2}); err != nil {
			panic(err)
		}
		return sent
	}},
	{"Updates on a key-only Model", func(db *gorm.DB) *gorm.DB {
		return db.Model(&Book{ID: 7}).Updates(&Book{ID: 7, Title: "t", Version: 2})
	}},
	{"Delete through Model", func(db *gorm.DB) *gorm.DB {
		return db.Model(&Book{ID: 7, Version: 2}).Delete(&Book{})
	}},
	{"upsert", func(db *gorm.DB) *gorm.DB {
		return db.Clauses(clause.OnConflict{UpdateAll: true}).Create(&Book{ID: 7, Title: "t", Pages: 3, Version: 2})
	}},
}

// varsOf renders bind values with their Go types, so that an expectation
// pins int64(2) apart from "2".
func varsOf(vars []interface{}) string {
	parts := make([]string, len(vars))
	for i, v := range vars {
		parts[i] = fmt.Sprintf("%T(%v)", v, v)
	}
	return strings.Join(parts, " ")
}

// wantSQL is what each case sends, by database: the SQL with its
// placeholders, and the bind values.
var wantSQL = map[string]map[string][2]string{
	"generics Updates": {
		"postgres": {
			"UPDATE \"ver_books\" SET \"id\"=$1,\"title\"=$2,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE id = $3 AND \"id\" = $4 AND \"ver_books\".\"version\" = $5",
			"uint(7) string(t) int(7) uint(7) int64(2)",
		},
		"mysql": {
			"UPDATE `ver_books` SET `id`=?,`title`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE id = ? AND `id` = ? AND `ver_books`.`version` = ?",
			"uint(7) string(t) int(7) uint(7) int64(2)",
		},
		"sqlserver": {
			"UPDATE \"ver_books\" SET \"title\"=@p1,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE id = @p2 AND \"id\" = @p3 AND \"ver_books\".\"version\" = @p4",
			"string(t) int(7) uint(7) int64(2)",
		},
		"sqlite": {
			"UPDATE `ver_books` SET `id`=?,`title`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE id = ? AND `id` = ? AND `ver_books`.`version` = ?",
			"uint(7) string(t) int(7) uint(7) int64(2)",
		},
	},
	"Save": {
		"postgres": {
			"UPDATE \"ver_books\" SET \"title\"=$1,\"pages\"=$2,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE \"id\" = $3 AND \"ver_books\".\"version\" = $4",
			"string(t) int(3) uint(7) int64(2)",
		},
		"mysql": {
			"UPDATE `ver_books` SET `title`=?,`pages`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE `id` = ? AND `ver_books`.`version` = ?",
			"string(t) int(3) uint(7) int64(2)",
		},
		"sqlserver": {
			"UPDATE \"ver_books\" SET \"title\"=@p1,\"pages\"=@p2,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE \"id\" = @p3 AND \"ver_books\".\"version\" = @p4",
			"string(t) int(3) uint(7) int64(2)",
		},
		"sqlite": {
			"UPDATE `ver_books` SET `title`=?,`pages`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE `id` = ? AND `ver_books`.`version` = ?",
			"string(t) int(3) uint(7) int64(2)",
		},
	},
	"Update": {
		"postgres": {
			"UPDATE \"ver_books\" SET \"title\"=$1,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE \"id\" = $2 AND \"ver_books\".\"version\" = $3",
			"string(t) uint(7) int64(2)",
		},
		"mysql": {
			"UPDATE `ver_books` SET `title`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE `id` = ? AND `ver_books`.`version` = ?",
			"string(t) uint(7) int64(2)",
		},
		"sqlserver": {
			"UPDATE \"ver_books\" SET \"title\"=@p1,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE \"id\" = @p2 AND \"ver_books\".\"version\" = @p3",
			"string(t) uint(7) int64(2)",
		},
		"sqlite": {
			"UPDATE `ver_books` SET `title`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE `id` = ? AND `ver_books`.`version` = ?",
			"string(t) uint(7) int64(2)",
		},
	},
	"Delete": {
		"postgres": {
			"DELETE FROM \"ver_books\" WHERE \"ver_books\".\"version\" = $1 AND \"ver_books\".\"id\" = $2",
			"int64(2) uint(7)",
		},
		"mysql": {
			"DELETE FROM `ver_books` WHERE `ver_books`.`version` = ? AND `ver_books`.`id` = ?",
			"int64(2) uint(7)",
		},
		"sqlserver": {
			"DELETE FROM \"ver_books\" WHERE \"ver_books\".\"version\" = @p1 AND \"ver_books\".\"id\" = @p2",
			"int64(2) uint(7)",
		},
		"sqlite": {
			"DELETE FROM `ver_books` WHERE `ver_books`.`version` = ? AND `ver_books`.`id` = ?",
			"int64(2) uint(7)",
		},
	},
	"unloaded Update": {
		"postgres": {
			"UPDATE \"ver_books\" SET \"title\"=$1,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE pages > $2",
			"string(t) int(1)",
		},
		"mysql": {
			"UPDATE `ver_books` SET `title`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE pages > ?",
			"string(t) int(1)",
		},
		"sqlserver": {
			"UPDATE \"ver_books\" SET \"title\"=@p1,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE pages > @p2",
			"string(t) int(1)",
		},
		"sqlite": {
			"UPDATE `ver_books` SET `title`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE pages > ?",
			"string(t) int(1)",
		},
	},
	"named column": {
		"postgres": {
			"UPDATE \"ver_invoices\" SET \"amount\"=$1,\"lock_version\"=COALESCE(\"ver_invoices\".\"lock_version\", 0) + 1 WHERE \"id\" = $2 AND \"ver_invoices\".\"lock_version\" = $3",
			"int(5) uint(7) int64(2)",
		},
		"mysql": {
			"UPDATE `ver_invoices` SET `amount`=?,`lock_version`=COALESCE(`ver_invoices`.`lock_version`, 0) + 1 WHERE `id` = ? AND `ver_invoices`.`lock_version` = ?",
			"int(5) uint(7) int64(2)",
		},
		"sqlserver": {
			"UPDATE \"ver_invoices\" SET \"amount\"=@p1,\"lock_version\"=COALESCE(\"ver_invoices\".\"lock_version\", 0) + 1 WHERE \"id\" = @p2 AND \"ver_invoices\".\"lock_version\" = @p3",
			"int(5) uint(7) int64(2)",
		},
		"sqlite": {
			"UPDATE `ver_invoices` SET `amount`=?,`lock_version`=COALESCE(`ver_invoices`.`lock_version`, 0) + 1 WHERE `id` = ? AND `ver_invoices`.`lock_version` = ?",
			"int(5) uint(7) int64(2)",
		},
	},
	"slice Delete": {
		"postgres": {
			"DELETE FROM \"ver_books\" WHERE ((\"ver_books\".\"id\" = $1 AND \"ver_books\".\"version\" = $2) OR (\"ver_books\".\"id\" = $3 AND \"ver_books\".\"version\" = $4)) AND \"ver_books\".\"id\" IN ($5,$6)",
			"uint(7) int64(2) uint(8) int64(5) uint(7) uint(8)",
		},
		"mysql": {
			"DELETE FROM `ver_books` WHERE ((`ver_books`.`id` = ? AND `ver_books`.`version` = ?) OR (`ver_books`.`id` = ? AND `ver_books`.`version` = ?)) AND `ver_books`.`id` IN (?,?)",
			"uint(7) int64(2) uint(8) int64(5) uint(7) uint(8)",
		},
		"sqlserver": {
			"DELETE FROM \"ver_books\" WHERE ((\"ver_books\".\"id\" = @p1 AND \"ver_books\".\"version\" = @p2) OR (\"ver_books\".\"id\" = @p3 AND \"ver_books\".\"version\" = @p4)) AND \"ver_books\".\"id\" IN (@p5,@p6)",
			"uint(7) int64(2) uint(8) int64(5) uint(7) uint(8)",
		},
		"sqlite": {
			"DELETE FROM `ver_books` WHERE ((`ver_books`.`id` = ? AND `ver_books`.`version` = ?) OR (`ver_books`.`id` = ? AND `ver_books`.`version` = ?)) AND `ver_books`.`id` IN (?,?)",
			"uint(7) int64(2) uint(8) int64(5) uint(7) uint(8)",
		},
	},
	"soft Delete": {
		"postgres": {
			"UPDATE \"ver_soft_books\" SET \"deleted_at\"=$1,\"version\"=COALESCE(\"ver_soft_books\".\"version\", 0) + 1 WHERE \"ver_soft_books\".\"version\" = $2 AND \"ver_soft_books\".\"id\" = $3 AND \"ver_soft_books\".\"deleted_at\" IS NULL",
			"time.Time(2025-01-02 03:04:05 +0000 UTC) int64(2) uint(7)",
		},
		"mysql": {
			"UPDATE `ver_soft_books` SET `deleted_at`=?,`version`=COALESCE(`ver_soft_books`.`version`, 0) + 1 WHERE `ver_soft_books`.`version` = ? AND `ver_soft_books`.`id` = ? AND `ver_soft_books`.`deleted_at` IS NULL",
			"time.Time(2025-01-02 03:04:05 +0000 UTC) int64(2) uint(7)",
		},
		"sqlserver": {
			"UPDATE \"ver_soft_books\" SET \"deleted_at\"=@p1,\"version\"=COALESCE(\"ver_soft_books\".\"version\", 0) + 1 WHERE \"ver_soft_books\".\"version\" = @p2 AND \"ver_soft_books\".\"id\" = @p3 AND \"ver_soft_books\".\"deleted_at\" IS NULL",
			"time.Time(2025-01-02 03:04:05 +0000 UTC) int64(2) uint(7)",
		},
		"sqlite": {
			"UPDATE `ver_soft_books` SET `deleted_at`=?,`version`=COALESCE(`ver_soft_books`.`version`, 0) + 1 WHERE `ver_soft_books`.`version` = ? AND `ver_soft_books`.`id` = ? AND `ver_soft_books`.`deleted_at` IS NULL",
			"time.Time(2025-01-02 03:04:05 +0000 UTC) int64(2) uint(7)",
		},
	},
	"SkipVersionCheck Save": {
		"postgres": {
			"UPDATE \"ver_books\" SET \"title\"=$1,\"pages\"=$2,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE \"id\" = $3",
			"string(t) int(3) uint(7)",
		},
		"mysql": {
			"UPDATE `ver_books` SET `title`=?,`pages`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE `id` = ?",
			"string(t) int(3) uint(7)",
		},
		"sqlserver": {
			"UPDATE \"ver_books\" SET \"title\"=@p1,\"pages\"=@p2,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE \"id\" = @p3",
			"string(t) int(3) uint(7)",
		},
		"sqlite": {
			"UPDATE `ver_books` SET `title`=?,`pages`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE `id` = ?",
			"string(t) int(3) uint(7)",
		},
	},
	"Updates on a key-only Model": {
		"postgres": {
			"UPDATE \"ver_books\" SET \"id\"=$1,\"title\"=$2,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE \"id\" = $3 AND \"ver_books\".\"version\" = $4",
			"uint(7) string(t) uint(7) int64(2)",
		},
		"mysql": {
			"UPDATE `ver_books` SET `id`=?,`title`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE `id` = ? AND `ver_books`.`version` = ?",
			"uint(7) string(t) uint(7) int64(2)",
		},
		"sqlserver": {
			"UPDATE \"ver_books\" SET \"title\"=@p1,\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHERE \"id\" = @p2 AND \"ver_books\".\"version\" = @p3",
			"string(t) uint(7) int64(2)",
		},
		"sqlite": {
			"UPDATE `ver_books` SET `id`=?,`title`=?,`version`=COALESCE(`ver_books`.`version`, 0) + 1 WHERE `id` = ? AND `ver_books`.`version` = ?",
			"uint(7) string(t) uint(7) int64(2)",
		},
	},
	"Delete through Model": {
		"postgres": {
			"DELETE FROM \"ver_books\" WHERE \"ver_books\".\"version\" = $1 AND \"ver_books\".\"id\" = $2",
			"int64(2) uint(7)",
		},
		"mysql": {
			"DELETE FROM `ver_books` WHERE `ver_books`.`version` = ? AND `ver_books`.`id` = ?",
			"int64(2) uint(7)",
		},
		"sqlserver": {
			"DELETE FROM \"ver_books\" WHERE \"ver_books\".\"version\" = @p1 AND \"ver_books\".\"id\" = @p2",
			"int64(2) uint(7)",
		},
		"sqlite": {
			"DELETE FROM `ver_books` WHERE `ver_books`.`version` = ? AND `ver_books`.`id` = ?",
			"int64(2) uint(7)",
		},
	},
	"upsert": {
		"postgres": {
			"INSERT INTO \"ver_books\" (\"title\",\"pages\",\"version\",\"id\") VALUES ($1,$2,$3,$4) ON CONFLICT (\"id\") DO UPDATE SET \"version\"=CASE WHEN \"ver_books\".\"title\" IS NOT DISTINCT FROM \"excluded\".\"title\" AND \"ver_books\".\"pages\" IS NOT DISTINCT FROM \"excluded\".\"pages\" THEN \"ver_books\".\"version\" ELSE COALESCE(\"ver_books\".\"version\", 0) + 1 END,\"title\"=\"excluded\".\"title\",\"pages\"=\"excluded\".\"pages\" RETURNING \"id\"",
			"string(t) int(3) version.Version(2) uint(7)",
		},
		"mysql": {
			"INSERT INTO `ver_books` (`title`,`pages`,`version`,`id`) VALUES (?,?,?,?) ON DUPLICATE KEY UPDATE `version`=CASE WHEN `ver_books`.`title` <=> VALUES(`title`) AND `ver_books`.`pages` <=> VALUES(`pages`) THEN `ver_books`.`version` ELSE COALESCE(`ver_books`.`version`, 0) + 1 END,`title`=VALUES(`title`),`pages`=VALUES(`pages`)",
			"string(t) int(3) version.Version(2) uint(7)",
		},
		"sqlserver": {
			"MERGE INTO \"ver_books\" USING (VALUES(@p1,@p2,@p3,@p4)) AS excluded (\"title\",\"pages\",\"version\",\"id\") ON \"ver_books\".\"id\" = \"excluded\".\"id\" WHEN MATCHED THEN UPDATE SET \"title\"=\"excluded\".\"title\",\"pages\"=\"excluded\".\"pages\",\"version\"=COALESCE(\"ver_books\".\"version\", 0) + 1 WHEN NOT MATCHED THEN INSERT (\"title\",\"pages\",\"version\") VALUES (\"excluded\".\"title\",\"excluded\".\"pages\",\"excluded\".\"version\") OUTPUT INSERTED.\"id\";",
			"string(t) int(3) version.Version(2) uint(7)",
		},
		"sqlite": {
			"INSERT INTO `ver_books` (`title`,`pages`,`version`,`id`) VALUES (?,?,?,?) ON CONFLICT (`id`) DO UPDATE SET `version`=CASE WHEN `ver_books`.`title` IS `excluded`.`title` AND `ver_books`.`pages` IS `excluded`.`pages` THEN `ver_books`.`version` ELSE COALESCE(`ver_books`.`version`, 0) + 1 END,`title`=`excluded`.`title`,`pages`=`excluded`.`pages` RETURNING `id`",
			"string(t) int(3) version.Version(2) uint(7)",
		},
	},
}

// Exact SQL through the real dialectors in DryRun mode: one statement per
// write, the guard and the increment inside it.
func TestExactSQL(t *testing.T) {
	for _, name := range []string{"postgres", "mysql", "sqlserver", "sqlite"} {
		t.Run(name, func(t *testing.T) {
			for _, c := range sqlCases {
				res := c.run(dryDB(t, name))
				if res.Error != nil {
					t.Errorf("%s: %v", c.name, res.Error)
					continue
				}
				want := wantSQL[c.name][name]
				if got := res.Statement.SQL.String(); got != want[0] {
					t.Errorf("%s:\n got: %s\nwant: %s", c.name, got, want[0])
				}
				if got := varsOf(res.Statement.Vars); got != want[1] {
					t.Errorf("%s vars:\n got: %s\nwant: %s", c.name, got, want[1])
				}
			}
		})
	}
}
