package rounds

import (
	"context"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

func loadWorkedExample(t *testing.T) []policy.Job {
	t.Helper()
	f, err := os.Open("testdata/worked_example.trace")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tj, err := ParseTrace(f, "worked_example.trace")
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := Prepare(table.Default(), workedCluster(), tj)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// workedCluster is the cluster of gavel-reference §5.12: 2 GPUs of each type.
func workedCluster() policy.Cluster { return policy.Cluster{"v100": 2, "p100": 2, "k80": 2} }

// TestGavelCompatWorkedExample reproduces gavel-reference §5.12, the output
// of Gavel's own simulator on a 5-job trace with fifo_perf.
func TestGavelCompatWorkedExample(t *testing.T) {
	fifo, err := policy.New("fifo_perf")
	if err != nil {
		t.Fatal(err)
	}
	policies := map[string]policy.Policy{"reference-fifo-perf": refFIFOPerf{}, "policy.fifo_perf": fifo}
	wantJCT := map[string]float64{"0": 3599.988, "1": 1883.209, "2": 1840.183, "3": 6664.014, "4": 2736.213}
	for name, p := range policies {
		t.Run(name, func(t *testing.T) {
			cfg := Config{Table: table.Default(), Cluster: workedCluster(), Policy: p, GavelCompat: true}
			res, err := Simulate(context.Background(), cfg, loadWorkedExample(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Jobs) != 5 {
				t.Fatalf("%d jobs finished, want 5", len(res.Jobs))
			}
			for _, j := range res.Jobs {
				if got := math.Round(j.JCT*1000) / 1000; got != wantJCT[j.ID] {
					t.Errorf("job %s: JCT %.3f, want %.3f", j.ID, j.JCT, wantJCT[j.ID])
				}
			}
			if got := math.Round(res.AvgJCT*1000) / 1000; got != 3344.721 {
				t.Errorf("average JCT %.3f, want 3344.721", res.AvgJCT)
			}
			if got := math.Round(res.End*1000) / 1000; got != 8164.014 {
				t.Errorf("end %.3f, want 8164.014", res.End)
			}
			if got := math.Round(res.Utilization*10000) / 10000; got != 0.3795 {
				t.Errorf("utilization %.4f, want 0.3795", res.Utilization)
			}
		})
	}
}

// Compat mode runs whole steps a round, as Gavel does, so a job whose rate times the round
// is below one step never advances; with nothing else running the clock stood still too and
// the simulation ran forever. A job that is that slow on every worker type is refused before
// the simulation; one placed where it is (Gavel walks v100 first, and a job with no time
// there still back-fills it) stops the simulation after 5 such rounds with ErrNoProgress.
func TestGavelCompatSlowJobs(t *testing.T) {
	slow := table.New()
	slow.SetIsolated("old", table.JobType{Model: "huge", ScaleFactor: 1}, 0.00012) // 0.04 steps a round
	slow.SetIsolated("old", table.JobType{Model: "big", ScaleFactor: 1}, 0.003)    // 1.08 steps a round
	twoTypes := table.New()
	twoTypes.SetIsolated("k80", table.JobType{Model: "m", ScaleFactor: 1}, 1)
	twoTypes.SetIsolated("v100", table.JobType{Model: "m", ScaleFactor: 1}, 0.001) // 0.36 steps a round
	for _, tc := range []struct {
		name    string
		tbl     *table.Table
		cluster policy.Cluster
		model   string
		steps   float64
		compat  bool
		want    error   // nil: the job finishes
		wantJCT float64 // when it does
	}{
		{"never a whole step", slow, policy.Cluster{"old": 1}, "huge", 2, true, policy.ErrInput, 0},
		{"never a whole step, default mode", slow, policy.Cluster{"old": 1}, "huge", 2, false, nil, 2 / 0.00012},
		{"one step a round", slow, policy.Cluster{"old": 1}, "big", 2, true, nil, 2 / 0.003},
		{"no step where it runs", twoTypes, policy.Cluster{"k80": 1, "v100": 1}, "m", 1000, true, ErrNoProgress, 0},
		{"no step where it runs, default mode", twoTypes, policy.Cluster{"k80": 1, "v100": 1}, "m", 1000, false, nil, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := policy.New("max_min_fairness_perf")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // it ran forever
			defer cancel()
			cfg := Config{Table: tc.tbl, Cluster: tc.cluster, Policy: pol, GavelCompat: tc.compat}
			res, err := Simulate(ctx, cfg, []policy.Job{{ID: "a", Type: table.JobType{Model: tc.model, ScaleFactor: 1}, TotalSteps: tc.steps}})
			switch {
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("error %v, want %v", err, tc.want)
			case tc.want == nil && err != nil:
				t.Fatal(err)
			case tc.want == nil && (len(res.Jobs) != 1 || math.Abs(res.Jobs[0].JCT-tc.wantJCT) > 1e-6*tc.wantJCT):
				t.Fatalf("jobs %+v, want JCT %v", res.Jobs, tc.wantJCT)
			}
		})
	}
}
