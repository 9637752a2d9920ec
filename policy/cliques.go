package policy

import (
	"maps"
	"slices"

	"github.com/gavelkit/gavel/policy/lp"
)

// Clique rows. Two combinations on a worker type conflict when they cannot
// run in the same round: they share a job, or their GPUs together exceed
// the type's. Of pairwise conflicting combinations (a clique) at most one
// runs at a time, so their time there sums to at most 1. Covers (GPUs
// alone) and job rows (one job alone) miss that: on 4 GPUs, a 4-GPU job at
// 0.15 beside two pairs sharing a job at 0.53 and 0.39 passes both (the
// README tour's allocation on Gavel's own table did this, and rounds fell
// 0.06 short), and so does a 1-GPU job beside two 4-GPU jobs at 0.8, 0.2
// and 0.2.
//
// The family below holds every clique without a triangle of pairs in one of
// its members. Call a combination big when it needs more than half of the
// type's GPUs: two big ones always conflict. A job's combinations all have
// its scale factor (pairs join equal ones), so a big combination and one
// that is not share no job and conflict only through GPUs, and two that
// are not big conflict only through a shared job. So a clique is some big
// combinations and, among the others, either combinations sharing one job
// j or a triangle of pairs; the big ones that conflict with j's need more
// than n_w - sf_j GPUs. One row a type for the big combinations, and one a
// type for each job that is not big. Triangles beside big combinations are
// not bounded (the odd-set rows bound the triangle alone). Without jobs of
// several GPUs there are no big combinations (on types of more than one
// GPU) and the job rows say it all.
//
// The big part of a row depends only on the type and the threshold, and
// with pairs it can hold O(m²) combinations, so it enters each row through
// one column per (type, threshold), y ≥ Σ x_bw (a row each); listing it in
// every row made packed LPs of 256 jobs on 4 GPUs a type 30-50x slower.

// clique is a worker type's combinations own (sharing one job; none for the
// big ones alone) with its big combinations of more than above GPUs.
type clique struct {
	w     int
	own   []int
	above float64
	big   []int // type w's big combinations of more than above GPUs (shared between cliques)
}

// cliqueFamily returns the family's cliques on every worker type among the
// combinations that can run there, leaving out those other rows already
// bound (fewer than two big combinations alone, a job's with none). They
// all go in up front: added lazily they took more than the 25 re-solves
// an LP gets on small clusters, as each batch moved the solution onto the
// next.
func (in *instance) cliqueFamily() []clique {
	var out []clique
	for w := range in.workers {
		n := in.cap[w]
		gang := false
		var big []int
		for c := range in.combos {
			cb := &in.combos[c]
			if !cb.runnable(w) {
				continue
			}
			gang = gang || cb.sf > 1
			if float64(2*cb.sf) > n {
				big = append(big, c)
			}
		}
		if !gang || len(big) == 0 { // with one GPU each, capacity and job rows say it all
			continue
		}
		// Only now (most types, and every type without gangs, stop above)
		// the combinations that are not big, by job.
		byJob := map[int][]int{}
		for c := range in.combos {
			cb := &in.combos[c]
			if !cb.runnable(w) || float64(2*cb.sf) > n {
				continue
			}
			for _, j := range [2]int{cb.a, cb.b} {
				if j >= 0 {
					byJob[j] = append(byJob[j], c)
				}
			}
		}
		above := map[float64][]int{} // the big part of each threshold, made once
		bigAbove := func(a float64) []int {
			if b, ok := above[a]; ok {
				return b
			}
			var b []int
			for _, c := range big {
				if float64(in.combos[c].sf) > a {
					b = append(b, c)
				}
			}
			above[a] = b
			return b
		}
		if len(big) >= 2 {
			out = append(out, clique{w: w, above: n / 2, big: big})
		}
		for _, j := range slices.Sorted(maps.Keys(byJob)) {
			a := n - float64(in.combos[byJob[j][0]].sf) // every combination of j has its scale factor
			if b := bigAbove(a); len(b) > 0 {
				out = append(out, clique{w: w, own: byJob[j], above: a, big: b})
			}
		}
	}
	return out
}

// cliqueRows returns the instance's cliques, found on first use.
func (in *instance) cliqueRows() []clique {
	if !in.cliquesMade {
		in.cliques, in.cliquesMade = in.cliqueFamily(), true
	}
	return in.cliques
}

// addCliqueRows adds every clique's row to b: its own combinations and the
// column of its big part at most 1, with one such column, and the row
// y - Σ x_bw ≥ 0, for each (type, threshold).
func (b *builder) addCliqueRows() {
	type part struct {
		w     int
		above float64
	}
	cols := map[part]int{}
	for _, q := range b.in.cliqueRows() {
		p := part{q.w, q.above}
		y, ok := cols[p]
		if !ok {
			y = b.m.AddCol(0, lp.Inf, 0)
			cols[p] = y
			idx, val := []int{y}, []float64{1}
			for _, c := range q.big {
				if j := b.col[c][q.w]; j >= 0 {
					idx = append(idx, j)
					val = append(val, -1)
				}
			}
			b.m.AddRow(0, lp.Inf, idx, val)
		}
		idx, val := []int{y}, []float64{1}
		for _, c := range q.own {
			if j := b.col[c][q.w]; j >= 0 {
				idx = append(idx, j)
				val = append(val, 1)
			}
		}
		b.m.AddRow(-lp.Inf, 1, idx, val)
	}
}

// withinCliques scales down the combinations of every clique whose time
// exceeds 1 (by the solver's tolerance), as withinCovers does.
func (in *instance) withinCliques(x [][]float64) {
	for _, q := range in.cliqueRows() {
		t := 0.0
		for _, part := range [2][]int{q.own, q.big} {
			for _, c := range part {
				t += x[c][q.w]
			}
		}
		if t > 1 {
			for _, part := range [2][]int{q.own, q.big} {
				for _, c := range part {
					x[c][q.w] /= t
				}
			}
		}
	}
}
