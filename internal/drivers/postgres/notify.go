package postgres

import (
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

var _ sqldriver.LeaseNotifier = leaseTable{}

// NotifyingRelease is the release with a pg_notify of the released row's
// name on channel and another on the name's channel, in one statement: the
// CTE's UPDATE matches as Release does, and the SELECT notifies once per
// matched row (its command tag, "SELECT n", counts them). The statement
// computes the name's channel from the row's lock_name (sha256() is
// PostgreSQL 11's): the releaser need not know which names anybody waits
// for. Both notifications are queued at the commit, under the one lock
// every notifying commit takes anyway.
func (leaseTable) NotifyingRelease(channel, prefix, salt string) string {
	return `WITH r AS (` + sqldriver.LeaseRelease + ` RETURNING lock_name) SELECT pg_notify('` + channel + `', lock_name), ` +
		`pg_notify('` + prefix + `' || left(encode(sha256(convert_to('` + salt + `' || lock_name, 'UTF8')), 'hex'), 24), lock_name) FROM r`
}

// Unlisten is UNLISTEN of the channel, quoted as Listen quotes it.
func (leaseTable) Unlisten(channel string) string { return `UNLISTEN "` + channel + `"` }
