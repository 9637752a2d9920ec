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
	// Each vector is scaled by a power of two that brings its largest magnitude into [1/2, 1):
	// the cosine is the same, and so is every rounding away from the ends of float64's range (a
	// power of two scales exactly), but squares of entries near 1e160 no longer overflow, nor
	// those near 1e-170 vanish, which made the distance of such a vector to itself NaN.
	ea, oka := maxExponent(a)
	eb, okb := maxExponent(b)
	if !oka || !okb {
		return math.NaN()
	}
	var ab, aa, bb float64
	for i := range a {
		x, y := math.Ldexp(a[i], -ea), math.Ldexp(b[i], -eb)
		ab += x * y
		aa += x * x
		bb += y * y
	}
	return 1 - ab/math.Sqrt(aa*bb)
}

// maxExponent returns the binary exponent of the largest magnitude in x (math.Frexp's: 2^(e−1) ≤
// |v| < 2^e), 0 when it is infinite (no scale helps), and false when x is zero or only NaN.
func maxExponent(x []float64) (int, bool) {
	m := 0.0
	for _, v := range x {
		if a := math.Abs(v); a > m {
			m = a
		}
	}
	if m == 0 {
		return 0, false
	}
	_, e := math.Frexp(m)
	return e, true
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
