// Package locks is the conformance suite of lockplugin's row locks
// (lockplugin.ForUpdate and its siblings): the exact SQL each database gets,
// through DryRun with the real dialectors, and the locks' behaviour on every
// reachable database. Its tables start with "lk_".
package locks
