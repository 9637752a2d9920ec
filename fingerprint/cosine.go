package fingerprint

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// CosineDistance is 1 − a·b/(|a||b|). It is NaN when either vector is zero.
func CosineDistance(a, b []float64) float64 {
	if len(a) != len(b) {
		panic("fingerprint: vectors of different lengths")
	}
	var ab, aa, bb float64
	for i := range a {
		ab += a[i] * b[i]
		aa += a[i] * a[i]
		bb += b[i] * b[i]
	}
	if aa == 0 || bb == 0 {
		return math.NaN()
	}
	return 1 - ab/math.Sqrt(aa*bb)
}

// NearestCosine returns the row of refs with the smallest cosine distance to row, the first on
// ties, as Gavel's estimator does. ok is false when row is zero (Gavel then picks at random) or
// refs is nil.
func NearestCosine(row []float64, refs mat.Matrix) (best int, ok bool) {
	if refs == nil {
		return 0, false
	}
	if d, ok := refs.(*mat.Dense); ok && (d == nil || d.IsEmpty()) {
		return 0, false
	}
	r, c := refs.Dims()
	if len(row) != c {
		panic("fingerprint: row length differs from the reference rows")
	}
	bestD := math.Inf(1)
	buf := make([]float64, c)
	for i := 0; i < r; i++ {
		mat.Row(buf, i, refs)
		d := CosineDistance(row, buf)
		if math.IsNaN(d) {
			continue
		}
		if d < bestD {
			best, bestD, ok = i, d, true
		}
	}
	return best, ok
}
