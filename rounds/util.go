package rounds

import (
	"cmp"
	"strconv"
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
