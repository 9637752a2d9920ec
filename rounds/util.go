package rounds

import (
	"cmp"
	"slices"

	"github.com/gavelkit/gavel/policy"
)

// sortCombinations sorts by first member, then second.
func sortCombinations(cs []policy.Combination) {
	slices.SortFunc(cs, func(a, b policy.Combination) int {
		return cmp.Or(cmp.Compare(a.A, b.A), cmp.Compare(a.B, b.B))
	})
}

// typesOf returns x's worker types, sorted.
func typesOf(x map[string]float64) []string {
	out := make([]string, 0, len(x))
	for w := range x {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// sumSorted returns the sum of x's values, added in sorted key order, and
// how many are positive. Small maps (the usual few worker types) are sorted
// on the stack.
func sumSorted(x map[string]float64) (float64, int) {
	var buf [8]string
	keys := buf[:0]
	if len(x) > len(buf) {
		keys = make([]string, 0, len(x))
	}
	for w := range x {
		keys = append(keys, w)
	}
	slices.Sort(keys)
	sum, n := 0.0, 0
	for _, w := range keys {
		sum += x[w]
		if x[w] > 0 {
			n++
		}
	}
	return sum, n
}
