package version

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConcurrency is matched by errors.Is when a guarded UPDATE or DELETE
// matched no row: the row changed (or was deleted) since the model was
// read. The error is a *ConcurrencyError; nothing was written.
var ErrConcurrency = errors.New("lockplugin: concurrent modification")

// ErrZeroVersion is matched by errors.Is when, with Strict set (the root
// package's StrictVersion option), an update or delete of a versioned model
// whose primary key is set but whose version is zero finds its row: the
// caller did not say which version it read (a struct decoded from a request
// without its version, for example), and the write would have overwritten
// the row unguarded. Nothing was written; send the version the row was
// read at. It is not an ErrConcurrency: retrying cannot help.
var ErrZeroVersion = errors.New("lockplugin: versioned write without a version")

// ConcurrencyError reports a guarded write that matched no row.
type ConcurrencyError struct {
	// Entity is the stale model as it was passed to GORM (the pointer given
	// to Save, Model or Delete; for a slice Save, a pointer to the stale
	// element; for a version given in the values of Updates, the struct
	// given to Updates, or the Model when the values are a map). Its
	// version is the one it was loaded with.
	Entity any
	// Op is "update" or "delete".
	Op string
	// Table is the table written to.
	Table string
	// PrimaryKey holds the primary key values of the stale row, in the
	// order of the model's primary key fields (for a write guarded by the
	// caller's conditions, the key of the row they match now; nil when
	// they match none).
	PrimaryKey []any
	// Version is the version the model was loaded with.
	Version Version
	// Current is the version the row holds now, when it still exists.
	Current Version
	// Deleted is true when the row no longer exists (or is soft-deleted).
	Deleted bool

	// reread is set when the row could not be read again to say which.
	reread error
	// hint says what to do when the guard knows a likely cause (an
	// association Delete through this *gorm.DB, see assocs).
	hint string
}

// Error says what was stale and, when the row could be read again, why. A
// nil *ConcurrencyError says ErrConcurrency's message.
func (e *ConcurrencyError) Error() string {
	if e == nil {
		return ErrConcurrency.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lockplugin: concurrent modification: stale %s of %s", e.Op, e.Table)
	if len(e.PrimaryKey) > 0 {
		b.WriteString(" (primary key")
		for _, v := range e.PrimaryKey {
			fmt.Fprintf(&b, " %v", v)
		}
		b.WriteByte(')')
	}
	fmt.Fprintf(&b, " read at version %s", versionString(e.Version))
	switch {
	case e.reread != nil:
		fmt.Fprintf(&b, "; the row has changed or been deleted since (re-reading it failed: %v)", e.reread)
	case e.Deleted && len(e.PrimaryKey) == 0:
		// Guarded by the caller's conditions: no row matches them now.
		b.WriteString("; no row matches the statement's conditions: it has been deleted since, or the conditions name no row")
	case e.Deleted:
		b.WriteString("; the row has been deleted since")
	case e.Current == e.Version:
		b.WriteString("; the row is still at that version, so the statement's other conditions matched no row")
	default:
		fmt.Fprintf(&b, "; the row is now at version %s", versionString(e.Current))
	}
	if e.hint != "" {
		b.WriteString("; ")
		b.WriteString(e.hint)
	}
	return b.String()
}

// versionString writes Null as NULL.
func versionString(v Version) string {
	if v == Null {
		return "NULL"
	}
	return fmt.Sprint(int64(v))
}

// Is makes errors.Is(err, ErrConcurrency) true.
func (e *ConcurrencyError) Is(target error) bool { return target == ErrConcurrency }
