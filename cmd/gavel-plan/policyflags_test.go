package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/table"
)

// rounds and simulate take every policy flag allocate takes (they share
// policyFlags), so a policy that needs --prices, --seed, --max-partners or
// --reference runs in each.
func TestPolicyFlagsShared(t *testing.T) {
	streams, _, _ := cli.TestIO()
	alloc := newAllocateCmd(streams)
	for _, mk := range []func(*cli.IO) *cobra.Command{newRoundsCmd, newSimulateCmd} {
		cmd := mk(streams)
		alloc.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "jobs" && cmd.Name() == "simulate" {
				return // simulate reads --trace
			}
			if cmd.Flags().Lookup(f.Name) == nil {
				t.Errorf("%s lacks allocate's --%s", cmd.Name(), f.Name)
			}
		})
	}
}

// The cost policy in rounds: --prices reaches the policy (rounds built its
// problem without prices, so it could not run cost policies at all).
func TestRoundsCostPolicyWithPrices(t *testing.T) {
	jobs := rtFile(t, "jobs.json", rtJobs)
	args := []string{"--policy", "max_sum_throughput_normalized_by_cost_perf", "--cluster", "v100=2,k80=2",
		"--prices", "v100=2.48,k80=0.45", "--jobs", jobs, "--seed", "3", "--max-partners", "2",
		"--reference", "v100", "--json"}
	out, _, err := rtRun(t, newRoundsCmd, append([]string{"--rounds", "3"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var got roundsJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	// The same allocation as allocate's with the same flags.
	aout, _, err := rtRun(t, newAllocateCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	var want allocationOut
	if err := json.Unmarshal([]byte(aout), &want); err != nil {
		t.Fatal(err)
	}
	if len(got.Allocation) == 0 || len(got.Allocation) != len(want.Allocation) {
		t.Fatalf("rounds allocation %v, allocate's %v", got.Allocation, want.Allocation)
	}
	for c, x := range want.Allocation {
		for w, v := range x {
			if d := got.Allocation[c][w] - v; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s on %s: rounds %v, allocate %v", c, w, got.Allocation[c][w], v)
			}
		}
	}
	// Without --prices it is bad usage, up front.
	_, _, err = rtRun(t, newRoundsCmd, "--policy", "max_sum_throughput_normalized_by_cost_perf", "--cluster", "v100=2,k80=2",
		"--jobs", jobs)
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "needs --prices") {
		t.Errorf("no prices: %v (exit %d)", err, cli.ExitCode(err))
	}
}

// FIFO never back-fills in rounds, as in simulate: c waits behind b (4
// GPUs, which v100=2 cannot hold) instead of running on the idle v100s.
func TestRoundsFIFONoBackFill(t *testing.T) {
	jobs := rtFile(t, "fifo.json", `{"jobs":[{"id":"a","type":"ResNet-50 (batch size 32)","scale_factor":4,"total_steps":100000,"arrival_seconds":0},
{"id":"b","type":"ResNet-50 (batch size 32)","scale_factor":4,"total_steps":100000,"arrival_seconds":1},
{"id":"c","type":"A3C","total_steps":100000,"arrival_seconds":2}]}`)
	for _, pol := range []string{"fifo", "fifo_perf", "fifo_packed"} {
		out, _, err := rtRun(t, newRoundsCmd, "--policy", pol, "--cluster", "v100=2,k80=4", "--jobs", jobs, "--rounds", "2", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var got roundsJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		for _, r := range got.Rounds {
			for _, a := range r.Assignments {
				for _, id := range a.Jobs {
					if got.Fidelity[id][a.WorkerType].Target == 0 {
						t.Errorf("%s round %d: %s runs on %s with target 0", pol, r.Index, id, a.WorkerType)
					}
				}
			}
		}
	}
}

// Bad input the policy finds (policy.ErrInput) is bad usage in rounds and
// simulate as in allocate, naming the file and the entry.
func TestPolicyInputErrorsNameEntry(t *testing.T) {
	jobs := rtFile(t, "jobs.json", rtJobs)
	tpu := tableWithBareType(t, "tpu")
	wide := rtFile(t, "wide.trace", "A3C\tc\t/tmp\t--s\t0\t100\t1\t1\t-1\t0\n"+
		"LM (batch size 20)\tc\t/tmp\t--s\t0\t100\t2\t1\t-1\t0\n")
	tests := []struct {
		name string
		mk   func(*cli.IO) *cobra.Command
		args []string
		want string
	}{
		// tpu is in the table but has no rates for these jobs.
		{"rounds: no rate on a worker type", newRoundsCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2,tpu=1",
			"--table", tpu, "--jobs", jobs}, jobs + `: jobs[0] (id "a"): policy max_min_fairness_perf: job "a": job type ('ResNet-18 (batch size 64)', 1) has no isolated rate on worker type "tpu" in the table (measure it, or record 0 if it cannot run there`},
		{"simulate: no rate on a worker type", newSimulateCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2,tpu=1",
			"--table", tpu, "--trace", workedTrace}, workedTrace + `: line 1: `},
		{"simulate: jobs file", newSimulateCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2,tpu=1",
			"--table", tpu, "--trace", jobs}, jobs + `: jobs[0] (id "a"): `},
		{"simulate: AlloX, scale factor 2", newSimulateCmd, []string{"--policy", "allox", "--cluster", "v100=2,k80=2",
			"--trace", wide}, wide + `: line 2: policy allox: job "1": AlloX supports scale factor 1 only`},
		{"simulate: cost policy without prices", newSimulateCmd, []string{"--policy", "max_sum_throughput_normalized_by_cost_perf",
			"--cluster", "v100=2,k80=2", "--trace", workedTrace}, "needs --prices"},
		{"simulate: cost policy, price missing", newSimulateCmd, []string{"--policy", "max_sum_throughput_normalized_by_cost_perf",
			"--cluster", "v100=2,k80=2", "--prices", "v100=1", "--trace", workedTrace}, `no price for worker type "k80"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := rtRun(t, tt.mk, tt.args...)
			if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v (exit %d), want exit 2 mentioning %q", err, cli.ExitCode(err), tt.want)
			}
		})
	}
}

// tableWithBareType saves the embedded table plus worker type w, which has
// one rate (A3C's) only, and returns its path.
func tableWithBareType(t *testing.T, w string) string {
	t.Helper()
	tb := table.Default().Clone()
	tb.SetIsolated(w, table.JobType{Model: "A3C", ScaleFactor: 1}, 1)
	p := filepath.Join(t.TempDir(), "table.json")
	if err := tb.Save(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// A worker type of --cluster or --reference that the table lacks (a typo,
// "V100") is reported as such, in every command, before any job is blamed
// for having no rate on it; types the table has keep working.
func TestWorkerTypesCheckedAgainstTable(t *testing.T) {
	jobs := rtFile(t, "jobs.json", rtJobs)
	types := "(it has k80, k80_unconsolidated, p100, p100_unconsolidated, v100, v100_unconsolidated)"
	cmds := []struct {
		name string
		mk   func(*cli.IO) *cobra.Command
		args []string
	}{
		{"allocate", newAllocateCmd, []string{"--policy", "max_min_fairness_perf", "--jobs", jobs}},
		{"rounds", newRoundsCmd, []string{"--policy", "max_min_fairness_perf", "--jobs", jobs, "--rounds", "2"}},
		{"simulate", newSimulateCmd, []string{"--policy", "max_min_fairness_perf", "--trace", workedTrace}},
	}
	for _, c := range cmds {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--cluster", "V100=4"}, `--cluster: worker type "V100" is not in the table ` + types + `; did you mean "v100"?`},
			{[]string{"--cluster", "v100=4,h100=4"}, `--cluster: worker type "h100" is not in the table ` + types},
			// max_min_fairness_perf ignores --reference; a typo is still an error.
			{[]string{"--cluster", "v100=4", "--reference", "h100"}, `--reference: worker type "h100" is not in the table ` + types},
		} {
			_, _, err := rtRun(t, c.mk, append(c.args, tc.args...)...)
			if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "job") {
				t.Errorf("%s %v: %v (exit %d), want exit 2 with %q", c.name, tc.args, err, cli.ExitCode(err), tc.want)
			}
		}
		if _, _, err := rtRun(t, c.mk, append(c.args, "--cluster", "v100=4,k80=4", "--reference", "k80")...); err != nil {
			t.Errorf("%s: types in the table: %v", c.name, err)
		}
		// A type listed with no GPUs takes no part, in the table or not.
		if _, _, err := rtRun(t, c.mk, append(c.args, "--cluster", "v100=4,a100=0")...); err != nil {
			t.Errorf("%s: a type with 0 GPUs: %v", c.name, err)
		}
	}
	// A custom table's own types are what counts, and the message names it.
	tpu := tableWithBareType(t, "tpu")
	_, _, err := rtRun(t, newAllocateCmd, "--policy", "max_min_fairness_perf", "--cluster", "v100=1", "--table", tpu, "--reference", "TPU")
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), `worker type "TPU" is not in table `+tpu+` (it has k80, k80_unconsolidated, p100, p100_unconsolidated, tpu, v100, v100_unconsolidated); did you mean "tpu"?`) {
		t.Errorf("custom table: %v", err)
	}
}

// Float flags must be finite: --round-seconds Inf made every round endless.
func TestFloatFlagsFinite(t *testing.T) {
	jobs := rtFile(t, "jobs.json", rtJobs)
	for _, v := range []string{"Inf", "+Inf", "NaN", "-1", "0"} {
		for _, tc := range []struct {
			mk   func(*cli.IO) *cobra.Command
			args []string
		}{
			{newRoundsCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2", "--jobs", jobs}},
			{newSimulateCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2", "--trace", workedTrace}},
			{newContinuousCmd, []string{"--rates", "1"}},
		} {
			_, _, err := rtRun(t, tc.mk, append(tc.args, "--round-seconds", v)...)
			if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--round-seconds") {
				t.Errorf("%v --round-seconds %s: %v (exit %d)", tc.args, v, err, cli.ExitCode(err))
			}
		}
		_, _, err := rtRun(t, newContinuousCmd, "--rates", "1,"+v)
		if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--rates") {
			t.Errorf("--rates 1,%s: %v (exit %d)", v, err, cli.ExitCode(err))
		}
	}
}

// Flags that do nothing with the policy or cluster given are warned about,
// once, on stderr, and change no exit status: --reference outside agnostic
// FTF and makespan, --max-partners outside the packing policies, --prices
// outside the cost policies and --seed outside fifo and gandiva (but for
// simulate), a price for a worker type not in the cluster, a --cluster
// worker type with 0 GPUs.
func TestUnusedFlagsWarn(t *testing.T) {
	trace := "../../examples/worked_example.trace"
	cases := []struct {
		name string
		mk   func(*cli.IO) *cobra.Command
		args []string
		warn string // "": no warning
	}{
		{"max-partners, perf", newAllocateCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4", "--max-partners", "2"},
			"warning: --max-partners does nothing with policy max_min_fairness_perf (only the packing policies"},
		{"max-partners, packed", newAllocateCmd, []string{"--policy", "max_min_fairness_packed", "--cluster", "v100=4", "--max-partners", "2"}, ""},
		{"max-partners, gandiva", newAllocateCmd, []string{"--policy", "gandiva", "--cluster", "v100=4", "--max-partners", "2"}, ""},
		{"max-partners 0", newAllocateCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4", "--max-partners", "0"}, ""},
		{"reference, max-min", newAllocateCmd, []string{"--policy", "max_min_fairness", "--cluster", "v100=4,k80=2", "--reference", "v100"},
			"warning: --reference does nothing with policy max_min_fairness (only finish_time_fairness and min_total_duration"},
		{"reference, ftf perf", newAllocateCmd, []string{"--policy", "finish_time_fairness_perf", "--cluster", "v100=4,k80=2", "--reference", "v100"},
			"warning: --reference does nothing with policy finish_time_fairness_perf"},
		{"reference, ftf", newAllocateCmd, []string{"--policy", "finish_time_fairness", "--cluster", "v100=4,k80=2", "--reference", "v100"}, ""},
		{"reference, makespan", newAllocateCmd, []string{"--policy", "min_total_duration", "--cluster", "v100=4,k80=2", "--reference", "k80"}, ""},
		{"zero GPUs", newAllocateCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4,p100=0"},
			"warning: --cluster p100=0: a worker type without GPUs takes no part (leave it out)"},
		{"rounds reference", newRoundsCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4", "--jobs", "../../examples/jobs.json",
			"--rounds", "1", "--reference", "v100"}, "warning: --reference does nothing with policy max_min_fairness_perf"},
		{"simulate max-partners", newSimulateCmd, []string{"--policy", "fifo_perf", "--cluster", "v100=2,p100=2,k80=2", "--trace", trace,
			"--max-partners", "4"}, "warning: --max-partners does nothing with policy fifo_perf"},
		{"simulate zero GPUs", newSimulateCmd, []string{"--policy", "fifo_perf", "--cluster", "v100=2,p100=2,k80=2,v100x=0", "--trace", trace},
			"warning: --cluster v100x=0: a worker type without GPUs"},
		// --prices and --seed were taken silently by policies that ignore them.
		{"prices, max-sum", newAllocateCmd, []string{"--policy", "max_sum_throughput_perf", "--cluster", "v100=4", "--prices", "v100=3"},
			"warning: --prices does nothing with policy max_sum_throughput_perf (only the cost policies"},
		{"prices, cost", newAllocateCmd, []string{"--policy", "max_sum_throughput_normalized_by_cost_perf", "--cluster", "v100=4", "--prices", "v100=3"}, ""},
		{"prices, type not in cluster", newAllocateCmd, []string{"--policy", "max_sum_throughput_normalized_by_cost_perf", "--cluster", "v100=4",
			"--prices", "v100=3,h100=2"}, "warning: --prices: h100 is not a worker type of the cluster (v100); its price is not used"},
		{"rounds prices", newRoundsCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4", "--jobs", "../../examples/jobs.json",
			"--rounds", "1", "--prices", "v100=3"}, "warning: --prices does nothing with policy max_min_fairness_perf"},
		{"seed, max-min", newAllocateCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4", "--seed", "3"},
			"warning: --seed does nothing with policy max_min_fairness_perf (only fifo and gandiva draw random numbers)"},
		{"seed, fifo perf", newAllocateCmd, []string{"--policy", "fifo_perf", "--cluster", "v100=4", "--seed", "3"},
			"warning: --seed does nothing with policy fifo_perf"},
		{"seed, fifo", newAllocateCmd, []string{"--policy", "fifo", "--cluster", "v100=4", "--seed", "3"}, ""},
		{"seed, gandiva", newAllocateCmd, []string{"--policy", "gandiva", "--cluster", "v100=4", "--seed", "3"}, ""},
		// A simulation reports cost with prices whatever the policy; the seed shuffles worker
		// types for agnostic policies in compat mode only.
		{"simulate prices", newSimulateCmd, []string{"--policy", "fifo_perf", "--cluster", "v100=2,p100=2,k80=2", "--trace", trace,
			"--prices", "v100=3,p100=2,k80=1"}, ""},
		{"simulate seed, perf", newSimulateCmd, []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2,p100=2,k80=2", "--trace", trace,
			"--seed", "4", "--gavel-compat"}, "warning: --seed does nothing with policy max_min_fairness_perf here"},
		{"simulate seed, agnostic", newSimulateCmd, []string{"--policy", "max_min_fairness", "--cluster", "v100=2,p100=2,k80=2", "--trace", trace,
			"--seed", "4"}, "warning: --seed does nothing with policy max_min_fairness here"},
		{"simulate seed, agnostic compat", newSimulateCmd, []string{"--policy", "max_min_fairness", "--cluster", "v100=2,p100=2,k80=2", "--trace", trace,
			"--seed", "4", "--gavel-compat"}, ""},
		{"simulate seed, fifo", newSimulateCmd, []string{"--policy", "fifo", "--cluster", "v100=2,p100=2,k80=2", "--trace", trace,
			"--seed", "4"}, ""},
		{"experiment max-partners", newExperimentCmd, []string{"continuous", "--policies", "fifo_perf,fifo", "--rates", "1", "--window", "0:2",
			"--cluster", "v100=2", "--max-partners", "3"}, "warning: --max-partners does nothing with policies fifo_perf, fifo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, err := rtRun(t, c.mk, c.args...)
			if err != nil {
				t.Fatalf("error %v, want none (a warning changes no exit status)", err)
			}
			warnings := 0
			for _, l := range strings.Split(errOut, "\n") {
				if strings.HasPrefix(l, "warning: --") {
					warnings++
				}
			}
			switch {
			case c.warn == "" && warnings > 0:
				t.Errorf("stderr %q, want no flag warning", errOut)
			case c.warn != "" && (warnings != 1 || !strings.Contains(errOut, c.warn)):
				t.Errorf("stderr %q, want one flag warning containing %q", errOut, c.warn)
			}
		})
	}
}
