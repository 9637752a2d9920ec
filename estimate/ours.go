package estimate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/gavelkit/gavel/completion"
	"github.com/gavelkit/gavel/fingerprint"
	"github.com/gavelkit/gavel/table"
	"gonum.org/v1/gonum/mat"
)

// floorNorm bounds normalized rates away from zero before taking logs.
const floorNorm = 0.02

// Pairwise is our estimator: the shared-embedding pairwise model of [completion.FitPairs] fitted
// to log normalized rates, with each job's log isolated rates (centered per worker type) as side
// features, so a job with few measurements borrows from jobs with similar isolated behaviour.
// Each job outside the references has its embedding pulled towards those of its nearest
// references (see Prior). Measurements at the isolated rate are censored observations (see
// observations). Infeasibility is its own class, never a rate of zero: a footprint threshold
// model ([completion.FitFootprints], see predictInfeasible) fitted to which measured pairs
// could not share a GPU.
// The estimate is the mean (in log space) of an ensemble of fits from different random starts,
// lowered by Caution times their standard deviation, and Spread is that deviation.
type Pairwise struct {
	// Settings are the fits' settings; the zero value means DefaultPairSettings (one field set
	// means every other at its zero value, not its default), and Settings.Seed is not read:
	// member m of the ensemble is seeded Seed + m.
	Settings completion.PairSettings
	Ensemble int // fits averaged; 0 means 3
	// Neighbors is the weight, in log space, of the Neighbors estimate (K = 3) mixed into
	// the result; 0 means 0.1, negative means none. The mix was chosen on hold-out seeds 10-15:
	// 0.3 was best before the embedding prior; with it (MAPE / agreement) no mix 8.76% / 87.6%,
	// 0.05 8.72% / 87.8%, 0.1 8.71% / 87.8%, 0.3 8.97% / 87.4% (plain fingerprint matching).
	Neighbors float64
	// Prior is the weight of the pull of each non-reference job's embedding towards the mean
	// embedding of its PriorK nearest references (completion.PairPrior), matched by fingerprint
	// and isolated rates (priorNeighbors); 0 means 0.5, negative means none. Chosen on hold-out
	// seeds 10-15 (MAPE / agreement; K = 2, plain fingerprint matching): none 10.17% / 86.7%,
	// 0.3 8.76% / 87.8%, 0.5 8.73% / 87.8%, 1 8.85% / 87.6%; with the final matching, 0.3
	// 8.58% / 87.6% and 0.5 8.47% / 87.8%.
	//
	// Its cost: the max-min downstream ratio (gavel-profile evaluate) fell on seeds 10-39 from
	// 0.715 to 0.643 (0.818 to 0.773 with the true infeasible pairs given), because the planner
	// packs exactly the pairs that look free, and a job pulled towards references that are
	// never slowed on a worker type looks free there next to partners that do slow it (on
	// Gavel's V100 data, ResNet-18 next to CycleGAN: 0.34 of its isolated rate, estimated 1.0).
	// With per-worker-type deviations matched per type (DefaultPairSettings) it is 0.680 (0.828),
	// within the noise of 30 seeds (the ratio's standard deviation over seeds is about 0.3).
	// Negative Prior gives the estimate without the pull.
	Prior float64
	// PriorK is the number of references a job's embedding is pulled towards; 0 means 2.
	// On seeds 10-15 (Prior 0.5): K = 1 8.69% / 86.8%, 2 8.71% / 87.8%, 3 9.14% / 87.6%,
	// 5 9.58% / 86.8%.
	PriorK int
	Seed   uint64
	// Bootstrap, when positive, fits that many extra members, each on a bootstrap resample of
	// the measured pairs (a pair's two entries travel together); the estimate is unchanged (the
	// mean of the Ensemble fits on all the data), and the members' disagreement around it is
	// what Spread then reports, an uncertainty that grows where a job's estimate rests on few
	// measurements.
	Bootstrap int
	// Caution lowers each estimated entry, in log space, by Caution times the standard
	// deviation of the Ensemble fits around their mean (bootstrap members excluded, so it does
	// not depend on Bootstrap); 0 means 1, negative means none. The fits disagree where a job's
	// embedding is not pinned down by its measurements, and there an overestimate costs a
	// planner more than an underestimate: it packs a pair that is not free (its max-min
	// objective takes the job that suffers), where an underestimate only forgoes a pack.
	// Measured (gavel-profile evaluate's max-min downstream ratio, whose standard deviation
	// over seeds is about 0.3; MAPE / agreement): seeds 10-39, none 0.680 (8.28% / 87.7%), 0.5
	// 0.672 (8.21% / 87.7%), 1 0.732 (8.20% / 87.6%), 2 0.737 (8.30% / 87.2%); seeds 40-69,
	// none 0.697 (7.80% / 87.9%), 1 0.748 (7.83% / 87.8%). Lowering by the spread of 8
	// bootstrap fits instead (applied after the Neighbors mix) helps the planner more at a clear
	// cost in accuracy: seeds 10-39, half a deviation 0.784 (8.43% / 86.8%), one 0.832 (9.52% /
	// 84.2%); seeds 40-69, half a deviation 0.820 (8.17% / 87.3%).
	Caution float64
	// Calibrate, when positive, is the number of cross-validation folds over the measured
	// pairs outside the reference block used to estimate, per worker type, the error of a
	// pair's predicted sum of normalized rates and that of an entry's log normalized rate
	// (Result.SumError, Result.EntryError); the estimate is unchanged. Each
	// fold is a single fit, so Caution (which lowers by the spread of several) does not act there:
	// they are errors of the estimate before that lowering.
	Calibrate int
}

// features returns each job's log isolated rate per worker type, centered per worker type
// ([job][w]), the side features of the pairwise model. A job that cannot run alone on a worker
// type (isolated rate 0) has no log rate there; it gets the mean, 0, since all its pairs there
// are infeasible and only the infeasibility model uses its features.
func features(d *Data) *mat.Dense {
	W, n := len(d.Workers), len(d.Jobs)
	x := mat.NewDense(n, W, nil)
	for w := 0; w < W; w++ {
		mean, cnt := 0.0, 0
		for i := 0; i < n; i++ {
			if l, ok := logIso(d, w, i); ok {
				mean += l
				cnt++
			}
		}
		mean /= float64(max(cnt, 1))
		for i := 0; i < n; i++ {
			if l, ok := logIso(d, w, i); ok {
				x.Set(i, w, l-mean)
			}
		}
	}
	return x
}

// logIso is the log of job i's isolated rate on w, and false when there is none to take (a
// rate of 0: the job does not fit alone).
func logIso(d *Data, w, i int) (float64, bool) {
	l := math.Log(d.Iso[w][i])
	return l, !math.IsNaN(l) && !math.IsInf(l, 0)
}

// observations lists the measured entries as log targets, and the infeasibility indicator over
// measured and infeasible entries.
//
// A measured normalized rate of 1 or more is censored: tables clip co-located rates at the
// isolated rate (Gavel's V100 data has 80 entries at exactly 1, jobs that show no slowdown
// there), so an entry at 1 bounds the rate from below rather than pinning it: the fit may go
// above it (the estimate is clamped at 1 anyway) where that lets it fit the job's other
// entries better. The gain is small: on hold-out seeds 10-15, MAPE 8.47% and agreement 87.8%
// against 8.50% and 87.7% with plain squared error (8.59% / 87.35% against 8.62% / 87.32% on
// seeds 10-39); with plain fingerprint matching for the prior it was larger, 8.71% / 87.8%
// against 8.83% / 87.2%.
func observations(d *Data) (vals, ind []completion.PairObs) {
	for w := range d.State {
		for i := range d.State[w] {
			for k, s := range d.State[w][i] {
				switch s {
				case table.Measured:
					v := d.Norm[w][i][k]
					vals = append(vals, completion.PairObs{W: w, I: i, K: k, Y: math.Log(math.Max(v, floorNorm)), Censored: v >= 1})
					ind = append(ind, completion.PairObs{W: w, I: i, K: k, Y: 0})
				case table.Infeasible:
					ind = append(ind, completion.PairObs{W: w, I: i, K: k, Y: 1})
				}
			}
		}
	}
	return vals, ind
}

// DefaultPairSettings returns the settings [Pairwise] uses when its Settings are zero; they were
// chosen by a grid search on hold-out seeds 10-15 of the Gavel table (not the seeds reported).
// The iteration cap and tolerance were lowered from 150 and 1e-6 after they proved to change
// MAPE by under 0.1 point on those seeds (20, 30, 40 and 60 iterations: 10.10%, 10.07%, 10.06%,
// 10.05%) while cutting the time several-fold on large tables.
//
// LambdaWorker gives each job its own embedding deviation per worker type, pulled (see prior)
// towards those of the references it resembles on that type. On seeds 10-39 (MAPE / agreement /
// V100 MAPE): none 8.59% / 87.3% / 15.5%; with the pull towards the all-type neighbours' deviations,
// 0.03 8.37% / 87.4%, 0.1 8.33% / 87.6% / 15.3%, 0.3 8.41%, 1 8.49%, 10 8.58%; with per-type
// neighbours (the final form), 0.1 8.28% / 87.7% / 15.2% (K80 5.08% → 4.78%, P100 5.04% →
// 4.67%), seeds 10-15 8.47% / 87.8% → 8.18% / 88.0%. The V100 error hardly moves: with every
// reference pair of every job revealed (fraction 1) the model still misses V100 entries between
// two non-references by 12%, against under 5% on the K80 and P100, so most of it is pair-specific
// behaviour (ResNet-18 (batch size 256) is at 0.34 next to CycleGAN and 0.9-1 next to most others)
// that no low-rank structure predicts. The deviations cost about a quarter more CPU time on the
// 1,000-job benchmark table (4.5 s → 5.6 s of CPU), whose planted model is the same on every
// worker type (MAPE there 6.65% → 6.93%).
func DefaultPairSettings() completion.PairSettings {
	return completion.PairSettings{Dim: 8, LambdaBias: 1, LambdaShare: 0.1, LambdaEmbed: 0.1, LambdaWorker: 0.1, MaxIter: 30, Tol: 1e-4}
}

// Name returns "ours".
func (Pairwise) Name() string { return "ours" }

// Estimate fits the ensemble (and bootstrap members) to d's measured entries, mixes in the
// Neighbors estimate, predicts infeasible pairs and keeps d's measured entries.
func (p Pairwise) Estimate(ctx context.Context, d *Data) (*Result, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.estimate(ctx, d, true)
}

// check refuses weights no fit can use: a NaN or infinite Caution, Neighbors or Prior made every
// estimate NaN, with no error.
func (p Pairwise) check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"Caution", p.Caution}, {"Neighbors", p.Neighbors}, {"Prior", p.Prior}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("pairwise: %s %v: %w", f.name, f.v, completion.ErrBadSettings)
		}
	}
	return nil
}

// estimate is Estimate; without infeasible it skips the footprint model and predicts no pair
// infeasible (measured ones stay so): the calibration folds do not need it, since they score the
// sums of pairs measured feasible and the model never changes Norm.
func (p Pairwise) estimate(ctx context.Context, d *Data, infeasible bool) (*Result, error) {
	vals, ind := observations(d)
	if len(vals) == 0 {
		return p.withoutRates(ctx, d)
	}
	x := features(d)
	r := newResult(d)
	// The footprint model and the Neighbors estimate need neither the rate fits nor each other:
	// they run alongside the fits (three fits on two cores leave one idle for a third of the
	// time), about a second off the wall time of a 1,000-job table. They watch ctx as the fits
	// do, and are waited for on every return.
	var wg sync.WaitGroup
	defer wg.Wait()
	feas := make(chan error, 1)
	if infeasible {
		wg.Go(func() { feas <- p.predictInfeasible(ctx, d, ind, x, r) }) // sets only r.Infeasible and r.InfeasibleScore
	} else {
		feas <- nil
	}
	nbs := make(chan *Result, 1)
	wg.Go(func() { nbs <- p.neighbors(ctx, d) })
	grids, err := p.fitMembers(ctx, d, vals, x)
	if err != nil {
		return nil, err
	}
	var meanLog, fitSpread [][][]float64
	meanLog, r.Spread, fitSpread = combineMembers(grids, p.ensemble())
	p.lower(meanLog, fitSpread)
	p.mixNeighbors(<-nbs, meanLog, r)
	if err := ctx.Err(); err != nil { // the mix may have been skipped
		return nil, err
	}
	if p.Calibrate > 0 {
		if r.SumError, r.EntryError, err = p.cvErrors(ctx, d); err != nil {
			return nil, err
		}
	}
	if err := <-feas; err != nil {
		return nil, err
	}
	r.keepMeasured(d)
	return r, nil
}

// fallbackNorm is the normalized rate [Pairwise] gives every entry of a block with no feasible
// measured pair, where no rate can be fitted: the two jobs of a pair split the GPU evenly (their
// normalized rates sum to 1, the packing decision's boundary).
const fallbackNorm = 0.5

// withoutRates is [Pairwise]'s estimate of a block with no feasible measured pair (every scale
// factor above 1 of Gavel's table: multi-GPU jobs never share there), where there is nothing to
// fit rates to: see noRates. SumError, when asked for, is its prior; EntryError stays nil.
func (p Pairwise) withoutRates(ctx context.Context, d *Data) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := noRates(d)
	if p.Calibrate > 0 {
		var err error
		// No EntryError: an entry error from no fitted rate would say the guess is exact.
		if r.SumError, _, err = p.cvErrors(ctx, d); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// noRates is the estimate of a block with no feasible measured pair, from what can be said
// without a rate to fit: when the block knows some pairs and every one of them is infeasible,
// every pair is predicted infeasible (InfeasibleScore 1); otherwise every missing entry gets
// fallbackNorm, feasible. Measured entries are kept.
func noRates(d *Data) *Result {
	r := newResult(d)
	known, allInfeasible := false, true
	for w := range d.State {
		for i := range d.State[w] {
			for _, s := range d.State[w][i] {
				known = known || s != table.Missing
				allInfeasible = allInfeasible && s != table.Measured
			}
		}
	}
	allInfeasible = allInfeasible && known
	if allInfeasible {
		r.InfeasibleScore = grid3(len(d.Workers), len(d.Jobs))
	}
	for w := range r.Norm {
		for i := range r.Norm[w] {
			for k := range r.Norm[w][i] {
				r.Norm[w][i][k] = fallbackNorm
				if allInfeasible {
					r.Infeasible[w][i][k] = true
					r.InfeasibleScore[w][i][k] = 1
				}
			}
		}
	}
	r.keepMeasured(d)
	return r
}

func (p Pairwise) ensemble() int {
	if p.Ensemble <= 0 {
		return 3
	}
	return p.Ensemble
}

// fitMembers fits the ensemble members on every measured entry, then the bootstrap members, and
// returns each member's prediction grid in that order.
//
// The fit is non-convex; averaging fits from several starting points (in log space) is both a
// better estimate and, through their disagreement, a measure of how uncertain it is. Fits are
// independent (each has its own seed), so they run concurrently; they are combined in seed
// order, so the result does not depend on scheduling.
func (p Pairwise) fitMembers(ctx context.Context, d *Data, vals []completion.PairObs, x *mat.Dense) ([][][][]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	W, n := len(d.Workers), len(d.Jobs)
	s := p.Settings
	if s == (completion.PairSettings{}) {
		s = DefaultPairSettings()
	}
	prior := p.prior(d)
	e := p.ensemble()
	total := e + max(p.Bootstrap, 0)
	grids := make([][][][]float64, total)
	errs := make([]error, total)
	var wg sync.WaitGroup
	for b := 0; b < total; b++ {
		sample := vals
		if b >= e {
			sample = resample(vals, p.Seed+uint64(b))
		}
		wg.Add(1)
		go func(b int) {
			defer wg.Done()
			sb := s
			sb.Seed = p.Seed + uint64(b)
			m, err := completion.FitPairsWithPrior(ctx, sample, W, n, x, prior, sb)
			if err != nil {
				errs[b] = err
				return
			}
			grids[b] = m.Grid()
		}(b)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return grids, nil
}

// prior returns the embedding prior of Estimate: every job outside the references pulled towards
// its PriorK nearest references (priorNeighbors), and its deviation on each worker type towards
// theirs on that type, matched by its entries on that type (by all its entries when it has none
// there with a reference); nil with no references or Prior negative.
//
// A job outside the references is measured next to a few references on each worker type, too
// few to place its embedding, which the L2 penalty then shrinks towards zero: a job that
// interferes like an average one. On Gavel's V100 data that fails badly: the Recommendation
// jobs slow each other to about 0.2 of their isolated rate while average pairs run at about
// 0.6, and a Recommendation job with no such pair measured was predicted near 0.5. Its nearest
// references by fingerprint are the Recommendation references, whose embeddings carry the
// pattern; pulling towards them cut V100 MAPE on seeds 10-15 from 19.4% to 15.3%. Matching the
// deviations per worker type rather than by all entries: seeds 10-39, 8.33% / 87.6% → 8.28% /
// 87.7% (by fingerprint alone, without the profile term, 8.33% / 87.8%).
func (p Pairwise) prior(d *Data) *completion.PairPrior {
	if p.Prior < 0 {
		return nil
	}
	refs := d.References()
	if len(refs) == 0 {
		return nil
	}
	lambda, k := p.Prior, p.PriorK
	if lambda == 0 {
		lambda = 0.5
	}
	if k <= 0 {
		k = 2
	}
	pr := &completion.PairPrior{Lambda: lambda}
	all := priorNeighbors(d, refs, k, -1)
	pr.Mix = jobWeights(all, refs)
	pr.WorkerMix = make([][][]completion.JobWeight, len(d.Workers))
	for w := range d.Workers {
		on := priorNeighbors(d, refs, k, w)
		for i, ns := range on {
			if ns == nil {
				on[i] = all[i] // no entry with a reference on w
			}
		}
		pr.WorkerMix[w] = jobWeights(on, refs)
	}
	return pr
}

// jobWeights turns neighbours (indices into refs) into a prior's mixes.
func jobWeights(nbs [][]fingerprint.Neighbor, refs []int) [][]completion.JobWeight {
	out := make([][]completion.JobWeight, len(nbs))
	for i, ns := range nbs {
		for _, nb := range ns {
			out[i] = append(out[i], completion.JobWeight{Job: refs[nb.Index], Weight: nb.Weight})
		}
	}
	return out
}

// isoWeight weighs the isolated-rate distance against the fingerprint distance in
// priorNeighbors. On hold-out seeds 10-15 (K = 2; MAPE / agreement): 0 (fingerprint alone)
// 8.71% / 87.8%, 0.25 8.50% / 87.5%, 0.5 8.47% / 87.8%, 1 8.57% / 87.8%.
const isoWeight = 0.5

// priorNeighbors returns, for every job outside refs, its k nearest references (indices into
// refs, inverse-distance weights summing to 1); nil for the references themselves. The distance
// is the fingerprint distance (mean |log| difference over the entries measured for both, as
// Neighbors) plus isoWeight times the distance between the isolated-rate profiles (mean
// |difference| of log isolated rates, each job's mean over worker types removed, as
// fingerprint.ColdStart): the profile says how compute-bound a job is (Gavel's Recommendation
// jobs run slower on a V100 than on a P100), which the few measured entries often do not.
// References sharing no measured entry with a job that has some are not candidates.
//
// With w < 0 the fingerprint covers every worker type, and a job sharing no measured entry
// with any reference is matched by its profile alone. With w ≥ 0 it covers worker type w
// only (the neighbours whose interference on w the job's resembles), and such a job gets nil.
func priorNeighbors(d *Data, refs []int, k, w int) [][]fingerprint.Neighbor {
	n := len(d.Jobs)
	isRef := make([]bool, n)
	for _, r := range refs {
		isRef[r] = true
	}
	rowOn := func(i int) []float64 {
		full := fingerprintRow(d, refs, i)
		if w < 0 {
			return full
		}
		return full[2*len(refs)*w : 2*len(refs)*(w+1)] // fingerprintRow's layout
	}
	refRows := make([][]float64, len(refs))
	for a, r := range refs {
		refRows[a] = rowOn(r)
	}
	out := make([][]fingerprint.Neighbor, n)
	for i := 0; i < n; i++ {
		if isRef[i] {
			continue
		}
		row := rowOn(i)
		var ns, cold []fingerprint.Neighbor
		for a, r := range refs {
			prof := profileDistance(d, i, r)
			cold = append(cold, fingerprint.Neighbor{Index: a, Distance: prof})
			if fd, cnt := fingerprint.MeanAbsLog.Between(row, refRows[a]); cnt > 0 {
				ns = append(ns, fingerprint.Neighbor{Index: a, Distance: fd + isoWeight*prof})
			}
		}
		if len(ns) == 0 {
			if w >= 0 {
				continue
			}
			ns = cold
		}
		out[i] = fingerprint.Nearest(ns, k)
	}
	return out
}

// profileDistance is the mean absolute difference of jobs i's and r's log isolated rates over
// worker types, each centred on its own mean.
func profileDistance(d *Data, i, r int) float64 {
	var li, lr []float64 // log isolated rates on the worker types where both jobs run alone
	mi, mr := 0.0, 0.0
	for w := range d.Workers {
		a, ok1 := logIso(d, w, i)
		b, ok2 := logIso(d, w, r)
		if ok1 && ok2 {
			li, lr = append(li, a), append(lr, b)
			mi += a
			mr += b
		}
	}
	if len(li) == 0 {
		return 0
	}
	mi /= float64(len(li))
	mr /= float64(len(lr))
	s := 0.0
	for w := range li {
		s += math.Abs(li[w] - mi - lr[w] + mr)
	}
	return s / float64(len(li))
}

// combineMembers returns the mean of the first fits grids (the fits on all the data), the
// spread of every member around it and that of the first fits alone. Bootstrap members, each
// on part of the data, made the estimate worse on hold-out seeds 10-15, so they only widen the
// spread.
func combineMembers(grids [][][][]float64, fits int) (mean, spread, fitSpread [][][]float64) {
	W, n := len(grids[0]), len(grids[0][0])
	mean, spread, fitSpread = grid3(W, n), grid3(W, n), grid3(W, n)
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				sum := 0.0
				for b := 0; b < fits; b++ {
					sum += grids[b][w][i][k]
				}
				m := sum / float64(fits)
				dev2, fitDev2 := 0.0, 0.0
				for b, g := range grids {
					dv := g[w][i][k] - m
					dev2 += dv * dv
					if b < fits {
						fitDev2 += dv * dv
					}
				}
				mean[w][i][k] = m
				spread[w][i][k] = math.Sqrt(dev2 / float64(len(grids)))
				fitSpread[w][i][k] = math.Sqrt(fitDev2 / float64(fits))
			}
		}
	}
	return mean, spread, fitSpread
}

// lower subtracts Caution times fitSpread from meanLog (see Pairwise.Caution); measured
// entries are restored later by keepMeasured.
func (p Pairwise) lower(meanLog, fitSpread [][][]float64) {
	c := p.Caution
	if c == 0 {
		c = 1
	}
	if c < 0 {
		return
	}
	for w := range meanLog {
		for i := range meanLog[w] {
			for k := range meanLog[w][i] {
				meanLog[w][i][k] -= c * fitSpread[w][i][k]
			}
		}
	}
}

// neighbors returns the Neighbors estimate that mixNeighbors mixes in, nil when p mixes none in,
// the block has no references, or ctx is done.
func (p Pairwise) neighbors(ctx context.Context, d *Data) *Result {
	if p.neighborsWeight() < 0 {
		return nil
	}
	nb, err := (Neighbors{K: 3, Distance: fingerprint.MeanAbsLog}).Estimate(ctx, d)
	if err != nil {
		return nil // no references: the pairwise model alone
	}
	return nb
}

// neighborsWeight is p.Neighbors with its default.
func (p Pairwise) neighborsWeight() float64 {
	if p.Neighbors == 0 {
		return 0.1
	}
	return p.Neighbors
}

// mixNeighbors sets r.Norm from the ensemble's mean log rates, mixed in log space with the
// Neighbors estimate nb (weight p.Neighbors) where nb has the pair feasible; nb nil mixes in
// nothing.
func (p Pairwise) mixNeighbors(nb *Result, meanLog [][][]float64, r *Result) {
	alpha := p.neighborsWeight()
	// A logarithm and an exponential for each of millions of entries on a large table: worker
	// types are mixed concurrently.
	var wg sync.WaitGroup
	for w := range meanLog {
		wg.Go(func() {
			for i := range meanLog[w] {
				for k, y := range meanLog[w][i] {
					if nb != nil && !nb.Infeasible[w][i][k] {
						y = (1-alpha)*y + alpha*math.Log(nb.Norm[w][i][k])
					}
					r.Norm[w][i][k] = clampNorm(math.Exp(y))
				}
			}
		})
	}
	wg.Wait()
}

// resample draws a bootstrap sample of the measured pairs: as many draws, with replacement, as
// there are unordered pairs (w, {i, k}), each draw bringing both of the pair's entries.
func resample(vals []completion.PairObs, seed uint64) []completion.PairObs {
	groups := byPair(vals)
	rng := newRand(seed ^ 0x5bd1e995)
	out := make([]completion.PairObs, 0, len(vals))
	for range groups {
		out = append(out, groups[rng.IntN(len(groups))]...)
	}
	return out
}

// byPair groups observations by unordered pair (worker type, {I, K}), in the order each pair
// first appears, so what is built from the groups is deterministic.
func byPair(obs []completion.PairObs) [][]completion.PairObs {
	type key struct{ w, a, b int }
	idx := map[key]int{}
	var groups [][]completion.PairObs
	for _, o := range obs {
		k := key{o.W, min(o.I, o.K), max(o.I, o.K)}
		g, ok := idx[k]
		if !ok {
			g = len(groups)
			idx[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], o)
	}
	return groups
}

func grid3(W, n int) [][][]float64 {
	out := make([][][]float64, W)
	for w := range out {
		out[w] = make([][]float64, n)
		for i := range out[w] {
			out[w][i] = make([]float64, n)
		}
	}
	return out
}

func clampNorm(v float64) float64 { return math.Min(1, math.Max(floorNorm, v)) }

// heldOutPairs lists the measured pairs (w, i ≤ k) with at least one job outside the reference
// block, in a seeded random order.
func heldOutPairs(d *Data, seed uint64) [][3]int {
	refs := d.References()
	n := len(d.Jobs)
	isRef := make([]bool, n)
	for _, i := range refs {
		isRef[i] = true
	}
	var ps [][3]int
	for w := range d.Workers {
		for i := 0; i < n; i++ {
			for k := i; k < n; k++ {
				if isRef[i] && isRef[k] {
					continue
				}
				if d.State[w][i][k] == table.Measured && d.State[w][k][i] == table.Measured {
					ps = append(ps, [3]int{w, i, k})
				}
			}
		}
	}
	rng := newRand(seed + 0x9e3779b9)
	rng.Shuffle(len(ps), func(a, b int) { ps[a], ps[b] = ps[b], ps[a] })
	return ps
}

// sumErrorPrior is the pair-sum error a worker type starts from, as one pseudo-observation, so a
// worker type with few held-out pairs is not taken to be exact; entryErrorPrior is the same for
// an entry's log normalized rate. With no held-out pair (only the reference block measured) the
// entry error is the prior: 0.05 held 65% of true rates in Uncertainty's intervals at P = 0.02
// (seeds 10-15), 0.2 (about the V100 block's error) 74%; at P = 0.2 the prior hardly counts.
// The sum prior is suggest's, tuned with it, and unchanged.
const (
	sumErrorPrior   = 0.05
	entryErrorPrior = 0.2
)

// cvErrors estimates, per worker type, the RMS error of the predicted sum of a pair's two
// normalized rates (the packing decision's margin) and that of an entry's log normalized rate
// (entries whose true rate is above 0.05, as MAPE counts them) by cross-validation: the measured
// pairs outside the reference block are split into p.Calibrate folds, each held out in turn and
// predicted by a single fit on the rest.
func (p Pairwise) cvErrors(ctx context.Context, d *Data) (sum, entry []float64, err error) {
	ps := heldOutPairs(d, p.Seed)
	folds := min(p.Calibrate, len(ps))
	held := make([][][3]int, folds)
	errs := make([][]foldErr, folds) // per fold, each held-out pair's errors
	ferr := make([]error, folds)
	// Folds are independent single fits (one goroutine's work each), so they run concurrently,
	// one per CPU; the first fold to fail stops the others, and its error is the one returned
	// (theirs would only say they were stopped). They are added up in fold order, so the result
	// does not depend on scheduling.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first error
	var once sync.Once
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for f := 0; f < folds; f++ {
		wg.Add(1)
		go func(f int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			held[f], errs[f], ferr[f] = p.foldError(ctx, d, ps, f)
			if ferr[f] != nil && !errors.Is(ferr[f], completion.ErrNoObservations) {
				once.Do(func() {
					first = fmt.Errorf("calibration fold %d of %d: %w", f+1, folds, ferr[f])
					cancel()
				})
			}
		}(f)
	}
	wg.Wait()
	if first != nil {
		return nil, nil, first
	}
	W := len(d.Workers)
	ss, cnt := make([]float64, W), make([]int, W)
	es, ecnt := make([]float64, W), make([]int, W)
	for f := 0; f < folds; f++ {
		if ferr[f] != nil {
			continue // ErrNoObservations: the fold held out everything measured
		}
		for x, q := range held[f] {
			e := errs[f][x]
			ss[q[0]] += e.sum * e.sum
			cnt[q[0]]++
			for _, l := range e.logs {
				es[q[0]] += l * l
				ecnt[q[0]]++
			}
		}
	}
	sum, entry = make([]float64, W), make([]float64, W)
	for w := range sum {
		sum[w] = math.Sqrt((ss[w] + sumErrorPrior*sumErrorPrior) / float64(cnt[w]+1))
		entry[w] = math.Sqrt((es[w] + entryErrorPrior*entryErrorPrior) / float64(ecnt[w]+1))
	}
	return sum, entry, nil
}

// foldErr is a held-out pair's errors: of its predicted sum, and of the log of each of its
// entries whose true normalized rate is above 0.05 (none, one or two).
type foldErr struct {
	sum  float64
	logs []float64
}

// foldError holds out fold f of ps (every p.Calibrate-th pair from f), predicts it with a single
// fit on the rest, and returns the held-out pairs and their errors.
func (p Pairwise) foldError(ctx context.Context, d *Data, ps [][3]int, f int) ([][3]int, []foldErr, error) {
	dd := d.Clone()
	var held [][3]int
	for x := f; x < len(ps); x += p.Calibrate {
		q := ps[x]
		held = append(held, q)
		dd.State[q[0]][q[1]][q[2]], dd.State[q[0]][q[2]][q[1]] = table.Missing, table.Missing
	}
	sub := p
	sub.Calibrate, sub.Bootstrap, sub.Ensemble = 0, 0, 1
	rf, err := sub.estimate(ctx, dd, false)
	if err != nil {
		return nil, nil, err
	}
	e := make([]foldErr, len(held))
	for x, q := range held {
		w, i, k := q[0], q[1], q[2]
		e[x].sum = rf.Norm[w][i][k] + rf.Norm[w][k][i] - d.Norm[w][i][k] - d.Norm[w][k][i]
		for _, ab := range [][2]int{{i, k}, {k, i}} {
			a, b := ab[0], ab[1]
			if t, est := d.Norm[w][a][b], rf.Norm[w][a][b]; t > mapeFloor && est > 0 {
				e[x].logs = append(e[x].logs, math.Log(est/t))
			}
			if i == k {
				break
			}
		}
	}
	return held, e, nil
}
