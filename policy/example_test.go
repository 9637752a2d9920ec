package policy_test

import (
	"context"
	"fmt"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// exampleTable is gavel-reference §9.1's two job types, A = T0 and B = T1.
func exampleTable() (*table.Table, table.JobType, table.JobType) {
	t := table.New()
	a, b := table.JobType{Model: "A", ScaleFactor: 1}, table.JobType{Model: "B", ScaleFactor: 1}
	for w, r := range map[string][2]float64{"k80": {0.5, 1}, "p100": {1, 2}, "v100": {2, 3}} {
		t.SetIsolated(w, a, r[0])
		t.SetIsolated(w, b, r[1])
	}
	return t, a, b
}

// Gavel's heterogeneity-aware max-min fairness on two jobs (gavel-reference
// §9.2): the optimum equalizes normalized throughput at 48/31.
func ExampleNew() {
	t, a, b := exampleTable()
	pol, err := policy.New("max_min_fairness_perf")
	if err != nil {
		panic(err)
	}
	alloc, err := pol.Allocate(context.Background(), &policy.Problem{
		Table:   t,
		Cluster: policy.Cluster{"k80": 3, "p100": 2, "v100": 1},
		Jobs:    []policy.Job{{ID: "a", Type: a, TotalSteps: 300}, {ID: "b", Type: b, TotalSteps: 500}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("objective %.6f\n", alloc.Objective)
	fmt.Printf("a: %.6f steps/s, b: %.6f steps/s\n", alloc.Effective["a"], alloc.Effective["b"])
	// Output:
	// objective 1.548387
	// a: 1.419355 steps/s, b: 2.580645 steps/s
}

// Makespan is one exact LP: both jobs finish in 200 s (Gavel's bisection
// returns 206.8 s after 17 LPs); a second LP gives jobs that finish earlier
// the time they can use (here none can).
func ExamplePolicy_Allocate() {
	t, a, b := exampleTable()
	pol, _ := policy.New("min_total_duration_perf")
	alloc, err := pol.Allocate(context.Background(), &policy.Problem{
		Table:   t,
		Cluster: policy.Cluster{"k80": 3, "p100": 2, "v100": 1},
		Jobs:    []policy.Job{{ID: "a", Type: a, TotalSteps: 300}, {ID: "b", Type: b, TotalSteps: 500}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("makespan %.1f s with %d LPs\n", alloc.Objective, alloc.Stats.LPs)
	// Output:
	// makespan 200.0 s with 2 LPs
}

// Every registered policy, by Gavel's name.
func ExampleNames() {
	fmt.Println(len(policy.Names()), policy.Names()[:3])
	// Output:
	// 23 [allox fifo fifo_packed]
}

// Normalized throughput and the max-min objective measure different things.
// Two A jobs (k80 1, v100 3 steps/s) and two B jobs (1 and 1) share one k80
// and one v100. The optimum, solved by hand: the A jobs get 0.4 of the v100
// each, the B jobs 0.1 of the v100 and 0.5 of the k80. The objective
// normalizes by Gavel's proportional rate (the rate on an average GPU: A 2,
// B 1), so each term is 0.6; normalized throughput divides by the rate of an
// equal split of the cluster (1/4 of each GPU: A 1, B 0.5), so both run 1.2
// times as fast as with an equal split: 4 jobs on 2 GPUs, 0.6·4/2 = 1.2.
func ExampleAllocation_normalized() {
	t := table.New()
	a, b := table.JobType{Model: "A", ScaleFactor: 1}, table.JobType{Model: "B", ScaleFactor: 1}
	t.SetIsolated("k80", a, 1)
	t.SetIsolated("v100", a, 3)
	t.SetIsolated("k80", b, 1)
	t.SetIsolated("v100", b, 1)
	pol, _ := policy.New("max_min_fairness_perf")
	alloc, err := pol.Allocate(context.Background(), &policy.Problem{
		Table:   t,
		Cluster: policy.Cluster{"k80": 1, "v100": 1},
		Jobs: []policy.Job{{ID: "a1", Type: a, TotalSteps: 1}, {ID: "a2", Type: a, TotalSteps: 1},
			{ID: "b1", Type: b, TotalSteps: 1}, {ID: "b2", Type: b, TotalSteps: 1}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("objective %.3f\n", alloc.Objective)
	for _, id := range []string{"a1", "b1"} {
		fmt.Printf("%s: effective %.3f, proportional %.3f, term %.3f, equal share %.3f, normalized %.3f\n", id,
			alloc.Effective[id], alloc.Normalizer[id], alloc.Terms[id], alloc.EqualShare[id], alloc.Normalized[id])
	}
	// Output:
	// objective 0.600
	// a1: effective 1.200, proportional 2.000, term 0.600, equal share 1.000, normalized 1.200
	// b1: effective 0.600, proportional 1.000, term 0.600, equal share 0.500, normalized 1.200
}
