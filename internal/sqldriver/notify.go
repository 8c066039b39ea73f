package sqldriver

// LeaseNotifier is a LeaseTable that can announce a release to waiters
// (PostgreSQL's LISTEN/NOTIFY), for lease/sqlstore's Listen: on a channel
// of the released name's own, so that a process LISTENs only on the names
// it waits for and its connection is sent nothing else (see
// lease/sqlstore's Listen for the cost that spares), and on the table's
// channel, for waiters of an older lease/sqlstore that LISTEN on that.
// Channel names, prefixes and salts are spliced into the statements as
// literals: letters, digits, '_', '.' and ':' only, at most 63 bytes.
type LeaseNotifier interface {
	// NotifyingRelease is the release template that also announces the
	// release, in the same statement (the notifications are sent at its
	// commit, and only when it matched), on channel (the table's) and on
	// the name's channel: prefix followed by the first 24 hex digits of
	// the SHA-256 of salt and the row's lock_name (UTF-8), with lock_name
	// as the payload of both. Its count of matched rows is Release's.
	NotifyingRelease(channel, prefix, salt string) string
	// Listen subscribes the connection it runs on to channel.
	Listen(channel string) string
	// Unlisten unsubscribes the connection it runs on from channel.
	Unlisten(channel string) string
}
