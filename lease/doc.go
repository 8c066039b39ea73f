// Package lease gives one holder per name, on one node or across a
// cluster: "only one caller runs this for order 42 at a time".
//
// A Manager takes leases on a Store: the LocalStore in this package (flock
// files, for processes of one machine), lease/sqlstore (a table, through
// GORM) or lease/redisstore (Redis), or any Store of your own that passes
// the conformance suite in lease/leasetest.
//
//	// fragment: needs ctx context.Context, store lease.Store, order Order
//	m := lease.NewManager(store)
//	err := m.Do(ctx, fmt.Sprintf("order-%d", order.ID), func(ctx context.Context) error {
//		return ship(ctx, order.ID) // ctx ends if the lease may no longer be held
//	}, lease.WaitAtMost(3*time.Second))
//	if errors.Is(err, lease.ErrNotAcquired) {
//		return nil // someone else is shipping this order
//	}
//	return err
//
// A lease someone else holds gives an error matching both
// lease.ErrNotAcquired and lockplugin.ErrBusy, the one sentinel that
// every mechanism's "someone else has it" answer matches (row locks,
// advisory locks, holds): branch on ErrBusy where the mechanism does not
// matter. Without WaitAtMost, Acquire and Do try once and fail at once;
// WaitAtMost(d) retries for at most d. Release is a method of the Lease;
// releasing it again through the same handle returns nil, and finding at
// release that it was lost (expired, taken over, force-released) returns
// an error matching ErrLeaseLost. Nil options are ignored; invalid values
// are returned as errors by the call; the methods of a zero or nil
// Manager, Lease or LocalStore return errors naming their constructor.
//
// Every lease has a TTL (DefaultTTL, 30 s, unless TTL says otherwise;
// NoExpiry for none) after which the store lets someone else take it, so a
// holder that died does not block the name forever; long work refreshes it
// (Lease.Refresh, or KeepAlive for Do, which Do without a TTL gets by
// default). Every successful acquisition returns a fencing token greater
// than all earlier ones for the name (Lease.Fence): a resource that
// remembers the highest token it has seen can reject a former holder that
// was paused past its TTL and woke up believing it still held the lease.
//
// The Manager keeps each lease safe whatever the store and its client do
// with lost, slow or late replies:
//
//   - A holder's safety deadline (Lease.Expiry) is kept locally: the send
//     time of the last acquire or refresh the store confirmed, plus the
//     TTL, minus a margin for clock-rate drift. Do's fn context and
//     Lease.Done end at that deadline at the latest, on a timer, whether or
//     not a store call has returned: before the store can let anyone else
//     in. KeepAlive retries failed refreshes until then.
//   - Every store call is bounded by the Manager itself (the caller's
//     context, WaitAtMost, the safety deadline, CallTimeout), also for clients
//     that ignore context deadlines. A store that fails or does not answer
//     gives an error that is not ErrNotAcquired (ErrStoreTimeout when the
//     Manager stopped waiting), within the caller's deadline.
//   - Stores are idempotent per owner token (see Store). An acquire whose
//     outcome is unknown is released under its owner token; a release
//     whose reply was lost is retried, and is not reported as ErrLeaseLost
//     when it worked.
package lease
