package holds

import (
	"fmt"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
	"time"
)

// DefaultTable is the holds table used when no Table option is given.
const DefaultTable = "lockplugin_holds"

// Option configures a call. TTL matters to Acquire only; Table to every
// call. A nil Option is ignored; an Option with an invalid value (a
// negative TTL, a bad table name) makes the call that is given it return an
// error matching ErrInvalid, naming the option and the value, before
// anything is sent.
type Option func(*options)

type options struct {
	table    string
	tableSet bool // a Table option was given
	ttl      time.Duration
	err      error // the first invalid option value
}

// TTL makes an acquired hold expire d after it is granted, by the database
// clock; an expired hold stops counting without anyone releasing it. Zero
// means no expiry (the default). A negative d makes Acquire fail with
// ErrInvalid. Durations are kept in whole milliseconds, rounded up.
func TTL(d time.Duration) Option {
	return func(c *options) {
		if d < 0 && c.err == nil {
			c.err = fmt.Errorf("%w: holds.TTL(%v): a negative TTL", ErrInvalid, d)
		}
		c.ttl = d
	}
}

// Table names the holds table, DefaultTable by default: letters, digits and
// underscores, at most 56 characters, optionally qualified by a schema
// ("billing.holds"). Give Migrate and every call on the same holds the same
// Table. A Hold from Acquire or ActiveFor remembers its table, so Release
// and Extend need the option only for a Hold built by hand.
func Table(name string) Option {
	return func(c *options) {
		if err := validTable(name); err != nil {
			if c.err == nil {
				c.err = err
			}
			return
		}
		c.table, c.tableSet = name, true
	}
}

func newConfig(opts []Option) (options, error) {
	c := options{table: DefaultTable}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c, c.err
}

// ttlMillis is the TTL in milliseconds, rounded up so that a positive TTL
// never becomes "no expiry"; 0 means none.
func ttlMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// validTable accepts "table" and "schema.table" with plain identifiers; the
// index name is the table name plus a 7-byte suffix, so the table part is
// kept within the 63 bytes PostgreSQL allows an identifier.
func validTable(name string) error {
	if !sqldriver.ValidTableName(name, 56) {
		return fmt.Errorf("%w: holds.Table(%q): want letters, digits and underscores, at most 56, optionally schema-qualified", ErrInvalid, name)
	}
	return nil
}

func splitTable(name string) (schema, table string) {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			return name[:i], name[i+1:]
		}
	}
	return "", name
}
