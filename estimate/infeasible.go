package estimate

import (
	"context"
	"math"

	"github.com/gavelkit/gavel/completion"
	"gonum.org/v1/gonum/mat"
)

// footprints is the infeasibility classifier of [Pairwise]: a threshold model (see
// [completion.FitFootprints]) in which a pair does not fit when the two jobs' footprints add up
// to more than the worker type's capacity.
type footprints struct {
	Settings  completion.FootprintSettings
	Threshold float64 // probability from which a pair is predicted infeasible
	Features  bool    // log isolated rates as features of the footprint
}

// defaultFootprints returns the classifier [Pairwise] uses. The settings were chosen by a grid
// search on hold-out seeds 10-15 of the Gavel table (16 references, fraction 0.2; not the seeds
// reported), scoring infeasible precision and recall over all entries as Evaluate does, and
// counting the missed infeasible pairs whose predicted rates sum to more than 1 (those a packing
// policy would use, and whose jobs would then get nothing). The former linear 0/1 fit (FitPairs
// without embeddings, threshold 0.5) had precision 0.860, recall 0.605 (F1 0.710) and 74 such
// misses; this one has 0.803, 0.800 (F1 0.802) and 45.
//
// A size shared across worker types, with costly per-type deviations, is what carries a job's
// size to worker types where it was not measured (at threshold 0.35, LambdaDev 1, 3, 10: F1
// 0.797, 0.790, 0.802; LambdaSize 0.03: 0.782). Penalties this strong leave the fit
// under-confident, hence a threshold below 1/2 (0.25, 0.3, 0.35, 0.4, 0.5: F1 0.775, 0.790,
// 0.802, 0.793, 0.796; misses 40, 41, 45, 53, 62). Jobs that fit alone are not outcomes: in
// log-odds they tie every footprint to the capacity and hold back a job that fits alone but with
// nobody (ResNet-50 at batch size 128 on the smallest GPU). With them the best was as good in F1
// (0.805, at threshold 0.25) but missed 61. Log isolated rates as features help a little (best
// F1 without 0.800, at threshold 0.35, 52 misses); weighting infeasible outcomes (2, 4) moves the
// same trade-off as the threshold (best F1 0.799 and 0.805, 49 and 54 misses); mean slowdowns as
// features, a per-worker-type steepness, the posterior-averaged probability and averaging with
// ALS's score did not help (best F1 0.803, 0.796, 0.802, 0.794, all with alone outcomes).
func defaultFootprints() footprints {
	return footprints{Settings: completion.FootprintSettings{LambdaSize: 0.1, LambdaDev: 10, LambdaFeature: 1}, Threshold: 0.35, Features: true}
}

// feasObs turns the infeasibility indicator ind (see observations) into one outcome per
// unordered pair, infeasible when either direction is (a pair is infeasible for both jobs or
// for neither), and adds one per job and worker type where the job's isolated rate is 0 (it does
// not fit even alone). Jobs that fit alone are not outcomes (see defaultFootprints).
func feasObs(d *Data, ind []completion.PairObs) []completion.FeasObs {
	var obs []completion.FeasObs
	for _, g := range byPair(ind) {
		o := completion.FeasObs{W: g[0].W, I: min(g[0].I, g[0].K), K: max(g[0].I, g[0].K)}
		if d.Iso[o.W][o.I] <= 0 || d.Iso[o.W][o.K] <= 0 {
			// Infeasible because one job does not fit even alone (its Alone outcome below
			// says so): as an outcome it would also make the partner look large.
			continue
		}
		for _, x := range g {
			o.Infeasible = o.Infeasible || x.Y == 1
		}
		obs = append(obs, o)
	}
	for w := range d.Iso {
		for i, iso := range d.Iso[w] {
			if iso <= 0 {
				obs = append(obs, completion.FeasObs{W: w, I: i, K: completion.Alone, Infeasible: true})
			}
		}
	}
	return obs
}

// finite reports whether every entry of x is a finite number (a job that cannot run alone has
// no log isolated rate).
func finite(x *mat.Dense) bool {
	r, c := x.Dims()
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if v := x.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}

// predict fits the footprint model to the outcomes in ind and d's isolated rates (when any
// outcome is infeasible), with x (one row per job) as features when f.Features is set and x is
// finite, and sets r's InfeasibleScore and Infeasible for every pair. A job that does not fit
// alone (isolated rate 0) is infeasible with everyone there, whatever the fit says. The score
// is the model's probability with its odds divided by the threshold's, so that 0.5 is the
// decision threshold as [Result] promises, and the pairs [Suggest] finds uncertain are those near the decision.
func (f footprints) predict(ctx context.Context, d *Data, ind []completion.PairObs, x *mat.Dense, r *Result) error {
	obs := feasObs(d, ind)
	seen := false
	for _, o := range obs {
		seen = seen || o.Infeasible
	}
	if !seen {
		return nil
	}
	if !f.Features || x == nil || !finite(x) {
		x = nil
	}
	W, n := len(d.Workers), len(d.Jobs)
	m, err := completion.FitFootprints(ctx, obs, W, n, x, f.Settings)
	if err != nil {
		return err
	}
	shift := math.Log(f.Threshold / (1 - f.Threshold))
	r.InfeasibleScore = grid3(W, n)
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				sc := 1 / (1 + math.Exp(shift-m.Logit(w, i, k)))
				if d.Iso[w][i] <= 0 || d.Iso[w][k] <= 0 {
					sc = 1 // a job that does not fit alone fits with no partner
				}
				r.InfeasibleScore[w][i][k] = sc
				r.Infeasible[w][i][k] = sc >= 0.5
			}
		}
	}
	return nil
}

// predictInfeasible fits the footprint model to the infeasibility indicator ind and the
// features x (when any measurement is infeasible) and sets r's InfeasibleScore and Infeasible
// for every pair.
func (p Pairwise) predictInfeasible(ctx context.Context, d *Data, ind []completion.PairObs, x *mat.Dense, r *Result) error {
	return defaultFootprints().predict(ctx, d, ind, x, r)
}
