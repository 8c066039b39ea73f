package sqldriver

import "strings"

// Quote quotes an identifier between open and closing, doubling every
// closing character inside it: it makes a validated name safe to splice,
// it does not validate it.
func Quote(name, open, closing string) string {
	out := make([]byte, 0, len(name)+2)
	out = append(out, open...)
	for i := 0; i < len(name); i++ {
		if string(name[i]) == closing {
			out = append(out, closing...)
		}
		out = append(out, name[i])
	}
	return string(append(out, closing...))
}

// QuoteParts quotes a table name that may be qualified by a schema
// ("holds" or "billing.holds") part by part with quote; schema, when not
// nil, rewrites each schema part before it is quoted (Oracle folds it to
// upper case).
func QuoteParts(name string, quote func(string) string, schema func(string) string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		if schema != nil && i < len(parts)-1 {
			p = schema(p)
		}
		parts[i] = quote(p)
	}
	return strings.Join(parts, ".")
}

// PlainIdent reports whether s is an identifier of ASCII letters, digits
// and underscores that does not start with a digit.
func PlainIdent(s string) bool {
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
		if len(p) == 0 || len(p) > limit || !PlainIdent(p) {
			return false
		}
	}
	return true
}
