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
// Decompose's master minimizes the total shortfall, which puts it where it
// is cheapest, often all on one job (two 4-GPU gangs wanting 0.75 of 6
// GPUs each: one of them 0.5 short). DecomposeNearest spreads it instead:
// first the largest shortfall of a job on a worker type is made least,
// then, keeping that, the total.

// DecomposeNearest is Decompose that, for targets no convex combination of
// rounds covers, also returns the nearest one: the combination whose
// largest shortfall of a job on a worker type (its slots' shortfalls
// there, summed) is least, and of those one whose total shortfall is
// least, with that largest shortfall in Decomposition.Short. It comes with
// Decompose's *UnrealizableError (errors.Is(err, ErrUnrealizable)), so
// that callers can tell it from a decomposition; when the nearest cannot
// be found (its column limit, the solver) the error wraps both and no
// rounds come with it. Realizable targets, and Decompose's other errors,
// it returns as Decompose does.
func DecomposeNearest(ctx context.Context, slots []Slot, targets []float64, gpus map[string]int) (*Decomposition, error) {
	d, err := Decompose(ctx, slots, targets, gpus)
	if !errors.Is(err, ErrUnrealizable) {
		return d, err
	}
	rs, caps := indexSlots(slots, gpus)
	near, nerr := nearest(ctx, lpEnv{}, rs, caps, targets)
	if nerr != nil {
		return nil, fmt.Errorf("%w; the nearest rounds: %w", err, nerr)
	}
	return near, err
}

// nearestTol is how much the second LP may let the largest shortfall grow
// over the first's optimum: the first's rounding.
const nearestTol = 1e-7

// nearest runs the two LPs of DecomposeNearest on targets known to be
// unrealizable, each by column generation.
func nearest(ctx context.Context, env lpEnv, slots []roundSlot, caps []int, target []float64) (*Decomposition, error) {
	groups := jobTypeGroups(slots)
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

// jobTypeGroups returns, for each job on each worker type that some slot
// serves, the slots that serve it there.
func jobTypeGroups(slots []roundSlot) [][]int {
	at := map[[2]int]int{}
	var groups [][]int
	for k, s := range slots {
		for _, j := range s.jobs() {
			key := [2]int{j, s.w}
			g, ok := at[key]
			if !ok {
				g = len(groups)
				at[key] = g
				groups = append(groups, nil)
			}
			groups[g] = append(groups[g], k)
		}
	}
	return groups
}

// newNearMaster returns a master LP for nearest, before any round. Its
// rows are Decompose's master's (Σ_q weight_q·[k ∈ q] + short_k ≥
// target_k, Σ weight ≤ 1), so pricing reads its duals alike, then one row
// a group: Σ_{k∈g} short_k − largest ≤ 0. Its lead columns are the short_k
// and largest. With limit infinite it minimizes largest; otherwise it
// keeps largest within limit and minimizes Σ short_k.
func newNearMaster(target []float64, groups [][]int, limit float64) (*lp.Session, error) {
	m := lp.NewModel(lp.Minimize)
	first := math.IsInf(limit, 1)
	cost := 1.0
	if first {
		cost = 0
	}
	for k := range target {
		short := m.AddCol(0, lp.Inf, cost)
		m.AddRow(target[k], lp.Inf, []int{short}, []float64{1})
	}
	m.AddRow(-lp.Inf, 1, nil, nil)
	largest := m.AddCol(0, limit, 1-cost)
	for _, g := range groups {
		idx := append(slices.Clone(g), largest)
		val := ones(len(idx))
		val[len(g)] = -1
		m.AddRow(-lp.Inf, 0, idx, val)
	}
	return lp.NewSession(m)
}
