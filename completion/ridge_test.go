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

// addSparse is the general sparse row update fitJob used before addBiasEmb: coefficient
// val[a] at index idx[a].
func addSparse(r *ridge, idx []int, val []float64, t float64) {
	for a, ia := range idx {
		va := val[a]
		r.atb[ia] += va * t
		row := r.ata[ia*r.p:]
		for b, ib := range idx {
			row[ib] += va * val[b]
		}
	}
}

// addBiasEmb adds the same bits as the general sparse update of the same row.
func TestAddBiasEmb(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const W, D = 4, 3
	p := 2*W + D + 2
	emb := func() []float64 {
		v := make([]float64, D)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return v
	}
	for _, c := range []struct {
		name string
		bias []int
		emb  []float64
	}{
		{"victim", []int{2}, emb()},
		{"self pair", []int{1, W + 1}, emb()},
		{"aggressor", []int{W + 3}, emb()},
		{"zero coupling", []int{0}, make([]float64, D)},
		{"no embedding", []int{2}, nil},
	} {
		want, got := newRidge(p), newRidge(p)
		for _, r := range []*ridge{want, got} {
			r.addDense(make([]float64, p), 1) // nothing: addDense skips zero coefficients
		}
		for round := range 3 { // onto sums already there
			tgt := rng.NormFloat64()
			idx := append([]int(nil), c.bias...)
			val := make([]float64, len(c.bias))
			for i := range val {
				val[i] = 1
			}
			for e, g := range c.emb {
				idx, val = append(idx, 2*W+e), append(val, g)
			}
			addSparse(want, idx, val, tgt)
			got.addBiasEmb(c.bias, 2*W, c.emb, tgt)
			for i := range want.ata {
				if math.Float64bits(got.ata[i]) != math.Float64bits(want.ata[i]) {
					t.Fatalf("%s, row %d: ata[%d] = %v, want %v", c.name, round, i, got.ata[i], want.ata[i])
				}
			}
			for i := range want.atb {
				if math.Float64bits(got.atb[i]) != math.Float64bits(want.atb[i]) {
					t.Fatalf("%s, row %d: atb[%d] = %v, want %v", c.name, round, i, got.atb[i], want.atb[i])
				}
			}
		}
	}
}
