package fingerprint

import (
	"fmt"
	"math"
	"sort"
)

// Distance compares two fingerprints on the entries both have. NaN marks a missing entry, and so
// does ±Inf: an infinite rate is no measurement, and counted it would make every distance,
// weight and confidence NaN.
type Distance int

// observed reports whether a fingerprint entry counts: a finite number.
func observed(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// The distances.
const (
	Cosine     Distance = iota // 1 − cosine similarity, as Gavel
	MeanAbs                    // mean absolute difference
	MeanAbsLog                 // mean |log a − log b|: relative differences, scale-free
)

// String returns the distance's name: "cosine", "mean-abs" or "mean-abs-log".
func (d Distance) String() string {
	switch d {
	case Cosine:
		return "cosine"
	case MeanAbs:
		return "mean-abs"
	case MeanAbsLog:
		return "mean-abs-log"
	}
	return fmt.Sprintf("Distance(%d)", int(d))
}

// Between returns the distance over the entries observed (finite) in both a and b, and how many
// there were; NaN when there are none. A mean absolute difference beyond the largest float64
// (entries near ±1e308 of opposite signs) is math.MaxFloat64, so that the distance stays finite.
// It panics when a and b differ in length or d is none of the distances above.
func (d Distance) Between(a, b []float64) (float64, int) {
	if len(a) != len(b) {
		panic("fingerprint: vectors of different lengths")
	}
	var x, y []float64
	for i := range a {
		if observed(a[i]) && observed(b[i]) {
			x, y = append(x, a[i]), append(y, b[i])
		}
	}
	if len(x) == 0 {
		return math.NaN(), 0
	}
	switch d {
	case Cosine:
		return CosineDistance(x, y), len(x)
	case MeanAbs, MeanAbsLog:
		s := 0.0
		for i := range x {
			if d == MeanAbsLog {
				s += math.Abs(math.Log(math.Max(x[i], 1e-3)) - math.Log(math.Max(y[i], 1e-3)))
			} else {
				s += math.Abs(x[i] - y[i])
			}
		}
		mean := s / float64(len(x))
		if math.IsInf(mean, 0) { // only MeanAbs: |log ratio| ≤ log(MaxFloat64/1e-3) ≈ 717
			mean = meanAbsLarge(x, y)
		}
		return mean, len(x)
	}
	panic("fingerprint: unknown distance")
}

// meanAbsLarge is the mean absolute difference of x and y for Between when the plain sum
// overflowed: halves of finite numbers differ by at most the largest float64, and those
// differences divided by their count sum to about that at most, so only the final doubling can
// overflow, and a mean that large is clamped to math.MaxFloat64: an infinite distance would make
// a match's weights and confidence NaN. Between keeps the plain sum for every other input, whose
// rounding this would change.
func meanAbsLarge(x, y []float64) float64 {
	n := float64(len(x))
	s := 0.0
	for i := range x {
		s += math.Abs(x[i]/2-y[i]/2) / n
	}
	return math.Min(2*s, math.MaxFloat64)
}

// Neighbor is one matched reference.
type Neighbor struct {
	Index    int     // row of the reference
	Distance float64 // under the chosen Distance
	Weight   float64 // inverse-distance weight; the weights of a match sum to 1
}

// Result is the outcome of [Match].
type Result struct {
	Neighbors []Neighbor // nearest first; ties by index
	// Confidence in [0, 1]: high when the nearest reference is clearly closer than the next and
	// the match rests on many observed entries. It is c·n/(n+4), where n is the number of entries
	// compared and c is 1 − d₁/d₂ for the two smallest distances d₁ ≤ d₂ (0 when both are 0),
	// or, with a single reference, 1 at distance 0 and 1/2 farther.
	Confidence float64
	Compared   int // observed entries compared with the nearest reference
}

// Predict returns the neighbours' weighted average of entry j of the references observed there
// (finite); NaN when none is.
func (r Result) Predict(refs [][]float64, j int) float64 {
	s, w := 0.0, 0.0
	for _, n := range r.Neighbors {
		if v := refs[n.Index][j]; observed(v) {
			s += n.Weight * v
			w += n.Weight
		}
	}
	if w == 0 {
		return math.NaN()
	}
	return s / w
}

// Settings configures [Match] and [ColdStart]. The zero value of every field selects its default.
type Settings struct {
	K int // neighbours returned; 0 means 3
	// Distance compares fingerprints in Match; the zero value is Cosine, Gavel's choice.
	// ColdStart has a distance of its own and ignores it.
	Distance Distance
}

func (s Settings) k() (int, error) {
	switch {
	case s.K == 0:
		return 3, nil
	case s.K < 0:
		return 0, fmt.Errorf("fingerprint: K = %d, want at least 1 (or 0 for the default)", s.K)
	}
	return s.K, nil
}

// Match finds the s.K nearest references (rows of refs) to the partial fingerprint row under
// s.Distance, using only entries observed in both (finite: NaN and ±Inf are missing). Weights are
// proportional to 1/(distance + eps) with eps = 1e-3. It returns an error when a reference has a
// length other than row's, naming the first such, or when no reference shares an observed entry
// with row.
func Match(row []float64, refs [][]float64, s Settings) (Result, error) {
	k, err := s.k()
	if err != nil {
		return Result{}, err
	}
	d := s.Distance
	if d < Cosine || d > MeanAbsLog {
		return Result{}, fmt.Errorf("fingerprint: unknown distance %v", d)
	}
	for i, ref := range refs {
		if len(ref) != len(row) {
			return Result{}, fmt.Errorf("fingerprint: reference %d has length %d, the row %d", i, len(ref), len(row))
		}
	}
	var ns []Neighbor
	compared := map[int]int{}
	shared := false
	for i, ref := range refs {
		dist, n := d.Between(row, ref)
		shared = shared || n > 0
		if math.IsNaN(dist) {
			continue
		}
		ns = append(ns, Neighbor{Index: i, Distance: dist})
		compared[i] = n
	}
	if len(ns) == 0 {
		if shared { // only a cosine distance is undefined on shared entries
			return Result{}, fmt.Errorf("fingerprint: on the entries each reference shares with the row, one of the two is all 0, and a cosine distance needs a direction")
		}
		return Result{}, fmt.Errorf("fingerprint: no reference shares an observed entry with the row")
	}
	sort.SliceStable(ns, func(a, b int) bool { return ns[a].Distance < ns[b].Distance })
	res := Result{Compared: compared[ns[0].Index]}
	switch {
	case len(ns) == 1:
		res.Confidence = 1
		if ns[0].Distance > 0 {
			res.Confidence = 0.5
		}
	case ns[1].Distance > 0:
		res.Confidence = 1 - ns[0].Distance/ns[1].Distance
	}
	nc := float64(res.Compared)
	res.Confidence *= nc / (nc + 4)
	res.Neighbors = Nearest(ns, k)
	return res, nil
}

// Nearest sorts ns by distance (stably: ties keep their order), keeps the k closest (none when
// k ≤ 0) and weighs them in proportion to 1/(distance + 0.001), normalized to sum to 1: a
// reference at distance 0 dominates without an infinite weight. Distances must be at least 0
// (not NaN). One of +Inf weighs 0, and when every one kept is +Inf they weigh alike, as nothing
// tells them apart (the proportional weights would be 0/0).
func Nearest(ns []Neighbor, k int) []Neighbor {
	sort.SliceStable(ns, func(a, b int) bool { return ns[a].Distance < ns[b].Distance })
	ns = ns[:max(0, min(k, len(ns)))]
	total := 0.0
	for i := range ns {
		ns[i].Weight = 1 / (ns[i].Distance + 1e-3)
		total += ns[i].Weight
	}
	for i := range ns {
		if total == 0 {
			ns[i].Weight = 1 / float64(len(ns))
		} else {
			ns[i].Weight /= total
		}
	}
	return ns
}

// ColdStart matches a job that has no co-location measurement yet from its isolated rates
// alone (one per worker type, same order as each reference's) to its s.K nearest references:
// the distance is the mean absolute difference of log rates after removing each vector's mean
// (s.Distance is not used), so it compares how a job's speed varies across worker types rather
// than its absolute speed. A rate that is not a positive finite number is missing. Its errors
// are Match's.
func ColdStart(isolated []float64, refIsolated [][]float64, s Settings) (Result, error) {
	center := func(x []float64) []float64 {
		out := make([]float64, len(x))
		m, n := 0.0, 0
		for i, v := range x {
			if v > 0 && observed(v) {
				out[i] = math.Log(v)
				m += out[i]
				n++
			} else {
				out[i] = math.NaN()
			}
		}
		for i := range out {
			out[i] -= m / float64(max(n, 1))
		}
		return out
	}
	row := center(isolated)
	refs := make([][]float64, len(refIsolated))
	for i, r := range refIsolated {
		refs[i] = center(r)
	}
	return Match(row, refs, Settings{K: s.K, Distance: MeanAbs})
}
