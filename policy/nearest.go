package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gavelkit/gavel/policy/lp"
)

// An allocation no rounds realize still has to be run: the rounds package
// runs the rounds of a decomposition, and needs one for such targets too.
// Decompose's master minimizes the total time short, which puts it where
// it is cheapest, often all on one job (two 4-GPU gangs wanting 0.75 of 6
// GPUs each: one of them 0.5 short). DecomposeNearest spreads it instead,
// in what the allocation promised each job: first the largest share of a
// job's promised throughput lost is made least, then, keeping that, the
// sum of those shares.

// DecomposeNearest is Decompose that, for targets no convex combination of
// rounds covers, also returns the nearest one. A job's loss is the share of
// its promised throughput the combination does not give it: Σ rate ×
// shortfall over Σ rate × target, over its slots, where rate(job, k) is
// what a unit of slot k's time is worth to the job (nil: 1 everywhere, so
// time alone; jobs promised less than decomposeTol of time are left out).
// The nearest combination has the least largest loss, and of those the
// least sum of losses; Decomposition.Short is that largest loss. It comes
// with Decompose's *UnrealizableError (errors.Is(err, ErrUnrealizable)),
// so that callers can tell it from a decomposition; when the nearest
// cannot be found (its column limit, the solver) the error wraps both and
// no rounds come with it. Realizable targets, and Decompose's other
// errors, it returns as Decompose does; a rate that is negative, NaN or
// infinite is an ErrInput.
func DecomposeNearest(ctx context.Context, slots []Slot, targets []float64, gpus map[string]int, rate func(job string, slot int) float64) (*Decomposition, error) {
	d, err := Decompose(ctx, slots, targets, gpus)
	if !errors.Is(err, ErrUnrealizable) {
		return d, err
	}
	rs, caps := indexSlots(slots, gpus)
	if rate == nil {
		rate = func(string, int) float64 { return 1 }
	}
	groups, ierr := jobLoss(slots, targets, rate)
	if ierr != nil {
		return nil, ierr
	}
	near, nerr := nearest(ctx, lpEnv{budget: newSearchBudget()}, rs, caps, targets, groups)
	if nerr != nil {
		return nil, fmt.Errorf("%w; the nearest rounds: %w", err, nerr)
	}
	return near, err
}

// nearestTol is how much the second LP may let the largest loss grow over
// the first's optimum: the first's rounding.
const nearestTol = 1e-7

// nearest runs the two LPs of DecomposeNearest on targets known to be
// unrealizable, each by column generation.
func nearest(ctx context.Context, env lpEnv, slots []roundSlot, caps []int, target []float64, groups []lossRow) (*Decomposition, error) {
	pricing := newPricing(slots, caps, env)
	first, err := newNearMaster(target, groups, math.Inf(1))
	if err != nil {
		return nil, err
	}
	defer first.Close()
	lead := len(target) + 1
	d, res, err := generate(ctx, env, first, lead, pricing, target, nil)
	if err != nil {
		return nil, err
	}
	short := res.Objective
	second, err := newNearMaster(target, groups, short+nearestTol)
	if err != nil {
		return nil, err
	}
	defer second.Close()
	d, _, err = generate(ctx, env, second, lead, pricing, target, d.Rounds)
	if err != nil {
		return nil, err
	}
	d.Short = short
	return d, nil
}

// lossRow is a job's relative loss: Σ coef[i]·short[slot[i]].
type lossRow struct {
	slot []int
	coef []float64
}

// jobLoss returns each job's loss row: the throughput its slots' shortfalls
// cost it (rate × shortfall) over the throughput its targets promise it
// (rate × target). A job promised at most decomposeTol of time, or no
// throughput, has none: its loss would be rounding over almost nothing.
func jobLoss(slots []Slot, targets []float64, rate func(string, int) float64) ([]lossRow, error) {
	at := map[string]int{}
	var rows []lossRow
	var promised, time []float64
	for k, s := range slots {
		for _, id := range []string{s.Combination.A, s.Combination.B} {
			if id == "" {
				continue
			}
			r := rate(id, k)
			switch {
			case !(r >= 0) || math.IsInf(r, 1):
				return nil, inputErr("slot %v on %s: rate %v for %s", s.Combination, s.Worker, r, id)
			case r == 0:
				continue
			}
			g, ok := at[id]
			if !ok {
				g = len(rows)
				at[id] = g
				rows = append(rows, lossRow{})
				promised, time = append(promised, 0), append(time, 0)
			}
			rows[g].slot = append(rows[g].slot, k)
			rows[g].coef = append(rows[g].coef, r)
			promised[g] += r * targets[k]
			time[g] += targets[k]
		}
	}
	var out []lossRow
	for g, row := range rows {
		if promised[g] <= 0 || time[g] <= decomposeTol {
			continue
		}
		for i := range row.coef {
			row.coef[i] /= promised[g]
		}
		out = append(out, row)
	}
	return out, nil
}

// newNearMaster returns a master LP for nearest, before any round. Its
// rows are Decompose's master's (Σ_q weight_q·[k ∈ q] + short_k ≥
// target_k, Σ weight ≤ 1), so pricing reads its duals alike, then one row
// a job, its loss: Σ_i coef_i·short_{slot_i} − largest ≤ 0. Its lead
// columns are the short_k and largest. With limit infinite it minimizes
// largest; otherwise it keeps largest within limit and minimizes the sum
// of the losses (Σ_k short_k times the coefficients of k in all rows).
func newNearMaster(target []float64, groups []lossRow, limit float64) (*lp.Session, error) {
	m := lp.NewModel(lp.Minimize)
	first := math.IsInf(limit, 1)
	cost := make([]float64, len(target))
	if !first {
		for _, g := range groups {
			for i, k := range g.slot {
				cost[k] += g.coef[i]
			}
		}
	}
	for k := range target {
		short := m.AddCol(0, lp.Inf, cost[k])
		m.AddRow(target[k], lp.Inf, []int{short}, []float64{1})
	}
	m.AddRow(-lp.Inf, 1, nil, nil)
	obj := 0.0
	if first {
		obj = 1
	}
	largest := m.AddCol(0, limit, obj)
	for _, g := range groups {
		idx := append(slices.Clone(g.slot), largest)
		val := append(slices.Clone(g.coef), -1)
		m.AddRow(-lp.Inf, 0, idx, val)
	}
	return lp.NewSession(m)
}
