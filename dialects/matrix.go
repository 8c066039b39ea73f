package dialects

// Profile is one row of the capability matrix: a database at a
// representative server version.
type Profile struct {
	// Label is the row's name in the README, e.g. "MariaDB 10.6+".
	Label string
	// Dialect is the database the row describes.
	Dialect Dialect
}

// Profiles lists the matrix rows, in the README's order. The versions are
// the lowest each row speaks for.
func Profiles() []Profile {
	return []Profile{
		{"PostgreSQL", New("postgres", "")},
		{"MySQL 8.0.1+", New("mysql", "8.0.1")},
		{"MySQL 5.7", New("mysql", "5.7.44")},
		{"MariaDB 10.6+", New("mysql", "10.6.0-MariaDB")},
		{"MariaDB 10.3-10.5", New("mysql", "10.3.0-MariaDB")},
		{"Oracle", New("oracle", "")},
		{"SQL Server", New("sqlserver", "")},
		{"SQLite", New("sqlite", "")},
		{"TiDB", New("mysql", "8.0.11-TiDB-v8.4.0")},
		{"CockroachDB", New("postgres", "CockroachDB CCL v23.2.0")},
		{"YugabyteDB", New("postgres", "11.2-YB-2.20.0.0-b0")},
	}
}

// Table is a rendered matrix: a header row and one row per Profile. The
// documentation's matrices are Tables: MechanismMatrix here, and the
// row-lock matrix, which shows the SQL each database is sent, rendered by
// lockplugin's drivers.
type Table struct {
	Header []string
	Rows   [][]string
}

// MechanismMatrix renders which mechanisms each database can run.
func MechanismMatrix() Table {
	cols := []Feature{AdvisoryLock, AdvisoryXactLock, LeaseTable, CapacityHolds, QueueClaim, FencedWrite}
	t := Table{Header: []string{"database"}}
	for _, c := range cols {
		t.Header = append(t.Header, string(c))
	}
	for _, p := range Profiles() {
		row := []string{p.Label}
		for _, c := range cols {
			cell := "error"
			if p.Dialect.Supports(c) {
				cell = "yes"
				if note := p.Dialect.Note(c); note != "" {
					cell += ": " + note
				}
			}
			row = append(row, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Markdown renders the table as a GitHub Markdown table.
func (t Table) Markdown() string {
	var b []byte
	line := func(cells []string) {
		b = append(b, '|')
		for _, c := range cells {
			b = append(b, ' ')
			b = append(b, c...)
			b = append(b, " |"...)
		}
		b = append(b, '\n')
	}
	line(t.Header)
	sep := make([]string, len(t.Header))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range t.Rows {
		line(r)
	}
	return string(b)
}
