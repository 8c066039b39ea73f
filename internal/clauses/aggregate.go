package clauses

import (
	"regexp"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// aggregateCall matches a call of one of Oracle's aggregate functions, or
// a DISTINCT, in a select list written as SQL.
var aggregateCall = regexp.MustCompile(`(?i)(?:\b(?:count|sum|avg|min|max|listagg|stddev|stddev_pop|stddev_samp|variance|var_pop|var_samp|median|collect|corr|covar_pop|covar_samp|cume_dist|dense_rank|percent_rank|percentile_cont|percentile_disc|rank|json_arrayagg|json_objectagg|xmlagg|any_value|approx_count_distinct|bit_and_agg|bit_or_agg|bit_xor_agg|count_distinct)\s*\(|\bdistinct\b)`)

// aggregated names what makes stmt's rows not table rows (DISTINCT, GROUP
// BY, an aggregate function), or returns "". Oracle refuses FOR UPDATE on
// such a query (ORA-01786); lockplugin refuses it before sending.
func aggregated(stmt *gorm.Statement) string {
	if stmt == nil {
		return ""
	}
	if stmt.Distinct {
		return "DISTINCT"
	}
	if _, ok := stmt.Clauses["GROUP BY"]; ok {
		return "GROUP BY"
	}
	const inSelect = "an aggregate function or DISTINCT in its select list"
	if c, ok := stmt.Clauses["SELECT"]; ok {
		e := c.Expression
		if sel, ok := e.(clause.Select); ok {
			if sel.Distinct {
				return "DISTINCT"
			}
			for _, col := range sel.Columns {
				if aggregateCall.MatchString(col.Name) {
					return inSelect
				}
			}
			e = sel.Expression
		}
		// clause.Select's MergeClause stores a select expression (Count's
		// count(*), Select("SUM(n)")) in place of the Select itself.
		switch x := e.(type) {
		case clause.Expr:
			if aggregateCall.MatchString(x.SQL) {
				return inSelect
			}
		case clause.NamedExpr:
			if aggregateCall.MatchString(x.SQL) {
				return inSelect
			}
		}
	}
	for _, col := range stmt.Selects {
		if aggregateCall.MatchString(col) {
			return inSelect
		}
	}
	return ""
}
