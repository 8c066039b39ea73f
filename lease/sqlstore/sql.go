package sqlstore

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockplugin/lockplugin/dialects"
	"github.com/lockplugin/lockplugin/internal/drivers"
	"github.com/lockplugin/lockplugin/internal/sqldriver"
)

// The table, its statements' templates and the rule every acquire
// follows are described at sqldriver.LeaseTable; each database's
// statements are in its folder, internal/drivers/<database>/leasetable.go.

// arg names what a bind parameter carries.
type arg int

const (
	argName arg = iota
	argOwner
	argTTL
	argFence // OUT parameter receiving the fence (Oracle)
	argAge   // a purge's age in ms
)

// stmt is one rendered statement and what its parameters carry, in order.
// A statement with a list of names ({names}: a purge's picked rows) is
// SQL, one bind parameter per name, then tail (list).
type stmt struct {
	SQL  string
	args []arg
	list bool
	tail string
}

// withList is the text of a statement with a list for n names: their
// parameters are numbered after the statement's own, which the template
// puts before the list (sqldriver.LeasePurgePicker).
func (s stmt) withList(p sqldriver.Phrasing, n int) string {
	var b strings.Builder
	b.Grow(len(s.SQL) + len(s.tail) + 4*n)
	b.WriteString(s.SQL)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.BindVar(len(s.args) + i + 1))
	}
	b.WriteString(s.tail)
	return b.String()
}

// values are the parameters of one call.
type values struct {
	name, owner string
	ttl         int64
	fence       *int64
	age         int64
}

// bind returns the statement's arguments for v. Each value is boxed
// once, however often the statement binds it (MySQL's acquire binds the
// TTL twice).
func (s stmt) bind(v values) []any {
	out := make([]any, len(s.args))
	var name, owner, ttl any
	for i, a := range s.args {
		switch a {
		case argName:
			if name == nil {
				name = v.name
			}
			out[i] = name
		case argOwner:
			if owner == nil {
				owner = v.owner
			}
			out[i] = owner
		case argTTL:
			if ttl == nil {
				ttl = v.ttl
			}
			out[i] = ttl
		case argFence:
			out[i] = sql.Out{Dest: v.fence}
		case argAge:
			out[i] = v.age
		}
	}
	return out
}

// statements are a store's statements and how their answers come back.
// tx, set where every operation is one transaction (TiDB), are the
// statements of those transactions (see tx.go).
type statements struct {
	acquire, release, refresh stmt
	// heldByOther, where readsFirst is set, is read before the acquire,
	// which is not sent when it returns a row (sqldriver.LeaseHeldReader).
	heldByOther stmt
	readsFirst  bool
	// purge deletes up to PurgeBatch purgeable rows (in a transaction
	// where tx is set); where purgePick is set (picks), the rows that
	// purgePick, a read without row locks, returned (purge.list), at
	// most purgeNames a statement.
	purge, purgePick          stmt
	picks                     bool
	purgeNames                int
	acquireReply, updateReply sqldriver.LeaseReply
	// guard is Guard's statement, guardWrite whether it is a write;
	// noGuard says Guard is not supported.
	guard      stmt
	guardWrite bool
	noGuard    bool
	// retries: a deadlock victim or serialisation failure is sent again.
	retries bool
	tx      *txStatements
}

// render renders the statements for a database and a quoted table.
func render(d dialects.Dialect, table string) (statements, error) {
	dr := drivers.For(d)
	lt := dr.LeaseTable()
	if lt == nil {
		return statements{}, d.Require(dialects.LeaseTable)
	}
	st := statements{
		acquire:      renderOne(dr, table, lt.Acquire()),
		release:      renderOne(dr, table, lt.Release()),
		refresh:      renderOne(dr, table, lt.Refresh()),
		purge:        renderOne(dr, table, lt.Purge()),
		acquireReply: lt.AcquireReply(),
		updateReply:  lt.UpdateReply(),
		retries:      lt.RetriesConflicts(),
	}
	if hr, ok := lt.(sqldriver.LeaseHeldReader); ok {
		st.heldByOther, st.readsFirst = renderOne(dr, table, hr.HeldByOther()), true
	}
	if pp, ok := lt.(sqldriver.LeasePurgePicker); ok {
		pick, most := pp.PurgePick()
		st.purgePick, st.picks, st.purgeNames = renderOne(dr, table, pick), true, most
		if !st.purge.list || most < 1 {
			panic("sqlstore: a purge after a pick without {names}")
		}
	}
	if g, write := lt.Guard(); g != "" {
		st.guard, st.guardWrite = renderOne(dr, table, g), write
	} else {
		st.noGuard = true
	}
	if x := lt.Tx(); x != nil {
		st.tx = &txStatements{
			begin: x.Begin,
			read:  renderOne(dr, table, x.Read), take: renderOne(dr, table, x.Take),
			renew: renderOne(dr, table, x.Renew), insert: renderOne(dr, table, x.Insert),
			fence: renderOne(dr, table, x.Fence), held: renderOne(dr, table, x.Held),
		}
	}
	return st, nil
}

// renderOne expands a template, with each database's placeholders
// (BindVar): where numbered placeholders can be reused for the same value
// (ReusesBindVars) they are, and elsewhere each occurrence is bound.
func renderOne(p sqldriver.Phrasing, table, tmpl string) stmt {
	tmpl = strings.ReplaceAll(tmpl, "{exp}", sqldriver.LeaseExpires)
	var b strings.Builder
	var st stmt
	numbered := map[arg]int{}
	listAt := -1
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			break
		}
		j := strings.IndexByte(tmpl[i:], '}') + i
		b.WriteString(tmpl[:i])
		tok := tmpl[i+1 : j]
		tmpl = tmpl[j+1:]
		var a arg
		switch tok {
		case "t":
			b.WriteString(table)
			continue
		case "now":
			b.WriteString(p.NowMillis())
			continue
		case "limit":
			b.WriteString(strconv.Itoa(PurgeBatch))
			continue
		case "name":
			a = argName
		case "owner":
			a = argOwner
		case "ttl":
			a = argTTL
		case "fence":
			a = argFence
		case "age":
			a = argAge
		case "names":
			if listAt >= 0 {
				panic("sqlstore: two lists in a template")
			}
			listAt = b.Len()
			continue
		default:
			panic("sqlstore: unknown template token " + tok)
		}
		if listAt >= 0 {
			// The list's parameters are numbered after the statement's own.
			panic("sqlstore: a bind parameter after {names}")
		}
		n, ok := numbered[a]
		if !ok || !p.ReusesBindVars() {
			st.args = append(st.args, a)
			n = len(st.args)
			numbered[a] = n
		}
		if a == argTTL || a == argAge {
			b.WriteString(p.BigintBindVar(n))
		} else {
			b.WriteString(p.BindVar(n))
		}
	}
	st.SQL = b.String()
	if listAt >= 0 {
		st.SQL, st.tail, st.list = st.SQL[:listAt], st.SQL[listAt:], true
	}
	return st
}

// DefaultTable is the table name unless Table says otherwise.
const DefaultTable = "lock_leases"

// quoteTable validates a table name (an identifier, optionally qualified
// by a schema: "leases" or "app.leases") and quotes it for d.
func quoteTable(d dialects.Dialect, name string) (string, error) {
	if strings.Count(name, ".") > 1 {
		return "", fmt.Errorf("sqlstore: table name %q: at most one schema qualifier", name)
	}
	if !sqldriver.ValidTableName(name, 63) {
		return "", fmt.Errorf("sqlstore: table name %q is not an identifier (letters, digits and _, not starting with a digit, at most 63)", name)
	}
	return drivers.For(d).QuoteTable(name), nil
}

// CreateTableSQL returns the DDL that creates the lease table on the
// database a dialector name stands for ("postgres", "mysql", "sqlite",
// "sqlserver", "oracle"), for users whose database user cannot create
// tables and who therefore pass CreateTable(false) to New. Table sets the
// table name. The statement does nothing when the table exists: CREATE
// TABLE IF NOT EXISTS where the database has it, and a guard on SQL Server
// and Oracle.
func CreateTableSQL(dialect string, opts ...Option) (string, error) {
	cfg, err := buildConfig(opts)
	if err != nil {
		return "", err
	}
	d := dialects.New(dialect, "")
	table, err := quoteTable(d, cfg.table)
	if err != nil {
		return "", err
	}
	return createTableSQL(d, table)
}

func createTableSQL(d dialects.Dialect, table string) (string, error) {
	lt := drivers.For(d).LeaseTable()
	if lt == nil {
		return "", d.Require(dialects.LeaseTable)
	}
	return lt.CreateTable(table), nil
}
