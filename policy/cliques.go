package policy

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
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
// type's GPUs: two big ones always conflict, and two that are not big
// conflict only through a shared job. So a clique is some big combinations
// and, among the others, either combinations sharing one job j or a
// triangle of pairs. For each job j (and for none), and each least size s
// of its combinations taken (those of j of size s or more, and j's big
// ones), the big combinations that conflict with all of them are those of
// more than n_w - s GPUs: one clique per (j, s). Triangles are left to the
// odd-set rows.
// Without jobs of several GPUs there are no big combinations (on types of
// more than one GPU) and the job rows say it all.

// clique is a worker type and combinations (sorted) that conflict pairwise.
type clique struct {
	w      int
	combos []int
}

func (q clique) key() string {
	parts := make([]string, len(q.combos))
	for k, c := range q.combos {
		parts[k] = strconv.Itoa(c)
	}
	return strconv.Itoa(q.w) + ":" + strings.Join(parts, ",")
}

// cliqueFamily returns the family's cliques on every worker type among the
// combinations that can run there, leaving out those the job rows already
// bound (no big combination beyond j's own). They are few (a type gets
// rows only when a combination needs more than half its GPUs: at most
// three a job with Gavel's scale factors) and all go in up front: added
// lazily they took more than the 25 re-solves an LP gets on small clusters,
// as each batch moved the solution onto the next.
func (in *instance) cliqueFamily() []clique {
	var out []clique
	seen := map[string]bool{}
	for w := range in.workers {
		n := in.cap[w]
		isBig := func(c int) bool { return float64(2*in.combos[c].sf) > n }
		var items, big []int
		gang := false
		for c := range in.combos {
			if in.combos[c].runnable(w) {
				items = append(items, c)
				gang = gang || in.combos[c].sf > 1
				if isBig(c) {
					big = append(big, c)
				}
			}
		}
		if len(big) == 0 || !gang { // with one GPU each, capacity and job rows say it all
			continue
		}
		add := func(set []int, others int) {
			if len(set) < 2 || others == 0 {
				return
			}
			slices.Sort(set)
			q := clique{w: w, combos: set}
			if !seen[q.key()] {
				seen[q.key()] = true
				out = append(out, q)
			}
		}
		add(slices.Clone(big), len(big)-1)
		byJob := map[int][]int{}
		for _, c := range items {
			for _, j := range [2]int{in.combos[c].a, in.combos[c].b} {
				if j >= 0 {
					byJob[j] = append(byJob[j], c)
				}
			}
		}
		for _, j := range slices.Sorted(maps.Keys(byJob)) {
			own := byJob[j]
			// The least sizes s: those of j's combinations that are not
			// big, and 0 for j's big ones alone.
			var sizes []int
			for _, c := range own {
				if sf := in.combos[c].sf; !isBig(c) && !slices.Contains(sizes, sf) {
					sizes = append(sizes, sf)
				}
			}
			slices.SortFunc(sizes, func(a, b int) int { return cmp.Compare(b, a) })
			sizes = append(sizes, 0)
			for _, s := range sizes {
				var set []int
				for _, c := range own {
					if isBig(c) || s > 0 && in.combos[c].sf >= s {
						set = append(set, c)
					}
				}
				others := 0
				for _, b := range big {
					if !slices.Contains(own, b) && (s == 0 || in.combos[b].sf+s > int(n)) {
						set = append(set, b)
						others++
					}
				}
				add(set, others)
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

// cliqueRow returns clique q's row.
func (b *builder) cliqueRow(q clique) (idx []int, val []float64, ub float64) {
	for _, c := range q.combos {
		if j := b.col[c][q.w]; j >= 0 {
			idx = append(idx, j)
			val = append(val, 1)
		}
	}
	return idx, val, 1
}

// withinCliques scales down the combinations of every known clique whose
// time exceeds 1 (by the solver's tolerance), as withinCovers does.
func (in *instance) withinCliques(x [][]float64) {
	for _, q := range in.cliqueRows() {
		t := 0.0
		for _, c := range q.combos {
			t += x[c][q.w]
		}
		if t > 1 {
			for _, c := range q.combos {
				x[c][q.w] /= t
			}
		}
	}
}
