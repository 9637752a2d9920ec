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
	score := func(c int) float64 {
		cb := &in.combos[c]
		best := 0.0
		for w := range in.workers {
			if cb.runnable(w) {
				best = math.Max(best, cb.ra[w]/in.rate[cb.a][w]+cb.rb[w]/in.rate[cb.b][w])
			}
		}
		return best
	}
	paired := make([]int, in.m()) // combo index of the job's pair, -1 = single
	for i := range paired {
		paired[i] = -1
	}
	for i, j := range in.jobs {
		k, ok := in.idx[st.partner[j.ID]]
		if !ok || paired[i] >= 0 {
			continue
		}
		a, b := i, k
		if b < a {
			a, b = b, a
		}
		if c, ok := pairIdx[[2]int{a, b}]; ok && score(c) >= 1 {
			paired[a], paired[b] = c, c
		}
	}
	sumSF := 0.0
	for i := range in.jobs {
		sumSF += in.sf(i)
	}
	if sumSF > in.total {
		var free []int
		for i := range in.jobs {
			if paired[i] < 0 {
				free = append(free, i)
			}
		}
		for draws := len(free); draws > 0 && len(free) >= 2; draws-- {
			u := st.rng.IntN(len(free))
			v := st.rng.IntN(len(free) - 1)
			if v >= u {
				v++
			}
			a, b := free[u], free[v]
			if b < a {
				a, b = b, a
			}
			c, ok := pairIdx[[2]int{a, b}]
			if !ok {
				continue // different scale factors, or not measured as feasible
			}
			paired[a], paired[b] = c, c
			free = removeAll(free, a, b)
		}
	} else {
		for i := range paired {
			paired[i] = -1 // enough GPUs: no packing
		}
	}
	// Equal share per combination.
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
	x := make([][]float64, len(in.combos))
	for c := range x {
		x[c] = make([]float64, in.nw())
	}
	st.partner = map[string]string{}
	pairs := 0
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
			pairs++
			st.partner[in.jobs[cb.a].ID] = in.jobs[cb.b].ID
			st.partner[in.jobs[cb.b].ID] = in.jobs[cb.a].ID
		}
	}
	a := in.allocation(x)
	a.Objective = float64(pairs)
	a.ObjectiveMeaning = "number of co-located pairs"
	return a, nil
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
