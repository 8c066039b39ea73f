package dialects

import "strings"

// ValidTableName reports whether name is a table name that lockplugin will
// splice into SQL it builds itself: an identifier of letters, digits and
// underscores, not starting with a digit, optionally qualified by one
// schema of the same form. The table part may be at most maxTable bytes
// (a caller that derives index names from it leaves room for a suffix);
// the schema part at most 63, PostgreSQL's limit.
func ValidTableName(name string, maxTable int) bool {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return false
	}
	for i, p := range parts {
		limit := 63
		if i == len(parts)-1 {
			limit = maxTable
		}
		if len(p) == 0 || len(p) > limit || !plainIdent(p) {
			return false
		}
	}
	return true
}

func plainIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
