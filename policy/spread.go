package policy

import (
	"context"
	"fmt"
	"math"

	"github.com/gavelkit/gavel/policy/lp"
)

// An agnostic policy sees one rate per job on every worker type it can run
// on, so its objective depends only on each job's total time, and its LP
// has a whole face of optima. A simplex solver returns a vertex of it: in
// practice every job on the first worker type by name, which in Gavel's
// table is the slowest (k80), while the faster GPUs idled. That is no
// heterogeneity-agnostic scheduler, and it made the agnostic baselines of
// simulate and experiment far slower than Gavel's (whose interior-point
// solver lands inside the face, and whose isolated policy, which agnostic
// LAS equals in objective, splits time by GPU count). spread picks the
// point of the face nearest that split.

// spread returns x with each job's total time kept and split over the
// worker types it can run on in proportion to their GPUs, as nearly as the
// capacity rows allow (least total deviation). x must hold singles only
// (agnostic allocations have no pairs). Its LP goes through solve, so on
// small instances the rows that keep allocations realizable apply to it
// too. It is feasible when x met every row; when it is not (an LP that
// stopped at its limit of re-solves leaves x short of rows added since),
// or fails otherwise, x comes back as it was, with a warning; only the
// context's error is returned.
func (in *instance) spread(ctx context.Context, opt *options, st *SolveStats, x [][]float64) ([][]float64, string, error) {
	if y, ok := in.spreadExactly(x); ok {
		return y, "", nil
	}
	b := in.newBuilder(lp.Minimize)
	for i := range in.jobs {
		if len(in.byJob[i]) != 1 {
			return nil, "", fmt.Errorf("spread: job %q has pair combinations", in.jobs[i].ID)
		}
		c := in.byJob[i][0]
		total, gpus := 0.0, 0.0
		var idx []int
		for w, j := range b.col[c] {
			if j >= 0 {
				total += x[c][w]
				gpus += in.cap[w]
				idx = append(idx, j)
			}
		}
		if len(idx) == 0 {
			continue
		}
		// The job's total as the first LP gave it, within the time row's
		// bound (the solver's tolerance may have passed it).
		total = math.Min(total, 1)
		b.m.AddRow(total, total, idx, ones(len(idx)))
		for w, j := range b.col[c] {
			if j < 0 {
				continue
			}
			target := total * in.cap[w] / gpus
			d := b.m.AddCol(0, lp.Inf, 1)
			b.m.AddRow(-lp.Inf, target, []int{j, d}, []float64{1, -1})
			b.m.AddRow(target, lp.Inf, []int{j, d}, []float64{1, 1})
		}
	}
	res, err := b.solve(ctx, opt, st)
	switch {
	case ctx.Err() != nil:
		return nil, "", ctx.Err()
	case err != nil:
		return x, fmt.Sprintf("each job's time is left on the worker types the LP chose, not split by GPU count (that LP failed: %v)", err), nil
	}
	return b.fractions(res), "", nil
}

// spreadExactly returns the split by GPU count itself when no LP is needed:
// every job takes one GPU (no gang, so no cover rows or round cuts apply)
// and the split fits every type's capacity, as it does whenever every job
// can run on every type. An LP per allocation made agnostic simulations
// 2.5 times slower.
func (in *instance) spreadExactly(x [][]float64) ([][]float64, bool) {
	y := make([][]float64, len(x))
	used := make([]float64, in.nw())
	for i := range in.jobs {
		if len(in.byJob[i]) != 1 || in.combos[in.byJob[i][0]].sf != 1 {
			return nil, false
		}
		c := in.byJob[i][0]
		total, gpus := 0.0, 0.0
		for w := range in.workers {
			if in.combos[c].runnable(w) {
				total += x[c][w]
				gpus += in.cap[w]
			}
		}
		total = math.Min(total, 1)
		y[c] = make([]float64, in.nw())
		for w := range in.workers {
			if in.combos[c].runnable(w) {
				y[c][w] = total * in.cap[w] / gpus
				used[w] += y[c][w]
			}
		}
	}
	for w := range in.workers {
		if used[w] > in.cap[w]*(1+1e-9) {
			return nil, false
		}
	}
	return y, true
}

// appendNonEmpty appends w to ws unless it is empty.
func appendNonEmpty(ws []string, w string) []string {
	if w == "" {
		return ws
	}
	return append(ws, w)
}
