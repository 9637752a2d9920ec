package estimate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gavelkit/gavel/fingerprint"
	"github.com/gavelkit/gavel/table"
)

// newRand returns the package's seeded generator (a fixed second PCG word, so a seed alone
// names a stream).
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0xda3e39cb94b95bdb)) }

// Holdout is one draw of Gavel's hold-out protocol.
type Holdout struct {
	Partial    *Data
	References []int // sorted job indices
	Revealed   int   // pair measurements revealed beyond the references
}

// Protocol draws a hold-out: references job types fully measured (every pair among them on
// every worker type); isolated rates always known; for every other job type, each pair with a
// reference on each worker type revealed with probability fraction (both jobs' rates).
//
// The truth need not be complete: the references are then job types measured against each
// other fully (see drawReferences), and a pair the truth lacks is never revealed. On a complete
// truth the draw is Gavel's.
func Protocol(truth *Data, references int, fraction float64, seed uint64) (*Holdout, error) {
	n := len(truth.Jobs)
	if references < 1 || references >= n {
		return nil, fmt.Errorf("references %d: must be between 1 and %d (the %d job types less one to estimate)", references, n-1, n)
	}
	if !(fraction > 0 && fraction <= 1) {
		return nil, fmt.Errorf("fraction %v: must be in (0, 1]", fraction)
	}
	rng := newRand(seed)
	refs, err := drawReferences(truth, references, rng)
	if err != nil {
		return nil, err
	}
	slices.Sort(refs)
	isRef := make([]bool, n)
	for _, i := range refs {
		isRef[i] = true
	}
	p := onlyReferences(truth, refs)
	h := &Holdout{Partial: p, References: refs}
	for i := 0; i < n; i++ {
		if isRef[i] {
			continue
		}
		for w := range truth.Workers {
			for _, k := range refs {
				// Drawn whether or not the truth has the pair, so that one missing pair does not
				// change which of the others are revealed.
				if rng.Float64() < fraction && truth.State[w][i][k] != table.Missing && truth.State[w][k][i] != table.Missing {
					p.Reveal(truth, w, i, k)
					h.Revealed++
				}
			}
		}
	}
	return h, nil
}

// referenceTries is how many random orders drawReferences tries before the greedy set.
const referenceTries = 64

// drawReferences draws r job types measured with themselves and each other on every worker
// type: the first that fit in a random order, so that on a complete truth they are the first
// r of a random permutation, as Gavel draws them. On a partial truth an order can run out of
// job types that fit; after referenceTries orders it takes r at random from
// [Data.References]' greedy set, and fails when that is smaller too. Finding the largest such
// set is a maximum-clique problem; these searches find it on tables of tens of job types but
// are not guaranteed to.
func drawReferences(truth *Data, r int, rng *rand.Rand) ([]int, error) {
	all := truth.allWorkers()
	largest := 0
	for range referenceTries {
		var refs []int
		for _, i := range rng.Perm(len(truth.Jobs)) {
			if truth.measuredWith(all, refs, i) {
				if refs = append(refs, i); len(refs) == r {
					return refs, nil
				}
			}
		}
		largest = max(largest, len(refs))
	}
	greedy := truth.References()
	if len(greedy) < r {
		return nil, fmt.Errorf("references %d: the largest set of job types measured with themselves and each other on every worker type found has %d",
			r, max(largest, len(greedy)))
	}
	refs := make([]int, r)
	for x, c := range rng.Perm(len(greedy))[:r] {
		refs[x] = greedy[c]
	}
	return refs, nil
}

// Metrics compares an estimate with the truth.
type Metrics struct {
	MAE                 float64 `json:"mae"`      // normalized rates, feasible entries
	MAPE                float64 `json:"mape"`     // normalized rates, true value above 0.05
	RawMAPE             float64 `json:"raw_mape"` // raw co-located rates, same entries
	PackingAgreement    float64 `json:"packing_agreement"`
	InfeasiblePrecision float64 `json:"infeasible_precision"`
	InfeasibleRecall    float64 `json:"infeasible_recall"`
	// DownstreamRatio is nil, written as null, when not computed.
	DownstreamRatio *float64 `json:"downstream_ratio"`
	Entries         int      `json:"entries"` // scored entries, infeasible ones included
	Pairs           int      `json:"pairs"`   // scored unordered pairs, infeasible ones included
	// PredictedInfeasible and TrueInfeasible count the scored entries predicted and truly
	// infeasible, over which infeasible precision and recall are taken: a precision of 1 with
	// none predicted, or a recall of 1 with none to find, holds trivially (over seeds, rounded
	// means).
	PredictedInfeasible int `json:"predicted_infeasible_entries"`
	TrueInfeasible      int `json:"true_infeasible_entries"`
	// ScoredEntries is how many of Entries are feasible in the truth and the estimate (MAE's
	// denominator; MAPE's leaves out true rates of 0.05 or less), and ScoredPairs how many of
	// Pairs (packing agreement's). They depend on the method (one that calls an entry infeasible
	// is not scored on its rate); over seeds each is the rounded mean. When one is 0 the metrics
	// it counts for are undefined and written as 0.
	ScoredEntries int `json:"scored_entries"`
	ScoredPairs   int `json:"scored_pairs"`
	apeEntries    int // MAPE's and RawMAPE's denominator
}

// mapeFloor is the true normalized rate at or below which an entry is left out of MAPE (its
// percentage error would swamp the mean).
const mapeFloor = 0.05

// Score measures r against truth on every entry (w, i, k) except those where both jobs are
// references, as Gavel's hold-out protocol scores an estimator. Infeasible entries, in the truth
// or in the estimate, count only in infeasible precision and recall: a pair that cannot share a
// GPU has no rate to be wrong about, and a pair predicted infeasible is given none (its error is
// the false alarm precision counts), so no method is charged twice for one classification, nor
// charged a rate it did not give (Gavel's method leaves 0 there, ours a rate).
//   - MAE and MAPE on the normalized rate of job i, over entries feasible in the truth and in
//     the estimate (MAPE only where the true normalized rate is above 0.05);
//   - raw MAPE on rate = normalized × isolated rate, with the block's (measured) isolated rates;
//   - packing agreement over unordered pairs {i, k} feasible in the truth and in the estimate
//     (ScoredPairs of them): the pair is worth packing when the two normalized rates sum to more
//     than 1; the estimate agrees when it makes the same call.
//
// Entries that were measured count too (they are exact for every method that keeps them).
// Entries the truth lacks are not scored, nor pairs with either of them.
func Score(truth *Data, r *Result, refs []int) Metrics { return score(truth, nil, r, refs) }

// ScoreMissing is Score restricted to the entries partial did not know (the estimated ones);
// a pair counts for packing agreement when either direction was estimated.
func ScoreMissing(truth, partial *Data, r *Result, refs []int) Metrics {
	return score(truth, partial, r, refs)
}

// score is Score over every entry (partial nil) or ScoreMissing over those partial lacks.
func score(truth, partial *Data, r *Result, refs []int) Metrics {
	n := len(truth.Jobs)
	isRef := make([]bool, n)
	for _, i := range refs {
		isRef[i] = true
	}
	var m Metrics
	var absSum, apeSum, rawSum float64
	var nAbs, nApe int
	var tp, fp, fn int
	agree := 0
	for w := range truth.Workers {
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				if isRef[i] && isRef[k] {
					continue
				}
				if truth.State[w][i][k] == table.Missing || partial != nil && partial.State[w][i][k] != table.Missing {
					continue
				}
				m.Entries++
				tInf := truth.State[w][i][k] == table.Infeasible
				pInf := r.Infeasible[w][i][k]
				switch {
				case tInf && pInf:
					tp++
				case !tInf && pInf:
					fp++
				case tInf && !pInf:
					fn++
				}
				if !tInf && !pInf {
					t, e := truth.Norm[w][i][k], r.Norm[w][i][k]
					absSum += math.Abs(e - t)
					nAbs++
					if t > mapeFloor {
						apeSum += math.Abs(e-t) / t
						iso := truth.Iso[w][i]
						rawSum += math.Abs(e*iso-t*iso) / (t * iso)
						nApe++
					}
				}
				if k < i || truth.State[w][k][i] == table.Missing {
					continue
				}
				m.Pairs++
				if tInf || pInf || truth.State[w][k][i] == table.Infeasible || r.Infeasible[w][k][i] {
					continue
				}
				m.ScoredPairs++
				tPack := truth.Norm[w][i][k]+truth.Norm[w][k][i] > 1
				ePack := r.Norm[w][i][k]+r.Norm[w][k][i] > 1
				if tPack == ePack {
					agree++
				}
			}
		}
	}
	m.ScoredEntries, m.apeEntries = nAbs, nApe
	m.MAE = ratio(absSum, nAbs)
	m.MAPE = ratio(apeSum, nApe)
	m.RawMAPE = ratio(rawSum, nApe)
	m.PackingAgreement = ratio(float64(agree), m.ScoredPairs)
	m.setInfeasible(tp, fp, fn)
	return m
}

// setInfeasible sets infeasible precision and recall from the true positive, false positive and
// false negative counts of infeasible predictions. No predicted infeasible pair means no false
// alarm (precision 1); none to find means none missed (recall 1).
func (m *Metrics) setInfeasible(tp, fp, fn int) {
	m.PredictedInfeasible, m.TrueInfeasible = tp+fp, tp+fn
	m.InfeasiblePrecision, m.InfeasibleRecall = 1, 1
	if tp+fp > 0 {
		m.InfeasiblePrecision = float64(tp) / float64(tp+fp)
	}
	if tp+fn > 0 {
		m.InfeasibleRecall = float64(tp) / float64(tp+fn)
	}
}

// ratio is x/n, and 0 when there is nothing to average (Entries and Pairs tell that case apart;
// JSON has no NaN).
func ratio(x float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return x / float64(n)
}

// EvalOptions configures [Evaluate].
type EvalOptions struct {
	References int      // fully measured job types; at least 1, fewer than the block's job types, and (on a partial truth) measured together (see Protocol)
	Fraction   float64  // probability of revealing each pair with a reference, in (0, 1]
	Seeds      []uint64 // one hold-out draw (and estimator seed) each; at least one, none twice
	// Active spends the same number of measurements as the random draw, chosen by [Active]
	// instead of at random: coverage first, then Suggest on our estimate in Batches rounds
	// (0 means batches of about 12 measurements, re-estimating between them).
	Active  bool
	Aim     Aim // what the active protocol's Suggest aims at; the zero value is AimBalanced
	Batches int
	Methods []Method // nil means DefaultMethods
	// Downstream, when set, scores an estimate by the quality of the allocation it leads to
	// (see Metrics.DownstreamRatio; the function Downstream makes one); nil leaves
	// DownstreamRatio out. Evaluate passes its ctx.
	Downstream func(ctx context.Context, truth *Data, r *Result) (float64, error)
}

// MethodReport is one method's metrics, averaged over seeds, with their standard deviations.
type MethodReport struct {
	Metrics
	Std     Metrics   `json:"std"`
	PerSeed []Metrics `json:"per_seed"`
	// EstimatedOnly is the mean over seeds of the same metrics on the entries that were not
	// measured (ScoreMissing); downstream_ratio is not repeated there.
	EstimatedOnly Metrics `json:"estimated_only"`
	perSeedMiss   []Metrics
}

// Evaluation is the outcome of [Evaluate].
type Evaluation struct {
	Methods      map[string]*MethodReport `json:"methods"`
	Order        []string                 `json:"-"`
	Measurements []int                    `json:"measurements"`  // pair measurements made per seed beyond the references
	Active       bool                     `json:"active"`        // measurements chosen by Active, not at random
	Aim          string                   `json:"aim,omitempty"` // Active's aim ("balanced" or "decisions"); empty when not Active
	Notes        []string                 `json:"notes,omitempty"`
}

// DefaultMethods returns ours, gavel, partner_mean, neighbors, and plain matrix completion of Gavel's
// layout on normalized (als) and raw (als_raw) rates.
func DefaultMethods(seed uint64) []Method {
	return []Method{Pairwise{Seed: seed}, Gavel{Seed: seed}, PartnerMean{}, Neighbors{K: 3, Distance: fingerprint.MeanAbsLog}, ALS{Seed: seed}, ALS{Raw: true, Seed: seed}}
}

// Evaluate runs Gavel's hold-out protocol (see [Protocol]) once per seed and scores every method.
// It stops with ctx's error, between one method's fit and the next, once ctx is done.
//
// The truth may be a partial table (a user's own measurements): only what it has is revealed
// (by the random draw or by [Active]) and scored, and the downstream ratio is left out, with
// notes saying so.
func Evaluate(ctx context.Context, truth *Data, o EvalOptions) (*Evaluation, error) {
	if len(o.Seeds) == 0 {
		return nil, fmt.Errorf("no seeds")
	}
	for x, seed := range o.Seeds {
		if slices.Contains(o.Seeds[:x], seed) {
			// One draw counted twice would weigh the means and shrink the spread.
			return nil, fmt.Errorf("seed %d given twice", seed)
		}
	}
	if o.Methods != nil && len(o.Methods) == 0 {
		return nil, fmt.Errorf("no methods (nil means DefaultMethods)")
	}
	names := map[string]bool{}
	for x, m := range o.Methods {
		switch {
		case m == nil:
			return nil, fmt.Errorf("method %d is nil", x)
		case names[m.Name()]:
			// Their reports would be merged into one, each counted as a seed.
			return nil, fmt.Errorf("method %d: name %q given twice", x, m.Name())
		}
		names[m.Name()] = true
	}
	ev := &Evaluation{Methods: map[string]*MethodReport{}, Active: o.Active}
	if o.Active {
		ev.Aim = o.Aim.String() // an unknown aim fails in Active, before any fit
	}
	downstream := o.Downstream
	if m := truth.Missing(); m > 0 {
		ev.Notes = append(ev.Notes, fmt.Sprintf("the truth lacks %d of %d entries: they are neither revealed nor scored", m, len(truth.Workers)*len(truth.Jobs)*len(truth.Jobs)))
		if downstream != nil {
			// The allocation on the estimate may use pairs whose true rate nobody knows.
			ev.Notes = append(ev.Notes, "downstream_ratio left out: it needs every true rate")
			downstream = nil
		}
	}
	for _, seed := range o.Seeds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, err := Protocol(truth, o.References, o.Fraction, seed)
		if err != nil {
			return nil, err
		}
		methods := o.Methods
		if methods == nil {
			methods = DefaultMethods(seed)
		}
		partial := h.Partial
		if o.Active {
			start, err := Protocol(truth, o.References, 1, seed) // same references
			if err != nil {
				return nil, err
			}
			base := onlyReferences(start.Partial, start.References)
			partial, err = Active(ctx, truth, base, Pairwise{Seed: seed}, h.Revealed, o.Batches, o.Aim)
			if err != nil {
				return nil, fmt.Errorf("seed %d: active: %w", seed, err)
			}
		}
		// What was spent, which for Active can be less than the budget when Suggest runs out of
		// pairs.
		ev.Measurements = append(ev.Measurements, knownPairs(partial)-knownPairs(onlyReferences(partial, h.References)))
		for _, m := range methods {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r, err := m.Estimate(ctx, partial)
			if err != nil {
				return nil, fmt.Errorf("seed %d: %s: %w", seed, m.Name(), err)
			}
			s := Score(truth, r, h.References)
			if downstream != nil {
				v, err := downstream(ctx, truth, r)
				if err != nil {
					return nil, fmt.Errorf("seed %d: %s: downstream: %w", seed, m.Name(), err)
				}
				s.DownstreamRatio = &v
			}
			rep := ev.Methods[m.Name()]
			if rep == nil {
				rep = &MethodReport{}
				ev.Methods[m.Name()] = rep
				ev.Order = append(ev.Order, m.Name())
			}
			rep.PerSeed = append(rep.PerSeed, s)
			rep.perSeedMiss = append(rep.perSeedMiss, ScoreMissing(truth, partial, r, h.References))
		}
	}
	for _, rep := range ev.Methods {
		rep.Metrics, rep.Std = meanStd(rep.PerSeed)
		rep.EstimatedOnly, _ = meanStd(rep.perSeedMiss)
	}
	return ev, nil
}

// knownPairs counts the unordered pairs (w, {i, k}) of d with an entry known.
func knownPairs(d *Data) int {
	n := 0
	for w := range d.State {
		for i := range d.State[w] {
			for k := i; k < len(d.State[w]); k++ {
				if d.State[w][i][k] != table.Missing || d.State[w][k][i] != table.Missing {
					n++
				}
			}
		}
	}
	return n
}

// onlyReferences keeps the isolated rates and the pairs among references, and the pairs of a
// job that cannot run alone (isolated rate 0): measuring the rate told they are infeasible, so
// they are known, not estimated, and not scored as estimates.
func onlyReferences(d *Data, refs []int) *Data {
	out := NewData(d.Workers, d.Jobs)
	for w := range d.Workers {
		copy(out.Iso[w], d.Iso[w])
		for _, i := range refs {
			for _, k := range refs {
				out.Reveal(d, w, i, k)
			}
		}
		for i, iso := range d.Iso[w] {
			if iso == 0 {
				for k := range d.Jobs {
					out.Reveal(d, w, i, k)
				}
			}
		}
	}
	return out
}

// meanStd returns the mean and (population) standard deviation of each rate of xs over the
// seeds where it is defined (its denominator is not 0; over every seed when it is nowhere
// defined, keeping Score's convention), and of the downstream ratio when every seed has one.
// The counts (Entries, Pairs, ScoredEntries, ScoredPairs, PredictedInfeasible, TrueInfeasible)
// are rounded means over the seeds where they are not 0, so a defined rate never comes with a
// count of 0. (Score's Entries and Pairs are the same for every seed, the references' pairs
// being all measured; ScoreMissing's differ with the measurements, and a seed whose
// measurements left no pair estimated had an undefined agreement of 0 averaged in.)
func meanStd(xs []Metrics) (mean, std Metrics) {
	rates := func(m *Metrics) []*float64 {
		return []*float64{&m.MAE, &m.MAPE, &m.RawMAPE, &m.PackingAgreement, &m.InfeasiblePrecision, &m.InfeasibleRecall}
	}
	counts := func(m *Metrics) []int {
		return []int{m.ScoredEntries, m.apeEntries, m.apeEntries, m.ScoredPairs, m.PredictedInfeasible, m.TrueInfeasible}
	}
	mp, sp := rates(&mean), rates(&std)
	for f := range mp {
		var defined []Metrics
		for _, x := range xs {
			if counts(&x)[f] > 0 {
				defined = append(defined, x)
			}
		}
		if len(defined) == 0 {
			defined = xs
		}
		*mp[f], *sp[f] = meanStdOf(len(defined), func(x int) float64 { return *rates(&defined[x])[f] })
	}
	down := true
	for _, x := range xs {
		down = down && x.DownstreamRatio != nil
	}
	if down {
		m, s := meanStdOf(len(xs), func(x int) float64 { return *xs[x].DownstreamRatio })
		mean.DownstreamRatio, std.DownstreamRatio = &m, &s
	}
	for _, f := range []func(*Metrics) *int{
		func(m *Metrics) *int { return &m.Entries },
		func(m *Metrics) *int { return &m.Pairs },
		func(m *Metrics) *int { return &m.ScoredEntries },
		func(m *Metrics) *int { return &m.ScoredPairs },
		func(m *Metrics) *int { return &m.PredictedInfeasible },
		func(m *Metrics) *int { return &m.TrueInfeasible },
	} {
		// Over the seeds where it is not 0, as the rates it counts for are averaged, so that a
		// rate with a mean has a count that is not 0.
		var nz []float64
		for _, x := range xs {
			if n := float64(*f(&x)); n > 0 {
				nz = append(nz, n)
			}
		}
		v, _ := meanStdOf(len(nz), func(x int) float64 { return nz[x] })
		*f(&mean) = int(math.Round(v))
	}
	std.Entries, std.Pairs = mean.Entries, mean.Pairs // counts, not spreads, as std has always carried
	return mean, std
}

// meanStdOf returns the mean and population standard deviation of at(0), ..., at(n−1).
func meanStdOf(n int, at func(int) float64) (mean, std float64) {
	for x := 0; x < n; x++ {
		mean += at(x) / float64(n)
	}
	for x := 0; x < n; x++ {
		dv := at(x) - mean
		std += dv * dv / float64(n)
	}
	return mean, math.Sqrt(std)
}
