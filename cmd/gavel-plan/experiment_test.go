package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/internal/cli"
)

func TestExperimentContinuousSmall(t *testing.T) {
	out, _, err := rtRun(t, newExperimentCmd, "continuous", "--cluster", "v100=4,p100=4,k80=4", "--rates", "1",
		"--window", "0:15", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Points []struct {
			Policy string  `json:"policy"`
			Rate   float64 `json:"rate_jobs_per_hour"`
			AvgJCT float64 `json:"avg_jct_seconds"`
		} `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Points) != 2 || got.Points[0].Policy != "max_min_fairness_perf" || got.Points[1].Policy != "max_min_fairness" {
		t.Fatalf("points %+v", got.Points)
	}
	for _, p := range got.Points {
		if !(p.AvgJCT > 0) || p.Rate != 1 {
			t.Errorf("point %+v", p)
		}
	}
}

// --parallel gives the sequential run's output, solve_seconds (a timing) aside; a negative
// count is a usage error.
func TestExperimentContinuousParallel(t *testing.T) {
	args := []string{"continuous", "--cluster", "v100=2,p100=2,k80=2", "--rates", "0.2,0.5", "--window", "0:6",
		"--seeds", "0,1", "--json"}
	solveSecs := regexp.MustCompile(`"solve_seconds": ?[0-9.e+-]+`)
	var want string
	for _, parallel := range []string{"1", "2", "0"} {
		out, _, err := rtRun(t, newExperimentCmd, append(args, "--parallel", parallel)...)
		if err != nil {
			t.Fatalf("--parallel %s: %v", parallel, err)
		}
		out = solveSecs.ReplaceAllString(out, `"solve_seconds": 0`)
		if want == "" {
			want = out
		} else if out != want {
			t.Errorf("--parallel %s:\n%s\nwant (--parallel 1):\n%s", parallel, out, want)
		}
	}
	if strings.Contains(want, "partial") {
		t.Errorf("a complete run says partial:\n%s", want)
	}
	if _, _, err := rtRun(t, newExperimentCmd, append(args, "--parallel", "-1")...); cli.ExitCode(err) != 2 {
		t.Errorf("--parallel -1: %v, want a usage error", err)
	}
}

func TestExperimentHierarchicalCSV(t *testing.T) {
	path := t.TempDir() + "/h.csv"
	out, _, err := rtRun(t, newExperimentCmd, "hierarchical", "--csv", path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "1:2:3") || !strings.Contains(out, "1:1:1") {
		t.Errorf("output lacks the weight rows:\n%s", out)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// 2 weightings × 2 policies × Σ_t min(18, t/4+1) over 72 timesteps
	// (4·(1+…+18) = 684 job-timesteps), plus the header.
	if len(recs) != 1+2*2*684 {
		t.Errorf("%d CSV records, want %d", len(recs), 1+2*2*684)
	}
}

func TestExperimentBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"continuous", "--rates", "x"},
		{"continuous", "--window", "5:5"},
		{"continuous", "--policies", "nope"},
		{"continuous", "--policies", "max_min_fairness_perf,max_sum_throughput_normalized_by_cost_perf"},
		{"continuous", "--max-partners", "-3"},
		{"continuous", "--timeout", "-1s"},
		{"hierarchical", "--cluster", "v100"},
		{"hierarchical", "--aware", "max_sum_throughput_normalized_by_cost_perf"},
	} {
		if _, _, err := rtRun(t, newExperimentCmd, args...); cli.ExitCode(err) != 2 {
			t.Errorf("%v: err %v, want exit 2", args, err)
		}
	}
}

// Rates that two decimals do not tell apart get the decimals they need.
func TestExperimentContinuousRateLabels(t *testing.T) {
	out, _, err := rtRun(t, newExperimentCmd, "continuous", "--cluster", "v100=2,p100=2,k80=2", "--policies", "max_min_fairness_perf",
		"--rates", "0.125,0.12,2", "--window", "0:2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" 0.125 │", " 0.12 │", " 2.00 │"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// --multi-gpu on a cluster of 4 GPUs a type says that 8-GPU draws become single-GPU jobs (they
// did without a word); on 8 a type it says nothing.
func TestExperimentContinuousMultiGPUWarns(t *testing.T) {
	for _, tc := range []struct {
		cluster string
		warn    bool
	}{{"v100=4,p100=4,k80=4", true}, {"v100=8,p100=8,k80=8", false}} {
		_, errOut, err := rtRun(t, newExperimentCmd, "continuous", "--cluster", tc.cluster, "--policies", "max_min_fairness_perf",
			"--rates", "1", "--window", "0:2", "--multi-gpu")
		if err != nil {
			t.Fatal(err)
		}
		const want = "no job type of 8 GPUs has a rate on v100 and fits a worker type of cluster"
		if got := strings.Contains(errOut, want); got != tc.warn {
			t.Errorf("%s: warning %v, want %v:\n%s", tc.cluster, got, tc.warn, errOut)
		}
	}
}
