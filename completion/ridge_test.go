package completion

import (
	"math"
	"math/rand/v2"
	"testing"
)

// addDense2 adds the same bits as two calls of addDense, whatever entries are zero (addDense
// skips a zero coefficient's row).
func TestAddDense2(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(p int) []float64 {
		v := make([]float64, p)
		for i := range v {
			v[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3))
		}
		return v
	}
	zeroAt := func(v []float64, at ...int) []float64 {
		for _, i := range at {
			v[i] = 0
		}
		return v
	}
	for _, c := range []struct {
		name string
		v, u []float64
	}{
		{"one entry", random(1), random(1)},
		{"dense", random(9), random(9)},
		{"zeros in the first", zeroAt(random(9), 0, 4, 8), random(9)},
		{"zeros in the second", random(9), zeroAt(random(9), 1, 2, 7)},
		{"zeros in both, some shared", zeroAt(random(9), 0, 3, 5), zeroAt(random(9), 3, 6)},
		{"all zero", make([]float64, 5), make([]float64, 5)},
		{"negative zero", zeroAt(random(6), 2), []float64{math.Copysign(0, -1), 1, 2, 3, 4, 5}},
	} {
		p := len(c.v)
		want, got := newRidge(p), newRidge(p)
		for _, r := range []*ridge{want, got} { // start from sums already there
			r.addDense(random(p), 0.5)
		}
		copy(got.ata, want.ata)
		copy(got.atb, want.atb)
		t1, t2 := rng.NormFloat64(), rng.NormFloat64()
		want.addDense(c.v, t1)
		want.addDense(c.u, t2)
		got.addDense2(c.v, t1, c.u, t2)
		for i := range want.ata {
			if math.Float64bits(got.ata[i]) != math.Float64bits(want.ata[i]) {
				t.Errorf("%s: ata[%d] = %v, want %v", c.name, i, got.ata[i], want.ata[i])
			}
		}
		for i := range want.atb {
			if math.Float64bits(got.atb[i]) != math.Float64bits(want.atb[i]) {
				t.Errorf("%s: atb[%d] = %v, want %v", c.name, i, got.atb[i], want.atb[i])
			}
		}
	}
}
