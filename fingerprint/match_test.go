package fingerprint

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// plantedRefs returns n random reference rows in (0.2, 1) and a noisy copy of row target with
// a fraction of its entries hidden (NaN).
func plantedRefs(n, m, target int, noise, hide float64, seed uint64) (refs [][]float64, row []float64) {
	rng := rand.New(rand.NewPCG(seed, 9))
	refs = make([][]float64, n)
	for i := range refs {
		refs[i] = make([]float64, m)
		for j := range refs[i] {
			refs[i][j] = 0.2 + 0.8*rng.Float64()
		}
	}
	row = make([]float64, m)
	for j := range row {
		row[j] = refs[target][j] * (1 + noise*rng.NormFloat64())
		if rng.Float64() < hide {
			row[j] = math.NaN()
		}
	}
	return refs, row
}

func TestMatchRecoversPlantedNearest(t *testing.T) {
	for _, d := range []Distance{Cosine, MeanAbs, MeanAbsLog} {
		for target := 0; target < 10; target++ {
			refs, row := plantedRefs(10, 60, target, 0.03, 0.7, uint64(target))
			res, err := Match(row, refs, Settings{K: 3, Distance: d})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Neighbors[0].Index; got != target {
				t.Errorf("%v: nearest = %d, want planted %d", d, got, target)
			}
			sum := 0.0
			for _, n := range res.Neighbors {
				sum += n.Weight
			}
			if len(res.Neighbors) != 3 || math.Abs(sum-1) > 1e-12 {
				t.Errorf("%v: %d neighbours with weights summing to %v, want 3 and 1", d, len(res.Neighbors), sum)
			}
			if res.Neighbors[0].Weight <= res.Neighbors[1].Weight {
				t.Errorf("%v: nearest weight %v not above second %v", d, res.Neighbors[0].Weight, res.Neighbors[1].Weight)
			}
		}
	}
}

func TestConfidenceFallsWithNoise(t *testing.T) {
	refs, clean := plantedRefs(8, 40, 2, 0.0, 0.5, 1)
	_, noisy := plantedRefs(8, 40, 2, 0.5, 0.5, 1)
	a, _ := Match(clean, refs, Settings{K: 1, Distance: MeanAbs})
	b, _ := Match(noisy, refs, Settings{K: 1, Distance: MeanAbs})
	if !(a.Confidence > b.Confidence) || a.Confidence < 0.8 {
		t.Errorf("confidence clean %.3f, noisy %.3f: want clean > noisy and clean ≥ 0.8", a.Confidence, b.Confidence)
	}
}

func TestMatchNoOverlap(t *testing.T) {
	if _, err := Match([]float64{math.NaN()}, [][]float64{{1}}, Settings{K: 1}); err == nil || !strings.Contains(err.Error(), "no reference shares") {
		t.Errorf("no shared entry: %v, want an error saying so", err)
	}
	// A zero row shares entries but has no cosine distance to anything; what counts is the
	// shared entries.
	for _, tc := range []struct {
		row, ref []float64
		want     string
	}{
		{[]float64{0, 0, math.NaN()}, []float64{1, 2, 3}, "all 0"},
		{[]float64{0, 5}, []float64{1, math.NaN()}, "all 0"},
		{[]float64{0, math.NaN()}, []float64{math.NaN(), 1}, "no reference shares"},
	} {
		if _, err := Match(tc.row, [][]float64{tc.ref}, Settings{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Match(%v, %v): %v, want an error saying %q", tc.row, tc.ref, err, tc.want)
		}
	}
}

// Confidence as documented: (1 − d₁/d₂)·n/(n+4), and with one reference 1 (distance 0) or 1/2
// times n/(n+4).
func TestMatchConfidence(t *testing.T) {
	for _, tc := range []struct {
		row  []float64
		refs [][]float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, [][]float64{{1, 2, 3, 4}}, 1 * 4.0 / 8},
		{[]float64{1, 2, 3, 4}, [][]float64{{2, 2, 3, 4}}, 0.5 * 4.0 / 8},
		// Mean absolute differences 0.25 and 1 over 4 entries.
		{[]float64{1, 2, 3, 4}, [][]float64{{2, 3, 4, 5}, {2, 2, 3, 4}}, (1 - 0.25/1) * 4.0 / 8},
	} {
		res, err := Match(tc.row, tc.refs, Settings{Distance: MeanAbs})
		if err != nil || math.Abs(res.Confidence-tc.want) > 1e-12 {
			t.Errorf("Match(%v, %v): confidence %v (err %v), want %v", tc.row, tc.refs, res.Confidence, err, tc.want)
		}
	}
}

func TestNearestCosineLikeGavel(t *testing.T) {
	refs := mat.NewDense(3, 2, []float64{1, 0, 0, 1, 1, 1})
	if got, ok := NearestCosine([]float64{2, 2.1}, refs); !ok || got != 2 {
		t.Errorf("NearestCosine = %d, %v; want 2, true", got, ok)
	}
	if _, ok := NearestCosine([]float64{0, 0}, refs); ok {
		t.Error("zero row: want ok = false")
	}
	var none *mat.Dense
	for _, refs := range []mat.Matrix{nil, none, &mat.Dense{}} {
		if _, ok := NearestCosine([]float64{1, 1}, refs); ok {
			t.Errorf("no references (%T): want ok = false", refs)
		}
	}
}

func TestColdStartFromIsolatedRates(t *testing.T) {
	refs := [][]float64{{10, 20, 40}, {30, 15, 10}, {5, 5, 5}}
	// Twice as fast as reference 1 everywhere: same shape across worker types.
	res, err := ColdStart([]float64{60, 30, 20}, refs, Settings{K: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Neighbors[0].Index != 1 || res.Neighbors[0].Distance > 1e-12 {
		t.Errorf("cold start nearest = %+v, want reference 1 at distance 0", res.Neighbors[0])
	}
}

func TestMatchSettingsDefaults(t *testing.T) {
	refs := [][]float64{{1, 0}, {0, 1}, {1, 1}, {2, 1}, {1, 2}}
	res, err := Match([]float64{1, 0.1}, refs, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Neighbors) != 3 {
		t.Errorf("zero Settings: %d neighbours, want the default 3", len(res.Neighbors))
	}
	if _, err := Match([]float64{1, 0.1}, refs, Settings{K: -1}); err == nil || !strings.Contains(err.Error(), "K = -1") {
		t.Errorf("K = -1: err %v, want one naming K", err)
	}
	// A distance the caller made up panicked.
	if _, err := Match([]float64{1, 0.1}, refs, Settings{Distance: 9}); err == nil || !strings.Contains(err.Error(), "unknown distance Distance(9)") {
		t.Errorf("Distance 9: err %v, want one naming it", err)
	}
}

func TestNearest(t *testing.T) {
	ns := []Neighbor{{Index: 0, Distance: 0.5}, {Index: 1, Distance: 0}, {Index: 2, Distance: 0.5}, {Index: 3, Distance: 2}}
	got := Nearest(ns, 3)
	// Weights 1/0.501, 1/0.001, 1/0.501 normalized; ties (0 and 2) keep their order.
	w0, w1 := 1/0.501, 1/0.001
	total := w1 + 2*w0
	want := []Neighbor{{Index: 1, Distance: 0, Weight: w1 / total}, {Index: 0, Distance: 0.5, Weight: w0 / total}, {Index: 2, Distance: 0.5, Weight: w0 / total}}
	if len(got) != len(want) {
		t.Fatalf("got %d neighbours, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Index != want[i].Index || math.Abs(got[i].Weight-want[i].Weight) > 1e-12 {
			t.Errorf("neighbour %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// ±Inf entries used to enter the distances and make weights and confidence NaN; they are
// missing, like NaN: the match equals the one with those entries NaN.
func TestMatchTreatsInfiniteAsMissing(t *testing.T) {
	refs, row := plantedRefs(6, 20, 2, 0.03, 0.2, 7)
	withInf := append([]float64(nil), row...)
	withNaN := append([]float64(nil), row...)
	withInf[0], withInf[5] = math.Inf(1), math.Inf(-1)
	withNaN[0], withNaN[5] = math.NaN(), math.NaN()
	refs[3][7] = math.Inf(1) // in a reference too
	refsNaN := make([][]float64, len(refs))
	for i := range refs {
		refsNaN[i] = append([]float64(nil), refs[i]...)
	}
	refsNaN[3][7] = math.NaN()
	for _, d := range []Distance{Cosine, MeanAbs, MeanAbsLog} {
		got, err := Match(withInf, refs, Settings{Distance: d})
		if err != nil {
			t.Fatal(err)
		}
		want, err := Match(withNaN, refsNaN, Settings{Distance: d})
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(got.Confidence) || got.Confidence != want.Confidence || got.Compared != want.Compared || len(got.Neighbors) != len(want.Neighbors) {
			t.Fatalf("%v: with ±Inf %+v, with NaN %+v", d, got, want)
		}
		for x := range got.Neighbors {
			if got.Neighbors[x] != want.Neighbors[x] || math.IsNaN(got.Neighbors[x].Weight) {
				t.Errorf("%v: neighbour %d: with ±Inf %+v, with NaN %+v", d, x, got.Neighbors[x], want.Neighbors[x])
			}
		}
		if p := got.Predict(refs, 7); math.IsNaN(p) || math.IsInf(p, 0) {
			t.Errorf("%v: Predict over an infinite reference entry: %v", d, p)
		}
	}
	if res, err := ColdStart([]float64{1, math.Inf(1), 2}, [][]float64{{1, 5, 2}, {2, 1, 1}}, Settings{K: 1}); err != nil || math.IsNaN(res.Confidence) || res.Neighbors[0].Index != 0 {
		t.Errorf("ColdStart with +Inf: %+v, %v", res, err)
	}
}

// The squares in the norms overflowed for entries near 1e160 and vanished for entries near
// 1e-170, so the cosine distance of such a vector to itself was NaN, which the doc reserves for
// a zero vector.
func TestCosineDistanceExtremeMagnitudes(t *testing.T) {
	for _, tc := range []struct {
		a, b []float64
		want float64 // NaN for NaN
	}{
		{[]float64{1e160, 2e160, -3e160}, []float64{1e160, 2e160, -3e160}, 0},
		{[]float64{1e-170, 3e-170}, []float64{1e-170, 3e-170}, 0},
		{[]float64{1e-320, 2e-320}, []float64{1e-320, 2e-320}, 0}, // subnormal
		{[]float64{1e300, 1e300}, []float64{1e-300, 1e-300}, 0},   // same direction, far apart in size
		{[]float64{1e200, 0}, []float64{0, 1e-200}, 1},
		{[]float64{1e200, 1e200}, []float64{-1e200, -1e200}, 2},
		{[]float64{0, 0}, []float64{1, 2}, math.NaN()},
		{[]float64{1, 2}, []float64{0, 0}, math.NaN()},
	} {
		got := CosineDistance(tc.a, tc.b)
		if math.IsNaN(tc.want) != math.IsNaN(got) || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("CosineDistance(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// The scaling that keeps extreme magnitudes finite is by powers of two, so on ordinary vectors
// the distance is the plain formula's to the last bit (NearestCosine's ties, Gavel's rule, do
// not move).
func TestCosineDistanceUnchangedOnOrdinaryVectors(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for range 1000 {
		n := 1 + rng.IntN(30)
		a, b := make([]float64, n), make([]float64, n)
		scale := math.Pow(10, float64(rng.IntN(20)-10))
		for i := range a {
			a[i], b[i] = scale*rng.NormFloat64(), rng.Float64()
		}
		var ab, aa, bb float64
		for i := range a {
			ab += a[i] * b[i]
			aa += a[i] * a[i]
			bb += b[i] * b[i]
		}
		if got, want := CosineDistance(a, b), 1-ab/math.Sqrt(aa*bb); got != want {
			t.Fatalf("CosineDistance(%v, %v) = %v, plain formula %v", a, b, got, want)
		}
	}
}

// A mean absolute difference of finite entries can exceed the largest float64 ({1e308} and
// {-1e308}): it was +Inf, which made the weights and the confidence NaN. It is math.MaxFloat64,
// and a mean that fits though the plain sum does not is computed, not clamped.
func TestMeanAbsStaysFinite(t *testing.T) {
	for _, tc := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1e308}, []float64{-1e308}, math.MaxFloat64},
		{[]float64{1.5e308, 1.5e308, math.NaN()}, []float64{0, 0, 1}, 1.5e308},
		{[]float64{1.5e308, -1e308}, []float64{-1.5e308, 1e308}, math.MaxFloat64},
	} {
		if got, _ := MeanAbs.Between(tc.a, tc.b); math.Abs(got-tc.want) > 1e-15*tc.want {
			t.Errorf("MeanAbs.Between(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	for _, refs := range [][][]float64{{{-1e308}}, {{-1e308}, {-1.5e308}}, {{-1e308}, {1e308}}} {
		res, err := Match([]float64{1e308}, refs, Settings{Distance: MeanAbs})
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, n := range res.Neighbors {
			if math.IsNaN(n.Weight) || math.IsInf(n.Distance, 0) {
				t.Errorf("refs %v: neighbour %+v", refs, n)
			}
			sum += n.Weight
		}
		if math.IsNaN(res.Confidence) || res.Confidence < 0 || res.Confidence > 1 || math.Abs(sum-1) > 1e-12 {
			t.Errorf("refs %v: confidence %v, weights summing to %v", refs, res.Confidence, sum)
		}
	}
}

// Nearest with a negative k sliced ns[:k] and panicked; it keeps none, as k = 0 does. Infinite
// distances weigh 0, and when every kept distance is infinite the weights, 0/0, were NaN: they
// are equal.
func TestNearestEdgeCases(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name    string
		ns      []Neighbor
		k       int
		weights []float64
	}{
		{"k = -1", []Neighbor{{Index: 0, Distance: 1}}, -1, nil},
		{"k = 0", []Neighbor{{Index: 0, Distance: 1}}, 0, nil},
		{"one infinite", []Neighbor{{Index: 0, Distance: inf}, {Index: 1, Distance: 2}}, 2, []float64{1, 0}},
		{"all infinite", []Neighbor{{Index: 0, Distance: inf}, {Index: 1, Distance: inf}}, 2, []float64{0.5, 0.5}},
	} {
		var got []Neighbor
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic %v", tc.name, p)
				}
			}()
			got = Nearest(tc.ns, tc.k)
		}()
		if len(got) != len(tc.weights) {
			t.Errorf("%s: %d neighbours, want %d", tc.name, len(got), len(tc.weights))
			continue
		}
		for i, w := range tc.weights {
			if got[i].Weight != w {
				t.Errorf("%s: neighbour %d: %+v, want weight %v", tc.name, i, got[i], w)
			}
		}
	}
}

// A reference of another length than the row panicked in Between; Match returns an error, so
// ColdStart does too.
func TestMatchReferenceLengths(t *testing.T) {
	call := func(f func() error) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return f()
	}
	for _, tc := range []struct {
		name string
		f    func() error
		want string
	}{
		{"Match", func() error {
			_, err := Match([]float64{1, 2}, [][]float64{{1, 2}, {1, 2, 3}}, Settings{})
			return err
		}, "reference 1 has length 3, the row 2"},
		{"ColdStart", func() error {
			_, err := ColdStart([]float64{1, 2}, [][]float64{{1}, {1, 2}}, Settings{})
			return err
		}, "reference 0 has length 1, the row 2"},
	} {
		if err := call(tc.f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
