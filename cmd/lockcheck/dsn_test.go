package main

import (
	"strings"
	"testing"

	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
)

func TestParseDSN(t *testing.T) {
	cases := []struct {
		dsn, kind, shown, secret string
	}{
		{"postgres://app:s3cr3t@db.example:5432/shop?sslmode=disable", "postgres", "postgres://app:xxxxx@db.example:5432/shop?sslmode=disable", "s3cr3t"},
		{"postgresql://app@db.example/shop", "postgres", "postgresql://app@db.example/shop", ""},
		{"postgres://db.example/shop?user=app&password=pw%2Fx", "postgres", "postgres://db.example/shop?password=xxxxx&user=app", "pw/x"},
		{"host=127.0.0.1 user=postgres password='a b' dbname=test", "postgres", "host=127.0.0.1 user=postgres password=xxxxx dbname=test", "a b"},
		{"host=127.0.0.1 user=postgres dbname=test sslmode=disable", "postgres", "host=127.0.0.1 user=postgres dbname=test sslmode=disable", ""},
		{"host=127.0.0.1 PASSWORD = pw9", "postgres", "host=127.0.0.1 PASSWORD = xxxxx", "pw9"},
		{"postgres://app:pw8@/shop?host=/run/postgresql", "postgres", "postgres://app:xxxxx@/shop?host=/run/postgresql", "pw8"},
		{"root:pw7@tcp(127.0.0.1:3306)/test", "mysql", "mysql://root:xxxxx@tcp(127.0.0.1:3306)/test", "pw7"},
		{"mysql://root:hunter2@tcp(127.0.0.1:3306)/test", "mysql", "mysql://root:xxxxx@tcp(127.0.0.1:3306)/test", "hunter2"},
		{"root:@tcp(127.0.0.1:3306)/test?parseTime=true", "mysql", "mysql://root@tcp(127.0.0.1:3306)/test?parseTime=true", ""},
		{"sqlserver://sa:Pa55word@127.0.0.1:1433?database=test", "sqlserver", "sqlserver://sa:xxxxx@127.0.0.1:1433?database=test", "Pa55word"},
		{"sqlite:/tmp/x.db", "sqlite", "sqlite:/tmp/x.db", ""},
		{"SQLITE:///tmp/x.db", "sqlite", "sqlite:/tmp/x.db", ""},
		{"sqlite:/tmp/x.db?_pragma=busy_timeout(1)", "sqlite", "sqlite:/tmp/x.db?_pragma=busy_timeout(1)", ""},
	}
	for _, c := range cases {
		t.Run(c.dsn, func(t *testing.T) {
			d, err := parseDSN(c.dsn)
			if err != nil {
				t.Fatalf("parseDSN: %v", err)
			}
			if d.kind != c.kind || d.shown != c.shown || d.dialector == nil {
				t.Fatalf("parseDSN = kind %q shown %q dialector %v; want kind %q shown %q", d.kind, d.shown, d.dialector, c.kind, c.shown)
			}
			if c.secret == "" {
				return
			}
			if strings.Contains(d.shown, c.secret) {
				t.Errorf("shown DSN %q holds the password", d.shown)
			}
			if got := d.redact("dial " + c.secret + ": refused"); got != "dial "+mask+": refused" {
				t.Errorf("redact left %q", got)
			}
		})
	}
}

func TestParseDSNRejects(t *testing.T) {
	for _, dsn := range []string{
		"oracle://scott:tiger@db/orcl",
		"just-a-word",
		"sqlite:",
		"sqlite:?mode=memory",
		"postgres://",
		"mysql://root:tiger@tcp(127.0.0.1:3306)",
		"mysql://root:tiger/test",                     // no '@': the driver quotes "root:tiger"
		"root:tiger@tcp(127.0.0.1:3306",               // go-sql-driver form, unterminated
		"mysql://root:tiger@tcp(127.0.0.1)/t?loc=%zz", // a bad parameter
		"postgres://u:tiger%zz@h/db",
	} {
		t.Run(dsn, func(t *testing.T) {
			_, err := parseDSN(dsn)
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), "tiger") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q repeats the password or spans lines", err)
			}
		})
	}
}

func TestParseDSNAddsTimeouts(t *testing.T) {
	// The dialector opens with parseTime and a connect timeout; the shown
	// DSN stays as the user wrote it.
	my, err := parseDSN("mysql://root:pw@tcp(127.0.0.1:3306)/test")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := my.dialector.(*mysql.Dialector).Config.DSN, "root:pw@tcp(127.0.0.1:3306)/test?parseTime=true&timeout=5s"; got != want {
		t.Errorf("mysql opens %q, want %q", got, want)
	}
	if got, want := my.shown, "mysql://root:xxxxx@tcp(127.0.0.1:3306)/test"; got != want {
		t.Errorf("mysql shown %q, want %q", got, want)
	}

	kv, err := parseDSN("host=127.0.0.1 dbname=test")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kv.dialector.(*postgres.Dialector).Config.DSN, "host=127.0.0.1 dbname=test connect_timeout=5"; got != want {
		t.Errorf("key=value opens %q, want %q", got, want)
	}
	if kv.shown != "host=127.0.0.1 dbname=test" {
		t.Errorf("key=value shown %q", kv.shown)
	}

	u, err := parseDSN("postgres://h/db?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	if got := u.dialector.(*postgres.Dialector).Config.DSN; got != "postgres://h/db?connect_timeout=2" {
		t.Errorf("a timeout the user chose was changed: %q", got)
	}
}
