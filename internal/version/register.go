package version

import (
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// Callback names, as they appear in db.Callback().
const (
	guardName = "lockplugin:version_guard"
	checkName = "lockplugin:version_check"
	learnName = "lockplugin:version_learn"
	joinsName = "lockplugin:version_empty_joins"
)

// Config configures the optimistic-locking callbacks of one *gorm.DB.
type Config struct {
	// Strict refuses, with ErrZeroVersion, an update or delete of a
	// versioned model whose primary key is set but whose version is zero
	// when its row exists, instead of the unguarded overwrite that is the
	// default (see StrictVersion in the root package).
	Strict bool
}

// guard is the state of one registration: its configuration, and the
// versioned tables this *gorm.DB has seen (see tables). Nothing in it is
// global, so that every *gorm.DB a test opens starts clean.
type guard struct {
	strict bool
	tables tables
	assocs assocs
}

// Register installs the optimistic-locking callbacks on db. The root
// lockplugin plugin calls it; applications use lockplugin.New.
//
// It adds a guard just before gorm:update and gorm:delete, a check just
// after them, a callback before gorm:query that notes which tables are
// versioned, wraps the dialector's gorm:create, and wraps the SET clause
// builder (for the soft delete's increment). A plugin registered later
// that replaces gorm:create drops the slice-Save and upsert handling, not
// the UPDATE and DELETE guards.
func Register(db *gorm.DB, cfg Config) error {
	if db == nil || db.Config == nil {
		return errors.New("lockplugin: version.Register needs an opened *gorm.DB")
	}
	cb := db.Callback()
	for _, need := range []struct {
		kind, name string
		fn         func(*gorm.DB)
	}{
		{"update", "gorm:update", cb.Update().Get("gorm:update")},
		{"update", "gorm:save_after_associations", cb.Update().Get("gorm:save_after_associations")},
		{"delete", "gorm:delete", cb.Delete().Get("gorm:delete")},
		{"delete", "gorm:after_delete", cb.Delete().Get("gorm:after_delete")},
		{"create", "gorm:create", cb.Create().Get("gorm:create")},
		{"query", "gorm:query", cb.Query().Get("gorm:query")},
	} {
		if need.fn == nil {
			return fmt.Errorf("lockplugin: the %s dialector has no %s callback %q to guard; optimistic locking cannot be installed",
				db.Dialector.Name(), need.kind, need.name)
		}
	}
	g := &guard{strict: cfg.Strict}
	create := cb.Create().Get("gorm:create")
	steps := []func() error{
		func() error { return cb.Update().Before("gorm:update").Register(guardName, g.guardUpdate) },
		func() error { return cb.Update().Before("gorm:save_after_associations").Register(checkName, check) },
		func() error { return cb.Delete().Before("gorm:delete").Register(guardName, g.guardDelete) },
		func() error { return cb.Delete().Before("gorm:after_delete").Register(checkName, check) },
		func() error { return cb.Query().Before("gorm:query").Register(learnName, g.learn) },
		func() error { return cb.Query().After("gorm:query").Register(joinsName, emptyJoins) },
		func() error { return cb.Create().Replace("gorm:create", g.createWith(create)) },
		func() error {
			db.ClauseBuilders["SET"] = softDeleteBump(db.ClauseBuilders["SET"])
			return nil
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}
