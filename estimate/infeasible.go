package estimate

import (
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
	Alone     bool    // every job's isolated rate as an observation that it fits alone
}

// defaultFootprints returns the classifier [Pairwise] uses. The settings were chosen by a grid
// search on hold-out seeds 10-15 of the Gavel table (16 references, fraction 0.2; not the seeds
// reported), scoring infeasible precision and recall over all entries as Evaluate does: the
// former linear 0/1 fit (FitPairs without embeddings, threshold 0.5) had precision 0.860 and
// recall 0.605 (F1 0.710); this one has 0.880 and 0.742 (F1 0.805). A size shared across worker
// types with costly per-type deviations is what carries a job's size to worker types where it
// was not measured (LambdaDev 0.3, 1, 3, 10, 30: F1 0.763, 0.794, 0.801, 0.805, 0.799;
// LambdaSize 0.03, 0.1, 0.3: 0.792, 0.805, 0.773). Penalties this strong leave the fit
// under-confident, hence the low threshold (0.2, 0.25, 0.3, 0.5: F1 0.784, 0.805, 0.784,
// 0.712). Log isolated rates as features and alone outcomes each add little (best F1 without
// them 0.792 and 0.800), and mean slowdowns as features did not help (at most 0.803).
func defaultFootprints() footprints {
	return footprints{Settings: completion.FootprintSettings{LambdaSize: 0.1, LambdaDev: 10, LambdaFeature: 1}, Threshold: 0.25, Features: true, Alone: true}
}

// feasObs turns the infeasibility indicator ind (see observations) into one outcome per
// unordered pair, infeasible when either direction is (a pair is infeasible for both jobs or
// for neither), and, when alone is set, adds one per job and worker type with an isolated rate:
// a job measured alone fits alone, and a rate of 0 says it does not fit even alone.
func feasObs(d *Data, ind []completion.PairObs, alone bool) []completion.FeasObs {
	type key struct{ w, i, k int }
	at := map[key]int{}
	var obs []completion.FeasObs
	for _, o := range ind {
		kk := key{o.W, min(o.I, o.K), max(o.I, o.K)}
		x, ok := at[kk]
		if !ok {
			x = len(obs)
			at[kk] = x
			obs = append(obs, completion.FeasObs{W: kk.w, I: kk.i, K: kk.k})
		}
		obs[x].Infeasible = obs[x].Infeasible || o.Y == 1
	}
	if alone {
		for w := range d.Iso {
			for i, iso := range d.Iso[w] {
				if !math.IsNaN(iso) {
					obs = append(obs, completion.FeasObs{W: w, I: i, K: completion.Alone, Infeasible: iso <= 0})
				}
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
// alone (isolated rate 0) is infeasible with everyone there, whatever the fit says. The score is the model's
// probability with its odds divided by the threshold's, so that 0.5 is the decision threshold
// as [Result] promises, and the pairs [Suggest] finds uncertain are those near the decision.
func (f footprints) predict(d *Data, ind []completion.PairObs, x *mat.Dense, r *Result) error {
	obs := feasObs(d, ind, f.Alone)
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
	m, err := completion.FitFootprints(obs, W, n, x, f.Settings)
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
func (p Pairwise) predictInfeasible(d *Data, ind []completion.PairObs, x *mat.Dense, r *Result) error {
	return defaultFootprints().predict(d, ind, x, r)
}
