package etcdstore

// HonoursContext reports true for a usable store: etcd's client runs every
// call over gRPC, which ends it when its context ends. lease.Manager then
// runs the store's calls on the caller's goroutine instead of one of its
// own (lease.ContextHonourer).
func (s *Store) HonoursContext() bool { return s.usable() == nil }
