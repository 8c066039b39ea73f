package main

import "sort"

// Medians folds the results of repeated runs (go test -count) into one
// result per benchmark: for each unit, the median of the values the runs
// reported, and the iterations summed. One run of a benchmark on a small
// machine that shares its cores with the databases can be off by tens of
// percent; the median of several is what a ratio should be taken from.
func Medians(results []Result) []Result {
	type key struct{ pkg, name string }
	var order []key
	groups := map[key][]Result{}
	for _, r := range results {
		k := key{r.Pkg, r.Name}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]Result, 0, len(order))
	for _, k := range order {
		runs := groups[k]
		m := Result{Pkg: k.pkg, Name: k.name, Procs: runs[0].Procs}
		for _, r := range runs {
			m.N += r.N
		}
		for _, first := range runs[0].Metrics {
			var vals []float64
			for _, r := range runs {
				if v, ok := r.Metric(first.Unit); ok {
					vals = append(vals, v)
				}
			}
			m.Metrics = append(m.Metrics, Metric{Value: median(vals), Unit: first.Unit})
		}
		out = append(out, m)
	}
	return out
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
