package main

import (
	"errors"
	"net/url"
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
}

// errDSN is the reason for every DSN lockcheck cannot read. Its messages
// never repeat the DSN, which may hold a password.
var errDSN = errors.New("unrecognised -dsn: want postgres://..., a PostgreSQL key=value DSN, mysql://user:pass@tcp(host:port)/db, sqlserver://... or sqlite:PATH")

var (
	pgKeyValue = regexp.MustCompile(`^\s*[a-z_]+\s*=`)
	pgPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)
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
	case strings.Contains(dsn, "://"):
		return database{}, errDSN
	case strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix(") || strings.Contains(dsn, "@/"):
		// go-sql-driver's own form, as in LOCKPLUGIN_MYSQL_DSN.
		return parseMySQL(dsn)
	case pgKeyValue.MatchString(dsn):
		return parsePostgresKeyValue(dsn)
	}
	return database{}, errDSN
}

// sqliteDatabase opens path with the recommended pragmas.
func sqliteDatabase(path string) database {
	return database{kind: "sqlite", dialector: sqlite.Open("file:" + path + "?" + sqlitePragmas), shown: "sqlite:" + path}
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
	return database{kind: "sqlite", dialector: sqlite.Open("file:" + rest), shown: "sqlite:" + rest}, nil
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
	if p := q.Get("password"); p != "" {
		secrets = append(secrets, p)
	}
	shown := redactURL(u)
	if q.Get("connect_timeout") == "" {
		q.Set("connect_timeout", timeoutSeconds())
		u.RawQuery = q.Encode()
	}
	return database{kind: "postgres", dialector: postgres.Open(u.String()), shown: shown, secrets: secrets}, nil
}

func parsePostgresKeyValue(dsn string) (database, error) {
	var secrets []string
	for _, m := range pgPassword.FindAllStringSubmatch(dsn, -1) {
		p := strings.Trim(m[2], "'")
		if p != "" {
			secrets = append(secrets, p, m[2])
		}
	}
	open := dsn
	if !strings.Contains(dsn, "connect_timeout") {
		open += " connect_timeout=" + timeoutSeconds()
	}
	shown := pgPassword.ReplaceAllString(dsn, "${1}"+mask)
	return database{kind: "postgres", dialector: postgres.Open(open), shown: shown, secrets: secrets}, nil
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
	if p := u.Query().Get("password"); p != "" {
		secrets = append(secrets, p)
	}
	return database{kind: "sqlserver", dialector: sqlserver.Open(dsn), shown: redactURL(u), secrets: secrets}, nil
}

// redactURL masks the password in the user info and in a password query
// parameter.
func redactURL(u *url.URL) string {
	c := *u
	if _, ok := c.User.Password(); ok {
		c.User = url.UserPassword(c.User.Username(), mask)
	}
	q := c.Query()
	if q.Has("password") {
		q.Set("password", mask)
		c.RawQuery = q.Encode()
	}
	return c.String()
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
