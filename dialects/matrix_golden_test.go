package dialects

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var updateCapabilities = flag.Bool("update", false, "rewrite testdata/capabilities.golden from the capability matrix")

// goldenDatabases are the servers the capability golden file describes: each
// row of the matrix at the versions on either side of its since bounds, each
// look-alike engine with and without a version, and a database lockplugin
// does not know. Each is a dialector name and a server version string, as
// New takes them.
var goldenDatabases = [][2]string{
	{"postgres", ""},
	{"postgres", "16.4"},
	{"pgx", ""},
	{"mysql", ""},
	{"mysql", "5.7.44"},
	{"mysql", "8.0.0"},
	{"mysql", "8.0.1"},
	{"mysql", "8.0.36"},
	{"mysql", "10.2.44-MariaDB"},
	{"mysql", "10.3.0-MariaDB"},
	{"mysql", "10.5.23-MariaDB"},
	{"mysql", "10.6.0-MariaDB"},
	{"mysql", "5.5.5-10.11.6-MariaDB"},
	{"mysql", "11.4.2-MariaDB"},
	{"sqlserver", ""},
	{"mssql", "16.0"},
	{"oracle", ""},
	{"godror", "19.3"},
	{"sqlite", ""},
	{"sqlite3", "3.45.1"},
	{"mysql", "8.0.11-TiDB-v8.4.0"},
	{"mysql", "5.7.25-TiDB-v7.5.1"},
	{"mysql", "8.0.11-TiDB"},
	{"postgres", "CockroachDB CCL v23.2.0 (x86_64-pc-linux-gnu)"},
	{"cockroachdb", ""},
	{"postgres", "CockroachDB OSS"},
	{"postgres", "11.2-YB-2.20.0.0-b0"},
	{"postgres", "PostgreSQL 11.2-YB-2024.2.0.0-b0 on x86_64"},
	{"clickhouse", "24.1"},
	{"", ""},
}

// goldenFeatures is every Feature lockplugin names, and one it does not.
var goldenFeatures = []Feature{
	ForUpdate, ForShare, ForNoKeyUpdate, ForKeyShare, NoWait, SkipLocked, LockOf, LockWait,
	AdvisoryLock, AdvisoryXactLock, CapacityHolds, LeaseTable, QueueClaim, WriterLock, FencedWrite,
	"no such feature",
}

// TestCapabilitiesGolden renders the gate's answer, Supports and Require's
// error text (and the row's note), for every database of goldenDatabases
// and every feature, into testdata/capabilities.golden: a change of any
// row, reason or note of the capability matrix shows there. Rewrite it with
// go test ./dialects -run TestCapabilitiesGolden -update.
func TestCapabilitiesGolden(t *testing.T) {
	named := map[Feature]bool{}
	for _, f := range goldenFeatures {
		named[f] = true
	}
	for k, r := range ruleIndex {
		if !named[r.feature] {
			t.Errorf("the row %v is for a feature the golden test does not render: add it to goldenFeatures", k)
		}
	}

	var b bytes.Buffer
	for _, db := range goldenDatabases {
		d := New(db[0], db[1])
		fmt.Fprintf(&b, "== %q %q: %s (kind %q, engine %q, version %d.%d.%d, engine version %q)\n",
			db[0], db[1], d, d.Kind, d.Engine, d.Major, d.Minor, d.Patch, d.EngineVersion)
		for _, f := range goldenFeatures {
			line := fmt.Sprintf("%s: supported=%t", f, d.Supports(f))
			if err := d.Require(f); err != nil {
				line += " error=" + err.Error()
			}
			if r, ok := d.rule(f); ok && r.note != "" {
				line += " note=" + r.note
			}
			b.WriteString(line + "\n")
		}
		b.WriteString("\n")
	}

	path := filepath.Join("testdata", "capabilities.golden")
	if *updateCapabilities {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if !bytes.Equal(want, b.Bytes()) {
		t.Errorf("the capability matrix's answers differ from %s; if the change is meant, rewrite it with -update and review the diff:\n%s",
			path, firstDiff(string(want), b.String()))
	}
}

// firstDiff shows the first line where got differs from want.
func firstDiff(want, got string) string {
	w, g := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl []byte
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if !bytes.Equal(wl, gl) {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, wl, gl)
		}
	}
	return "(no line differs)"
}

// TestMatrixRowsUnique: each database has one entry in the matrix and each
// feature one rule in it, so that no row silently shadows another in the
// index.
func TestMatrixRowsUnique(t *testing.T) {
	dbs := map[dbKey]bool{}
	for _, db := range matrix {
		k := dbKey{db.kind, db.engine}
		if dbs[k] {
			t.Errorf("the matrix has two entries for %v", k)
		}
		dbs[k] = true
		features := map[Feature]bool{}
		for _, r := range db.rules {
			if features[r.feature] {
				t.Errorf("%v has two rules for %s", k, r.feature)
			}
			features[r.feature] = true
		}
	}
}
