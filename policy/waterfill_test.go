package policy

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// wideRateProblem is a random instance with rates spread over five orders
// of magnitude (0.01-400 steps/s, some 0), scale factors 1, 2 and 4, weights
// 1-3 and random co-location rates: the kind of input on which the level
// LP's solution met the rows only to the solver's tolerance and the next
// LP, with those levels as lower bounds, came back infeasible.
func wideRateProblem(seed uint64) *Problem {
	r := rand.New(rand.NewPCG(seed, 275))
	tb, types := randomTable(r, []int{1, 2, 4}, func(u float64) float64 { return 0.01 * math.Pow(4e4, u) }, 0.2, 0.8)
	p := &Problem{Table: tb, Cluster: Cluster{"g1": 1 + r.IntN(6), "g2": 1 + r.IntN(8), "g3": 1 + r.IntN(4)}}
	n := 4 + r.IntN(20)
	for i := 0; i < n; i++ {
		ty := types[r.IntN(len(types))]
		if in, _ := newInstance(&Problem{Table: tb, Cluster: p.Cluster, Jobs: []Job{job("x", ty, 1)}}); in == nil {
			continue // runs nowhere on this cluster
		}
		p.Jobs = append(p.Jobs, Job{ID: fmt.Sprintf("j%02d", i), Type: ty, Weight: []float64{1, 1, 2, 3, 0.5}[r.IntN(5)],
			TotalSteps: float64(100 + r.IntN(100000))})
	}
	return p
}

// checkRefinesLAS checks that water filling (name) succeeded on p and that
// its lowest term sf·effective/(weight·proportional) is max-min fairness's
// optimum: water filling's first level is that optimum, and later levels
// only rise.
func checkRefinesLAS(t *testing.T, what, name string, p *Problem) {
	t.Helper()
	wf, err := mustNewPolicy(t, name).Allocate(context.Background(), p)
	if err != nil {
		t.Errorf("%s %s: %v", what, name, err)
		return
	}
	checkFeasible(t, p, wf)
	las := mustAllocate(t, strings.Replace(name, "_water_filling", "", 1), p)
	in, err := prepare(p, perf, &options{})
	if err != nil {
		t.Fatal(err)
	}
	lowest := math.Inf(1)
	for i, j := range in.jobs {
		lowest = math.Min(lowest, in.sf(i)*wf.Effective[j.ID]/in.prop[i]/in.weight[i])
	}
	if lowest < las.Objective*(1-1e-5) {
		t.Errorf("%s %s: lowest term %v below max-min fairness's optimum %v", what, name, lowest, las.Objective)
	}
}

func mustNewPolicy(t *testing.T, name string) Policy {
	t.Helper()
	pol, err := New(name)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// Water filling succeeds on random instances with widely spread rates (about
// one in ten packed ones failed "infeasible" when a level LP's
// tolerance-feasible levels became hard bounds) and never ends below
// max-min fairness. Seeds 61-8000 passed too when the fix was made; 2119
// needs the freeze after stalls (its active jobs creep up by 3% per
// iteration on 1e-8 taken from frozen ones) and 3745 (perf) the relaxed
// retry of an LP both methods call infeasible.
func TestWaterFillingWideRates(t *testing.T) {
	for _, seed := range wideRateSeeds(2119, 3745) {
		p := wideRateProblem(seed)
		if len(p.Jobs) == 0 {
			continue
		}
		for _, name := range []string{"max_min_fairness_water_filling_perf", "max_min_fairness_water_filling_packed"} {
			checkRefinesLAS(t, fmt.Sprintf("seed %d", seed), name, p)
		}
	}
}

// The reviewer's case: a bottleneck LP came back infeasible at iteration 2.
func TestWaterFillingReproInfeasible(t *testing.T) {
	tb, err := table.Load("testdata/wf275_table.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/wf_min_jobs.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jf, err := ReadJobs(f)
	if err != nil {
		t.Fatal(err)
	}
	p := &Problem{Table: tb, Cluster: Cluster{"g1": 2, "g2": 7, "g3": 3}, Jobs: jf.Jobs}
	checkRefinesLAS(t, "repro", "max_min_fairness_water_filling_packed", p)
}

// Agnostic water filling refines agnostic max-min fairness too: its lowest
// term (Allocation.Terms, in the agnostic view) is LAS's optimum, also on
// the instances of up to 8 jobs whose LPs are cut until rounds realize
// them (a review found the two inconsistent when cuts stopped short: seed
// 1105, 15 jobs, when instances of up to 16 were cut).
func TestAgnosticWaterFillingRefinesLAS(t *testing.T) {
	for _, seed := range wideRateSeeds(1105) {
		p := wideRateProblem(seed)
		if len(p.Jobs) == 0 {
			continue
		}
		wf := mustAllocate(t, "max_min_fairness_water_filling", p)
		las := mustAllocate(t, "max_min_fairness", p)
		lowest := math.Inf(1)
		for _, v := range wf.Terms {
			lowest = math.Min(lowest, v)
		}
		if lowest < las.Objective*(1-1e-5) {
			t.Errorf("seed %d: lowest term %v below max-min fairness's optimum %v", seed, lowest, las.Objective)
		}
	}
}

// wideRateSeeds returns the seeds of wideRateProblem the water-filling
// tests run: extra, then 1-60.
func wideRateSeeds(extra ...uint64) []uint64 {
	seeds := slices.Clone(extra)
	for seed := uint64(1); seed <= 60; seed++ {
		seeds = append(seeds, seed)
	}
	return seeds
}
