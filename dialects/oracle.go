package dialects

// Oracle's rows of the capability matrix. No Oracle server runs where
// lockplugin is tested: the rows noted "not run live" are decided from the
// SQL lockplugin builds, checked against Oracle's documentation.
var oracleRows = rows{
	kind: Oracle,
	rules: []rule{
		{feature: ForUpdate},
		{feature: NoWait},
		{feature: SkipLocked},
		{feature: LockWait, note: "`WAIT n` (seconds, rounded up)"},
		{feature: AdvisoryLock, note: "needs EXECUTE on DBMS_LOCK"},
		{feature: LeaseTable, note: "SQL checked, not run live"},
		{feature: FencedWrite, note: "SQL checked, not run live"},
		{feature: QueueClaim, note: "SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE; SQL checked, not run live"},
	},
}
