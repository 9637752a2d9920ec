package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gavelkit/gavel/policy/lp"
)

// mode is the heterogeneity view of a policy family (gavel-reference §4).
type mode int

const (
	agnostic mode = iota // every GPU alike
	perf                 // heterogeneity-aware
	packed               // aware, with space sharing (pairs)
)

// prepare validates p and, for packed policies, adds the pair combinations.
func prepare(p *Problem, md mode, opt *options) (*instance, error) {
	in, err := newInstance(p)
	if err != nil {
		return nil, err
	}
	if md == packed {
		if err := in.addPairs(opt.maxPartners); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// maxMinFairness is LAS (§3.1): maximize min_i sf_i·eff_i/(w_i·prop_i).
// agnostic: every rate 1 where the job can run; packed: over pairs too.
func maxMinFairness(md mode) allocator {
	return func(ctx context.Context, p *Problem, opt *options) (*Allocation, error) {
		in, err := prepare(p, md, opt)
		if err != nil || in.m() == 0 {
			return orEmpty(err)
		}
		rate, prop := in.lasView(md)
		b := in.newBuilder(lp.Maximize)
		b.tightRows = true
		t := b.m.AddCol(0, lp.Inf, 1)
		for i := range in.jobs {
			idx, val := b.expr(i, rate, in.sf(i)/(in.weight[i]*prop[i]))
			b.m.AddRow(0, lp.Inf, append(idx, t), append(val, -1))
		}
		var st SolveStats
		res, err := b.solve(ctx, opt, &st)
		if err != nil {
			return nil, err
		}
		x := b.fractions(res)
		var warn string
		if md == agnostic {
			if x, warn, err = in.spread(ctx, opt, &st, x); err != nil {
				return nil, err
			}
		}
		a := in.allocation(x)
		a.Warnings = appendNonEmpty(a.Warnings, warn)
		in.setMaxMinTerms(a, x, rate, prop)
		a.Objective, a.Stats = res.Objective, st // the LP's t*: the smallest term up to the tolerance
		a.ObjectiveMeaning = maxMinMeaning(md)
		return a, nil
	}
}

func orEmpty(err error) (*Allocation, error) {
	if err != nil {
		return nil, err
	}
	return emptyAllocation(), nil
}

// familyView returns the per-job rates FTF and makespan plan with: the
// table's (perf, packed) or the reference view (agnostic), which replaces
// Gavel's hard-coded v100 rates (§11.6).
func (in *instance) familyView(md mode, opt *options) ([][]float64, error) {
	if md == agnostic {
		return in.referenceRates(opt.reference)
	}
	return in.rate, nil
}

// makespan (§3.5) exactly: with s = 1/T, "every job finishes by T" is
// eff_i ≥ steps_i·s, so maximizing s is one LP (Gavel bisects on T to 5%).
// s is scaled by T0 = max_i steps_i/iso_i so that the LP's numbers are O(1).
// A second LP (makespanUseIdle) then picks, among the allocations that meet
// that T, one where jobs progress fastest. The objective is T in seconds.
func makespan(md mode) allocator {
	return func(ctx context.Context, p *Problem, opt *options) (*Allocation, error) {
		in, err := prepare(p, md, opt)
		if err != nil || in.m() == 0 {
			return orEmpty(err)
		}
		view, err := in.familyView(md, opt)
		if err != nil {
			return nil, err
		}
		t0 := 0.0
		for i, j := range in.jobs {
			if r := j.StepsRemaining(); r > 0 {
				t0 = math.Max(t0, r/in.iso[i])
			}
		}
		if t0 == 0 {
			return nil, inputErr("makespan: no job has steps remaining (total_steps - steps_done)")
		}
		rate := in.viewRates(view)
		b := in.newBuilder(lp.Maximize)
		u := b.m.AddCol(0, lp.Inf, 1) // u = T0/T
		for i, j := range in.jobs {
			r := j.StepsRemaining()
			if r == 0 {
				continue
			}
			idx, val := b.expr(i, rate, t0/r)
			b.m.AddRow(0, lp.Inf, append(idx, u), append(val, -1))
		}
		var st SolveStats
		res, err := b.solve(ctx, opt, &st)
		if err != nil {
			return nil, err
		}
		if !(res.Objective > 0) {
			return nil, &lp.StatusError{Status: lp.Numerical, Detail: "makespan LP returned a non-positive rate of progress"}
		}
		x, err := in.makespanUseIdle(ctx, opt, &st, rate, t0, res.Objective)
		if err != nil {
			return nil, err
		}
		if x == nil {
			x = b.fractions(res)
		}
		var warn string
		if md == agnostic {
			if x, warn, err = in.spread(ctx, opt, &st, x); err != nil {
				return nil, err
			}
		}
		a := in.allocation(x)
		a.Warnings = appendNonEmpty(a.Warnings, warn)
		a.Objective, a.Stats = t0/res.Objective, st
		a.Terms = map[string]float64{}
		for i, e := range in.throughputAt(x, rate) {
			if r := in.jobs[i].StepsRemaining(); r > 0 && e > 0 {
				a.Terms[in.jobs[i].ID] = r / e
			}
		}
		a.ObjectiveMeaning = "makespan in seconds: max over jobs of steps remaining/effective"
		if md == agnostic {
			a.ObjectiveMeaning += " (every GPU at the job's reference rate)"
		}
		return a, nil
	}
}

// makespanUseIdle returns, among the allocations that finish every job by
// the optimal makespan T* = t0/u, one that maximizes Σ_i eff_i/steps_i (the
// rate at which jobs progress): the first LP's point is any that meets T*
// (like Gavel's feasibility LP, §11.12), which gave a job that finishes
// early only the time it needs to finish at T* and left GPUs idle that it
// could use. It returns nil (keep the first point) when the second LP
// fails; only the context's error is returned.
func (in *instance) makespanUseIdle(ctx context.Context, opt *options, st *SolveStats, rate rateFunc, t0, u float64) ([][]float64, error) {
	b := in.newBuilder(lp.Maximize)
	obj := map[int]float64{}
	for i, j := range in.jobs {
		r := j.StepsRemaining()
		if r == 0 {
			continue
		}
		idx, val := b.expr(i, rate, t0/r)
		// The first LP's rows at its optimum, loosened by 1e-8 so that its own point, met to the
		// solver's tolerance, stays feasible here.
		b.m.AddRow(u*(1-1e-8), lp.Inf, idx, val)
		for k, c := range idx {
			obj[c] += val[k]
		}
	}
	return b.secondStage(ctx, opt, st, obj)
}

// secondStage solves b, whose rows the caller has made keep a first LP at its optimum, with
// the objective obj (column → coefficient) in place of b's, and returns its fractions; nil
// (keep the first LP's point) when it fails. Only the context's error is returned.
func (b *builder) secondStage(ctx context.Context, opt *options, st *SolveStats, obj map[int]float64) ([][]float64, error) {
	b.addObjective(func(int, int) float64 { return 0 })
	for c, v := range obj {
		b.m.SetObj(c, v)
	}
	res, err := b.solve(ctx, opt, st)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, nil
	}
	return b.fractions(res), nil
}

// throughputSum (§3.6): maximize Σ_i eff_i/cost, where cost is the price of
// the worker type (1 without prices), optionally subject to SLOs
// eff_i ≥ steps_i/(SLO_i − TimeRun_i). Like Gavel, an infeasible SLO set is
// dropped and the LP re-solved, but the allocation says so in Warnings.
func throughputSum(md mode, useCost, slos bool) allocator {
	return func(ctx context.Context, p *Problem, opt *options) (*Allocation, error) {
		in, err := prepare(p, md, opt)
		if err != nil || in.m() == 0 {
			return orEmpty(err)
		}
		cost := make([]float64, in.nw())
		for w, wt := range in.workers {
			cost[w] = 1
			if useCost {
				pr, ok := p.Prices[wt]
				if !ok {
					return nil, inputErr("prices: no price for worker type %q (cost policies need one per worker type)", wt)
				}
				if !(pr > 0) || math.IsInf(pr, 0) {
					return nil, inputErr("prices: worker type %q: price %v: cost policies divide throughput by the price, so it must be positive", wt, pr)
				}
				cost[w] = pr
			}
		}
		objective := func(c, w int) float64 {
			cb := &in.combos[c]
			r := cb.ra[w]
			if cb.pair() {
				r += cb.rb[w]
			}
			return r / cost[w]
		}
		// build also returns its warnings (an SLO already missed), for the caller to say once.
		build := func(withSLO bool) (*builder, []string) {
			b := in.newBuilder(lp.Maximize)
			b.addObjective(objective)
			var missed []string
			if !withSLO {
				return b, nil
			}
			for i, j := range in.jobs {
				if j.SLO == 0 || j.StepsRemaining() == 0 {
					continue
				}
				left := j.SLO - j.TimeRun
				if left <= 0 {
					// Without the time run, which grows: the simulator says each message once.
					missed = append(missed, fmt.Sprintf("job %q: SLO of %gs already missed; no SLO constraint", j.ID, j.SLO))
					continue
				}
				// Row scaled by left/steps so that coefficients are seconds·rate/steps = O(1).
				idx, val := b.expr(i, in.trueRates(), left/j.StepsRemaining())
				b.m.AddRow(1, lp.Inf, idx, val)
			}
			return b, missed
		}
		var st SolveStats
		withSLO := slos
		b, warnings := build(withSLO)
		res, err := b.solve(ctx, opt, &st)
		if slos && errors.Is(err, lp.ErrInfeasible) {
			warnings = append(warnings, "SLOs cannot all be met"+in.sloOutOfReach()+"; solved without SLO constraints (as Gavel does)")
			withSLO = false
			b, _ = build(withSLO)
			res, err = b.solve(ctx, opt, &st)
		}
		if err != nil {
			return nil, err
		}
		second, _ := build(withSLO)
		x, err := in.preferEarlier(ctx, opt, &st, second, objective, res.Objective)
		if err != nil {
			return nil, err
		}
		if x == nil {
			x = b.fractions(res)
		}
		a := in.allocation(x)
		a.Objective, a.Stats, a.Warnings = res.Objective, st, warnings
		a.ObjectiveMeaning = "total throughput, Σ over jobs of effective steps/s"
		if useCost {
			a.ObjectiveMeaning = "throughput per price, Σ over jobs and worker types of steps/s / price"
		}
		return a, nil
	}
}

// preferEarlier breaks ties among the allocations of the largest sum (objective, with
// optimum z, already b's objective): keeping it at z, it favours jobs in FIFO order (arrival,
// then id), each job's normalized throughput weighted by (m − rank)/m. Without it the simplex
// corner decides, which gave two identical jobs' time all to the later id, and ran a trace of
// identical jobs last in, first out. It returns nil (keep the first point) when the LP fails;
// only the context's error is returned.
func (in *instance) preferEarlier(ctx context.Context, opt *options, st *SolveStats, b *builder, objective func(c, w int) float64, z float64) ([][]float64, error) {
	var idx []int
	var val []float64
	for c := range b.col {
		for w, j := range b.col[c] {
			if j >= 0 {
				if v := objective(c, w); v != 0 {
					idx, val = append(idx, j), append(val, v)
				}
			}
		}
	}
	// Not loosened: the sum is not scaled to O(1), so a relative slack would trade real
	// throughput for order; the solver's feasibility tolerance takes the first point.
	b.m.AddRow(z, lp.Inf, idx, val)
	obj := map[int]float64{}
	m := float64(in.m())
	for rank, i := range in.fifoOrder() {
		if !(in.iso[i] > 0) {
			continue
		}
		ji, jv := b.expr(i, in.trueRates(), (m-float64(rank))/m/in.iso[i])
		for k, c := range ji {
			obj[c] += jv[k]
		}
	}
	return b.secondStage(ctx, opt, st, obj)
}

// sloOutOfReach names the jobs whose SLO needs more than the job's best
// rate (on any worker type, alone or in a pair), which no allocation
// gives: " (job "a" needs 10 steps/s, its best rate is 4)", or "" when each
// SLO alone could be met and only together they cannot.
func (in *instance) sloOutOfReach() string {
	var out []string
	for i, j := range in.jobs {
		left := j.SLO - j.TimeRun
		if j.SLO == 0 || j.StepsRemaining() == 0 || left <= 0 {
			continue
		}
		best := 0.0
		for _, c := range in.byJob[i] {
			for w := range in.workers {
				if in.combos[c].runnable(w) {
					best = math.Max(best, in.combos[c].rateOf(i, w))
				}
			}
		}
		if need := j.StepsRemaining() / left; need > best*(1+1e-9) {
			out = append(out, fmt.Sprintf("job %q needs %.4g steps/s, its best rate is %.4g", j.ID, need, best))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}

// fifoOrder returns job indices by (Arrival, ID): FIFO order, with the job
// id breaking ties (CompareIDs: "9" before "10") so that equal arrivals are
// ordered deterministically.
func (in *instance) fifoOrder() []int {
	ord := make([]int, in.m())
	for i := range ord {
		ord[i] = i
	}
	sort.SliceStable(ord, func(a, b int) bool {
		ja, jb := in.jobs[ord[a]], in.jobs[ord[b]]
		if ja.Arrival != jb.Arrival {
			return ja.Arrival < jb.Arrival
		}
		return CompareIDs(ja.ID, jb.ID) < 0
	})
	return ord
}
