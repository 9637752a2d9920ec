package completion

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// CVScore is the cross-validated error of one grid point.
type CVScore struct {
	Rank   int
	Lambda float64
	RMSE   float64 // root mean squared error on held-out observed entries
}

// CVGrid is the grid [CrossValidate] searches. The zero value of every field selects its default.
type CVGrid struct {
	Ranks   []int     // ranks tried; nil means 1, 2, 3, 5, 8
	Lambdas []float64 // regularizations tried; nil means 0.01, 0.1, 1
	Folds   int       // cross-validation folds; 0 means 5, otherwise at least 2
}

func (g CVGrid) withDefaults() CVGrid {
	if g.Ranks == nil {
		g.Ranks = []int{1, 2, 3, 5, 8}
	}
	if g.Lambdas == nil {
		g.Lambdas = []float64{0.01, 0.1, 1}
	}
	if g.Folds == 0 {
		g.Folds = 5
	}
	return g
}

// validate rejects a grid (defaults applied) that CrossValidate cannot search: fewer than 2
// folds (one fold leaves nothing to train on), an empty non-nil Ranks or Lambdas (nil selects
// the default; empty leaves no grid point), and grid points Fit cannot use or would not fit as
// written: a rank below 1 (a negative one panics in Fit, and 0 would silently fit the default
// rank 3) and a NaN or infinite lambda. It names each, with the error wrapping ErrBadSettings.
func (g CVGrid) validate() error {
	var bad []string
	if g.Folds < 2 {
		bad = append(bad, fmt.Sprintf("Folds %d: cross-validation needs at least 2 folds (0 selects 5)", g.Folds))
	}
	if len(g.Ranks) == 0 {
		bad = append(bad, "Ranks is empty (nil selects 1, 2, 3, 5, 8)")
	}
	if len(g.Lambdas) == 0 {
		bad = append(bad, "Lambdas is empty (nil selects 0.01, 0.1, 1)")
	}
	for _, k := range g.Ranks {
		if k < 1 {
			bad = append(bad, fmt.Sprintf("rank %d is below 1", k))
		}
	}
	for _, l := range g.Lambdas {
		bad = checkFinite(bad, "lambda", l)
	}
	return settingsError("cross-validation grid: ", bad)
}

// CrossValidate chooses Rank and Lambda from the grid by K-fold cross-validation over the
// observed entries of a. Entries are assigned to folds by a shuffle seeded with base.Seed. It
// returns base with the best Rank and Lambda, and every grid point's score. Ties go to the
// smaller rank, then the larger lambda (the simpler model). It checks ctx before every fold (and
// each fit checks it before every iteration); once ctx is done it returns an error wrapping
// ctx.Err(). Unusable base settings or grid points are an error wrapping [ErrBadSettings].
func CrossValidate(ctx context.Context, a, mask mat.Matrix, base Settings, g CVGrid) (Settings, []CVScore, error) {
	if err := base.validate(); err != nil {
		return base, nil, err
	}
	g = g.withDefaults()
	if err := g.validate(); err != nil {
		return base, nil, err
	}
	folds, ranks, lambdas := g.Folds, g.Ranks, g.Lambdas
	r, c := a.Dims()
	var obs [][2]int
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if mask.At(i, j) != 0 {
				obs = append(obs, [2]int{i, j})
			}
		}
	}
	if len(obs) < folds {
		return base, nil, fmt.Errorf("completion: %d observed entries are too few for %d folds (%w in some fold)", len(obs), folds, ErrNoObservations)
	}
	rng := rand.New(rand.NewPCG(base.Seed, 17))
	rng.Shuffle(len(obs), func(x, y int) { obs[x], obs[y] = obs[y], obs[x] })

	var scores []CVScore
	best := -1
	for _, k := range ranks {
		for _, l := range lambdas {
			s := base
			s.Rank, s.Lambda = k, l
			sse, n := 0.0, 0
			for f := 0; f < folds; f++ {
				if err := ctx.Err(); err != nil {
					return base, nil, fmt.Errorf("completion: cross-validation stopped at rank %d, lambda %g, fold %d of %d: %w", k, l, f+1, folds, err)
				}
				train := mat.DenseCopyOf(mask)
				for x := f; x < len(obs); x += folds {
					train.Set(obs[x][0], obs[x][1], 0)
				}
				m, err := Fit(ctx, a, train, s)
				if err != nil {
					return base, nil, err
				}
				for x := f; x < len(obs); x += folds {
					e := a.At(obs[x][0], obs[x][1]) - m.At(obs[x][0], obs[x][1])
					sse += e * e
					n++
				}
			}
			scores = append(scores, CVScore{Rank: k, Lambda: l, RMSE: math.Sqrt(sse / float64(n))})
			cur := len(scores) - 1
			if best < 0 || better(scores[cur], scores[best]) {
				best = cur
			}
		}
	}
	base.Rank, base.Lambda = scores[best].Rank, scores[best].Lambda
	return base, scores, nil
}

// better reports whether x beats y: lower RMSE (beyond rounding), then smaller rank, then
// larger lambda.
func better(x, y CVScore) bool {
	const eps = 1e-12
	switch {
	case x.RMSE < y.RMSE-eps:
		return true
	case x.RMSE > y.RMSE+eps:
		return false
	case x.Rank != y.Rank:
		return x.Rank < y.Rank
	}
	return x.Lambda > y.Lambda
}
