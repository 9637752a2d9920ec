package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

const workedTrace = "../../rounds/testdata/worked_example.trace"

// gavel-reference §5.12 through the CLI: Gavel's own simulator output.
func TestSimulateGavelCompatWorkedExample(t *testing.T) {
	csvPath := t.TempDir() + "/jobs.csv"
	out, _, err := rtRun(t, newSimulateCmd, "--trace", workedTrace, "--policy", "fifo_perf",
		"--cluster", "v100=2,p100=2,k80=2", "--gavel-compat", "--json", "--jobs-out", csvPath)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		AvgJCT      float64 `json:"avg_jct_seconds"`
		Makespan    float64 `json:"makespan_seconds"`
		Utilization float64 `json:"utilization"`
		Cost        *float64
		SLO         *int `json:"slo_violations"`
		Jobs        []struct {
			ID  string  `json:"id"`
			JCT float64 `json:"jct_seconds"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if math.Round(got.AvgJCT*1000) != 3344721 || math.Round(got.Makespan*1000) != 8164014 {
		t.Errorf("avg JCT %.3f, makespan %.3f; want 3344.721, 8164.014", got.AvgJCT, got.Makespan)
	}
	if len(got.Jobs) != 5 || got.SLO == nil || *got.SLO != 0 || got.Cost == nil || *got.Cost != 0 {
		t.Errorf("jobs %v, slo_violations %v, cost %v", got.Jobs, got.SLO, got.Cost)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 6 || recs[0][3] != "jct_seconds" || recs[4][3] != "6664.014" {
		t.Errorf("jobs CSV %v (%v)", recs, err)
	}
}

func TestSimulateDefaultHuman(t *testing.T) {
	out, _, err := rtRun(t, newSimulateCmd, "--trace", workedTrace, "--policy", "max_min_fairness_perf",
		"--cluster", "v100=2,p100=2,k80=2", "--prices", "v100=2.48,p100=1.46,k80=0.45")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"average JCT (s)", "utilization", "cost ($)", "makespan (s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The policy's warnings during a simulation reach stderr: three jobs whose SLOs (1.01 times
// their best run time, one V100 for all three) cannot all be met.
func TestSimulatePrintsPolicyWarnings(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "slo.trace")
	lines := "ResNet-18 (batch size 64)\tpython3 main.py\t/tmp\t--num_steps\t0\t86735\t1\t1\t1.01\t0\n" +
		"Transformer (batch size 32)\tpython3 train.py\t/tmp\t--step\t1\t200000\t1\t1\t1.01\t0\n" +
		"A3C\tpython3 main.py\t/tmp\t--max-steps\t0\t100000\t1\t1\t1.01\t0\n"
	if err := os.WriteFile(trace, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := rtRun(t, newSimulateCmd, "--trace", trace, "--policy", "max_sum_throughput_normalized_by_cost_perf_SLOs",
		"--cluster", "v100=1", "--prices", "v100=2.48")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "warning: SLOs cannot all be met") {
		t.Errorf("stderr lacks the SLO warning:\n%s", errOut)
	}
}

// A missed SLO is said once per job, however often the allocation is recomputed after it (the
// message carried the growing time run, so each recomputation was a new warning).
func TestSimulateSaysMissedSLOOnce(t *testing.T) {
	jobs := filepath.Join(t.TempDir(), "slo.json")
	body := `{"jobs":[{"id":"a","type":"A3C","total_steps":50000,"slo_seconds":3600},
		{"id":"b","type":"CycleGAN","total_steps":20000,"slo_seconds":1000,"arrival_seconds":100},
		{"id":"c","type":"LM (batch size 20)","total_steps":100000}]}`
	if err := os.WriteFile(jobs, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := rtRun(t, newSimulateCmd, "--trace", jobs, "--policy", "max_sum_throughput_normalized_by_cost_perf_SLOs",
		"--cluster", "v100=1,k80=1", "--prices", "v100=2.48,k80=0.45")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(errOut, `job "b": SLO of 1000s already missed`); n != 1 {
		t.Errorf("job b's missed SLO said %d times, want once:\n%s", n, errOut)
	}
}

func TestSimulateBadFlags(t *testing.T) {
	_, _, err := rtRun(t, newSimulateCmd, "--trace", workedTrace, "--policy", "max_min_fairness_packed",
		"--cluster", "v100=2", "--max-partners", "-1")
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--max-partners") {
		t.Errorf("err %v, want exit 2 about --max-partners", err)
	}
}

func TestSimulateBadInput(t *testing.T) {
	good := "A3C\tc\t/tmp\t--s\t0\t100\t1\t1\t-1\t0\n"
	tests := []struct {
		name, trace, want string
	}{
		{"field count", good + "A3C\tc\t0\n", ":2: bad trace: 3 tab-separated fields"},
		{"bad number", good + good + strings.Replace(good, "\t100\t", "\t1e\t", 1), ":3: bad trace: field 6 (total_steps)"},
		{"unknown type", strings.Replace(good, "A3C", "NoSuchModel", 1), "NoSuchModel"},
		{"unknown type on line 2", good + strings.Replace(good, "A3C", "NoSuchModel", 1),
			`t.trace: line 2: job "1": job type ('NoSuchModel', 1) is not in the throughput table`},
		{"unrunnable", strings.Replace(strings.Replace(good, "\t100\t1\t", "\t100\t8\t", 1), "A3C", "LM (batch size 20)", 1), "scale factor 8"},
		// Steps are whole (Gavel truncates): 0.5 was cut to 0 and then reported as no steps left.
		{"half a step", strings.Replace(good, "\t100\t", "\t0.5\t", 1), ":1: bad trace: field 6 (total_steps): 0.5 is not a whole number of steps"},
		// A jobs file's errors name the entry (they named the id only).
		{"jobs file entry", `{"jobs": [{"id": "ok", "type": "A3C", "total_steps": 5}, {"id": "a", "type": "Foo", "total_steps": 3600}]}`,
			`t.trace: jobs[1]: job "a": job type ('Foo', 1) is not in the throughput table`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trace := rtFile(t, "t.trace", tt.trace)
			_, _, err := rtRun(t, newSimulateCmd, "--trace", trace, "--policy", "max_min_fairness_perf", "--cluster", "v100=2,k80=2")
			if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v (exit %d), want exit 2 mentioning %q", err, cli.ExitCode(err), tt.want)
			}
		})
	}
}

// With --prices, every worker type of the cluster needs a price: time on one without was
// counted as free ("cost": 0), with any policy.
func TestSimulatePricesCoverCluster(t *testing.T) {
	trace := rtFile(t, "j.json", `{"jobs": [{"id": "r", "type": "Recommendation (batch size 1024)", "total_steps": 30000}]}`)
	_, _, err := rtRun(t, newSimulateCmd, "--trace", trace, "--policy", "max_min_fairness_perf", "--cluster", "v100=1,k80=1", "--prices", "v100=2.48")
	want := `--prices "v100=2.48": no price for worker type "k80" (the cost reported needs one per worker type of the cluster)`
	if cli.ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), want) {
		t.Errorf("err %v (exit %d), want exit 2: %s", err, cli.ExitCode(err), want)
	}
	if _, _, err := rtRun(t, newSimulateCmd, "--trace", trace, "--policy", "max_min_fairness_perf", "--cluster", "v100=1,k80=1",
		"--prices", "v100=2.48,k80=0"); err != nil {
		t.Errorf("a price for every type (0 included): %v", err)
	}
}

// simulate --json: "cost": 0 without --prices read as free (now null), "warnings" was absent
// when there were none (now []), and jobs lacked slo_violated, which --jobs-out has.
func TestSimulateJSONFields(t *testing.T) {
	// Two jobs on one V100: ResNet-18 bs64 alone takes 86735 / 24.093 ≈ 3600 s, so an SLO of
	// 1.01 times that is missed when it shares the GPU with A3C, and A3C has no SLO.
	trace := rtFile(t, "slo.trace", "ResNet-18 (batch size 64)\tc\t/tmp\t--s\t0\t86735\t1\t1\t1.01\t0\n"+
		"A3C\tc\t/tmp\t--s\t0\t100000\t1\t1\t-1\t0\n")
	type result struct {
		Cost     json.RawMessage              `json:"cost"`
		Warnings *json.RawMessage             `json:"warnings"`
		Jobs     []map[string]json.RawMessage `json:"jobs"` // raw, to tell null from absent
	}
	tests := []struct {
		name     string
		args     []string
		wantCost string // the JSON of the total cost ("" for a positive one); each job's is null exactly without prices
	}{
		{"no prices", nil, "0"},
		{"prices", []string{"--prices", "v100=3.6"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csvPath := filepath.Join(t.TempDir(), "jobs.csv")
			args := append([]string{"--trace", trace, "--policy", "max_min_fairness_perf", "--cluster", "v100=1",
				"--json", "--jobs-out", csvPath}, tt.args...)
			out, _, err := rtRun(t, newSimulateCmd, args...)
			if err != nil {
				t.Fatal(err)
			}
			var got result
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if got.Warnings == nil || string(*got.Warnings) != "[]" {
				t.Errorf("warnings %v, want []", got.Warnings)
			}
			if tt.wantCost == "0" && string(got.Cost) != "0" {
				t.Errorf("cost %s without --prices, want 0 (a number, as the contract has it)", got.Cost)
			}
			if tt.wantCost == "" {
				// v100 at $3.6 an hour is $0.001 a GPU-second: the cost is the GPU time used.
				var c float64
				if err := json.Unmarshal(got.Cost, &c); err != nil || c <= 0 {
					t.Errorf("cost %s with --prices, want a positive number", got.Cost)
				}
			}
			f, err := os.Open(csvPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			recs, err := csv.NewReader(f).ReadAll()
			if err != nil || len(recs) != 1+len(got.Jobs) || len(got.Jobs) != 2 {
				t.Fatalf("jobs CSV %v (%v), JSON jobs %v", recs, err, got.Jobs)
			}
			for i, j := range got.Jobs {
				rec := recs[i+1] // id, arrival, completion, JCT, deadline, violated, cost
				if id := `"` + rec[0] + `"`; string(j["id"]) != id {
					t.Fatalf("job %d: id %s, CSV %s", i, j["id"], id)
				}
				if string(j["slo_violated"]) != rec[5] {
					t.Errorf("job %s: slo_violated %q, CSV says %s", rec[0], j["slo_violated"], rec[5])
				}
				if d, ok := j["slo_deadline_seconds"]; !ok || (string(d) == "null") != (rec[4] == "") {
					t.Errorf("job %s: slo_deadline_seconds %q (present %v), CSV deadline %q", rec[0], d, ok, rec[4])
				}
				if c, ok := j["cost"]; !ok || (string(c) == "null") != (tt.wantCost == "0") {
					t.Errorf("job %s: cost %q (present %v) with %s", rec[0], c, ok, tt.name)
				}
			}
			// Job "0" (line 1, ResNet-18 with an SLO of 1.01 times its run alone) shares the GPU
			// with A3C and misses it; A3C has no SLO.
			if v0, v1 := string(got.Jobs[0]["slo_violated"]), string(got.Jobs[1]["slo_violated"]); v0 != "true" || v1 != "false" {
				t.Errorf("slo_violated %s, %s; want true, false", v0, v1)
			}
		})
	}
}

// An output file in a directory that does not exist failed only after the work (simulate
// printed nothing and exited 1): every output path is checked first, as bad usage.
func TestOutputPathsCheckedFirst(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "no-such-dir", "x.csv")
	tests := []struct {
		name string
		mk   func(*cli.IO) *cobra.Command
		args []string
		flag string
	}{
		{"simulate --jobs-out", newSimulateCmd, []string{"--trace", workedTrace, "--policy", "max_min_fairness_perf",
			"--cluster", "v100=2,p100=2,k80=2", "--jobs-out", bad}, "--jobs-out"},
		{"experiment hierarchical --csv", newExperimentCmd, []string{"hierarchical", "--csv", bad}, "--csv"},
		{"table convert --out", func(io *cli.IO) *cobra.Command { return cli.NewTableCmd(io, "gavel-plan") },
			[]string{"convert", "--to", "csv", "--out", bad}, "--out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := rtRun(t, tt.mk, tt.args...)
			want := tt.flag + " " + bad + ": directory " + filepath.Dir(bad) + " does not exist"
			if cli.ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), want) || out != "" {
				t.Errorf("err %v (exit %d), stdout %q; want exit 2 with %q and nothing done", err, cli.ExitCode(err), out, want)
			}
		})
	}
}

// An output flag given empty (an unset variable in --jobs-out "$F") wrote nothing and said
// nothing, after the whole simulation; it is bad usage, found before any work, as an empty
// input flag is.
func TestEmptyOutputFlagIsUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "--trace", workedTrace, "--policy", "fifo_perf", "--cluster", "v100=2,p100=2,k80=2", "--jobs-out", ""},
		{"experiment", "hierarchical", "--csv", ""},
		{"table", "convert", "--to", "csv", "--out", ""},
	} {
		streams, out, errb := cli.TestIO()
		root := newRootCmd(streams)
		root.SetArgs(args)
		flag := args[len(args)-2]
		if code := cli.Main(root, streams); code != 2 || !strings.Contains(errb.String(), flag+" is empty (an unset variable?)") || out.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q, %d bytes on stdout; want exit 2 naming %s and nothing printed",
				args, code, errb, out.Len(), flag)
		}
	}
}

// A trace's priority weights shape only max-min fairness and water filling; simulate says so
// once when the policy ignores them, as allocate does, and says nothing when it uses them.
func TestSimulateNotesUnusedWeights(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "w.trace")
	lines := "ResNet-18 (batch size 64)\tpython3 main.py\t/tmp\t--num_steps\t0\t8000\t1\t5\t-1\t0\n" +
		"A3C\tpython3 main.py\t/tmp\t--max-steps\t0\t1000\t1\t1\t-1\t0\n"
	if err := os.WriteFile(trace, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "note: " + trace + ": job weights are used only by max-min fairness and water filling; fifo_perf ignores them\n"
	for policy, note := range map[string]string{"fifo_perf": want, "max_min_fairness_perf": ""} {
		_, errOut, err := rtRun(t, newSimulateCmd, "--trace", trace, "--policy", policy, "--cluster", "v100=1")
		if err != nil || errOut != note {
			t.Errorf("%s: %v, stderr %q, want %q", policy, err, errOut, note)
		}
	}
}
