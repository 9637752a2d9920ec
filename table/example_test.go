package table_test

import (
	"fmt"

	"github.com/gavelkit/gavel/table"
)

func Example() {
	t := table.Default()
	a := table.JobType{Model: "ResNet-50 (batch size 32)", ScaleFactor: 1}
	b := table.JobType{Model: "A3C", ScaleFactor: 1}
	iso, _ := t.Isolated("v100", a)
	na, nb, state := t.Normalized("v100", a, b)
	fmt.Printf("isolated %.3f steps/s; together %s: %.2f + %.2f of solo speed\n", iso, state, na, nb)
	// Output: isolated 7.787 steps/s; together measured: 0.48 + 0.20 of solo speed
}

// Merge new measurements (a profiling run's table) into an older table: the newer value wins,
// and a value that changed is reported.
func ExampleMerge() {
	a, b := table.JobType{Model: "A", ScaleFactor: 1}, table.JobType{Model: "B", ScaleFactor: 1}
	older := table.New()
	older.SetIsolated("v100", a, 10)
	older.SetIsolated("v100", b, 5)
	older.SetPair("v100", a, b, 6, 3)
	newer := table.New()
	newer.SetIsolated("v100", a, 11)
	newer.SetIsolated("cpu", table.JobType{Model: "toy", ScaleFactor: 1}, 2)

	merged, conflicts := table.Merge(older, newer)
	fmt.Println(merged.WorkerTypes())
	for _, c := range conflicts {
		fmt.Printf("%s %s: %g -> %g\n", c.Worker, c.Job, c.Old[0], c.New[0])
	}
	iso, _ := merged.Isolated("v100", a)
	_, _, s := merged.Pair("v100", a, b)
	fmt.Printf("A on v100: %g steps/s; A + B: %s\n", iso, s)
	// Output:
	// [cpu v100]
	// v100 ('A', 1): 10 -> 11
	// A on v100: 11 steps/s; A + B: measured
}
