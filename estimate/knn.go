package estimate

import (
	"math"

	"github.com/gavelkit/gavel/fingerprint"
	"github.com/gavelkit/gavel/table"
)

// Neighbors estimates each job as a weighted mix of its nearest reference jobs: a job's
// fingerprint is its measured normalized rates with references (as the job that suffers and as
// the partner, on every worker type), matched with fingerprint.Match (under Distance) to the
// references' rows, K nearest with inverse-distance weights. i's rate next to k is then
// Σ_a Σ_b w_ia·w_kb·(a's rate next to b), in log space. A job with no measurement against a
// reference is matched by its isolated rates (fingerprint.ColdStart). References are
// themselves with weight 1. Infeasible entries of references are skipped in the mix.
type Neighbors struct {
	K        int                  // neighbours; 0 means 3
	Distance fingerprint.Distance // zero value is Cosine; DefaultMethods and ours use MeanAbsLog
}

func (Neighbors) Name() string { return "neighbors" }

func (nb Neighbors) Estimate(d *Data) (*Result, error) {
	k := nb.K
	if k == 0 {
		k = 3
	}
	refs := d.References()
	if len(refs) == 0 {
		return nil, ErrNoReference
	}
	W, n, R := len(d.Workers), len(d.Jobs), len(refs)
	isRef := make([]int, n)
	for i := range isRef {
		isRef[i] = -1
	}
	for a, i := range refs {
		isRef[i] = a
	}
	logv := func(w, i, k int) float64 {
		if d.State[w][i][k] != table.Measured {
			return math.NaN()
		}
		return math.Max(d.Norm[w][i][k], floorNorm)
	}
	fp := func(i int) []float64 {
		row := make([]float64, 0, 2*W*R)
		for w := 0; w < W; w++ {
			for _, r := range refs {
				row = append(row, logv(w, i, r), logv(w, r, i))
			}
		}
		return row
	}
	refRows := make([][]float64, R)
	refIso := make([][]float64, R)
	for a, r := range refs {
		refRows[a] = fp(r)
		refIso[a] = make([]float64, W)
		for w := 0; w < W; w++ {
			refIso[a][w] = d.Iso[w][r]
		}
	}
	weights := make([][]fingerprint.Neighbor, n)
	for i := 0; i < n; i++ {
		if a := isRef[i]; a >= 0 {
			weights[i] = []fingerprint.Neighbor{{Index: a, Weight: 1}}
			continue
		}
		res, err := fingerprint.Match(fp(i), refRows, k, nb.Distance)
		if err != nil {
			iso := make([]float64, W)
			for w := 0; w < W; w++ {
				iso[w] = d.Iso[w][i]
			}
			if res, err = fingerprint.ColdStart(iso, refIso, k); err != nil {
				return nil, err
			}
		}
		weights[i] = res.Neighbors
	}
	// Logs of the references' rates, once; NaN where infeasible.
	refLog := make([][][]float64, W)
	for w := 0; w < W; w++ {
		refLog[w] = make([][]float64, R)
		for a, ra := range refs {
			refLog[w][a] = make([]float64, R)
			for b, rb := range refs {
				refLog[w][a][b] = math.NaN()
				if d.State[w][ra][rb] == table.Measured {
					refLog[w][a][b] = math.Log(math.Max(d.Norm[w][ra][rb], floorNorm))
				}
			}
		}
	}
	r := newResult(d)
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for kk := 0; kk < n; kk++ {
				s, tw := 0.0, 0.0
				for _, na := range weights[i] {
					row := refLog[w][na.Index]
					for _, nbb := range weights[kk] {
						v := row[nbb.Index]
						if math.IsNaN(v) {
							continue
						}
						wt := na.Weight * nbb.Weight
						s += wt * v
						tw += wt
					}
				}
				if tw > 0 {
					r.Norm[w][i][kk] = clampNorm(math.Exp(s / tw))
				} else {
					r.Norm[w][i][kk] = floorNorm
					r.Infeasible[w][i][kk] = true
				}
			}
		}
	}
	r.keepMeasured(d)
	return r, nil
}
