package rounds

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/gavelkit/gavel/policy"
)

// benchWorld is 10,000 jobs (scale factors 1/2/4/8) on 8,000 GPUs in 4-GPU
// servers, with a random allocation and a few rounds of history.
func benchWorld(b *testing.B) (*State, *policy.Allocation) {
	rng := rand.New(rand.NewPCG(1, 1))
	cluster := policy.Cluster{"k80": 2664, "p100": 2668, "v100": 2668}
	topo, err := NewTopology(cluster, map[string]int{"k80": 4, "p100": 4, "v100": 4})
	if err != nil {
		b.Fatal(err)
	}
	jobs := map[string]*Job{}
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
	sfs := []int{1, 1, 1, 1, 1, 1, 1, 2, 4, 8}
	for i := 0; i < 10000; i++ {
		id := strconv.Itoa(i)
		j := &Job{ID: id, ScaleFactor: sfs[rng.IntN(len(sfs))], Order: i, Rates: map[string]float64{}}
		x := map[string]float64{}
		for _, w := range cluster.WorkerTypes() {
			j.Rates[w] = 1 + 10*rng.Float64()
			x[w] = 0.8 * rng.Float64() / 3
		}
		jobs[id] = j
		alloc.Fractions[policy.Single(id)] = x
	}
	ledger := NewLedger(360)
	s := &State{Topology: topo, Jobs: jobs, History: ledger}
	for r := 0; r < 3; r++ {
		p := Plan(s, alloc, float64(r)*360)
		var busy []Busy
		for _, a := range p.Assignments {
			busy = append(busy, Busy{a.Combination, a.WorkerType, 360})
		}
		ledger.Record(alloc, func(string) bool { return true }, 360, busy)
		s.Previous = p.Placement()
	}
	return s, alloc
}

// BenchmarkPlan10kJobs8kGPUs is one round decision at the scale
// (target: ≤ 100 ms per op).
func BenchmarkPlan10kJobs8kGPUs(b *testing.B) {
	s, alloc := benchWorld(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := Plan(s, alloc, 3*360)
		if len(p.Assignments) == 0 {
			b.Fatal("empty plan")
		}
	}
}
