package rounds

import (
	"context"
	"math"
	"testing"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// Every registered policy runs the worked-example trace to completion in both
// modes, and no job beats its lower bound (all steps at its fastest rate,
// starting at arrival); utilization stays in [0, 1] without packing.
func TestSimulateEveryPolicy(t *testing.T) {
	tbl := table.Default()
	jobs := loadWorkedExample(t)
	prices := policy.Prices{"v100": 2.48, "p100": 1.46, "k80": 0.45}
	var singleGPU []policy.Job
	for _, j := range jobs {
		if j.Type.ScaleFactor == 1 {
			singleGPU = append(singleGPU, j)
		}
	}
	for _, name := range policy.Names() {
		jobs := jobs
		if name == "allox" {
			jobs = singleGPU // AlloX handles scale factor 1 only, as in Gavel
		}
		for _, compat := range []bool{false, true} {
			p, err := policy.New(name)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Simulate(context.Background(), Config{Table: tbl, Cluster: workedCluster(), Policy: p, GavelCompat: compat,
				Prices: prices}, jobs)
			if err != nil {
				t.Errorf("%s compat=%v: %v", name, compat, err)
				continue
			}
			if len(res.Jobs) != len(jobs) {
				t.Errorf("%s compat=%v: %d of %d jobs finished", name, compat, len(res.Jobs), len(jobs))
				continue
			}
			for i, j := range res.Jobs {
				best := 0.0
				for _, w := range workedCluster().WorkerTypes() {
					r, _ := tbl.Isolated(w, jobs[i].Type)
					best = math.Max(best, r)
				}
				if lb := jobs[i].TotalSteps / best; j.JCT < lb-1e-6 {
					t.Errorf("%s compat=%v: job %s JCT %.1f below its lower bound %.1f", name, compat, j.ID, j.JCT, lb)
				}
			}
			if res.Utilization < 0 || (res.Utilization > 1+1e-9 && !compat) {
				t.Errorf("%s compat=%v: utilization %v", name, compat, res.Utilization)
			}
		}
	}
}

// With a GPU for each job, every policy gives each job its GPU all the time, so each finishes
// exactly when its steps at its rate take: 3,600 s and 1,800 s here (a simulator running jobs
// slower, or a round lost, would show).
func TestSimulateEveryPolicyExactWhenUncontended(t *testing.T) {
	tbl := oneTypeTable(map[string]float64{"a": 2, "b": 1}, 1)
	jobs := []policy.Job{{ID: "a", Type: table.JobType{Model: "a", ScaleFactor: 1}, TotalSteps: 7200},
		{ID: "b", Type: table.JobType{Model: "b", ScaleFactor: 1}, TotalSteps: 1800}}
	want := map[string]float64{"a": 3600, "b": 1800}
	for _, name := range policy.Names() {
		p, err := policy.New(name)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Simulate(context.Background(), Config{Table: tbl, Cluster: policy.Cluster{"g": 2}, Policy: p,
			Prices: policy.Prices{"g": 1}}, jobs)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, j := range res.Jobs {
			if math.Abs(j.JCT-want[j.ID]) > 1e-6 {
				t.Errorf("%s: job %s JCT %v, want %v", name, j.ID, j.JCT, want[j.ID])
			}
		}
		if len(res.Jobs) != 2 {
			t.Errorf("%s: %d jobs finished", name, len(res.Jobs))
		}
	}
}
