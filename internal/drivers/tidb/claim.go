package tidb

import "github.com/lockplugin/lockplugin/internal/sqldriver"

// Claim is nil: TiDB cannot claim (the capability matrix refuses
// QueueClaim on it), so MySQL's claim is not inherited.
func (*Driver) Claim() sqldriver.Claim { return nil }
