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
// returns 206.8 s).
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
	fmt.Printf("makespan %.1f s with %d LP\n", alloc.Objective, alloc.Stats.LPs)
	// Output:
	// makespan 200.0 s with 1 LP
}

// Every registered policy, by Gavel's name.
func ExampleNames() {
	fmt.Println(len(policy.Names()), policy.Names()[:3])
	// Output:
	// 23 [allox fifo fifo_packed]
}
