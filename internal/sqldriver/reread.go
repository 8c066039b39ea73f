package sqldriver

// Reread phrases the re-reads of version and fence columns after a write.
type Reread interface{}
