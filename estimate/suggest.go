package estimate

import (
	"fmt"
	"math"
	"slices"

	"github.com/gavelkit/gavel/table"
)

// Reasons a measurement is suggested.
const (
	ReasonPacking     = "packing decision could flip"
	ReasonUncertain   = "estimate least certain"
	ReasonFeasibility = "feasibility in doubt"
	ReasonCoverage    = "job has few measurements"
)

// Measurement is one co-location measurement worth making: jobs Job and Partner together on
// WorkerType.
type Measurement struct {
	W, I, K int
	Score   float64
	Reason  string
}

// priorSpread is the log-rate uncertainty of an entry whose jobs have no measurement on its
// worker type; it shrinks as 1/sqrt(1+measurements) of each job.
const priorSpread = 0.5

// uncWeight weighs log-rate uncertainty against the flip probability; chosen on hold-out seeds
// 10-12 of the Gavel table.
const uncWeight = 3

// Suggest ranks the missing pairs of d (unordered, on every worker type) by how much measuring
// them is worth, given the estimate r, and returns the best budget of them. A pair's value is
// the probability that its packing decision (do the two normalized rates sum to more than 1?)
// is wrong under a normal error model, plus its log-rate uncertainty, plus how far its
// feasibility score is from certain. Ties go to the lower worker, job, partner index.
func Suggest(d *Data, r *Result, budget int) ([]Measurement, error) {
	if budget < 0 {
		return nil, fmt.Errorf("budget %d: must be 0 or more", budget)
	}
	W, n := len(d.Workers), len(d.Jobs)
	count := make([][]int, W) // measured entries per job and worker type
	for w := 0; w < W; w++ {
		count[w] = make([]int, n)
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				if d.State[w][i][k] != table.Missing {
					count[w][i]++
				}
			}
		}
	}
	var cands []Measurement
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for k := i; k < n; k++ {
				if d.State[w][i][k] != table.Missing && d.State[w][k][i] != table.Missing {
					continue
				}
				cands = append(cands, value(r, count, w, i, k))
			}
		}
	}
	slices.SortStableFunc(cands, func(a, b Measurement) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if budget < len(cands) {
		cands = cands[:budget]
	}
	return cands, nil
}

func value(r *Result, count [][]int, w, i, k int) Measurement {
	sp := func(a, b int) float64 {
		s := 0.0
		if r.Spread != nil {
			s = r.Spread[w][a][b]
		}
		prior := priorSpread * priorSpread * (1/float64(1+count[w][a]) + 1/float64(1+count[w][b]))
		return math.Sqrt(s*s + prior)
	}
	nik, nki := r.Norm[w][i][k], r.Norm[w][k][i]
	sik, ski := sp(i, k), sp(k, i)
	// Log-rate uncertainty σ turns into about n·σ on the rate.
	sigma := math.Hypot(nik*sik, nki*ski)
	flip := 2 * normalCDF(-math.Abs(nik+nki-1)/math.Max(sigma, 1e-9)) // 1 when on the line
	unc := (sik + ski) / 2
	feas := 0.0
	if r.InfeasibleScore != nil {
		feas = 1 - 2*math.Abs(math.Min(1, math.Max(0, r.InfeasibleScore[w][i][k]))-0.5)
	}
	m := Measurement{W: w, I: i, K: k, Score: flip + uncWeight*unc + feas}
	switch {
	case feas >= flip && feas >= unc:
		m.Reason = ReasonFeasibility
	case flip >= unc:
		m.Reason = ReasonPacking
	default:
		m.Reason = ReasonUncertain
	}
	return m
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// Active runs the active protocol: starting from partial, spend budget measurements from truth
// in batches and return the final partial block. The first CoverFraction of the budget goes to
// coverage (see [Cover]): every job gets measurements against well-measured partners, which is
// what the model needs to place it; the rest is spent in batches chosen by [Suggest] on the
// current estimate of method.
func Active(truth, partial *Data, method Method, budget, batches int) (*Data, error) {
	d := partial.Clone()
	if batches < 1 {
		batches = 1
	}
	cover := int(math.Round(coverFraction * float64(budget)))
	for _, m := range Cover(d, cover) {
		d.Reveal(truth, m.W, m.I, m.K)
	}
	left := budget - cover
	for b := 0; b < batches && left > 0; b++ {
		take := (left + (batches - b) - 1) / (batches - b)
		r, err := method.Estimate(d)
		if err != nil {
			return nil, err
		}
		ms, err := Suggest(d, r, take)
		if err != nil {
			return nil, err
		}
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			d.Reveal(truth, m.W, m.I, m.K)
		}
		left -= len(ms)
	}
	return d, nil
}

// coverFraction of an active budget goes to coverage first (chosen on seeds 10-12: 0.7 gave the
// best packing agreement, 1.0 the best MAPE).
const coverFraction = 0.7

// Cover picks budget measurements that spread knowledge evenly: repeatedly, the job with the
// fewest measured entries is measured next to the partner with the most, on the worker type
// where it has the fewest; ties go to the lower index.
func Cover(d *Data, budget int) []Measurement {
	W, n := len(d.Workers), len(d.Jobs)
	count := make([][]int, W)
	total := make([]int, n)
	for w := 0; w < W; w++ {
		count[w] = make([]int, n)
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				if d.State[w][i][k] != table.Missing {
					count[w][i]++
					total[i]++
				}
			}
		}
	}
	taken := map[[3]int]bool{}
	var out []Measurement
	for len(out) < budget {
		best := [3]int{-1, -1, -1}
		bestKey := [3]int{}
		for i := 0; i < n; i++ {
			for w := 0; w < W; w++ {
				for k := 0; k < n; k++ {
					if k == i || d.State[w][i][k] != table.Missing || taken[[3]int{w, min(i, k), max(i, k)}] {
						continue
					}
					// Smaller key is better: fewest for i overall, then on w, then most for k.
					key := [3]int{total[i], count[w][i], -count[w][k]}
					if best[0] < 0 || less3(key, bestKey) {
						best, bestKey = [3]int{w, i, k}, key
					}
				}
			}
		}
		if best[0] < 0 {
			break
		}
		w, i, k := best[0], best[1], best[2]
		taken[[3]int{w, min(i, k), max(i, k)}] = true
		out = append(out, Measurement{W: w, I: i, K: k, Reason: ReasonCoverage})
		for _, j := range []int{i, k} {
			count[w][j]++
			total[j]++
		}
	}
	return out
}

func less3(a, b [3]int) bool {
	for x := range a {
		if a[x] != b[x] {
			return a[x] < b[x]
		}
	}
	return false
}
