// Package lease gives one holder per name, on one node or across a
// cluster: "only one caller runs this for order 42 at a time".
//
// A Manager takes leases on a Store: the LocalStore in this package (flock
// files, for processes of one machine), lease/sqlstore (a table, through
// GORM) or lease/redisstore (Redis), or any Store of your own that passes
// the conformance suite in lease/leasetest.
//
//	m := lease.NewManager(store)
//	err := m.Do(ctx, "order-42", func(ctx context.Context) error {
//		return ship(ctx, 42)
//	}, lease.Wait(3*time.Second), lease.TTL(30*time.Second))
//	if errors.Is(err, lease.ErrNotAcquired) {
//		// someone else is shipping order 42
//	}
//
// Every lease has a TTL (0: none) after which the store lets someone else
// take it, so a holder that died does not block the name forever; long
// work refreshes it (Lease.Refresh, or KeepAlive for Do). Every successful
// acquisition returns a fencing token greater than all earlier ones for the
// name (Lease.Fence): a resource that remembers the highest token it has
// seen can reject a former holder that was paused past its TTL and woke up
// believing it still held the lease.
package lease
