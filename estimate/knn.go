package estimate

import (
	"context"
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

// Name returns "neighbors".
func (Neighbors) Name() string { return "neighbors" }

// Estimate matches every job to its nearest references and mixes their rates.
func (nb Neighbors) Estimate(ctx context.Context, d *Data) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := d.checkMeasured(); err != nil {
		return nil, err
	}
	refs := d.References()
	if len(refs) == 0 {
		return nil, ErrNoReference
	}
	weights, err := nb.match(d, refs)
	if err != nil {
		return nil, err
	}
	refLog := referenceLogs(d, refs)
	W, n := len(d.Workers), len(d.Jobs)
	r := newResult(d)
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			if i%64 == 0 && ctx.Err() != nil { // 0.2 s at 1,000 job types a worker type
				return nil, ctx.Err()
			}
			for k := 0; k < n; k++ {
				s, tw := 0.0, 0.0
				for _, na := range weights[i] {
					row := refLog[w][na.Index]
					for _, nk := range weights[k] {
						v := row[nk.Index]
						if math.IsNaN(v) {
							continue
						}
						wt := na.Weight * nk.Weight
						s += wt * v
						tw += wt
					}
				}
				if tw > 0 {
					r.Norm[w][i][k] = clampNorm(math.Exp(s / tw))
				} else {
					r.Norm[w][i][k] = floorNorm
					r.Infeasible[w][i][k] = true
				}
			}
		}
	}
	r.keepMeasured(d)
	return r, nil
}

// match returns each job's neighbours among refs (indices into refs, with weights): a
// reference is its own single neighbour; any other job is matched by its fingerprint, or by
// its isolated rates when it has no measurement against a reference.
func (nb Neighbors) match(d *Data, refs []int) ([][]fingerprint.Neighbor, error) {
	fs := fingerprint.Settings{K: nb.K, Distance: nb.Distance}
	W, n, R := len(d.Workers), len(d.Jobs), len(refs)
	isRef := make([]int, n)
	for i := range isRef {
		isRef[i] = -1
	}
	for a, i := range refs {
		isRef[i] = a
	}
	refRows := make([][]float64, R)
	refIso := make([][]float64, R)
	for a, r := range refs {
		refRows[a] = fingerprintRow(d, refs, r)
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
		res, err := fingerprint.Match(fingerprintRow(d, refs, i), refRows, fs)
		if err != nil {
			iso := make([]float64, W)
			for w := 0; w < W; w++ {
				iso[w] = d.Iso[w][i]
			}
			if res, err = fingerprint.ColdStart(iso, refIso, fs); err != nil {
				return nil, err
			}
		}
		weights[i] = res.Neighbors
	}
	return weights, nil
}

// fingerprintRow is job i's normalized rates with each reference, as the job that suffers and
// as the partner, on every worker type (floored at floorNorm); NaN where not measured.
func fingerprintRow(d *Data, refs []int, i int) []float64 {
	row := make([]float64, 0, 2*len(d.Workers)*len(refs))
	entry := func(w, i, k int) float64 {
		if d.State[w][i][k] != table.Measured {
			return math.NaN()
		}
		return math.Max(d.Norm[w][i][k], floorNorm)
	}
	for w := range d.Workers {
		for _, r := range refs {
			row = append(row, entry(w, i, r), entry(w, r, i))
		}
	}
	return row
}

// referenceLogs returns the logs of the references' measured rates with each other,
// [w][a][b] for refs[a] next to refs[b]; NaN where not measured (infeasible).
func referenceLogs(d *Data, refs []int) [][][]float64 {
	R := len(refs)
	refLog := make([][][]float64, len(d.Workers))
	for w := range d.Workers {
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
	return refLog
}
