package completion

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// plantedFit is a threshold structure: job i and k do not fit on worker type w when
// size[i] + size[k] > capacity[w], and job i alone does not when size[i] > capacity[w].
type plantedFit struct {
	size, capacity []float64
}

func (p plantedFit) infeasible(w, i, k int) bool {
	s := p.size[i]
	if k != Alone {
		s += p.size[k]
	}
	return s > p.capacity[w]
}

// margin is how far the pair's total is from the capacity, in size units.
func (p plantedFit) margin(w, i, k int) float64 {
	s := p.size[i]
	if k != Alone {
		s += p.size[k]
	}
	return math.Abs(s - p.capacity[w])
}

// TestFitFootprintsRecoversPlanted fits the threshold model to part of a planted structure and
// checks every pair it did not see whose total is at least 1.5 size units from the capacity.
// Sizes are integers and the references take every size from 1 to 10, so a job measured with
// all of them on a worker type has its size pinned to within half a unit either way: a pair of
// two such jobs is decided by the observations when its margin is over 1.
func TestFitFootprintsRecoversPlanted(t *testing.T) {
	// Capacities are deliberately not in worker order, and worker type 2 holds everything
	// but the two largest jobs together.
	planted := plantedFit{
		size:     []float64{4, 9, 1, 7, 2, 10, 5, 3, 8, 6, 3, 8, 5, 10, 6, 2, 7, 9},
		capacity: []float64{12.5, 9.5, 14.5},
	}
	const refs = 10 // jobs 0-9 are measured with each other everywhere
	n, W := len(planted.size), len(planted.capacity)
	cases := []struct {
		name string
		// seen says whether pair (w, i, k), i < k, job k not a reference, is observed.
		seen  func(w, i, k int) bool
		alone bool
	}{
		{"every reference pair on every worker type", func(w, i, k int) bool { return i < refs }, false},
		// Each other job is missing on one worker type, so its size there comes from the size
		// shared across worker types.
		{"references on two worker types each", func(w, i, k int) bool { return i < refs && w != k%W }, false},
		{"two worker types each, with alone outcomes", func(w, i, k int) bool { return i < refs && w != k%W }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var obs []FeasObs
			seen := map[[3]int]bool{}
			for w := 0; w < W; w++ {
				for i := 0; i < n; i++ {
					for k := i; k < n; k++ {
						if k < refs || c.seen(w, i, k) {
							obs = append(obs, FeasObs{W: w, I: i, K: k, Infeasible: planted.infeasible(w, i, k)})
							seen[[3]int{w, i, k}] = true
						}
					}
					if c.alone {
						obs = append(obs, FeasObs{W: w, I: i, K: Alone, Infeasible: planted.infeasible(w, i, Alone)})
					}
				}
			}
			m, err := FitFootprints(t.Context(), obs, W, n, nil, FootprintSettings{LambdaSize: 0.01, LambdaDev: 10})
			if err != nil {
				t.Fatal(err)
			}
			if m.Status != Converged {
				t.Fatalf("status %v after %d iterations", m.Status, m.Iterations)
			}
			checked := 0
			for w := 0; w < W; w++ {
				for i := 0; i < n; i++ {
					for k := i; k < n; k++ {
						if seen[[3]int{w, i, k}] || planted.margin(w, i, k) < 1.5 {
							continue
						}
						checked++
						if got, want := m.Prob(w, i, k) >= 0.5, planted.infeasible(w, i, k); got != want {
							t.Errorf("worker %d jobs %d+%d (sizes %v+%v, capacity %v): predicted infeasible %v (p %.2f)",
								w, i, k, planted.size[i], planted.size[k], planted.capacity[w], got, m.Prob(w, i, k))
						}
						if math.Abs(m.Prob(w, i, k)-m.Prob(w, k, i)) > 1e-12 {
							t.Errorf("worker %d jobs %d, %d: not symmetric", w, i, k)
						}
					}
				}
			}
			if checked < 40 {
				t.Fatalf("only %d unseen pairs checked", checked)
			}
		})
	}
}

// TestFitFootprintsAlone: a job seen not to fit alone on a worker type, and never paired there,
// is predicted not to fit with anyone there, while it still fits with small jobs elsewhere.
func TestFitFootprintsAlone(t *testing.T) {
	planted := plantedFit{size: []float64{1, 2, 3, 4, 6}, capacity: []float64{8.5, 5.5}}
	big := 4
	var obs []FeasObs
	for w := range planted.capacity {
		for i := range planted.size {
			obs = append(obs, FeasObs{W: w, I: i, K: Alone, Infeasible: planted.infeasible(w, i, Alone)})
			for k := i; k < len(planted.size); k++ {
				if w == 1 && k == big {
					continue
				}
				obs = append(obs, FeasObs{W: w, I: i, K: k, Infeasible: planted.infeasible(w, i, k)})
			}
		}
	}
	m, err := FitFootprints(t.Context(), obs, 2, len(planted.size), nil, FootprintSettings{LambdaSize: 0.01, LambdaDev: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := range planted.size {
		if p := m.Prob(1, i, big); p < 0.5 {
			t.Errorf("worker 1: job %d with the job too large to run alone: p %.2f, want infeasible", i, p)
		}
	}
	if p := m.Prob(0, 0, big); p >= 0.5 {
		t.Errorf("worker 0: smallest job with the large one: p %.2f, want feasible", p)
	}
}

func TestFitFootprintsErrors(t *testing.T) {
	if _, err := FitFootprints(t.Context(), nil, 1, 1, nil, FootprintSettings{}); !errors.Is(err, ErrNoObservations) {
		t.Errorf("no observations: %v, want ErrNoObservations", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("job out of range: no panic")
		}
	}()
	_, _ = FitFootprints(t.Context(), []FeasObs{{W: 0, I: 2, K: 0}}, 1, 2, nil, FootprintSettings{})
}

// Fits that cannot move used to end at once, with the all-zero start and a nil error, marked
// converged: the conjugate-gradient step was NaN (0/0 on a parameter with a zero Hessian row)
// or zero (sums past float64's range), so no step was accepted. A feature weight with its
// penalty off and a feature that is 0 for every job observed on its worker type appears in the
// rows but not in the likelihood: no value of it is better than another, an error naming it, as
// for a parameter of a job never observed. Overflowing sums are an error too. With the penalty
// on, the same feature is fitted (its weight stays 0).
func TestFitFootprintsRejectsUndeterminedFits(t *testing.T) {
	obs := thresholdObs()
	features := func(v func(i, f int) float64) *mat.Dense {
		x := mat.NewDense(8, 2, nil)
		for i := 0; i < 8; i++ {
			for f := 0; f < 2; f++ {
				x.Set(i, f, v(i, f))
			}
		}
		return x
	}
	zeroSecond := features(func(i, f int) float64 { return float64((1 - f) * i) })
	onlyLast := features(func(i, f int) float64 {
		if i == 7 {
			return 1
		}
		return 0
	})
	var notLastOn1 []FeasObs // job 7 not observed on worker type 1
	for _, o := range obs {
		if o.W != 1 || (o.I != 7 && o.K != 7) {
			notLastOn1 = append(notLastOn1, o)
		}
	}
	huge := features(func(i, f int) float64 { return 1e300 * float64(i) })
	for _, tc := range []struct {
		name string
		obs  []FeasObs
		x    *mat.Dense
		s    FootprintSettings
		want string // "" for a fit
	}{
		{"zero feature, no penalty", obs, zeroSecond, FootprintSettings{LambdaFeature: -1}, "the weight of feature 1 on worker type 0 has neither data nor penalty"},
		{"feature 0 where observed on a worker type, no penalty", notLastOn1, onlyLast, FootprintSettings{LambdaFeature: -1}, "the weight of feature 0 on worker type 1 has neither data nor penalty"},
		{"zero feature, penalty", obs, zeroSecond, FootprintSettings{}, ""},
		{"features near float64's range", obs, huge, FootprintSettings{}, "features or InfeasibleWeight too large for float64"},
		{"InfeasibleWeight near float64's range", obs, nil, FootprintSettings{InfeasibleWeight: 1e308}, "features or InfeasibleWeight too large for float64"},
	} {
		m, err := FitFootprints(t.Context(), tc.obs, 2, 8, tc.x, tc.s)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if m.Status != Converged || m.Size[7] <= m.Size[0] || m.Beta[0][1] != 0 || m.Beta[1][1] != 0 {
			t.Errorf("%s: %v, sizes %.3g, feature weights %v: want converged, job 7 larger than job 0 and zero weights on the zero feature", tc.name, m.Status, m.Size, m.Beta)
		}
	}
}

// With every penalty off, outcomes that a threshold separates exactly drive logits past ±37,
// where q(1−q) is exactly 0 in float64: a parameter whose rows all saturate has no curvature,
// and the Hessian no curvature along some directions. Either used to make the Newton step NaN
// (0/0 in the preconditioner, or in the conjugate-gradient step length); the fit must end
// without error, every outcome predicted and every parameter finite.
func TestFitFootprintsSeparableWithoutPenalties(t *testing.T) {
	alone := []FeasObs{{W: 0, I: 0, K: Alone, Infeasible: true}, {W: 0, I: 1, K: Alone}}
	for _, tc := range []struct {
		name    string
		obs     []FeasObs
		W, jobs int
		s       FootprintSettings
	}{
		{"two jobs alone", alone, 1, 2, FootprintSettings{LambdaSize: -1, LambdaDev: -1, LambdaCapacity: -1}},
		{"threshold pairs, deviations penalized", thresholdObs(), 2, 8, FootprintSettings{LambdaSize: -1, LambdaCapacity: -1}},
	} {
		m, err := FitFootprints(t.Context(), tc.obs, tc.W, tc.jobs, nil, tc.s)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for _, o := range tc.obs {
			if p := m.Prob(o.W, o.I, o.K); (p > 0.5) != o.Infeasible || math.IsNaN(p) {
				t.Errorf("%s: %+v: p %v", tc.name, o, p)
			}
		}
		for _, v := range append(append([]float64(nil), m.Size...), m.Capacity...) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("%s: sizes %v, capacities %v: want finite", tc.name, m.Size, m.Capacity)
				break
			}
		}
	}
}

// A parameter without penalty whose rows all have q exactly 1 (logits past 37) has no
// curvature. Its preconditioner entry was 0, which made the Newton step 0/0 = NaN; a solve that
// merely stopped there would return a zero step, and the fit would end as converged with every
// other parameter still to move. The step must leave that parameter alone and move the others.
func TestNewtonStepSkipsParameterWithoutCurvature(t *testing.T) {
	obs := thresholdObs() // worker types 0 and 1
	for i := 0; i < 8; i++ {
		obs = append(obs, FeasObs{W: 2, I: i, K: Alone, Infeasible: true}) // nothing fits on 2
	}
	const W, n = 3, 8
	m := &FootprintModel{Workers: W, Jobs: n, Capacity: make([]float64, W), Size: make([]float64, n), Dev: grid(n, W), Beta: grid(W, 0), X: grid(n, 0)}
	p := footprintProblem{m: m, obs: obs, s: FootprintSettings{LambdaCapacity: -1}.withDefaults()}
	rows := make([]sparseRow, len(obs))
	for x, o := range obs {
		rows[x] = p.design(o)
	}
	theta := make([]float64, p.size())
	theta[2] = -100 // capacity of worker type 2: every logit there is about 100, q exactly 1
	step, err := p.newtonStep(t.Context(), rows, theta, p.penalty())
	if err != nil {
		t.Fatal(err)
	}
	others := 0.0
	for j, v := range step {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("step %v for the %s", v, p.paramName(j))
		}
		if j != 2 {
			others = math.Max(others, math.Abs(v))
		}
	}
	if step[2] != 0 || others < 0.1 {
		t.Errorf("step %v on the saturated capacity and at most %v on the others: want 0 and a step", step[2], others)
	}
}
