package rounds

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/gavelkit/gavel/policy"
)

// cmpIDs orders job ids naturally: numeric ids by value ("2" before "10"),
// numeric before non-numeric, the rest as strings.
func cmpIDs(a, b string) int {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return cmp.Or(cmp.Compare(x, y), cmp.Compare(a, b))
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return cmp.Compare(a, b)
}

// inOrder returns fr's combinations sorted, and typesOf the sorted worker
// types of one of them: sums over a job's combinations and types then come
// out the same to the last bit on every run (map order would not), so equal
// urgencies stay equal and ties are broken by the explicit rules.
func inOrder(fr map[policy.Combination]map[string]float64) []policy.Combination {
	out := make([]policy.Combination, 0, len(fr))
	for c := range fr {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b policy.Combination) int {
		return cmp.Or(cmp.Compare(a.A, b.A), cmp.Compare(a.B, b.B))
	})
	return out
}

func typesOf(x map[string]float64) []string {
	out := make([]string, 0, len(x))
	for w := range x {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}
