package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gavelkit/gavel/policy/lp"
)

// waterFilling is max-min fairness by progressive filling (§3.2): raise the
// normalized throughput norm_i = eff_i/prop_i of every unfrozen job at speed
// w_i/sf_i until some job cannot rise any further, freeze those jobs, and
// repeat. With Problem.Entities it is hierarchical: each entity's weight is
// shared among its unfrozen jobs by job weight ("fairness") or all given to
// its first unfrozen job by (arrival, id) ("fifo"); a job without an entity
// is an entity of its own.
//
// Each iteration is one LP for the level, then an exact LP-only bottleneck
// test instead of Gavel's MILP with big-M and slack (§11.13): maximize
// Σ_{i∈U} y_i with norm_i ≥ level_i + y_i (i ∈ U), 0 ≤ y_i ≤ wfProbe (small,
// so that every job that can rise does so in the same LP), and every other
// job at its level. A job with y_i > 0 can rise and leaves U; when the
// optimum is 0, no job left in U can rise alone (if one could, that single
// raise would make the sum positive), so U is exactly the bottleneck set.
// Usually one or two LPs (one when the jobs that cannot rise are at their
// ceiling, all their time on their fastest GPU, or, unpacked, proven stuck
// by the level LP's duals: stuckByDuals). The same test decides the
// FIFO jobs waiting behind a frozen one that cannot rise either, which are
// frozen with it (see bottlenecks): on a full cluster they had taken two
// LPs each. Solver errors are returned, never hidden.
//
// Floating point: each LP's x is pulled inside capacity and the levels set
// to what it achieves, so every later LP has a feasible point; an LP the
// solver still calls infeasible is retried (solveAtLevels); and when
// active jobs keep "rising" without a bottleneck for wfStalls iterations,
// those that cannot rise by half of wfProbe are frozen and the others rise
// on (all of them when none is that slow), with a warning (see wfStalls).
// Cut rows a bottleneck test adds (gang covers, odd sets) can break the
// levels reached; when its LP then has no solution, filling starts again
// with them (fill, wfRestarts).
func waterFilling(md mode) allocator {
	return func(ctx context.Context, p *Problem, opt *options) (*Allocation, error) {
		in, err := prepare(p, md, opt)
		if err != nil || in.m() == 0 {
			return orEmpty(err)
		}
		rate, prop := in.lasView(md)
		var st SolveStats
		var x [][]float64
		var warnings []string
		restarts := 0
		for ; ; restarts++ {
			var recut bool
			x, warnings, recut, err = in.fill(ctx, opt, &st, rate, prop)
			// A bottleneck test found gang covers or odd sets that the levels
			// reached break: fill again, with them from the start. (st counts
			// the LPs of every try.)
			if !recut || restarts == wfRestarts {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		if restarts > 0 {
			warnings = append(warnings, fmt.Sprintf("water filling started again %d time(s): a bottleneck test found gang covers "+
				"or odd sets (rows no round can break) that the levels reached broke", restarts))
		}
		var warn string
		if md == agnostic {
			var err error
			if x, warn, err = in.spread(ctx, opt, &st, x); err != nil {
				return nil, err
			}
		}
		a := in.allocation(x)
		a.Warnings = appendNonEmpty(a.Warnings, warn)
		// Report the max-min value, as LAS does (water filling's first level
		// is LAS's optimum): levels are in units of norm, not sf·norm/w.
		in.setMaxMinTerms(a, x, rate, prop)
		a.ObjectiveMeaning = maxMinMeaning(md) + "; water filling then raises every job as far as it can"
		a.Stats = st
		a.Warnings = append(a.Warnings, warnings...)
		return a, nil
	}
}

// stallWarnings says why water filling froze jobs that had no bottleneck:
// slow could rise only a little, all were frozen with every other active
// job as none was that slow.
func (in *instance) stallWarnings(slow, all []int) []string {
	var out []string
	if len(slow) > 0 {
		out = append(out, fmt.Sprintf("water filling: %s could rise only by less than %.0e of their levels (of 1, below a level of 1), "+
			"which the level LPs kept finding (the LP solver's tolerance, scaled); frozen at their levels after %d such rounds, "+
			"so that the others could rise", in.idList(slow), wfProbe/2, wfStalls))
	}
	if len(all) > 0 {
		out = append(out, fmt.Sprintf("water filling: %s kept rising only by amounts the LP solver's tolerance allows "+
			"(seen with rates spread over orders of magnitude, gangs and entities); frozen at their levels after %d such rounds", in.idList(all), wfStalls))
	}
	return out
}

// fill raises the jobs level by level (see waterFilling) and returns the
// last level LP's x. recut reports a bottleneck test that the solver
// failed on after adding cut rows (gang covers, odd sets) that the levels
// reached break: no point meets them at those levels, so filling must start
// again with them.
func (in *instance) fill(ctx context.Context, opt *options, st *SolveStats, rate rateFunc, prop []float64) (x [][]float64, warnings []string, recut bool, err error) {
	m := in.m()
	level := make([]float64, m)
	frozen := make([]bool, m)
	nFrozen := 0
	groups := in.entityGroups()
	var ceiling []float64
	if groups != nil {
		ceiling = in.ceilings(rate, prop)
	}
	stall, ncuts := 0, 0
	byDuals := len(in.combos) == in.m() && in.rateSpread(rate) <= wfDualSpread
	// Jobs frozen in stalls, for one warning each way rather than one a stall.
	var slowFrozen, allFrozen []int
	defer func() {
		if err == nil {
			warnings = append(warnings, in.stallWarnings(slowFrozen, allFrozen)...)
		}
	}()
	for iter := 0; nFrozen < m; iter++ {
		if iter > (wfStalls+2)*m+10 {
			return nil, nil, false, &lp.StatusError{Status: lp.Numerical, Detail: fmt.Sprintf("water filling made no progress after %d iterations", iter)}
		}
		wts := in.iterationWeights(groups, frozen)
		b, active := in.levelLP(rate, prop, level, wts, frozen)
		if len(active) == 0 {
			return nil, nil, false, &lp.StatusError{Status: lp.Numerical, Detail: "water filling: unfrozen jobs but none with weight"}
		}
		res, err := b.solveAtLevels(ctx, opt, st)
		if err != nil && x != nil && solverTrouble(err) {
			// The last level LP's x meets every level reached: keep it rather than lose
			// the allocation (and a simulation with it) to one LP the solver fails on.
			warnings = append(warnings, fmt.Sprintf("water filling: the LP solver failed on the level LP of iteration %d (%v); %s kept at the levels reached",
				iter+1, err, in.idList(active)))
			break
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("water filling level LP (iteration %d): %w", iter+1, err)
		}
		x = in.withinCapacity(b.fractions(res))
		in.cutsAdded(&ncuts)
		cv := math.Max(0, res.Objective)
		for _, i := range active {
			level[i] += cv * wts[i] / in.sf(i)
		}
		// The solver meets rows only to its tolerance. x was pulled inside
		// the capacity and time rows; lower each level to what that x
		// achieves (a change of about 1e-9), so that x is an exactly
		// feasible point of every later LP.
		for i, e := range in.throughputAt(x, rate) {
			level[i] = math.Min(level[i], e/prop[i])
		}
		// With entities, the test ends early when only jobs at their ceiling
		// are left, and also decides the FIFO jobs queued behind the active
		// ones (see bottlenecks); the slow jobs' test below, only the active
		// ones. Unpacked, it also ends early when only jobs the level LP
		// proved stuck are left (stuckByDuals). Packed without entities it
		// solves the LPs it did: skipping one changes the gang covers and odd
		// sets found along the way, and on the made-up five-type cluster
		// (types exactly proportional, LPs with many optimal vertices) that
		// turned a later test's answer and doubled the LPs
		// (BenchmarkWaterFillingPackedFiveTypes200, 4.3 s then 9.6 s).
		var stuck []bool
		var queues [][]int
		if groups != nil && !opt.wfOneByOne && !in.roundCutsInPlay() {
			stuck = in.atCeiling(active, level, ceiling)
			queues = in.fifoQueues(groups, frozen, x, rate, prop, level)
		}
		if byDuals && !opt.wfOneByOne && !in.roundCutsInPlay() {
			stuck = in.stuckByDuals(stuck, b, res, active, wts, level, rate, prop)
		}
		bott, err := in.bottlenecks(ctx, opt, st, rate, prop, level, active, stuck, queues, wfRaise)
		if err == nil && len(bott) == 0 && stall == wfStalls {
			// The jobs that can rise only a little hold the others back; the
			// others rise again once these are frozen.
			bott, err = in.bottlenecks(ctx, opt, st, rate, prop, level, active, nil, nil, wfProbe/2)
			if err == nil && len(bott) > 0 && !opt.stallFreezeAll {
				slowFrozen = append(slowFrozen, bott...)
			} else {
				bott = active
				allFrozen = append(allFrozen, active...)
			}
		}
		if err != nil {
			return nil, nil, errors.Is(err, lp.ErrInfeasible) && in.cutsAdded(&ncuts), fmt.Errorf("water filling bottleneck test (iteration %d): %w", iter+1, err)
		}
		if len(bott) == 0 {
			stall++
			continue
		}
		stall = 0
		for _, i := range bott {
			frozen[i] = true
			nFrozen++
		}
	}
	return x, warnings, false, nil
}

// wfDualShare is the least share of a level LP's optimum (Σ_i dual_i·w_i/sf_i
// = 1 over the active jobs' level rows) that proves a job cannot rise (see
// stuckByDuals): far above the solver's tolerance (1e-9), far below the
// smallest share seen on a job in a bottleneck (7e-4, 226 jobs frozen
// together).
const wfDualShare = 1e-6

// wfDualSpread is the most a job's rate may vary over worker types (fastest
// over slowest) for stuckByDuals to be trusted. With rates spread over
// orders of magnitude the duals' proof holds only to the solver's tolerance
// scaled up, and a job it named could still rise: on 3,000 wide-rate
// instances, without this bound 7 allocations moved by over 1e-6 (6 of them
// down, by up to 0.7% on a job), all with spreads over 1,000 (Gavel's
// table: 14).
const wfDualSpread = 100

// rateSpread returns the largest spread, fastest over slowest, of a job's
// rates over the worker types it can run on.
func (in *instance) rateSpread(rate rateFunc) float64 {
	worst := 1.0
	for i := range in.jobs {
		lo, hi := math.Inf(1), 0.0
		for w := range in.workers {
			if r := rate(i, i, w); r > 0 {
				lo, hi = math.Min(lo, r), math.Max(hi, r)
			}
		}
		if hi > 0 {
			worst = math.Max(worst, hi/lo)
		}
	}
	return worst
}

// stuckByDuals marks in stuck (made when nil) the active jobs the level
// LP proves cannot rise, so that the bottleneck test needs no LP of its
// own to show it (see bottlenecks). A job whose level row has a dual share
// above wfDualShare cannot: a point where it rose, the others at their
// levels, would be another optimum of the level LP with that row slack.
// The duals name one job of a set of identical ones frozen together (the
// optimum's proof needs one), so its twins are marked too: swapping two
// twins' time maps every point of the LP to another, so one rises when
// the other can. Unpacked LPs only, and neither twin in a cover or round
// cut, rows that need not map to rows under the swap (clique rows do),
// and only when the rates are not spread wide (wfDualSpread).
// At 2,000 weighted mixed jobs, 12, 9 or 4 twins froze at most levels, one
// with a dual; each level took a confirming LP for the others.
func (in *instance) stuckByDuals(stuck []bool, b *builder, res *lp.Result, active []int, wts, level []float64, rate rateFunc, prop []float64) []bool {
	if stuck == nil {
		stuck = make([]bool, in.m())
	}
	cut := in.jobsInCuts()
	var proven []int
	for _, i := range active {
		if -res.Duals[b.levelRows[i]]*wts[i]/in.sf(i) > wfDualShare {
			stuck[i] = true
			proven = append(proven, i)
		}
	}
	for _, i := range active {
		for _, k := range proven {
			if !stuck[i] && !cut[i] && !cut[k] && in.twins(i, k, wts, level, rate, prop) {
				stuck[i] = true
			}
		}
	}
	return stuck
}

// twins reports whether jobs i and k are alike in every row of an unpacked
// level LP: rates, proportional throughput, scale factor, weight this
// iteration, and level to the solver's tolerance.
func (in *instance) twins(i, k int, wts, level []float64, rate rateFunc, prop []float64) bool {
	if prop[i] != prop[k] || wts[i] != wts[k] || in.sf(i) != in.sf(k) ||
		math.Abs(level[i]-level[k]) > 1e-9*math.Max(1, level[k]) {
		return false
	}
	for w := range in.workers {
		if rate(i, i, w) != rate(k, k, w) {
			return false
		}
	}
	return true
}

// jobsInCuts reports the jobs with a combination in a cover or round cut.
func (in *instance) jobsInCuts() []bool {
	in2 := make([]bool, in.m())
	mark := func(c int) {
		in2[in.combos[c].a] = true
		if in.combos[c].pair() {
			in2[in.combos[c].b] = true
		}
	}
	for _, cv := range in.covers {
		for _, c := range cv.combos {
			mark(c)
		}
	}
	for _, rc := range in.roundCuts {
		for _, c := range rc.c {
			mark(c)
		}
	}
	return in2
}

// levelLP builds the LP of the largest common rise c of the active jobs
// (not frozen, with weight), each at speed w_i/sf_i, with every job kept at
// or above its level (b.levelRows), and returns it with those jobs.
func (in *instance) levelLP(rate rateFunc, prop, level, wts []float64, frozen []bool) (b *builder, active []int) {
	b = in.newBuilder(lp.Maximize)
	b.tightRows = true
	c := b.m.AddCol(0, lp.Inf, 1)
	for i := range in.jobs {
		idx, val := b.expr(i, rate, 1/prop[i])
		if !frozen[i] && wts[i] > 0 {
			active = append(active, i)
			idx = append(idx, c)
			val = append(val, -wts[i]/in.sf(i))
		}
		b.levelRows = append(b.levelRows, b.m.AddRow(level[i], lp.Inf, idx, val))
	}
	return b, active
}

// cutsAdded reports whether the instance has more cut rows (odd sets,
// covers, round cuts) than *n, and sets *n to their number.
func (in *instance) cutsAdded(n *int) bool {
	k := len(in.oddSets) + len(in.covers) + len(in.roundCuts)
	more := k > *n
	*n = k
	return more
}

// wfRestarts is how many times water filling starts again after a
// bottleneck test found cut rows the levels reached break (see fill).
const wfRestarts = 3

// wfRelax is how far (relative) solveAtLevels lowers the levels of an LP
// the solver wrongly calls infeasible: above its tolerance (1e-9), well
// below wfRaise.
const wfRelax = 1e-8

// wfStalls is how many iterations in a row may find no bottleneck before
// jobs are frozen anyway. In exact arithmetic the level LP always leaves
// one (progressive filling); when none is found, some active jobs "rise"
// only by taking, within the solver's tolerance (1e-9), time from frozen
// jobs, which rates spread over orders of magnitude can turn into visible
// rises (seen: 1e-8 taken, 3% given, in every iteration), and hold every
// other active job to the same crawl. Waiting longer only repeats that.
// Those that cannot rise by half of wfProbe are then frozen; freezing every
// active job, the earlier rule, left jobs that could rise
// far (on 3,000 random wide-rate instances, 14 allocations gained, up to
// 1.90 -> 3.93 for a job, and none lost; with entities, whose weights pass
// to the jobs left, 19 of 4,000 lost). When no job is that slow every
// active job is still frozen, which can leave some far below what they
// could reach (26 of 81 stalls on those instances).
const wfStalls = 3

// A job counts as able to rise above its level when it can gain more than
// wfRaise (relative); Gavel uses a slack of 1e-4.
const wfRaise = 1e-6

// wfProbe caps each y_i of the bottleneck test (relative, like wfRaise).
// In exact arithmetic any cap above wfRaise gives the same bottlenecks, but
// a small one lets every job that can rise reach it in the same LP: rises
// that small hardly compete for GPUs. With y_i up to 1 the LP raised a few
// jobs a long way and left the others for the next LPs (measured: 200
// weighted jobs of 1-8 GPUs on five types, 321 LPs and 2.5 s, or 524 LPs
// and 24 s packed; with 1e-4, 180 LPs and 0.9 s, 236 LPs and 4.7 s). The
// allocations agree to the solver's tolerance on well-conditioned tables;
// with rates spread over orders of magnitude, where which job counts as
// able to rise depends on that tolerance, either cap comes out ahead on
// some instances (a reviewer: 24 worse, 7 better of 3,000 packed). A
// hundred times wfRaise, so that a rise is told from the solver's
// tolerance, and half of it tells the jobs that hold the others back when
// the level LPs stall (see wfStalls). 1e-3 gave as many stall warnings
// (81 on 3,000 wide-rate instances, fewer of them freezing every active
// job: 7 against 26) and as many better as worse allocations; it stalled
// on the five-type instance above (packed 9.6 s).
const wfProbe = 1e-4

// bottlenecks returns the jobs of cand that cannot rise above their level
// by more than raise (relative) while every job keeps at least its level
// (see waterFilling), and the queued FIFO jobs that cannot rise either.
// When an LP in which some jobs rose leaves only jobs known to be stuck
// (nil for none: at their ceiling, or proven by the level LP, see
// stuckByDuals) in question, they are returned without another LP to show
// that they cannot rise: as a rule, when a FIFO job reaches full time on
// its fastest GPU, the test took two LPs, now one.
//
// Each of queues is a FIFO entity's first unfrozen job, which is active
// (in cand), then jobs waiting behind it at level 0. A waiting job
// that cannot rise at the levels reached never will (the levels only rise,
// so what the other jobs must keep only grows), so when its turn comes the
// level LP rises by 0 (every active job rises with it), nothing moves, and
// the test freezes it at 0; on a full cluster, a level LP and a test a
// waiting job were most of a simulation's LPs. The test freezes such jobs
// at once instead. Whether a job can rise does not depend on which others
// are tested with it (when the sum of trial rises is at its optimum of 0,
// no job can rise alone), so testing them changes no other answer. A
// queue's waiting jobs join the test once its first job has not risen in a
// test LP (on a cluster with room they would only add columns, and trial
// rises to share GPUs); a waiting job that rises takes those behind it out
// of the test (each left for its own turn: where the solver's tolerance let
// waiting jobs creep up, testing on behind them tripled the LPs); and the
// waiting jobs left count as unable to rise only after an LP in which no
// job in question rose, as the active jobs do.
func (in *instance) bottlenecks(ctx context.Context, opt *options, st *SolveStats, rate rateFunc, prop, level []float64, cand []int, stuck []bool, queues [][]int, raise float64) ([]int, error) {
	const (
		out     = iota // not in question, or found able to rise
		testing        // in question
		held           // found unable to rise
	)
	m := in.m()
	state := make([]uint8, m)
	tried := make([]bool, m) // in question in an LP of this test
	queued := make([]bool, m)
	nu := 0 // jobs in question
	for _, i := range cand {
		state[i] = testing
		nu++
	}
	for _, q := range queues {
		for _, i := range q[1:] {
			queued[i] = true
		}
	}
	joined := make([]bool, len(queues))
	// join puts in question the queues whose first job did not rise in an
	// LP (or was found unable to).
	join := func() {
		for k, q := range queues {
			if h := q[0]; !joined[k] && (state[h] == held || state[h] == testing && tried[h]) {
				joined[k] = true
				for _, i := range q[1:] {
					state[i] = testing
					nu++
				}
			}
		}
	}
	// prune takes out of the test the waiting jobs behind one that rose.
	prune := func() {
		for k, q := range queues {
			for j := 1; joined[k] && j < len(q); j++ {
				if state[q[j-1]] == out && state[q[j]] == testing {
					state[q[j]] = out
					nu--
				}
			}
		}
	}
	join()
	y := make([]int, m)
	for nu > 0 {
		b := in.newBuilder(lp.Maximize)
		b.tightRows = true
		for i := range in.jobs {
			idx, val := b.expr(i, rate, 1/prop[i])
			y[i] = -1
			if state[i] == testing {
				obj := 1.0
				if queued[i] {
					obj = wfQueuedWeight
				}
				y[i] = b.m.AddCol(0, wfProbe*math.Max(1, level[i]), obj)
				idx = append(idx, y[i])
				val = append(val, -1)
				tried[i] = true
			}
			b.levelRows = append(b.levelRows, b.m.AddRow(level[i], lp.Inf, idx, val))
		}
		res, err := b.solveAtLevels(ctx, opt, st)
		if err != nil {
			return nil, err
		}
		raised, queuedRaised := 0, 0
		for i := range in.jobs {
			if y[i] >= 0 && res.X[y[i]] > raise*math.Max(1, level[i]) {
				if queued[i] {
					queuedRaised++
				} else {
					raised++
				}
				state[i] = out
				nu--
			}
		}
		prune()
		if raised > 0 {
			join()
			if nu > 0 && in.onlyStuck(state, testing, queued, stuck) {
				// Those left cannot rise: no LP needs to show it.
				for i := range state {
					if state[i] == testing {
						state[i] = held
					}
				}
				nu = 0
			}
			continue
		}
		// No active job rose: those left in question cannot (the queued
		// jobs' trial rises, weighted by wfQueuedWeight, hold them back by
		// far less than a trial rise). Nor can the queued jobs left, unless
		// other queued jobs rose beside them: then they are tested again.
		for i := range in.jobs {
			if state[i] == testing && (!queued[i] || queuedRaised == 0) {
				state[i] = held
				nu--
			}
		}
		// The queues of jobs found unable to rise only now (all of them
		// when the first LP raised none) are tested in one more LP.
		join()
	}
	var bott []int
	for _, i := range cand {
		if state[i] == held {
			bott = append(bott, i)
		}
	}
	for _, q := range queues {
		for _, i := range q[1:] {
			if state[i] == held {
				bott = append(bott, i)
			}
		}
	}
	return bott, nil
}

// onlyStuck reports whether every job in question (state[i] == testing)
// is an active job known to be stuck.
func (in *instance) onlyStuck(state []uint8, testing uint8, queued, stuck []bool) bool {
	if stuck == nil {
		return false
	}
	for i, s := range state {
		if s == testing && (queued[i] || !stuck[i]) {
			return false
		}
	}
	return true
}

// ceilings returns each job's ceiling: the most norm it can reach, all
// its time on the combination and worker type where its rate is highest.
func (in *instance) ceilings(rate rateFunc, prop []float64) []float64 {
	ceil := make([]float64, in.m())
	for i := range in.jobs {
		for _, c := range in.byJob[i] {
			for w := range in.workers {
				if in.combos[c].runnable(w) {
					ceil[i] = math.Max(ceil[i], rate(i, c, w)/prop[i])
				}
			}
		}
	}
	return ceil
}

// atCeiling reports which active jobs are within the test's margin
// (wfRaise) of their ceiling, which they cannot rise above.
func (in *instance) atCeiling(active []int, level, ceiling []float64) []bool {
	at := make([]bool, in.m())
	for _, i := range active {
		at[i] = ceiling[i]-level[i] <= wfRaise*math.Max(1, level[i])
	}
	return at
}

// roundCutsInPlay reports whether the instance's LPs are cut until rounds
// realize their solutions (roundcuts.go: small instances with gangs or
// pairs). The cuts found depend on every solution the LPs return, so the
// allocation depends on which LPs water filling solves; on these instances
// (at most separateMaxJobs jobs) it solves the same ones as before queued
// FIFO jobs were tested (see bottlenecks).
func (in *instance) roundCutsInPlay() bool {
	return in.separable() && (len(in.combos) > in.m() || in.hasGangs())
}

// wfQueuedWeight is the weight of a queued FIFO job's trial rise in the
// bottleneck test (1 for an active job's), so that the test raises the
// active jobs as it would without the queued ones, and the queued ones
// with what is left. When no active job rises, the queued jobs' rises (at
// most wfProbe each at level 0) add at most 1e-8 a job to the optimum, far
// below an active job's trial rise: an active job that could rise would.
// The solver still raises the queued jobs that can rise (their reduced
// costs are far above its tolerance of 1e-9).
const wfQueuedWeight = 1e-4

// fifoQueues returns, for each FIFO entity with jobs waiting behind its
// first unfrozen one, that job and the waiting ones, up to the first that
// can clearly rise: a GPU free in x (the level LP's solution) would raise
// it by a whole trial rise (wfProbe).
func (in *instance) fifoQueues(groups []entityGroup, frozen []bool, x [][]float64, rate rateFunc, prop, level []float64) [][]int {
	var qs [][]int
	var free []float64
	for _, g := range groups {
		if !g.fifo {
			continue
		}
		var q []int
		for _, i := range g.jobs {
			if frozen[i] {
				continue
			}
			if len(q) > 0 {
				if free == nil {
					free = in.freeGPUs(x)
				}
				if in.canClearlyRise(i, x, free, rate, prop, level) {
					break
				}
			}
			q = append(q, i)
		}
		if len(q) > 1 {
			qs = append(qs, q)
		}
	}
	return qs
}

// freeGPUs returns the GPUs of each worker type that x leaves free.
func (in *instance) freeGPUs(x [][]float64) []float64 {
	free := slices.Clone(in.cap)
	for c := range x {
		for w, v := range x[c] {
			free[w] -= float64(in.combos[c].sf) * v
		}
	}
	return free
}

// canClearlyRise reports whether job i, running alone on GPUs x leaves free
// for the time x leaves it, would rise by a whole trial rise.
func (in *instance) canClearlyRise(i int, x [][]float64, free []float64, rate rateFunc, prop, level []float64) bool {
	t := 0.0
	for _, c := range in.byJob[i] {
		for _, v := range x[c] {
			t += v
		}
	}
	for w := range in.workers {
		if !in.combos[i].runnable(w) {
			continue
		}
		d := math.Min(free[w]/in.sf(i), 1-t)
		if d*rate(i, i, w)/prop[i] > wfProbe*math.Max(1, level[i]) {
			return true
		}
	}
	return false
}

// entityGroup is an entity's jobs in FIFO order.
type entityGroup struct {
	weight float64
	fifo   bool
	jobs   []int
}

func (in *instance) entityGroups() []entityGroup {
	if len(in.p.Entities) == 0 {
		return nil
	}
	byName := map[string]int{}
	var gs []entityGroup
	for _, i := range in.fifoOrder() {
		j := in.jobs[i]
		if j.Entity == "" {
			gs = append(gs, entityGroup{weight: in.weight[i], jobs: []int{i}})
			continue
		}
		g, ok := byName[j.Entity]
		if !ok {
			e := in.p.Entities[j.Entity]
			g = len(gs)
			byName[j.Entity] = g
			gs = append(gs, entityGroup{weight: e.Weight, fifo: e.Policy == EntityFIFO})
		}
		gs[g].jobs = append(gs[g].jobs, i)
	}
	return gs
}

// iterationWeights returns each job's weight for this water-filling
// iteration (0 for frozen jobs and FIFO jobs that are not first).
func (in *instance) iterationWeights(groups []entityGroup, frozen []bool) []float64 {
	w := make([]float64, in.m())
	if groups == nil {
		for i := range w {
			if !frozen[i] {
				w[i] = in.weight[i]
			}
		}
		return w
	}
	for _, g := range groups {
		if g.fifo {
			for _, i := range g.jobs {
				if !frozen[i] {
					w[i] = g.weight
					break
				}
			}
			continue
		}
		sum := 0.0
		for _, i := range g.jobs {
			if !frozen[i] {
				sum += in.weight[i]
			}
		}
		for _, i := range g.jobs {
			if !frozen[i] {
				w[i] = g.weight * in.weight[i] / sum
			}
		}
	}
	return w
}

// solveAtLevels solves a water-filling LP whose rows b.levelRows keep
// every job at its level. Such an LP is not truly infeasible (unless its
// re-solves add cut rows that break the levels; see fill): the
// previous level LP's x, with the new columns at 0, meets every row, since
// x was pulled inside capacity and each level lowered to what x achieves
// (and every round cut, roundcuts.go: cuts are added only while each
// earlier LP's x was proven realizable, and a realizable x meets them all).
// When the solver still reports "infeasible" or numerical trouble (rates
// spread over orders of magnitude, rows met only to its tolerance after
// scaling), it retries with the other method (barrier with presolve, or
// dual simplex), then with the levels lowered by a relative wfRelax, far
// below what counts as a rise.
func (b *builder) solveAtLevels(ctx context.Context, opt *options, st *SolveStats) (*lp.Result, error) {
	res, err := b.solve(ctx, opt, st)
	if !solverTrouble(err) {
		return res, err
	}
	other := *opt
	other.method = MethodBarrier
	if b.method(opt) == lp.Barrier {
		other.method = MethodDual
	}
	if res, err = b.solve(ctx, &other, st); !solverTrouble(err) {
		return res, err
	}
	for _, r := range b.levelRows {
		lb, ub := b.m.RowBounds(r)
		b.m.SetRowBounds(r, lb-wfRelax*math.Max(1, math.Abs(lb)), ub)
	}
	for _, o := range []*options{opt, &other} {
		if res, err = b.solve(ctx, o, st); !solverTrouble(err) {
			return res, err
		}
	}
	return nil, err
}

// solverTrouble reports an LP the solver failed on though it has a solution:
// a water-filling LP is never truly infeasible (see solveAtLevels).
func solverTrouble(err error) bool {
	return errors.Is(err, lp.ErrInfeasible) || errors.Is(err, lp.ErrNumerical)
}

// withinCapacity returns x clipped to [0, 1] and scaled down where the
// solver, meeting rows only to its tolerance, left a worker type over its
// GPUs or a job over a time fraction of 1. Levels taken from the clipped x
// are then reachable exactly; from the raw x, a capacity excess of 1e-9
// could turn into a level that no allocation reaches when rates differ by
// orders of magnitude, and the next LP would be infeasible.
func (in *instance) withinCapacity(x [][]float64) [][]float64 {
	for c := range x {
		for w := range x[c] {
			x[c][w] = math.Min(1, math.Max(0, x[c][w]))
		}
	}
	for w := range in.workers {
		used := 0.0
		for c := range x {
			used += float64(in.combos[c].sf) * x[c][w]
		}
		if used > in.cap[w] {
			for c := range x {
				x[c][w] *= in.cap[w] / used
			}
		}
	}
	for i := range in.jobs {
		t := 0.0
		for _, c := range in.byJob[i] {
			for w := range x[c] {
				t += x[c][w]
			}
		}
		if t > 1 {
			for _, c := range in.byJob[i] {
				for w := range x[c] {
					x[c][w] /= t
				}
			}
		}
	}
	in.withinOddSets(x)
	in.withinCovers(x)
	in.withinCliques(x)
	return x
}

// idList names jobs by id, for warnings: the first 8, and how many in all.
func (in *instance) idList(jobs []int) string {
	const shown = 8
	var ids []string
	for _, i := range jobs[:min(len(jobs), shown)] {
		ids = append(ids, fmt.Sprintf("%q", in.jobs[i].ID))
	}
	if len(jobs) > shown {
		return fmt.Sprintf("jobs %s, ... (%d in all)", strings.Join(ids, ", "), len(jobs))
	}
	return "jobs " + strings.Join(ids, ", ")
}
