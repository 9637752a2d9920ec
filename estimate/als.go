package estimate

import (
	"context"
	"fmt"
	"math"

	"github.com/gavelkit/gavel/completion"
	"github.com/gavelkit/gavel/table"
	"gonum.org/v1/gonum/mat"
)

// ALS completes Gavel's matrix layout directly: rows are job types, columns (worker type,
// partner) pairs, entries the job's normalized co-located rate (or, with Raw, its raw rate),
// by completion.Complete with rank and regularization chosen by 5-fold cross-validation over
// the measured entries (fixed when there are fewer than 5, see settings). Infeasible entries are their own class (see completion.Complete).
// It is the "per-column factors" family that the pairwise model is compared against.
type ALS struct {
	Raw  bool
	Seed uint64
}

// Name returns "als", or "als_raw" with Raw.
func (a ALS) Name() string {
	if a.Raw {
		return "als_raw"
	}
	return "als"
}

// Estimate completes the matrix and reads the block's entries back from it.
func (a ALS) Estimate(ctx context.Context, d *Data) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	W, n := len(d.Workers), len(d.Jobs)
	if W == 0 || n == 0 {
		// gonum has no empty matrix (it panicked).
		return nil, fmt.Errorf("%s: a block of %d job types on %d worker types: nothing to complete", a.Name(), n, W)
	}
	m, cells, mask := a.layout(d)
	if mat.Sum(mask) == 0 {
		return noRates(d), nil // nothing to complete from (see noRates)
	}
	s, err := a.settings(ctx, m, mask)
	if err != nil {
		return nil, err
	}
	res, err := completion.Complete(ctx, m, cells, s)
	if err != nil {
		return nil, err
	}
	r := newResult(d)
	if res.InfeasibleScore != nil {
		r.InfeasibleScore = grid3(W, n)
	}
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				if r.InfeasibleScore != nil {
					r.InfeasibleScore[w][i][k] = res.InfeasibleScore.At(i, w*n+k)
				}
				v := res.Values.At(i, w*n+k)
				if a.Raw {
					v /= d.Iso[w][i]
				}
				r.Norm[w][i][k] = clampNorm(v)
				if math.IsNaN(v) {
					r.Norm[w][i][k] = floorNorm
				}
				r.Infeasible[w][i][k] = res.Infeasible[i][w*n+k]
			}
		}
	}
	r.symmetricInfeasible()
	r.keepMeasured(d)
	return r, nil
}

// alsFolds is the number of cross-validation folds ALS chooses its rank and regularization by.
const alsFolds = 5

// settings chooses the completion's rank and regularization by cross-validation over the
// measured entries. With fewer of them than folds (a table of 2 or 3 job types with one
// reference) some fold would hold nothing out, so it takes the simplest point of the grid, rank
// 1 with λ = 1 (the one cross-validation prefers on ties): too few entries to support more.
func (a ALS) settings(ctx context.Context, m, mask *mat.Dense) (completion.Settings, error) {
	base := completion.Settings{Seed: a.Seed, MaxIter: 100, Tol: 1e-5}
	if mat.Sum(mask) < alsFolds {
		base.Rank, base.Lambda = 1, 1
		return base, nil
	}
	s, _, err := completion.CrossValidate(ctx, m, mask, base,
		completion.CVGrid{Ranks: []int{1, 2, 3, 5, 8}, Lambdas: []float64{0.01, 0.1, 1}, Folds: alsFolds})
	return s, err
}

// layout returns Gavel's job × (worker type, partner) matrix of d's measured rates, each cell's
// class, and the mask of Known cells.
func (a ALS) layout(d *Data) (*mat.Dense, [][]completion.Cell, *mat.Dense) {
	W, n := len(d.Workers), len(d.Jobs)
	m := mat.NewDense(n, W*n, nil)
	cells := make([][]completion.Cell, n)
	for i := 0; i < n; i++ {
		cells[i] = make([]completion.Cell, W*n)
		for w := 0; w < W; w++ {
			for k := 0; k < n; k++ {
				c := w*n + k
				switch d.State[w][i][k] {
				case table.Measured:
					v := d.Norm[w][i][k]
					if a.Raw {
						v *= d.Iso[w][i]
					}
					m.Set(i, c, v)
					cells[i][c] = completion.Known
				case table.Infeasible:
					cells[i][c] = completion.Infeasible
				}
			}
		}
	}
	mask := mat.NewDense(n, W*n, nil)
	for i := range cells {
		for c, s := range cells[i] {
			if s == completion.Known {
				mask.Set(i, c, 1)
			}
		}
	}
	return m, cells, mask
}
