package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gavelkit/gavel/policy/lp"
)

// Odd-set, cover and clique rows cut away the allocations that rounds
// cannot realize for the reasons that come up most, but not all of them:
// on small clusters with 4-GPU jobs a fifth of the LP policies'
// allocations still asked for more than any sequence of rounds gives (up
// to 0.21 of a job's time; the rounds package's TestRealizableShare). The
// exact test is the decomposition (Decompose): when it fails, its master
// LP's duals give an inequality that every round satisfies and the
// allocation breaks, and that inequality becomes one more row. Repeated,
// this is a cutting-plane method over the set of realizable allocations,
// so the LP's optimum becomes the best realizable allocation (tested
// against an LP over every round enumerated).
//
// It runs on instances of at most separateMaxJobs jobs, after the cheaper
// rows are satisfied, and only on solutions that give a gang or a pair
// time (single-GPU jobs alone are realizable by the rows). Larger
// instances were measured and left out: on the 30-job problem of the
// policy tests (8, 16 and 24 GPUs), with 40-50 positive fractions, each
// decomposition took 0.05-4.6 s and the cuts tailed off (a packed max-min
// LP still 0.005 short after 25 cuts; water filling 20 s and more against
// 0.05 s); on wide-rate instances (waterfill_test.go) of 9-16 jobs a
// quarter of the packed max-min LPs needed more than 25 re-solves, and a
// review found agnostic water filling stopping at 100 on 78 of 1,077
// instances (up to 83 s an allocation). An LP left unproven while a later
// one is cut also breaks what water filling relies on (an earlier level
// stays reachable) and that its lowest term is max-min fairness's
// optimum, hence separationOff. On the 449 wide-rate instances of up to 8
// jobs, 11 LP policies took 0.7-31 ms a call on average (the worst 1.5 s,
// packed finish-time fairness), 6 of the 4,939 calls stopped at
// separateRounds with a warning, and water filling refined max-min
// fairness on all (README).
// The rounds the decompositions find are kept (roundPool) to start the
// next decomposition, which then often needs no pricing.

// separateMaxJobs is the most jobs an instance may have for separate to
// decompose its LPs' solutions.
const separateMaxJobs = 8

// separateRounds caps the solve-separate rounds of one LP of an instance
// that separate decomposes. On the wide-rate instances of
// waterfill_test.go, max-min fairness without pairs needed at most 17 LPs
// with up to 11 jobs (oddSetRounds, 25, would stop some with 12-16).
const separateRounds = 100

// separateTol is how small a fraction may be and still count as none.
const separateTol = 1e-9

// roundCut is Σ coef·x[c][w] ≤ bound over the entries at (c[k], w[k]).
type roundCut struct {
	c, w  []int
	coef  []float64
	bound float64
}

// separate decomposes x (fractions where combinations cannot run left
// out) into rounds and returns the inequality that proves it unrealizable,
// or nil when x is realizable or was not decomposed. decided reports that
// the question was settled either way; it is not for instances separate
// leaves alone (separable), when the decomposition ran out of columns, or
// when the policy's solver is not COIN (the decomposition needs an
// lp.Session). Its LPs take opt's time limit each and count in st; their
// errors are returned.
func (in *instance) separate(ctx context.Context, x [][]float64, opt *options, st *SolveStats) (cut *roundCut, decided bool, err error) {
	if _, coin := opt.solver().(lp.COIN); !coin || !in.separable() {
		return nil, false, nil
	}
	var slots []roundSlot
	var target []float64
	var cs, ws []int
	gangOrPair := false
	for c := range x {
		for w, v := range x[c] {
			if v <= separateTol || !in.combos[c].runnable(w) {
				continue
			}
			cb := &in.combos[c]
			slots = append(slots, roundSlot{a: cb.a, b: cb.b, w: w, gpus: cb.sf})
			target = append(target, v)
			cs, ws = append(cs, c), append(ws, w)
			gangOrPair = gangOrPair || cb.sf > 1 || cb.pair()
		}
	}
	if !gangOrPair {
		// Jobs of one GPU each, each alone: the job and GPU rows, which x
		// meets, make it realizable (their system is bipartite).
		return nil, true, nil
	}
	caps := make([]int, in.nw())
	for w := range caps {
		caps[w] = int(math.Floor(in.cap[w] + 1e-9))
	}
	initial := in.poolRounds(cs, ws)
	d, err := decompose(ctx, lpEnv{timeLimit: opt.timeLimit, st: st}, slots, caps, target, initial)
	if d != nil {
		in.keepRounds(d.Rounds[len(initial):], cs, ws)
	}
	var proof *UnrealizableError
	switch {
	case err == nil:
		return nil, true, nil
	case errors.As(err, &proof):
	case errors.Is(err, ErrDecomposeLimit):
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("decomposing a solution into rounds: %w", err)
	}
	cut = &roundCut{bound: proof.Bound + 1e-9}
	for k, a := range proof.Coef {
		if a > 1e-12 {
			cut.c, cut.w, cut.coef = append(cut.c, cs[k]), append(cut.w, ws[k]), append(cut.coef, a)
		}
	}
	return cut, true, nil
}

// separable reports whether separate decomposes the instance's solutions:
// at most separateMaxJobs jobs (pairs or not) and no LP of the instance
// left unproven (separationOff).
func (in *instance) separable() bool {
	return in.m() <= separateMaxJobs && !in.separationOff
}

// roundCutRow returns cut's row.
func (b *builder) roundCutRow(cut roundCut) (idx []int, val []float64, ub float64) {
	for k := range cut.c {
		if j := b.col[cut.c[k]][cut.w[k]]; j >= 0 {
			idx = append(idx, j)
			val = append(val, cut.coef[k])
		}
	}
	return idx, val, cut.bound
}

// shrinkTries bounds shrinkToRounds' decompositions.
const shrinkTries = 20

// shrinkToRounds scales x down until rounds realize it, each time by the
// factor that meets the inequality the last decomposition proved (and
// keeps those inequalities as rows of the instance's later LPs). It
// reports false when x is still unrealizable after shrinkTries tries (not
// when separate could not decide).
// Scaling keeps every job's share of its time on each worker type, which
// finish-time fairness needs of its starting point: any other job would
// get nothing, and an infinite ratio.
func (in *instance) shrinkToRounds(ctx context.Context, x [][]float64, opt *options, st *SolveStats) (bool, error) {
	for range shrinkTries {
		cut, _, err := in.separate(ctx, x, opt, st)
		if err != nil || cut == nil {
			return true, err
		}
		in.roundCuts = append(in.roundCuts, *cut)
		lhs := 0.0
		for k := range cut.c {
			lhs += cut.coef[k] * x[cut.c[k]][cut.w[k]]
		}
		s := cut.bound / lhs
		for c := range x {
			for w := range x[c] {
				x[c][w] *= s
			}
		}
	}
	return false, nil
}

// roundPoolMax bounds the rounds an instance keeps.
const roundPoolMax = 4000

// poolRounds returns the instance's rounds restricted to the slots at
// (cs[k], ws[k]), as indices k, without repeats or empty ones: a part of a
// round is a round, so they start a decomposition of those slots.
func (in *instance) poolRounds(cs, ws []int) [][]int {
	at := map[[2]int]int{}
	for k := range cs {
		at[[2]int{cs[k], ws[k]}] = k
	}
	seen := map[string]bool{}
	var out [][]int
	for _, r := range in.roundPool {
		var q []int
		for _, e := range r {
			if k, ok := at[e]; ok {
				q = append(q, k)
			}
		}
		slices.Sort(q)
		if key := fmt.Sprint(q); len(q) > 0 && !seen[key] {
			seen[key] = true
			out = append(out, q)
		}
	}
	return out
}

// keepRounds adds a decomposition's new rounds (slots at (cs[k], ws[k]))
// to the instance's pool, up to roundPoolMax.
func (in *instance) keepRounds(rounds [][]int, cs, ws []int) {
	for _, q := range rounds {
		if len(in.roundPool) >= roundPoolMax {
			return
		}
		r := make([][2]int, len(q))
		for i, k := range q {
			r[i] = [2]int{cs[k], ws[k]}
		}
		in.roundPool = append(in.roundPool, r)
	}
}
