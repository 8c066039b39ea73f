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
)

// Register installs the optimistic-locking callbacks on db. The root
// lockplugin plugin calls it; applications use lockplugin.New.
//
// It adds a guard just before gorm:update and gorm:delete, a check just
// after them, wraps the dialector's gorm:create, and wraps the SET clause
// builder (for the soft delete's increment). A plugin registered
// later that replaces gorm:create drops the slice-Save and upsert handling,
// not the UPDATE and DELETE guards.
func Register(db *gorm.DB) error {
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
	} {
		if need.fn == nil {
			return fmt.Errorf("lockplugin: the %s dialector has no %s callback %q to guard; optimistic locking cannot be installed",
				db.Dialector.Name(), need.kind, need.name)
		}
	}
	create := cb.Create().Get("gorm:create")
	steps := []func() error{
		func() error { return cb.Update().Before("gorm:update").Register(guardName, guardUpdate) },
		func() error { return cb.Update().Before("gorm:save_after_associations").Register(checkName, check) },
		func() error { return cb.Delete().Before("gorm:delete").Register(guardName, guardDelete) },
		func() error { return cb.Delete().Before("gorm:after_delete").Register(checkName, check) },
		func() error { return cb.Create().Replace("gorm:create", createWith(create)) },
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
