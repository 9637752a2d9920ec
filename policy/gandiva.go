package policy

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
)

// gandivaState remembers the pairs Gandiva formed and its random stream.
type gandivaState struct {
	mu      sync.Mutex
	partner map[string]string // job id → partner id, both directions
	rng     *rand.Rand
}

// gandiva is Gandiva's random packing baseline (§3.8), seeded and
// deterministic: pairs whose members are gone or whose packing score is
// below 1 are dissolved; when the jobs need more GPUs than the cluster has,
// random draws among unpaired jobs form new pairs of equal scale factor
// (only pairs measured as feasible); then every combination gets an equal
// share x_cw = (n_w/m_c)/sf_c of the worker types it can run on, each row
// capped at 1. The score is the best over worker types of the members'
// summed normalized rates (Gavel sums over all worker types, which makes its
// threshold of 1 almost always pass, §11.11). Objective: pairs formed.
func gandiva(ctx context.Context, p *Problem, opt *options, st *gandivaState) (*Allocation, error) {
	in, err := prepare(p, packed, opt)
	if err != nil || in.m() == 0 {
		return orEmpty(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.rng == nil {
		st.rng = rand.New(rand.NewPCG(uint64(opt.seed), 0x6a09e667f3bcc909))
	}
	pairIdx := map[[2]int]int{}
	for c := in.m(); c < len(in.combos); c++ {
		pairIdx[[2]int{in.combos[c].a, in.combos[c].b}] = c
	}
	paired := make([]int, in.m()) // combo index of the job's pair, -1 = single
	for i := range paired {
		paired[i] = -1
	}
	sumSF := 0.0
	for i := range in.jobs {
		sumSF += in.sf(i)
	}
	// With enough GPUs Gandiva does not pack, and earlier pairs dissolve.
	if sumSF > in.total {
		keepPairs(in, st.partner, pairIdx, paired)
		drawPairs(in, st.rng, pairIdx, paired)
	}
	x, pairs := equalShares(in, paired)
	st.partner = map[string]string{}
	for _, c := range pairs {
		a, b := in.jobs[in.combos[c].a].ID, in.jobs[in.combos[c].b].ID
		st.partner[a], st.partner[b] = b, a
	}
	a := in.allocation(x)
	a.Objective = float64(len(pairs))
	a.ObjectiveMeaning = "number of co-located pairs"
	return a, nil
}

// keepPairs marks in paired the earlier pairs (partner) whose members are
// both still here and whose packing score is at least 1.
func keepPairs(in *instance, partner map[string]string, pairIdx map[[2]int]int, paired []int) {
	for i, j := range in.jobs {
		k, ok := in.idx[partner[j.ID]]
		if !ok || paired[i] >= 0 {
			continue
		}
		a, b := min(i, k), max(i, k)
		if c, ok := pairIdx[[2]int{a, b}]; ok && packingScore(in, c) >= 1 {
			paired[a], paired[b] = c, c
		}
	}
}

// packingScore is the best over worker types of the pair's summed
// normalized rates.
func packingScore(in *instance, c int) float64 {
	cb := &in.combos[c]
	best := 0.0
	for w := range in.workers {
		if cb.runnable(w) {
			best = math.Max(best, cb.ra[w]/in.rate[cb.a][w]+cb.rb[w]/in.rate[cb.b][w])
		}
	}
	return best
}

// drawPairs pairs unpaired jobs at random: as many draws as there are
// unpaired jobs, a draw of two jobs that cannot pair (different scale
// factors, or not measured as feasible) forming nothing.
func drawPairs(in *instance, rng *rand.Rand, pairIdx map[[2]int]int, paired []int) {
	var free []int
	for i := range in.jobs {
		if paired[i] < 0 {
			free = append(free, i)
		}
	}
	for draws := len(free); draws > 0 && len(free) >= 2; draws-- {
		u := rng.IntN(len(free))
		v := rng.IntN(len(free) - 1)
		if v >= u {
			v++
		}
		a, b := min(free[u], free[v]), max(free[u], free[v])
		c, ok := pairIdx[[2]int{a, b}]
		if !ok {
			continue
		}
		paired[a], paired[b] = c, c
		free = removeAll(free, a, b)
	}
}

// equalShares gives each combination (a job alone, or its pair) the same
// share of every worker type it can run on, x_cw = (n_w/m_c)/sf_c, its row
// capped at 1, and returns the fractions and the pairs' combo indices in
// increasing order.
func equalShares(in *instance, paired []int) (x [][]float64, pairs []int) {
	var combos []int
	for i := range in.jobs {
		switch {
		case paired[i] < 0:
			combos = append(combos, i)
		case in.combos[paired[i]].a == i:
			combos = append(combos, paired[i])
		}
	}
	sort.Ints(combos)
	mc := float64(len(combos))
	x = make([][]float64, len(in.combos))
	for c := range x {
		x[c] = make([]float64, in.nw())
	}
	for _, c := range combos {
		cb := &in.combos[c]
		sum := 0.0
		for w := range in.workers {
			if cb.runnable(w) {
				x[c][w] = in.cap[w] / mc / float64(cb.sf)
				sum += x[c][w]
			}
		}
		if sum > 1 {
			for w := range x[c] {
				x[c][w] /= sum
			}
		}
		if cb.pair() {
			pairs = append(pairs, c)
		}
	}
	return x, pairs
}

func removeAll(s []int, a, b int) []int {
	out := s[:0]
	for _, v := range s {
		if v != a && v != b {
			out = append(out, v)
		}
	}
	return out
}
