package policy

import (
	"maps"
	"slices"

	"github.com/gavelkit/gavel/table"
)

// MissingPairs counts the pairs of p's job types that a packing policy (Packs) could co-locate
// on p's cluster but the table has no entry for: two job types of one scale factor (a type with
// itself only when two jobs have it), each with an isolated rate above 0 on the worker type and
// no more GPUs than the cluster has of it, whose pair there is missing (neither measured nor
// infeasible). To the LP a missing pair is a pair that cannot share a GPU, so a partly profiled
// table packs less than it could and nothing else says why; estimate.Table fills such pairs in.
// It also returns the worker types that have any, sorted.
func MissingPairs(p *Problem) (n int, workerTypes []string) {
	count := map[table.JobType]int{}
	var types []table.JobType
	for _, j := range p.Jobs {
		if count[j.Type] == 0 {
			types = append(types, j.Type)
		}
		count[j.Type]++
	}
	for _, w := range slices.Sorted(maps.Keys(p.Cluster)) {
		runs := func(jt table.JobType) bool {
			r, ok := p.Table.Isolated(w, jt)
			return ok && r > 0 && jt.ScaleFactor <= p.Cluster[w]
		}
		before := n
		for i, a := range types {
			for _, b := range types[i:] {
				if a.ScaleFactor != b.ScaleFactor || (a == b && count[a] < 2) || !runs(a) || !runs(b) {
					continue
				}
				if _, _, st := p.Table.Pair(w, a, b); st == table.Missing {
					n++
				}
			}
		}
		if n > before {
			workerTypes = append(workerTypes, w)
		}
	}
	return n, workerTypes
}
