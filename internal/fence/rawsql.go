package fence

import (
	"strings"

	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// readVerbs are the leading keywords of a raw statement that may be sent
// under a fence: they read. Any other leading keyword (UPDATE, DELETE,
// INSERT, MERGE, REPLACE, UPSERT, CALL, DO, a DDL statement, PRAGMA, one
// this list does not know) is taken to write: the classification errs
// towards refusing, since a refused read only costs the caller a context
// without the fence, and an unguarded write is what fencing exists to stop.
var readVerbs = map[string]bool{
	"SELECT": true, "WITH": true, "VALUES": true, "TABLE": true,
	"SHOW": true, "EXPLAIN": true, "DESCRIBE": true, "DESC": true,
}

// rawWrite reports whether raw SQL may write, and the keyword that says
// so: a statement (of every one separated by ";") whose leading keyword,
// after comments, whitespace and opening parentheses, is not a read verb;
// or a read verb's statement that contains a writing keyword anywhere
// outside comments, quoted strings and quoted identifiers (a CTE that
// writes, "WITH d AS (DELETE ... RETURNING *) SELECT", "SELECT ... INTO",
// "EXPLAIN ANALYZE UPDATE", which runs the UPDATE). "FOR UPDATE" and
// "FOR NO KEY UPDATE" are row locks, and REPLACE( and INSERT( are string
// functions, not writes.
//
// A function with side effects called from a SELECT is not seen: the
// README says so.
func rawWrite(sql string, lx sqldriver.Lexis) (string, bool) {
	toks := tokenize(sql, lx)
	start := 0
	for i := 0; i <= len(toks); i++ {
		if i < len(toks) && toks[i] != ";" {
			continue
		}
		if kw, w := stmtWrites(toks[start:i]); w {
			return kw, true
		}
		start = i + 1
	}
	return "", false
}

// stmtWrites classifies one statement's tokens (see rawWrite).
func stmtWrites(toks []string) (string, bool) {
	i := 0
	for i < len(toks) && toks[i] == "(" {
		i++
	}
	if i == len(toks) {
		return "", false // an empty statement
	}
	verb := toks[i]
	if !readVerbs[verb] {
		return verb, true
	}
	for j := i + 1; j < len(toks); j++ {
		next := ""
		if j+1 < len(toks) {
			next = toks[j+1]
		}
		switch toks[j] {
		case "DELETE", "MERGE", "UPSERT", "INTO", "TRUNCATE":
			return toks[j], true
		case "UPDATE":
			if prev := toks[j-1]; prev != "FOR" && prev != "KEY" {
				return "UPDATE", true
			}
		case "INSERT", "REPLACE":
			if next != "(" {
				return toks[j], true
			}
		}
	}
	return "", false
}

// tokenize returns sql's words (upper-cased) and its "(", ";" tokens,
// leaving out whitespace, comments, string literals, quoted identifiers and
// other punctuation, as the database's lexis (its driver's RawLexis) reads
// them. Where databases differ it errs towards showing more words: a "#"
// starts a comment only where the lexis says so (the MySQL family;
// elsewhere it is an operator, and a comment there would hide what
// follows), executable comments ("/*!...*/") are read as SQL, and a
// backslash escapes a quote only where the database reads it so (the MySQL
// family, PostgreSQL's E'...').
func tokenize(sql string, lx sqldriver.Lexis) []string {
	var toks []string
	n := len(sql)
	for i := 0; i < n; {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < n && sql[i+1] == '-', c == '#' && lx.HashComments:
			for i < n && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && sql[i+1] == '*':
			if lx.ExecutableComments && i+2 < n && sql[i+2] == '!' {
				i += 3 // executable comment: its body runs
				for i < n && sql[i] >= '0' && sql[i] <= '9' {
					i++
				}
				continue
			}
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return toks
			}
			i += 2 + end + 2
		case c == '\'':
			backslash := lx.BackslashEscapes
			if lx.EscapeStrings && i > 0 && (sql[i-1] == 'E' || sql[i-1] == 'e') && (i == 1 || !isWord(sql[i-2])) {
				backslash = true
			}
			i = skipQuoted(sql, i, '\'', backslash)
		case c == '"':
			i = skipQuoted(sql, i, '"', lx.BackslashEscapes)
		case c == '`':
			i = skipQuoted(sql, i, '`', false)
		case c == '[' && lx.BracketIdents:
			i = skipQuoted(sql, i, ']', false)
		case c == '$' && lx.DollarQuotes:
			if tag, ok := dollarTag(sql[i:]); ok {
				end := strings.Index(sql[i+len(tag):], tag)
				if end < 0 {
					return toks
				}
				i += len(tag) + end + len(tag)
			} else {
				i++
			}
		case c == '(' || c == ';':
			toks = append(toks, string(c))
			i++
		case isWord(c):
			j := i
			for j < n && isWord(sql[j]) {
				j++
			}
			toks = append(toks, strings.ToUpper(sql[i:j]))
			i = j
		default:
			i++
		}
	}
	return toks
}

// skipQuoted returns the index just past the quoted text that starts at
// sql[i], a doubled closing quote standing for one.
func skipQuoted(sql string, i int, closing byte, backslash bool) int {
	for j := i + 1; j < len(sql); j++ {
		switch {
		case backslash && sql[j] == '\\':
			j++
		case sql[j] == closing:
			if j+1 < len(sql) && sql[j+1] == closing {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

// dollarTag returns the opening tag of a PostgreSQL dollar-quoted string
// ("$$" or "$name$") at the start of s; $1 is a parameter, not a tag.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '$':
			return s[:j+1], true
		case c >= '0' && c <= '9' && j == 1:
			return "", false
		case !isWord(c) || c == '$':
			return "", false
		}
	}
	return "", false
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
