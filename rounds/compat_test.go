package rounds

import (
	"context"
	"math"
	"os"
	"testing"

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
