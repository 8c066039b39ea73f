package sqldriver

// Claim phrases lockplugin.Claim's statements and its index checks.
type Claim interface{}
