package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	mysqldriver "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlserver"
	"gorm.io/gorm"
)

// sqlitePragmas is what lockcheck adds to a SQLite path given without
// parameters, and uses for its own temporary file: WAL so that readers do
// not block the writer, a busy timeout so that a writer waits for the lock
// instead of failing with "database is locked", and immediate transactions
// so that a transaction takes the writer lock when it begins, not halfway
// through (where SQLite could only fail it).
const sqlitePragmas = "_pragma=journal_mode(WAL)&_pragma=busy_timeout(20000)&_txlock=immediate"

// mask replaces a secret in anything lockcheck prints.
const mask = "xxxxx"

// connectTimeout bounds how long an unreachable server keeps lockcheck
// waiting, where the DSN does not say otherwise.
const connectTimeout = 5 * time.Second

// database is what a DSN names: the dialector to open and how to show it.
type database struct {
	// kind is "sqlite", "postgres", "mysql" or "sqlserver".
	kind string
	// dialector opens the database.
	dialector gorm.Dialector
	// shown is the DSN with its password masked.
	shown string
	// secrets are the strings masked out of every message lockcheck prints.
	secrets []string
	// sqlitePath and sqliteQuery are a SQLite DSN's file and its parameters
	// as given (empty when lockcheck chose them), for readOnly.
	sqlitePath, sqliteQuery string
}

// errDSN is the reason for every DSN lockcheck cannot read. Its messages
// never repeat the DSN, which may hold a password.
var errDSN = errors.New("unrecognised -dsn: want postgres://..., a PostgreSQL key=value DSN, mysql://user:pass@tcp(host:port)/db, sqlserver://... or sqlite:PATH")

var (
	pgKeyValue = regexp.MustCompile(`^\s*[a-z_]+\s*=`)
	// adoKeyValue is go-mssqldb's ADO form, which begins with the server.
	adoKeyValue = regexp.MustCompile(`(?i)^\s*(server|data source|address|addr|network address)\s*=`)
)

// parseDSN reads the -dsn flag. The empty DSN is not handled here: it means
// a temporary SQLite file, which the caller creates.
func parseDSN(dsn string) (database, error) {
	lower := strings.ToLower(dsn)
	switch {
	case strings.HasPrefix(lower, "sqlite:"):
		return parseSQLite(dsn[len("sqlite:"):])
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return parsePostgresURL(dsn)
	case strings.HasPrefix(lower, "mysql://"):
		return parseMySQL(dsn[len("mysql://"):])
	case strings.HasPrefix(lower, "sqlserver://"):
		return parseSQLServer(dsn)
	case strings.HasPrefix(lower, "odbc:"):
		return parseSQLServerODBC(dsn)
	// The key=value forms come before the guesses below, which look at
	// the whole string and so could be fooled by a password holding
	// "://" or "@tcp(".
	case adoKeyValue.MatchString(dsn):
		return parseSQLServerADO(dsn)
	case pgKeyValue.MatchString(dsn):
		return parsePostgresKeyValue(dsn)
	case strings.Contains(dsn, "://"):
		return database{}, errDSN
	case strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix(") || strings.Contains(dsn, "@/"):
		// go-sql-driver's own form, as in LOCKPLUGIN_MYSQL_DSN.
		return parseMySQL(dsn)
	}
	return database{}, errDSN
}

// sqliteDatabase opens path with the recommended pragmas.
func sqliteDatabase(path string) database {
	return database{kind: "sqlite", dialector: sqlite.Open("file:" + path + "?" + sqlitePragmas), shown: "sqlite:" + path, sqlitePath: path}
}

func parseSQLite(rest string) (database, error) {
	rest = strings.TrimPrefix(rest, "//")
	if rest == "" || strings.HasPrefix(rest, "?") {
		return database{}, errors.New("-dsn sqlite: needs a file path, e.g. sqlite:/tmp/lockcheck.db")
	}
	if !strings.Contains(rest, "?") {
		return sqliteDatabase(rest), nil
	}
	// The user chose the parameters; take them as given.
	path, query, _ := strings.Cut(rest, "?")
	return database{kind: "sqlite", dialector: sqlite.Open("file:" + rest), shown: "sqlite:" + rest, sqlitePath: path, sqliteQuery: query}, nil
}

// readOnly is d for looking only (doctor, who): a SQLite file is opened
// read-only (mode=ro, query_only), with the DSN's own parameters but
// without lockcheck's pragmas and without any journal_mode pragma, which
// would rewrite the file; it must exist, since opening a missing path
// would create it. wantWAL reports whether the DSN sets WAL, which the
// application's first connection would then do. Other databases are
// returned as they are.
func (d database) readOnly() (ro database, wantWAL bool, err error) {
	if d.kind != "sqlite" {
		return d, false, nil
	}
	st, err := os.Stat(d.sqlitePath)
	switch {
	case err != nil:
		return d, false, fmt.Errorf("SQLite file %s: %w (lockcheck doctor and who only read an existing database; check the path)", d.sqlitePath, errors.Unwrap(err))
	case st.IsDir():
		return d, false, fmt.Errorf("SQLite file %s is a directory", d.sqlitePath)
	}
	q, err := url.ParseQuery(d.sqliteQuery)
	if err != nil {
		return d, false, fmt.Errorf("-dsn sqlite: the parameters after '?' do not parse: %v", err)
	}
	var pragmas []string
	for _, p := range q["_pragma"] {
		name, arg, _ := strings.Cut(strings.ToLower(strings.ReplaceAll(p, " ", "")), "(")
		if name == "journal_mode" || strings.HasPrefix(name, "journal_mode=") {
			wantWAL = strings.HasPrefix(arg, "wal") || strings.HasSuffix(name, "=wal")
			continue
		}
		pragmas = append(pragmas, p)
	}
	q["_pragma"] = append(pragmas, "query_only(1)")
	q.Set("mode", "ro")
	d.dialector = sqlite.Open("file:" + d.sqlitePath + "?" + q.Encode())
	return d, wantWAL, nil
}

func parsePostgresURL(dsn string) (database, error) {
	u, err := url.Parse(dsn)
	// A Unix-socket URL names its host in the query: postgres:///db?host=/run/postgresql.
	if err != nil || (u.Host == "" && u.Query().Get("host") == "") {
		return database{}, errors.New("-dsn: not a valid postgres:// URL")
	}
	var secrets []string
	if p, ok := u.User.Password(); ok && p != "" {
		secrets = append(secrets, p)
	}
	q := u.Query()
	secrets = append(secrets, querySecrets(q)...)
	shown := redactURL(u)
	if q.Get("connect_timeout") == "" {
		q.Set("connect_timeout", timeoutSeconds())
		u.RawQuery = q.Encode()
	}
	return database{kind: "postgres", dialector: postgres.Open(u.String()), shown: shown, secrets: secrets}, nil
}

func parsePostgresKeyValue(dsn string) (database, error) {
	shown, secrets, err := maskKeyValue(dsn)
	if err != nil {
		return database{}, err
	}
	open := dsn
	if !strings.Contains(dsn, "connect_timeout") {
		open += " connect_timeout=" + timeoutSeconds()
	}
	return database{kind: "postgres", dialector: postgres.Open(open), shown: shown, secrets: secrets}, nil
}

// pgSecretKeys are the libpq keywords whose values lockcheck never prints.
var pgSecretKeys = map[string]bool{"password": true, "sslpassword": true}

// isPGSpace is libpq's (and pgx's) notion of white space in a conninfo string.
func isPGSpace(c byte) bool { return strings.IndexByte(" \t\n\r\v\f", c) >= 0 }

// maskKeyValue reads a libpq key=value DSN the way the drivers do (a value
// is bare with backslash escapes up to white space, or single-quoted with
// backslash escapes) and returns it with every secret value replaced by the
// mask, and the secrets both as written and unescaped. Masking the value's
// whole span, not a regular expression's guess at it, is what keeps an
// escaped space or quote from ending the mask early.
func maskKeyValue(dsn string) (shown string, secrets []string, err error) {
	var b strings.Builder
	i := 0
	for {
		start := i
		for i < len(dsn) && isPGSpace(dsn[i]) {
			i++
		}
		if i == len(dsn) {
			b.WriteString(dsn[start:])
			return b.String(), secrets, nil
		}
		eq := strings.IndexByte(dsn[i:], '=')
		if eq < 0 {
			return "", nil, errors.New("-dsn: a PostgreSQL key=value DSN has a keyword without '='")
		}
		key := strings.ToLower(strings.TrimRight(dsn[i:i+eq], " \t\n\r\v\f"))
		i += eq + 1
		for i < len(dsn) && isPGSpace(dsn[i]) {
			i++
		}
		b.WriteString(dsn[start:i])
		vstart := i
		var val strings.Builder
		if i < len(dsn) && dsn[i] == '\'' {
			i++
			for ; ; i++ {
				if i >= len(dsn) {
					return "", nil, errors.New("-dsn: a PostgreSQL key=value DSN has an unterminated quoted value")
				}
				if dsn[i] == '\'' {
					i++
					break
				}
				if dsn[i] == '\\' {
					i++
					if i >= len(dsn) {
						return "", nil, errors.New("-dsn: a PostgreSQL key=value DSN has an unterminated quoted value")
					}
				}
				val.WriteByte(dsn[i])
			}
		} else {
			for ; i < len(dsn) && !isPGSpace(dsn[i]); i++ {
				if dsn[i] == '\\' {
					i++
					if i >= len(dsn) {
						break
					}
				}
				val.WriteByte(dsn[i])
			}
		}
		if !pgSecretKeys[key] {
			b.WriteString(dsn[vstart:i])
			continue
		}
		b.WriteString(mask)
		if v := val.String(); v != "" {
			secrets = append(secrets, v, dsn[vstart:i])
		}
	}
}

func parseMySQL(dsn string) (database, error) {
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		// The driver's message quotes the part it could not read, which
		// can be the user:password of a DSN without '@' ("default addr
		// for network 'root:pw' unknown"): mask what may be the password.
		msg := database{secrets: mysqlPasswordGuess(dsn)}.redact(err.Error())
		return database{}, errors.New("-dsn: not a valid MySQL DSN (" + msg + "); want mysql://user:pass@tcp(host:port)/db")
	}
	var secrets []string
	shownCfg := cfg.Clone()
	if cfg.Passwd != "" {
		secrets = append(secrets, cfg.Passwd)
		shownCfg.Passwd = mask
	}
	// GORM scans DATETIME columns into time.Time only with parseTime.
	cfg.ParseTime = true
	if cfg.Timeout == 0 {
		cfg.Timeout = connectTimeout
	}
	return database{kind: "mysql", dialector: mysql.Open(cfg.FormatDSN()), shown: "mysql://" + shownCfg.FormatDSN(), secrets: secrets}, nil
}

// mysqlPasswordGuess returns what a DSN that go-sql-driver could not parse
// may hold as a password: the text after the first ':' of the user info
// (before the last '@', or without one before the first '/'), and the whole
// user info, in case it had no ':'.
func mysqlPasswordGuess(dsn string) []string {
	info := dsn
	if i := strings.LastIndex(info, "@"); i >= 0 {
		info = info[:i]
	} else if i := strings.IndexAny(info, "/?("); i >= 0 {
		info = info[:i]
	}
	var out []string
	if j := strings.Index(info, ":"); j >= 0 && j+1 < len(info) {
		out = append(out, info[j+1:])
	}
	return append(out, info)
}

func parseSQLServer(dsn string) (database, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return database{}, errors.New("-dsn: not a valid sqlserver:// URL")
	}
	var secrets []string
	if p, ok := u.User.Password(); ok && p != "" {
		secrets = append(secrets, p)
	}
	secrets = append(secrets, querySecrets(u.Query())...)
	return database{kind: "sqlserver", dialector: sqlserver.Open(dsn), shown: redactURL(u), secrets: secrets}, nil
}

// urlSecretKeys are the query parameters, lower-cased, whose values
// lockcheck never prints: libpq's password and sslpassword, go-mssqldb's
// password, pwd and change password (its keys are case-insensitive).
var urlSecretKeys = map[string]bool{"password": true, "sslpassword": true, "pwd": true, "change password": true}

// querySecrets returns the values of the secret parameters of q.
func querySecrets(q url.Values) []string {
	var out []string
	for k, vs := range q {
		if urlSecretKeys[strings.ToLower(k)] {
			for _, v := range vs {
				if v != "" {
					out = append(out, v)
				}
			}
		}
	}
	return out
}

// redactURL masks the password in the user info and in every secret query
// parameter. A query that does not parse is dropped whole, and so is a
// fragment: neither is needed to tell which database is meant.
func redactURL(u *url.URL) string {
	c := *u
	if _, ok := c.User.Password(); ok {
		c.User = url.UserPassword(c.User.Username(), mask)
	}
	c.Fragment, c.RawFragment = "", ""
	q, err := url.ParseQuery(c.RawQuery)
	if err != nil {
		c.RawQuery = ""
		return c.String()
	}
	masked := false
	for k := range q {
		if urlSecretKeys[strings.ToLower(k)] {
			q[k] = []string{mask}
			masked = true
		}
	}
	if masked {
		c.RawQuery = q.Encode()
	}
	return c.String()
}

// adoSecretKeys are the go-mssqldb ADO and ODBC keys, lower-cased, whose
// values lockcheck never prints.
var adoSecretKeys = map[string]bool{"password": true, "pwd": true, "change password": true}

// parseSQLServerADO reads go-mssqldb's ADO form, server=h;user id=u;password=p.
// The driver splits it on ';' and then on the first '=', with no quoting
// (a quote is part of the value), so lockcheck masks the same spans.
func parseSQLServerADO(dsn string) (database, error) {
	parts := strings.Split(dsn, ";")
	var secrets []string
	for i, part := range parts {
		key, val, ok := strings.Cut(part, "=")
		if !ok || !adoSecretKeys[strings.ToLower(strings.TrimSpace(key))] {
			continue
		}
		// The driver trims the value; mask it as written too.
		if v := strings.TrimSpace(val); v != "" {
			secrets = append(secrets, val, v)
		}
		parts[i] = key + "=" + mask
	}
	return database{kind: "sqlserver", dialector: sqlserver.Open(dsn), shown: strings.Join(parts, ";"), secrets: secrets}, nil
}

// parseSQLServerODBC reads go-mssqldb's ODBC form, odbc:server=h;pwd={p;}}q}:
// a value may be braced, where '}}' is a '}' and ';' does not end it.
func parseSQLServerODBC(dsn string) (database, error) {
	const prefix = "odbc:"
	var b strings.Builder
	b.WriteString(dsn[:len(prefix)])
	var secrets []string
	s := dsn[len(prefix):]
	for i := 0; i < len(s); {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			b.WriteString(s[i:])
			break
		}
		key := strings.ToLower(strings.TrimSpace(s[i : i+eq]))
		b.WriteString(s[i : i+eq+1])
		i += eq + 1
		vstart := i
		for i < len(s) && s[i] == ' ' {
			i++
		}
		var val strings.Builder
		if i < len(s) && s[i] == '{' {
			i++
			for ; ; i++ {
				if i >= len(s) {
					return database{}, errors.New("-dsn: an odbc: DSN has an unterminated braced value")
				}
				if s[i] == '}' {
					if i+1 < len(s) && s[i+1] == '}' {
						val.WriteByte('}')
						i++
						continue
					}
					i++
					break
				}
				val.WriteByte(s[i])
			}
			for i < len(s) && s[i] != ';' {
				i++
			}
		} else {
			for ; i < len(s) && s[i] != ';'; i++ {
				val.WriteByte(s[i])
			}
		}
		if adoSecretKeys[key] {
			b.WriteString(mask)
			if v := strings.TrimSpace(val.String()); v != "" {
				secrets = append(secrets, v, s[vstart:i])
			}
		} else {
			b.WriteString(s[vstart:i])
		}
		if i < len(s) {
			b.WriteByte(';')
			i++
		}
	}
	return database{kind: "sqlserver", dialector: sqlserver.Open(dsn), shown: b.String(), secrets: secrets}, nil
}

// redact masks every secret of d in s, in the forms a driver may echo it:
// as given, URL-escaped and query-escaped.
func (d database) redact(s string) string {
	for _, p := range d.secrets {
		for _, form := range []string{p, url.QueryEscape(p), url.PathEscape(p)} {
			if form != "" {
				s = strings.ReplaceAll(s, form, mask)
			}
		}
	}
	return s
}

func timeoutSeconds() string { return strconv.Itoa(int(connectTimeout / time.Second)) }
