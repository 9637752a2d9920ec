package policy

import (
	"context"
	"math"
)

// isolatedFractions is Gavel's Isolated allocation (§2.4): x_iw = (n_w/m)/sf_i,
// each row divided by max(row sum, 1), except that x_iw = 0 where the job
// cannot run. Over combinations (pairs get 0).
func isolatedFractions(in *instance) [][]float64 {
	x := make([][]float64, len(in.combos))
	m := float64(in.m())
	for c := range in.combos {
		x[c] = make([]float64, in.nw())
		if in.combos[c].pair() {
			continue
		}
		sum := 0.0
		for w := range in.workers {
			if in.rate[c][w] > 0 {
				x[c][w] = in.cap[w] / m / in.sf(c)
				sum += x[c][w]
			}
		}
		if sum > 1 {
			for w := range x[c] {
				x[c][w] /= sum
			}
		}
	}
	return x
}

// isolated gives every job an equal 1/m share of every worker type (the
// reference of finish-time fairness). Objective: min_i sf_i·Σ_w x_iw, the
// smallest GPU-time share.
func isolated(ctx context.Context, p *Problem, opt *options) (*Allocation, error) {
	in, err := newInstance(p)
	if err != nil || in.m() == 0 {
		return orEmpty(err)
	}
	x := isolatedFractions(in)
	a := in.allocation(x)
	a.Objective = minShare(in, x)
	a.ObjectiveMeaning = minShareMeaning
	return a, nil
}

// proportional gives every job the fraction n_w/N of every worker type, as
// Gavel's ProportionalPolicy does, scaled by min(1, N/Σ_i sf_i) so that the
// cluster is never oversubscribed (Gavel's is when Σ sf > N). x_iw = 0 where
// the job cannot run. Objective: min_i sf_i·Σ_w x_iw.
func proportional(ctx context.Context, p *Problem, opt *options) (*Allocation, error) {
	in, err := newInstance(p)
	if err != nil || in.m() == 0 {
		return orEmpty(err)
	}
	sumSF := 0.0
	for i := range in.jobs {
		sumSF += in.sf(i)
	}
	scale := math.Min(1, in.total/sumSF)
	x := make([][]float64, len(in.combos))
	for c := range in.combos {
		x[c] = make([]float64, in.nw())
		for w := range in.workers {
			if in.rate[c][w] > 0 {
				x[c][w] = in.cap[w] / in.total * scale
			}
		}
	}
	a := in.allocation(x)
	a.Objective = minShare(in, x)
	a.ObjectiveMeaning = minShareMeaning
	return a, nil
}

// minShareMeaning describes minShare.
const minShareMeaning = "min over jobs of scale_factor·time_share (GPU time)"

// minShare returns the smallest GPU time share, min_i sf_i·Σ_w x_iw, which
// Gavel's test_isolated compares with agnostic LAS's optimum (§9.1).
func minShare(in *instance, x [][]float64) float64 {
	best := math.Inf(1)
	for i := range in.jobs {
		s := 0.0
		for _, v := range x[i] {
			s += v
		}
		best = math.Min(best, s*in.sf(i))
	}
	return best
}
