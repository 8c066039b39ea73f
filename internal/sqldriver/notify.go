package sqldriver

// LeaseNameNotifier is a LeaseNotifier that announces a release on a
// channel of the released name's own, so that a process LISTENs only on
// the names it waits for and its connection is sent nothing else (see
// lease/sqlstore's Listen for the cost that spares).
type LeaseNameNotifier interface {
	LeaseNotifier
	// NameNotifyingRelease is the release template that announces the
	// release on channel (the table's, for waiters that LISTEN on it)
	// and on the name's channel: prefix followed by the first 24 hex
	// digits of the SHA-256 of salt and the row's lock_name (UTF-8), with
	// lock_name as the payload of both. channel, prefix and salt are
	// spliced into the statement as literals: letters, digits, '_', '.'
	// and ':' only.
	NameNotifyingRelease(channel, prefix, salt string) string
	// Unlisten unsubscribes the connection it runs on from channel.
	Unlisten(channel string) string
}
