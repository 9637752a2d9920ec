package profile_test

import (
	"fmt"

	"github.com/gavelkit/gavel/profile"
	"github.com/gavelkit/gavel/table"
)

// Plan lists isolated rates first (the new job and every partner, on every worker type), then
// the pairs.
func ExamplePlan() {
	model := table.JobType{Model: "MyNet (batch size 32)", ScaleFactor: 1}
	ref := table.JobType{Model: "ResNet-18 (batch size 64)", ScaleFactor: 1}
	tasks, _, err := profile.Plan(profile.PlanSpec{
		Model: model, References: []table.JobType{ref}, WorkerTypes: []string{"h200"},
	})
	if err != nil {
		panic(err)
	}
	for _, t := range tasks {
		fmt.Println(t)
	}
	// Output:
	// h200: ('MyNet (batch size 32)', 1)
	// h200: ('ResNet-18 (batch size 64)', 1)
	// h200: ('MyNet (batch size 32)', 1) + ('MyNet (batch size 32)', 1)
	// h200: ('MyNet (batch size 32)', 1) + ('ResNet-18 (batch size 64)', 1)
}

func ExampleWorkerType() {
	for _, name := range []string{"NVIDIA H200", "Tesla V100-SXM2-16GB", "NVIDIA GeForce RTX 4090"} {
		fmt.Println(profile.WorkerType(name))
	}
	// Output:
	// h200
	// v100
	// rtx4090
}
