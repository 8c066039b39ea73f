package advisory

import "github.com/lockplugin/lockplugin/internal/drivers/postgres"

// PostgresKey returns the bigint key under which PostgreSQL holds the lock
// called name: the first 8 bytes of the name's SHA-256, big-endian, with the
// sign bit cleared. pg_locks shows it split in two, classid (high 32 bits)
// and objid (low 32 bits), with objsubid 1. Bound as a parameter, the key
// needs its type spelled out ($1::bigint): left to infer it, PostgreSQL
// takes $1 for an integer, and a key above 2^31 fails with "integer out
// of range":
//
//	SELECT pid, granted FROM pg_locks WHERE locktype = 'advisory'
//	  AND classid = $1::bigint >> 32 AND objid = $1::bigint & 4294967295 AND objsubid = 1
//
// Names that share the first 63 bits of their hash share a lock; with
// 2^63 keys that takes about three billion distinct names to become likely.
//
// The key is computed where PostgreSQL's statements are built
// (internal/drivers/postgres); this is its public name.
func PostgresKey(name string) int64 { return postgres.AdvisoryKey(name) }
