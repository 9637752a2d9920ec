package rounds

import (
	"cmp"
	"slices"
	"strings"

	"github.com/gavelkit/gavel/policy"
)

// sortCombinations sorts by first member, then second.
func sortCombinations(cs []policy.Combination) {
	slices.SortFunc(cs, compareCombinations)
}

// compareCombinations orders by first member, then second.
func compareCombinations(a, b policy.Combination) int {
	if c := cmp.Compare(a.A, b.A); c != 0 {
		return c
	}
	return cmp.Compare(a.B, b.B)
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
	var buf [8]typeValue
	sum, n := 0.0, 0
	for _, tv := range appendSorted(buf[:0], x) {
		sum += tv.v
		if tv.v > 0 {
			n++
		}
	}
	return sum, n
}

// typeValue is one worker type's value in a map by type.
type typeValue struct {
	w string
	v float64
}

// appendSorted appends x's entries to out, sorted by type (each type once:
// the order is total), and returns it: a map read once, in a fixed order.
func appendSorted(out []typeValue, x map[string]float64) []typeValue {
	n := len(out)
	for w, v := range x {
		out = append(out, typeValue{w, v})
	}
	slices.SortFunc(out[n:], func(a, b typeValue) int { return strings.Compare(a.w, b.w) })
	return out
}
