package main

import (
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

// rtRun runs a command built by mk with args, the way the root would.
func rtRun(t *testing.T, mk func(*cli.IO) *cobra.Command, args ...string) (string, string, error) {
	t.Helper()
	streams, out, errb := cli.TestIO()
	cmd := mk(streams)
	cmd.SetArgs(args)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.Err)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

func rtFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const rtJobs = `{"jobs": [
  {"id": "a", "type": "ResNet-18 (batch size 64)", "total_steps": 100000},
  {"id": "b", "type": "Transformer (batch size 32)", "total_steps": 100000},
  {"id": "c", "type": "Recommendation (batch size 1024)", "total_steps": 100000},
  {"id": "d", "type": "A3C", "total_steps": 100000},
  {"id": "e", "type": "LM (batch size 20)", "scale_factor": 2, "total_steps": 100000}
]}`

func TestRoundsJSON(t *testing.T) {
	jobs := rtFile(t, "jobs.json", rtJobs)
	out, _, err := rtRun(t, newRoundsCmd, "--policy", "max_min_fairness_perf", "--cluster", "v100=2,p100=2,k80=2",
		"--gpus-per-server", "v100=2,p100=2,k80=2", "--jobs", jobs, "--rounds", "20", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Rounds []struct {
			Index       int `json:"index"`
			Assignments []struct {
				GPU        int      `json:"gpu"`
				WorkerType string   `json:"worker_type"`
				Jobs       []string `json:"jobs"`
			} `json:"assignments"`
		} `json:"rounds"`
		Fidelity map[string]map[string]struct {
			Target   float64 `json:"target"`
			Received float64 `json:"received"`
			BackFill float64 `json:"backfill"`
		} `json:"fidelity"`
		MaxDeviation          *float64 `json:"max_deviation"`
		MaxDeviationAllocated *float64 `json:"max_deviation_allocated"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Rounds) != 20 || got.MaxDeviation == nil || got.MaxDeviationAllocated == nil {
		t.Fatalf("%d rounds, max_deviation %v, max_deviation_allocated %v; want 20 and values",
			len(got.Rounds), got.MaxDeviation, got.MaxDeviationAllocated)
	}
	// Recount received fractions from the assignments and compare with the
	// fidelity report; check no GPU or job is booked twice in a round.
	count := map[string]map[string]float64{}
	for i, r := range got.Rounds {
		if r.Index != i {
			t.Errorf("round %d has index %d", i, r.Index)
		}
		gpus := map[int]bool{}
		where := map[string]string{}
		perJob := map[string]map[string]int{}
		for _, a := range r.Assignments {
			if gpus[a.GPU] {
				t.Fatalf("round %d: GPU %d twice", i, a.GPU)
			}
			gpus[a.GPU] = true
			for _, j := range a.Jobs {
				if w, ok := where[j]; ok && w != a.WorkerType {
					t.Fatalf("round %d: job %s on %s and %s", i, j, w, a.WorkerType)
				}
				where[j] = a.WorkerType
				if perJob[j] == nil {
					perJob[j] = map[string]int{}
				}
				perJob[j][a.WorkerType]++
			}
		}
		for j, m := range perJob {
			for w := range m {
				if count[j] == nil {
					count[j] = map[string]float64{}
				}
				count[j][w] += 1.0 / 20
			}
		}
	}
	maxDev, maxAlloc := 0.0, 0.0
	for j, f := range got.Fidelity {
		for w, e := range f {
			if math.Abs(e.Received-count[j][w]) > 1e-9 {
				t.Errorf("job %s on %s: reported received %v, recounted %v", j, w, e.Received, count[j][w])
			}
			if e.BackFill < 0 || e.BackFill > e.Received+1e-9 {
				t.Errorf("job %s on %s: backfill %v outside [0, received %v]", j, w, e.BackFill, e.Received)
			}
			maxDev = math.Max(maxDev, math.Abs(e.Received-e.Target))
			maxAlloc = math.Max(maxAlloc, math.Abs(e.Received-e.BackFill-e.Target))
		}
	}
	if math.Abs(maxDev-*got.MaxDeviation) > 1e-9 {
		t.Errorf("max_deviation %v, recomputed %v", *got.MaxDeviation, maxDev)
	}
	if math.Abs(maxAlloc-*got.MaxDeviationAllocated) > 1e-9 {
		t.Errorf("max_deviation_allocated %v, recomputed %v", *got.MaxDeviationAllocated, maxAlloc)
	}
	if len(got.Fidelity) != 5 {
		t.Errorf("fidelity for %d jobs, want 5", len(got.Fidelity))
	}
}

func TestRoundsHuman(t *testing.T) {
	jobs := rtFile(t, "jobs.json", rtJobs)
	out, _, err := rtRun(t, newRoundsCmd, "--policy", "max_min_fairness_perf", "--cluster", "v100=2,p100=2,k80=2",
		"--jobs", jobs, "--rounds", "3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"worker type", "received", "max deviation:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Solver noise is not printed as a value: two jobs sharing one GPU exactly printed deviations
// "-0.0000" and "1e-10%" of throughput short.
func TestRoundsHumanNoNoise(t *testing.T) {
	jobs := rtFile(t, "jobs.json", `{"jobs": [{"id": "0", "type": "ResNet-18 (batch size 16)", "total_steps": 300},
		{"id": "1", "type": "LM (batch size 20)", "total_steps": 500}]}`)
	out, _, err := rtRun(t, newRoundsCmd, "--policy", "max_min_fairness_perf", "--cluster", "v100=1", "--jobs", jobs, "--rounds", "2")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "-0.0000") || !strings.Contains(out, "throughput short: 0%") || !strings.Contains(out, "GPU ids") {
		t.Errorf("output:\n%s", out)
	}
}

func TestRoundsBadInput(t *testing.T) {
	jobs := rtFile(t, "jobs.json", rtJobs)
	missing := rtFile(t, "missing.json", `{"jobs": [{"id": "x", "type": "NoSuchModel", "total_steps": 10}]}`)
	wide := rtFile(t, "wide.json", `{"jobs": [{"id": "w", "type": "LM (batch size 20)", "scale_factor": 8, "total_steps": 10}]}`)
	finished := rtFile(t, "finished.json", `{"jobs": [{"id": "a", "type": "LM (batch size 20)", "total_steps": 10},
		{"id": "f", "type": "LM (batch size 20)", "total_steps": 10, "steps_done": 10}]}`)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown policy", []string{"--policy", "nope", "--cluster", "v100=2", "--jobs", jobs}, "unknown policy"},
		{"no jobs", []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2"}, "--jobs is required"},
		{"bad cluster", []string{"--policy", "max_min_fairness_perf", "--cluster", "v100", "--jobs", jobs}, "--cluster"},
		{"zero rounds", []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2", "--jobs", jobs, "--rounds", "0"}, "--rounds 0"},
		// Errors name the entry of the jobs file, as allocate's do (they named the id only).
		{"unknown type", []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2", "--jobs", missing},
			"rounds: " + missing + `: jobs[0] (id "x"): policy max_min_fairness_perf: job "x": job type ('NoSuchModel', 1) is not in the throughput table`},
		{"unrunnable", []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2,k80=4", "--jobs", wide},
			"rounds: " + wide + `: jobs[0] (id "w"): `},
		{"finished job", []string{"--policy", "fifo_perf", "--cluster", "v100=2", "--jobs", finished},
			"rounds: " + finished + `: jobs[1] (id "f"): no steps left to run`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := rtRun(t, newRoundsCmd, tt.args...)
			if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v (exit %d), want exit 2 mentioning %q", err, cli.ExitCode(err), tt.want)
			}
		})
	}
}

// Every command's --help carries an example.
func TestRoundsCommandsHaveExamples(t *testing.T) {
	streams, _, _ := cli.TestIO()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example == "" {
			t.Errorf("%s has no example", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	for _, c := range []*cobra.Command{newRoundsCmd(streams), newSimulateCmd(streams), newExperimentCmd(streams)} {
		walk(c)
	}
}

// make demo's steps 4 and 5 (allocate, then rounds, on examples/jobs.json
// with a policy that does not use its entities) said twice that the
// project's own example was being misused: allocate notes it once, as
// information, and rounds, which realizes the same allocation, stays quiet.
func TestDemoEntitiesNotedOnce(t *testing.T) {
	jobs := "../../examples/jobs.json"
	args := []string{"--policy", "max_min_fairness_packed", "--cluster", "v100=4,p100=4,k80=4", "--jobs", jobs}
	_, stderr, err := rtRun(t, newAllocateCmd, args...)
	want := "note: " + jobs + ": its entities are used only by the water-filling policies; max_min_fairness_packed does not group jobs by entity\n"
	if err != nil || notes(stderr) != want {
		t.Errorf("allocate: %v, stderr %q, want the note %q", err, stderr, want)
	}
	_, stderr, err = rtRun(t, newRoundsCmd, append(args, "--gpus-per-server", "v100=4,p100=4,k80=4", "--rounds", "6")...)
	if err != nil || notes(stderr) != "" {
		t.Errorf("rounds: %v, stderr %q, want no note", err, stderr)
	}
	_, stderr, err = rtRun(t, newAllocateCmd, "--policy", "max_min_fairness_water_filling_packed", "--cluster", "v100=4,p100=4,k80=4", "--jobs", jobs)
	if err != nil || notes(stderr) != "" {
		t.Errorf("water filling: %v, stderr %q, want no note", err, stderr)
	}
	// Its weights shape only max-min fairness and water filling; a policy that ignores them
	// says so (a reviewer read --help's "only the ratios of weights matter" as for every policy).
	_, stderr, err = rtRun(t, newAllocateCmd, "--policy", "finish_time_fairness_perf", "--cluster", "v100=4,p100=4,k80=4", "--jobs", jobs)
	if want := "note: " + jobs + ": job weights are used only by max-min fairness and water filling; finish_time_fairness_perf ignores them\n"; err != nil || !strings.Contains(notes(stderr), want) {
		t.Errorf("finish-time fairness: %v, stderr %q, want the note %q", err, stderr, want)
	}
}

// notes keeps the lines of s that are notes (information), not warnings.
func notes(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(l, "note:") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// A packed allocation the per-entry walk cannot keep up with (rounds
// package, TestPackedAllocationConverges) is planned through its mix of
// rounds, and the output says so; a perf allocation (no pairs) is not.
func TestRoundsPackedDecomposed(t *testing.T) {
	for _, tc := range []struct {
		policy     string
		decomposed bool
	}{{"max_min_fairness_packed", true}, {"max_min_fairness_perf", false}} {
		out, _, err := rtRun(t, newRoundsCmd, "--policy", tc.policy, "--cluster", "v100=3,p100=3,k80=3",
			"--jobs", "../../policy/testdata/packed14.json", "--rounds", "100", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Decomposed *bool   `json:"decomposed"`
			MaxAlloc   float64 `json:"max_deviation_allocated"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if got.Decomposed == nil || *got.Decomposed != tc.decomposed {
			t.Errorf("%s: decomposed %v, want %v", tc.policy, got.Decomposed, tc.decomposed)
		}
		if tc.decomposed && got.MaxAlloc > 0.025 {
			t.Errorf("%s: max allocated deviation %.4f after 100 rounds, want ≤ 0.025", tc.policy, got.MaxAlloc)
		}
		human, _, err := rtRun(t, newRoundsCmd, "--policy", tc.policy, "--cluster", "v100=3,p100=3,k80=3",
			"--jobs", "../../policy/testdata/packed14.json", "--rounds", "100")
		if err != nil {
			t.Fatal(err)
		}
		if says := strings.Contains(human, "mix of feasible rounds"); says != tc.decomposed {
			t.Errorf("%s: human output mentions the mix: %v, want %v", tc.policy, says, tc.decomposed)
		}
	}
}

// Two 4-GPU jobs on 6 v100s under the isolated policy (Gavel's equal
// shares: 0.75 each) can never run together, so no rounds give them their
// shares: --json says realizable false and the human output says why the
// shortfall is there; the 14-job packed allocation is realizable.
func TestRoundsRealizable(t *testing.T) {
	for _, c := range realizableCases(t) {
		out, _, err := rtRun(t, newRoundsCmd, "--policy", c.policy, "--cluster", c.cluster, "--jobs", c.jobs, "--rounds", "10", "--json")
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonRealizable(t, out); got == nil || *got != c.want {
			t.Errorf("%s: realizable %v, want %v", c.policy, got, c.want)
		}
		human, _, err := rtRun(t, newRoundsCmd, "--policy", c.policy, "--cluster", c.cluster, "--jobs", c.jobs, "--rounds", "10")
		if err != nil {
			t.Fatal(err)
		}
		if says := strings.Contains(human, "no sequence of rounds gives this allocation"); says == c.want {
			t.Errorf("%s: human output notes an unrealizable allocation: %v, want %v", c.policy, says, !c.want)
		}
	}
}

// realizableCase is a policy on a cluster and jobs, and whether its
// allocation is realizable.
type realizableCase struct {
	policy, cluster, jobs string
	want                  bool
}

// realizableCases: two 4-GPU jobs on 6 v100s under the isolated policy
// (0.75 each; they can never run together), and the 14-job max-min packed
// allocation.
func realizableCases(t *testing.T) []realizableCase {
	gangs := rtFile(t, "gangs.json", `{"jobs": [
  {"id": "g1", "type": "LM (batch size 40)", "scale_factor": 4, "total_steps": 1000},
  {"id": "g2", "type": "LM (batch size 40)", "scale_factor": 4, "total_steps": 1000}]}`)
	return []realizableCase{
		{"isolated", "v100=6", gangs, false},
		{"max_min_fairness_packed", "v100=3,p100=3,k80=3", "../../policy/testdata/packed14.json", true},
	}
}

// jsonRealizable reads "realizable" from a command's --json output.
func jsonRealizable(t *testing.T, out string) *bool {
	t.Helper()
	var got struct {
		Realizable *bool `json:"realizable"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	return got.Realizable
}

// Sixteen jobs of 1 and 4 GPUs on k80=10,p100=4,v100=7 (seed 13085 of the
// rounds package's gang instances, ids renamed): the max-min allocation is
// unrealizable, and the nearest mix of rounds loses the worst-served job
// less of its throughput than the walk, so the plan follows it and says so.
func TestRoundsNearestMix(t *testing.T) {
	jobs := rtFile(t, "g16.json", `{"jobs": [
  {"id": "g0", "type": "LM (batch size 20)", "scale_factor": 1, "total_steps": 20061948},
  {"id": "g1", "type": "ResNet-18 (batch size 256)", "scale_factor": 1, "total_steps": 579769},
  {"id": "g2", "type": "ResNet-50 (batch size 64)", "scale_factor": 1, "total_steps": 14708},
  {"id": "g3", "type": "ResNet-50 (batch size 32)", "scale_factor": 1, "total_steps": 452030},
  {"id": "g4", "type": "Recommendation (batch size 512)", "scale_factor": 1, "total_steps": 121801},
  {"id": "g5", "type": "LM (batch size 80)", "scale_factor": 1, "total_steps": 615162},
  {"id": "g6", "type": "ResNet-18 (batch size 32)", "scale_factor": 1, "total_steps": 625505},
  {"id": "g7", "type": "Transformer (batch size 32)", "scale_factor": 1, "total_steps": 5888528},
  {"id": "g8", "type": "Recommendation (batch size 1024)", "scale_factor": 1, "total_steps": 106308},
  {"id": "g9", "type": "Recommendation (batch size 512)", "scale_factor": 1, "total_steps": 1226096},
  {"id": "g10", "type": "ResNet-50 (batch size 32)", "scale_factor": 1, "total_steps": 57390},
  {"id": "g11", "type": "CycleGAN", "scale_factor": 1, "total_steps": 9490},
  {"id": "g12", "type": "Transformer (batch size 64)", "scale_factor": 4, "total_steps": 335806},
  {"id": "g13", "type": "Recommendation (batch size 512)", "scale_factor": 1, "total_steps": 1219036},
  {"id": "g14", "type": "ResNet-18 (batch size 256)", "scale_factor": 1, "total_steps": 329259},
  {"id": "g15", "type": "LM (batch size 5)", "scale_factor": 4, "total_steps": 2106218}]}`)
	args := []string{"--policy", "max_min_fairness_perf", "--cluster", "k80=10,p100=4,v100=7", "--jobs", jobs, "--rounds", "20"}
	out, _, err := rtRun(t, newRoundsCmd, append(args, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Realizable *bool    `json:"realizable"`
		Decomposed bool     `json:"decomposed"`
		Loss       *float64 `json:"max_throughput_loss"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Realizable == nil || *got.Realizable || !got.Decomposed || got.Loss == nil || !(*got.Loss > 0 && *got.Loss < 1) {
		t.Errorf("realizable %v, decomposed %v, max_throughput_loss %v; want false, true, a share", got.Realizable, got.Decomposed, got.Loss)
	}
	human, _, err := rtRun(t, newRoundsCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"planned by following the nearest mix of feasible rounds",
		fmt.Sprintf("largest share of a job's allocated throughput short: %.3g%%", 100**got.Loss)} {
		if !strings.Contains(human, want) {
			t.Errorf("human output lacks %q:\n%s", want, human)
		}
	}
}
