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
//
// Only the pairs formed become combinations: the policy looks up a few
// pairs (those kept and those drawn), and building every pair of
// equal-scale-factor jobs took 230 MB at 2,000 jobs. Which pairs could
// form (pairable) is a bit a job pair.
func gandiva(ctx context.Context, p *Problem, opt *options, st *gandivaState) (*Allocation, error) {
	in, err := newInstance(p)
	if err != nil || in.m() == 0 {
		return orEmpty(err)
	}
	can, rates := in.pairable(opt.maxPartners)
	if in.badPair != nil {
		return nil, in.badPair
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.rng == nil {
		st.rng = rand.New(rand.NewPCG(uint64(opt.seed), 0x6a09e667f3bcc909))
	}
	g := &gandivaPairs{in: in, can: can, rates: rates, paired: make([]int, in.m())}
	for i := range g.paired {
		g.paired[i] = -1
	}
	sumSF := 0.0
	for i := range in.jobs {
		sumSF += in.sf(i)
	}
	// With enough GPUs Gandiva does not pack, and earlier pairs dissolve.
	if sumSF > in.total {
		g.keep(st.partner)
		g.draw(st.rng)
	}
	x, pairs := equalShares(in, g.paired)
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

// pairable returns the job pairs addPairs would add, as a bit matrix over
// job indices, and a lookup of their rates.
func (in *instance) pairable(maxPartners int) (bitMatrix, func(a, b int) *pairRates) {
	can := newBitMatrix(in.m())
	in.walkPairs(maxPartners, func(a, b int, _ *pairRates) { can.set(a, b) })
	return can, in.pairLookup()
}

// gandivaPairs is one call's pairing: paired holds each job's pair
// combination (-1 = single), added to in.combos as it forms.
type gandivaPairs struct {
	in     *instance
	can    bitMatrix
	rates  func(a, b int) *pairRates
	paired []int
}

// form pairs jobs a < b, when they can pair and score (nil: always)
// accepts the pair's combination.
func (g *gandivaPairs) form(a, b int, score func(*combo) bool) bool {
	if !g.can.has(a, b) {
		return false
	}
	r := g.rates(a, b)
	cb := combo{a: a, b: b, sf: g.in.jobs[a].Type.ScaleFactor, ra: r.ra, rb: r.rb}
	if score != nil && !score(&cb) {
		return false
	}
	c := g.in.addPair(a, b, r)
	g.paired[a], g.paired[b] = c, c
	return true
}

// keep forms again the earlier pairs (partner) whose members are both
// still here and whose packing score is at least 1.
func (g *gandivaPairs) keep(partner map[string]string) {
	in := g.in
	for i, j := range in.jobs {
		k, ok := in.idx[partner[j.ID]]
		if !ok || g.paired[i] >= 0 {
			continue
		}
		g.form(min(i, k), max(i, k), func(cb *combo) bool { return packingScore(in, cb) >= 1 })
	}
}

// packingScore is the best over worker types of the pair's summed
// normalized rates.
func packingScore(in *instance, cb *combo) float64 {
	best := 0.0
	for w := range in.workers {
		if cb.runnable(w) {
			best = math.Max(best, cb.ra[w]/in.rate[cb.a][w]+cb.rb[w]/in.rate[cb.b][w])
		}
	}
	return best
}

// draw pairs unpaired jobs at random: as many draws as there are unpaired
// jobs, a draw of two jobs that cannot pair (different scale factors, or
// not measured as feasible) forming nothing.
func (g *gandivaPairs) draw(rng *rand.Rand) {
	var free []int
	for i := range g.in.jobs {
		if g.paired[i] < 0 {
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
		if g.form(a, b, nil) {
			free = removeAll(free, a, b)
		}
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
