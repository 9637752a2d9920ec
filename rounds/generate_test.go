package rounds

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

func TestGeneratorDistribution(t *testing.T) {
	tbl := table.Default()
	cluster := policy.Cluster{"v100": 36, "p100": 36, "k80": 36}
	g, err := NewGenerator(GeneratorConfig{Table: tbl, Cluster: cluster, RatePerHour: 4, MultiGPU: true, SLOs: true, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if g.Reference() != "v100" {
		t.Errorf("reference %q, want v100 (fastest on the Gavel table)", g.Reference())
	}
	const n = 20000
	jobs := g.Jobs(n)
	sf := map[int]int{}
	long := 0
	for i, j := range jobs {
		sf[j.Type.ScaleFactor]++
		rate, _ := tbl.Isolated("v100", j.Type)
		d := j.TotalSteps / rate
		if d < 60*math.Pow(10, 1.5)-1 || d > 60*1e4+1 {
			t.Fatalf("job %d: duration %.0f s outside Gavel's range", i, d)
		}
		if d >= 60*1e3 {
			long++
		}
		if j.SLO <= 0 {
			t.Fatalf("job %d: no SLO", i)
		}
		if i > 0 && j.Arrival < jobs[i-1].Arrival {
			t.Fatalf("arrivals not sorted at %d", i)
		}
		if !runnable(tbl, cluster, j.Type) {
			t.Fatalf("job %d (%s) cannot run on the cluster", i, j.Type)
		}
	}
	want := map[int]float64{1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}
	for s, p := range want {
		if got := float64(sf[s]) / n; math.Abs(got-p) > 0.015 {
			t.Errorf("P(sf=%d) = %.3f, want %.2f", s, got, p)
		}
	}
	// 20% of durations are drawn from 60·10^U(3,4) ≥ 16.7 h.
	if got := float64(long) / n; math.Abs(got-0.2) > 0.015 {
		t.Errorf("long jobs %.3f, want 0.20", got)
	}
	// Poisson arrivals: mean gap 3600/4 s.
	if gap := jobs[n-1].Arrival / (n - 1); math.Abs(gap-900) > 30 {
		t.Errorf("mean inter-arrival %.1f s, want 900", gap)
	}
	if jobs[0].Arrival != 0 {
		t.Errorf("first arrival %v, want 0", jobs[0].Arrival)
	}
	// Same seed, same jobs.
	g2, _ := NewGenerator(GeneratorConfig{Table: tbl, Cluster: cluster, RatePerHour: 4, MultiGPU: true, SLOs: true, Seed: 7})
	if !reflect.DeepEqual(g2.Jobs(100), jobs[:100]) {
		t.Error("same seed gave different jobs")
	}
}

func TestGeneratorSingleGPUAndLimit(t *testing.T) {
	tbl := table.Default()
	g, err := NewGenerator(GeneratorConfig{Table: tbl, Cluster: policy.Cluster{"k80": 4}, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	jobs := g.Jobs(1000)
	if len(jobs) != 50 {
		t.Fatalf("%d jobs, want the limit 50", len(jobs))
	}
	for _, j := range jobs {
		if j.Type.ScaleFactor != 1 || j.Arrival != 0 {
			t.Fatalf("job %+v: want sf 1 at t=0", j)
		}
		if r, _ := tbl.Isolated("k80", j.Type); r <= 0 {
			t.Fatalf("job type %s cannot run on k80", j.Type)
		}
	}
}

// A cluster none of whose worker types has GPUs and a table rate gave "no single-GPU job type
// has a positive rate on reference worker type \"\"" (or named a type listed with 0 GPUs).
func TestGeneratorNamesAnUnusableCluster(t *testing.T) {
	for _, c := range []policy.Cluster{{"foo": 2}, {"v100": 0}, {"v100": 0, "foo": 3}} {
		_, err := NewGenerator(GeneratorConfig{Table: table.Default(), Cluster: c, RatePerHour: 1})
		if err == nil || !strings.Contains(err.Error(), "has GPUs and is in the table") {
			t.Errorf("cluster %v: %v", c, err)
		}
	}
	g, err := NewGenerator(GeneratorConfig{Table: table.Default(), Cluster: policy.Cluster{"v100": 0, "k80": 2}, RatePerHour: 1})
	if err != nil || g.Reference() != "k80" {
		t.Errorf("v100=0,k80=2: reference %v (%v), want k80 (v100 has no GPUs)", g, err)
	}
}
