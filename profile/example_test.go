package profile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

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

// Runner.Run is the profiler without the command line: it measures a training command alone on
// the given devices (here one CPU pseudo device, as on a machine without a GPU driver) and
// merges the rate into a Gavel table, with the details in the sidecar next to it.
func ExampleRunner_Run() {
	dir, err := os.MkdirTemp("", "gavel-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	job := table.JobType{Model: "toy (batch size 1)", ScaleFactor: 1}
	// A stand-in training loop: 10 steps every 50 ms, reported in the default protocol.
	train := profile.Command{Argv: []string{"/bin/sh", "-c",
		`i=0; while :; do i=$((i+10)); echo "GAVEL_STEPS $i"; sleep 0.05; done`}}
	env, err := profile.BaseEnv(os.Environ(), nil)
	if err != nil {
		panic(err)
	}
	gpus, _ := profile.CPUDevices(1).List(context.Background())
	r := &profile.Runner{
		TablePath: filepath.Join(dir, "out.json"),
		Commands:  map[table.JobType]profile.Command{job: train},
		GPUs:      gpus,
		Env:       env,
		// Short windows for the example; the defaults measure for minutes.
		Settings: profile.Settings{Window: 200 * time.Millisecond, Precision: 0.2, MaxWindow: 3 * time.Second,
			MaxWarmup: time.Second, KillGrace: time.Second},
	}
	tasks, _, err := profile.Plan(profile.PlanSpec{Model: job, WorkerTypes: []string{profile.CPUWorkerType}})
	if err != nil {
		panic(err)
	}
	recs, err := r.Run(context.Background(), tasks)
	if err != nil {
		panic(err)
	}
	for _, rec := range recs {
		fmt.Printf("%s %s: %s, rate > 0: %v\n", rec.WorkerType, rec.Job, rec.Status, rec.Rate > 0)
	}
	tbl, err := table.Load(r.TablePath)
	if err != nil {
		panic(err)
	}
	_, ok := tbl.Isolated(profile.CPUWorkerType, job)
	fmt.Println("in the table:", ok)
	// Output:
	// cpu toy (batch size 1): ok, rate > 0: true
	// in the table: true
}
