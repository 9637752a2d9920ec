package estimate

import (
	"github.com/gavelkit/gavel/completion"
	"gonum.org/v1/gonum/mat"
)

// predictInfeasible fits the infeasibility model to ind (when any measurement is infeasible)
// and sets r's InfeasibleScore and Infeasible for every pair.
func (p Pairwise) predictInfeasible(d *Data, ind []completion.PairObs, x *mat.Dense, r *Result) error {
	any := false
	for _, o := range ind {
		if o.Y == 1 {
			any = true
			break
		}
	}
	if !any {
		return nil
	}
	W, n := len(d.Workers), len(d.Jobs)
	r.InfeasibleScore = grid3(W, n)
	im, err := completion.FitPairs(ind, W, n, x, completion.PairSettings{Dim: -1, LambdaBias: 0.3, LambdaShare: 1, Seed: p.Seed})
	if err != nil {
		return err
	}
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for k := i; k < n; k++ {
				// A pair is infeasible for both jobs or for neither.
				sc := (im.Predict(w, i, k) + im.Predict(w, k, i)) / 2
				r.InfeasibleScore[w][i][k], r.InfeasibleScore[w][k][i] = sc, sc
				r.Infeasible[w][i][k] = sc >= 0.5
				r.Infeasible[w][k][i] = sc >= 0.5
			}
		}
	}
	return nil
}
