package policy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// worstCover checks every set of combinations on every worker type by brute
// force: combinations whose GPUs together exceed the type's cannot all run
// at once, so their time there sums to at most |C|-1. It returns the
// largest excess and where.
func worstCover(a *Allocation, cluster Cluster, sf map[string]int) (float64, string) {
	worst, at := 0.0, ""
	for w, n := range cluster {
		type item struct {
			c    Combination
			x    float64
			gpus int
		}
		var items []item
		for c, x := range a.Fractions {
			if x[w] > 1e-12 {
				items = append(items, item{c, x[w], sf[c.A]})
			}
		}
		for mask := 1; mask < 1<<len(items); mask++ {
			gpus, t, k := 0, 0.0, 0
			for i, it := range items {
				if mask&(1<<i) != 0 {
					gpus, t, k = gpus+it.gpus, t+it.x, k+1
				}
			}
			if gpus > n && t-float64(k-1) > worst {
				worst, at = t-float64(k-1), fmt.Sprintf("%s: mask %b of %v", w, mask, items)
			}
		}
	}
	return worst, at
}

// On random small clusters with jobs of 1, 2 and 4 GPUs, every LP policy's
// allocation respects every cover row and every clique of combinations
// that cannot share a round (brute force), so a gang is never given time
// beside combinations that leave it too few GPUs.
func TestAllocationsRespectCovers(t *testing.T) {
	policies := []string{"max_min_fairness_perf", "max_min_fairness_packed", "max_min_fairness_water_filling_perf",
		"finish_time_fairness_perf", "max_sum_throughput_perf", "min_total_duration_perf"}
	rng := rand.New(rand.NewPCG(4, 9))
	for n := 0; n < 60; n++ {
		workers := []string{"a", "b"}[:1+rng.IntN(2)]
		cluster := Cluster{}
		for _, w := range workers {
			cluster[w] = []int{4, 5, 6}[rng.IntN(3)]
		}
		rates := map[table.JobType][]float64{}
		var jobs []Job
		sf := map[string]int{}
		for i := 0; i < 3+rng.IntN(5); i++ {
			ty := table.JobType{Model: fmt.Sprintf("m%d", i), ScaleFactor: []int{1, 1, 2, 4}[rng.IntN(4)]}
			r := make([]float64, len(workers))
			for w := range r {
				r[w] = 1 + 4*rng.Float64()
			}
			rates[ty] = r
			id := fmt.Sprintf("j%d", i)
			jobs = append(jobs, job(id, ty, 1000+1000*rng.Float64()))
			sf[id] = ty.ScaleFactor
		}
		tb := rateTable(workers, rates)
		for a := range rates {
			for b := range rates {
				if a.ScaleFactor == b.ScaleFactor {
					for _, w := range workers {
						tb.SetPair(w, a, b, 0.6, 0.6)
					}
				}
			}
		}
		p := &Problem{Table: tb, Cluster: cluster, Jobs: jobs}
		for _, name := range policies {
			pol, _ := New(name)
			a, err := pol.Allocate(context.Background(), p)
			if err != nil {
				t.Fatalf("case %d %s: %v", n, name, err)
			}
			if ex, at := worstCover(a, cluster, sf); ex > 1e-6 {
				t.Errorf("case %d %s: a cover's time exceeds |C|-1 by %.4f (%s)", n, name, ex, at)
			}
			if ex, at := worstClique(a, cluster, sf); ex > 1e-6 {
				t.Errorf("case %d %s: combinations that cannot share a round take %.4f more than all of the time (%s)", n, name, ex, at)
			}
		}
	}
}

// The separation returns, for each gang, a true cover (more GPUs than the
// type has) whose row is violated, and none is less violated than the most
// violated cover containing that gang, found by enumeration; when
// enumeration finds a violated cover with a gang, a cover is returned.
func TestViolatedCoversExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	for n := 0; n < 400; n++ {
		in := &instance{workers: []string{"w"}, cap: []float64{float64(2 + rng.IntN(6))}}
		var x [][]float64
		for c := 0; c < 2+rng.IntN(8); c++ {
			in.combos = append(in.combos, combo{a: c, b: -1, sf: []int{1, 1, 2, 3, 4}[rng.IntN(5)]})
			v := rng.Float64()
			if rng.IntN(3) == 0 {
				v = 1
			}
			x = append(x, []float64{v})
		}
		best := map[int]float64{} // gang → largest violation of a cover containing it
		for mask := 1; mask < 1<<len(x); mask++ {
			gpus, sum, k := 0, 0.0, 0
			for c := range x {
				if mask&(1<<c) != 0 {
					gpus, sum, k = gpus+in.combos[c].sf, sum+x[c][0], k+1
				}
			}
			if float64(gpus) <= in.cap[0] {
				continue
			}
			for c := range x {
				if mask&(1<<c) != 0 && in.combos[c].sf > 1 {
					if v, ok := best[c]; !ok || sum-float64(k-1) > v {
						best[c] = sum - float64(k-1)
					}
				}
			}
		}
		got := map[int]bool{}
		for _, cv := range in.violatedCovers(x) {
			gpus, sum := 0, 0.0
			for _, c := range cv.combos {
				gpus, sum = gpus+in.combos[c].sf, sum+x[c][0]
			}
			v := sum - float64(len(cv.combos)-1)
			if float64(gpus) <= in.cap[0] || v <= coverTol {
				t.Fatalf("case %d: %v is not a violated cover (%d GPUs of %v, violation %v)", n, cv.combos, gpus, in.cap[0], v)
			}
			for _, c := range cv.combos {
				if in.combos[c].sf > 1 && v >= best[c]-1e-12 {
					got[c] = true
				}
			}
		}
		for g, v := range best {
			if v > coverTol && !got[g] {
				t.Errorf("case %d: gang %d is in a cover violated by %v; no cover returned reaches it", n, g, v)
			}
		}
	}
}

// worstClique checks every set of combinations on every worker type by
// brute force: combinations that pairwise cannot share a round (a shared
// job, or GPUs together beyond the type's) run one at a time, so their time
// there sums to at most 1. It returns the largest excess and where.
func worstClique(a *Allocation, cluster Cluster, sf map[string]int) (float64, string) {
	worst, at := 0.0, ""
	for w, n := range cluster {
		var cs []Combination
		for c, x := range a.Fractions {
			if x[w] > 1e-12 {
				cs = append(cs, c)
			}
		}
		conflict := func(c, d Combination) bool {
			if sf[c.A]+sf[d.A] > n {
				return true
			}
			for _, j := range []string{c.A, c.B} {
				if j != "" && (j == d.A || j == d.B) {
					return true
				}
			}
			return false
		}
		for mask := 1; mask < 1<<len(cs); mask++ {
			t, ok := 0.0, true
			for i := range cs {
				if mask&(1<<i) == 0 {
					continue
				}
				t += a.Fractions[cs[i]][w]
				for k := i + 1; k < len(cs) && ok; k++ {
					ok = mask&(1<<k) == 0 || conflict(cs[i], cs[k])
				}
			}
			if ok && t-1 > worst {
				worst, at = t-1, fmt.Sprintf("%s: %v", w, cs)
			}
		}
	}
	return worst, at
}

// Every row of the clique family is valid: its combinations pairwise share
// a job or need more GPUs together than the type has (checked on random
// instances with pairs and jobs of 1-4 GPUs, independently of the family's
// construction).
func TestCliqueFamilyValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 2))
	rows := 0
	for n := 0; n < 200; n++ {
		in := &instance{workers: []string{"w"}, cap: []float64{float64(1 + rng.IntN(8))}}
		jobs := 2 + rng.IntN(6)
		sf := make([]int, jobs)
		for j := range sf {
			sf[j] = []int{1, 1, 2, 3, 4}[rng.IntN(5)]
			in.combos = append(in.combos, combo{a: j, b: -1, sf: sf[j], ra: []float64{1}})
		}
		for a := 0; a < jobs; a++ {
			for b := a + 1; b < jobs; b++ {
				if sf[a] == sf[b] && rng.IntN(2) == 0 {
					in.combos = append(in.combos, combo{a: a, b: b, sf: sf[a], ra: []float64{1}, rb: []float64{1}})
				}
			}
		}
		for _, q := range in.cliqueFamily() {
			rows++
			set := append(slices.Clone(q.own), q.big...)
			for i, c := range set {
				for _, d := range set[i+1:] {
					x, y := in.combos[c], in.combos[d]
					shared := x.a == y.a || x.a == y.b || x.b >= 0 && (x.b == y.a || x.b == y.b)
					if !shared && float64(x.sf+y.sf) <= in.cap[0] {
						t.Fatalf("case %d: clique %v holds %d and %d, which can share a round on %v GPUs", n, set, c, d, in.cap[0])
					}
				}
			}
		}
	}
	if rows == 0 {
		t.Fatal("no clique rows made: the sample exercises nothing")
	}
}

// Covers violated by a hair are still found: the bound that skips the
// search (coverBound) must not round them away. A 4-GPU gang at full time
// and a 1-GPU job at delta on 4 GPUs: together they take 1 + delta > 1.
func TestViolatedCoversNearThreshold(t *testing.T) {
	for _, delta := range []float64{1e-3, 1e-5, 1e-7} {
		in := &instance{workers: []string{"w"}, cap: []float64{4},
			combos: []combo{{a: 0, b: -1, sf: 4}, {a: 1, b: -1, sf: 1}}}
		x := [][]float64{{1}, {delta}}
		got := in.violatedCovers(x)
		if len(got) != 1 || !slices.Equal(got[0].combos, []int{0, 1}) {
			t.Errorf("delta %v: covers %v, want [0 1]", delta, got)
		}
	}
}
