package estimate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gavelkit/gavel/completion"
	"github.com/gavelkit/gavel/fingerprint"
	"github.com/gavelkit/gavel/table"
	"gonum.org/v1/gonum/mat"
)

// Result is a method's estimate of every entry of a block. Measured entries of the input keep
// their values and states.
type Result struct {
	Norm       [][][]float64 // [w][i][k] estimated normalized rate of i next to k
	Infeasible [][][]bool    // [w][i][k] observed or predicted infeasible
	// Spread is an uncertainty for each entry in log-rate units (0 for measured entries); nil
	// when the method gives none.
	Spread [][][]float64
	// SumError is, per worker type, the cross-validated RMS error of a pair's predicted sum of
	// normalized rates (what the packing decision compares with 1); nil when not estimated.
	SumError []float64
	// EntryError is, per worker type, the cross-validated RMS error of an entry's log normalized
	// rate (entries whose true rate is above 0.05); nil when not estimated.
	EntryError []float64
	// InfeasibleScore is the feasibility model's score (about 0 feasible, 1 infeasible; 0.5 is
	// the decision threshold); nil when the method has none.
	InfeasibleScore [][][]float64
}

// newResult returns an all-zero, all-feasible estimate of d's shape.
func newResult(d *Data) *Result {
	W, n := len(d.Workers), len(d.Jobs)
	r := &Result{Norm: make([][][]float64, W), Infeasible: make([][][]bool, W)}
	for w := 0; w < W; w++ {
		r.Norm[w] = make([][]float64, n)
		r.Infeasible[w] = make([][]bool, n)
		for i := 0; i < n; i++ {
			r.Norm[w][i] = make([]float64, n)
			r.Infeasible[w][i] = make([]bool, n)
		}
	}
	return r
}

// keepMeasured overwrites r's entries that d knows.
func (r *Result) keepMeasured(d *Data) {
	for w := range d.State {
		for i := range d.State[w] {
			for k, s := range d.State[w][i] {
				switch s {
				case table.Measured:
					r.Norm[w][i][k] = d.Norm[w][i][k]
					r.Infeasible[w][i][k] = false
					if r.Spread != nil {
						r.Spread[w][i][k] = 0
					}
				case table.Infeasible:
					r.Infeasible[w][i][k] = true
					if r.Spread != nil {
						r.Spread[w][i][k] = 0
					}
				}
			}
		}
	}
}

// symmetricInfeasible makes every pair infeasible for both jobs when it is for either: the
// pair cannot share a GPU, whichever job's entry the method looked at.
func (r *Result) symmetricInfeasible() {
	for w := range r.Infeasible {
		for i := range r.Infeasible[w] {
			for k := i + 1; k < len(r.Infeasible[w]); k++ {
				inf := r.Infeasible[w][i][k] || r.Infeasible[w][k][i]
				r.Infeasible[w][i][k], r.Infeasible[w][k][i] = inf, inf
			}
		}
	}
}

// Method estimates the missing entries of a block.
type Method interface {
	Name() string // as in Evaluation.Methods, e.g. "ours"
	// Estimate returns an estimate of every entry of d, keeping d's known entries. It returns
	// ctx's error, and no estimate, once ctx is done (the fits check it every iteration).
	Estimate(ctx context.Context, d *Data) (*Result, error)
}

// PartnerMean is the baseline that predicts i's rate next to k on w as the mean rate of every
// job measured next to k on w (the partner's mean effect), or the mean of all measured entries
// on w when k has none (1/2 when w has none either), within [0.02, 1] as every method's
// estimates. Entry (i, k) is predicted infeasible when
// most of k's measured entries on w are (most of w's when k has none), and then so is (k, i): a
// pair is infeasible for both jobs or neither.
type PartnerMean struct{}

// Name returns "partner_mean".
func (PartnerMean) Name() string { return "partner_mean" }

// Estimate predicts every entry from its partner's measured entries on the worker type.
func (PartnerMean) Estimate(ctx context.Context, d *Data) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := d.checkMeasured(); err != nil {
		return nil, err
	}
	r := newResult(d)
	for w := range d.Workers {
		all, nall, infAll := 0.0, 0, 0
		for i := range d.Jobs {
			for k := range d.Jobs {
				switch d.State[w][i][k] {
				case table.Measured:
					all += d.Norm[w][i][k]
					nall++
				case table.Infeasible:
					infAll++
				}
			}
		}
		wmean := fallbackNorm // no feasible measured pair on w (see Pairwise.withoutRates)
		if nall > 0 {
			wmean = all / float64(nall)
		}
		for k := range d.Jobs {
			sum, n, inf := 0.0, 0, 0
			for i := range d.Jobs {
				switch d.State[w][i][k] {
				case table.Measured:
					sum += d.Norm[w][i][k]
					n++
				case table.Infeasible:
					inf++
				}
			}
			mean := wmean
			if n > 0 {
				mean = sum / float64(n)
			}
			if n == 0 && inf == 0 { // nothing known of k: w's majority
				n, inf = nall, infAll
			}
			for i := range d.Jobs {
				r.Norm[w][i][k] = clampNorm(mean) // as every other method's
				r.Infeasible[w][i][k] = inf > n
			}
		}
	}
	r.symmetricInfeasible()
	r.keepMeasured(d)
	return r, nil
}

// Gavel is Gavel's estimator (gavel-reference §6): for each job that is not a reference, complete
// the stacked matrix of reference rows plus its partial row by rank-10 ALS (μ = 0.01, no
// biases, standard-normal start), match it to the nearest reference by cosine distance, and
// use that reference's measured row: i's rate next to k is ref(i)'s rate next to ref(k). Its
// infeasible pairs are those whose reference pair is infeasible (Gavel stores them as rate 0).
// Measured entries are kept (Gavel too replaces an estimate once the pair has run). ALS stops as
// pmf_solve does: ‖X − X_prev‖_F/(m·n) < 1e-3, or 100 iterations.
type Gavel struct{ Seed uint64 }

// Name returns "gavel".
func (Gavel) Name() string { return "gavel" }

// Estimate matches every job that is not a reference to a reference and copies its row.
func (g Gavel) Estimate(ctx context.Context, d *Data) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(d.Workers) == 0 {
		// gonum has no empty matrix (it panicked), as in ALS.
		return nil, fmt.Errorf("%s: a block of %d job types on no worker type: nothing to complete", g.Name(), len(d.Jobs))
	}
	refs := d.References()
	if len(refs) == 0 {
		return nil, ErrNoReference
	}
	W, r := len(d.Workers), len(refs)
	isRef := make([]int, len(d.Jobs))
	for i := range isRef {
		isRef[i] = -1
	}
	refMat := mat.NewDense(r, W*r, nil)
	for a, i := range refs {
		isRef[i] = a
		for w := 0; w < W; w++ {
			for b, k := range refs {
				refMat.Set(a, w*r+b, d.Norm[w][i][k]) // infeasible: 0, as in Gavel
			}
		}
	}
	match := make([]int, len(d.Jobs)) // job → reference job index
	rng := rand.New(rand.NewPCG(g.Seed, 4))
	for i := range d.Jobs {
		if isRef[i] >= 0 {
			match[i] = i
			continue
		}
		row, err := g.completeRow(ctx, d, refs, refMat, i)
		if err != nil {
			return nil, err
		}
		best, ok := fingerprint.NearestCosine(row, refMat)
		if !ok {
			best = rng.IntN(r)
		}
		match[i] = refs[best]
	}
	res := newResult(d)
	for w := 0; w < W; w++ {
		for i := range d.Jobs {
			for k := range d.Jobs {
				a, b := match[i], match[k]
				res.Norm[w][i][k] = d.Norm[w][a][b]
				res.Infeasible[w][i][k] = d.State[w][a][b] == table.Infeasible
			}
		}
	}
	res.keepMeasured(d)
	return res, nil
}

// completeRow returns job i's row of rates next to the references (one column per worker type
// and reference), its missing entries completed, clamped to [0, 1], from the reference rows
// refMat stacked above it.
func (g Gavel) completeRow(ctx context.Context, d *Data, refs []int, refMat *mat.Dense, i int) ([]float64, error) {
	W, r := len(d.Workers), len(refs)
	a := mat.NewDense(r+1, W*r, nil)
	mask := mat.NewDense(r+1, W*r, nil)
	a.Slice(0, r, 0, W*r).(*mat.Dense).Copy(refMat)
	missing := false
	for x := 0; x < r; x++ {
		for c := 0; c < W*r; c++ {
			mask.Set(x, c, 1)
		}
	}
	for w := 0; w < W; w++ {
		for b, k := range refs {
			if s := d.State[w][i][k]; s != table.Missing {
				a.Set(r, w*r+b, d.Norm[w][i][k])
				mask.Set(r, w*r+b, 1)
			} else {
				missing = true
			}
		}
	}
	row := make([]float64, W*r)
	if !missing {
		mat.Row(row, r, a)
		return row, nil
	}
	m, err := completion.Fit(ctx, a, mask, completion.Settings{Rank: 10, Lambda: 1e-2, NoBias: true,
		Seed: g.Seed + uint64(i), InitScale: 1, MaxIter: 100, ChangeTol: 1e-3})
	if err != nil {
		return nil, err
	}
	for c := range row {
		if mask.At(r, c) != 0 {
			row[c] = a.At(r, c)
		} else {
			row[c] = math.Min(1, math.Max(0, m.At(r, c)))
		}
	}
	return row, nil
}
