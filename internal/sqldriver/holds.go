package sqldriver

// Holds phrases package holds' statements over the holds table.
type Holds interface{}
