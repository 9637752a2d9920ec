package completion

import (
	"errors"
	"math"
	"testing"
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
