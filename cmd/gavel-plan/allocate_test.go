package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/policy"
)

// runAllocateCmd runs the allocate command's RunE with args.
func runAllocateCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	streams, out, errb := cli.TestIO()
	cmd := newAllocateCmd(streams)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	err := cmd.RunE(cmd, cmd.Flags().Args())
	return out.String(), errb.String(), err
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every policy name works on the embedded table (default job set), and its
// JSON has the contract's fields with a feasible allocation.
func TestAllocateEveryPolicyJSON(t *testing.T) {
	cluster := map[string]float64{"v100": 2, "p100": 2, "k80": 2}
	for _, name := range append(policy.Names(), "allox_alpha=0.5") {
		out, _, err := runAllocateCmd(t, "--policy", name, "--cluster", "v100=2,p100=2,k80=2",
			"--prices", "v100=2.48,p100=1.46,k80=0.45", "--json")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got struct {
			Policy     string                        `json:"policy"`
			Objective  *float64                      `json:"objective"`
			Allocation map[string]map[string]float64 `json:"allocation"`
			Effective  map[string]float64            `json:"effective_throughput"`
			Normalized map[string]float64            `json:"normalized_throughput"`
			Seconds    *float64                      `json:"solve_seconds"`
		}
		var raw map[string]any
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatalf("%s: not one JSON object: %v\n%s", name, err, out)
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if got.Policy != name || got.Objective == nil || got.Seconds == nil || len(got.Effective) != 8 || len(got.Normalized) != 8 {
			t.Fatalf("%s: %s", name, out)
		}
		used := map[string]float64{}
		for key, fr := range got.Allocation {
			for w, x := range fr {
				if x < 0 || x > 1+1e-9 {
					t.Fatalf("%s: %s on %s = %v", name, key, w, x)
				}
				used[w] += x // all default jobs have sf 1; a pair takes one GPU
			}
		}
		for w, u := range used {
			if u > cluster[w]+1e-6 {
				t.Fatalf("%s: %s oversubscribed (%v)", name, w, u)
			}
		}
	}
}

func TestAllocateHumanOutput(t *testing.T) {
	jobs := writeFile(t, "jobs.json", `{"jobs": [
	{"id": "a", "type": "ResNet-50 (batch size 64)", "scale_factor": 1, "total_steps": 1000},
	{"id": "b", "type": "LM (batch size 20)", "scale_factor": 2, "total_steps": 1000}]}`)
	out, _, err := runAllocateCmd(t, "--policy", "max_min_fairness_perf", "--cluster", "v100=2,p100=2,k80=2", "--jobs", jobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"combination", "v100", "effective steps/s", "equal share steps/s", "normalized", "term", "proportional steps/s",
		"policy max_min_fairness_perf: objective", "objective = min over jobs of scale_factor·effective/(weight·proportional)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in\n%s", want, out)
		}
	}
}

// The §9.2 makespan reference through the CLI with a custom table: T* = 200 s.
func TestAllocateCustomTable(t *testing.T) {
	tbl := writeFile(t, "t.json", `{
 "k80": {"('T0', 1)": {"null": 0.5}, "('T1', 1)": {"null": 1.0}},
 "p100": {"('T0', 1)": {"null": 1.0}, "('T1', 1)": {"null": 2.0}},
 "v100": {"('T0', 1)": {"null": 2.0}, "('T1', 1)": {"null": 3.0}}}`)
	jobs := writeFile(t, "jobs.json", `{"jobs": [{"id": "0", "type": "T0", "total_steps": 300}, {"id": "1", "type": "T1", "total_steps": 500}]}`)
	out, _, err := runAllocateCmd(t, "--policy", "min_total_duration_perf", "--cluster", "k80=3,p100=2,v100=1",
		"--table", tbl, "--jobs", jobs, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Objective float64 }
	if err := json.Unmarshal([]byte(out), &got); err != nil || math.Abs(got.Objective-200) > 1e-6 {
		t.Fatalf("%v %s", err, out)
	}
}

func TestAllocateBadInput(t *testing.T) {
	missing := writeFile(t, "jobs.json", `{"jobs": [{"id": "x", "type": "NoSuchModel", "total_steps": 1}]}`)
	big := writeFile(t, "big.json", `{"jobs": [{"id": "huge", "type": "LM (batch size 20)", "scale_factor": 8, "total_steps": 1}]}`)
	neg := writeFile(t, "neg.json", `{"jobs": [{"id": "n", "type": "A3C", "weight": -2, "total_steps": 1}]}`)
	// A weight of 1e-300 failed in the LP ("numerical trouble", exit 1).
	tiny := writeFile(t, "tiny.json", `{"jobs": [{"id": "a", "type": "A3C", "total_steps": 1}, {"id": "t", "type": "A3C", "weight": 1e-300, "total_steps": 1}]}`)
	// An id with '+' would share its key with the pair of jobs a and b.
	plus := writeFile(t, "plus.json", `{"jobs": [{"id": "a", "type": "ResNet-18 (batch size 64)", "total_steps": 1000},
		{"id": "b", "type": "ResNet-18 (batch size 64)", "total_steps": 1000}, {"id": "a+b", "type": "A3C", "total_steps": 1000}]}`)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--policy", "lottery", "--cluster", "v100=1"}, "known policies: allox"},
		{[]string{"--cluster", "v100=1"}, "--policy is required"},
		{[]string{"--policy", "fifo"}, "--cluster is required"},
		{[]string{"--policy", "fifo", "--cluster", "v100=0"}, "no GPUs"},
		{[]string{"--policy", "fifo", "--cluster", "v100"}, "--cluster"},
		{[]string{"--policy", "max_min_fairness_perf", "--cluster", "v100=1", "--jobs", missing},
			missing + `: jobs[0] (id "x"): policy max_min_fairness_perf: job "x": job type ('NoSuchModel', 1) is not in the throughput table`},
		{[]string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4,k80=2", "--jobs", big}, big + `: jobs[0] (id "huge"): `},
		{[]string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4,k80=2", "--jobs", big}, `job "huge": scale factor 8 exceeds`},
		{[]string{"--policy", "max_min_fairness_perf", "--cluster", "v100=1", "--jobs", neg}, neg + `: jobs[0] (id "n"): weight -2`},
		{[]string{"--policy", "max_min_fairness_perf", "--cluster", "v100=1", "--jobs", tiny}, tiny + `: jobs[1] (id "t"): weight 1e-300 is outside 0.001..1000`},
		{[]string{"--policy", "max_min_fairness_packed", "--cluster", "v100=1", "--jobs", plus}, plus + `: jobs[2] (id "a+b"): id "a+b" contains '+'`},
		{[]string{"--policy", "max_sum_throughput_normalized_by_cost_perf", "--cluster", "v100=1,k80=1"}, "needs --prices"},
		{[]string{"--policy", "max_sum_throughput_normalized_by_cost_perf", "--cluster", "v100=1,k80=1", "--prices", "v100=1"}, `no price for worker type "k80"`},
		{[]string{"--policy", "fifo", "--cluster", "v100=1", "--jobs", "/nonexistent.json"}, "nonexistent"},
		{[]string{"--policy", "fifo", "--cluster", "v100=1", "--table", "/nonexistent.json"}, "nonexistent"},
	} {
		_, _, err := runAllocateCmd(t, tc.args...)
		if err == nil || cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: error %v (exit %d), want exit 2 with %q", tc.args, err, cli.ExitCode(err), tc.msg)
		}
	}
}

func TestAllocateHelpHasExample(t *testing.T) {
	streams, _, _ := cli.TestIO()
	cmd := newAllocateCmd(streams)
	if !strings.Contains(cmd.Example, "gavel-plan allocate --policy") {
		t.Fatal("no example")
	}
}

// Hierarchical water filling from a jobs file with entities (§9.2 WF C,
// e0 = fifo): normalized throughputs 0.857143, 0.428571, 1.714286 (three
// jobs on three GPUs, so the equal-share rate is Gavel's proportional rate).
func TestAllocateEntitiesFIFO(t *testing.T) {
	tbl := writeFile(t, "t.json", `{
 "k80": {"('A', 1)": {"null": 1}, "('B', 1)": {"null": 1}, "('C', 1)": {"null": 1}},
 "p100": {"('A', 1)": {"null": 2}, "('B', 1)": {"null": 2}, "('C', 1)": {"null": 2}},
 "v100": {"('A', 1)": {"null": 4}, "('B', 1)": {"null": 4}, "('C', 1)": {"null": 4}}}`)
	jobs := writeFile(t, "jobs.json", `{"entities": {"e0": {"weight": 1, "policy": "fifo"}, "e1": {"weight": 2, "policy": "fairness"}},
 "jobs": [{"id": "0", "type": "A", "entity": "e0", "total_steps": 1}, {"id": "1", "type": "B", "entity": "e0", "total_steps": 1},
          {"id": "2", "type": "C", "entity": "e1", "total_steps": 1}]}`)
	out, stderr, err := runAllocateCmd(t, "--policy", "max_min_fairness_water_filling_perf", "--cluster", "k80=1,p100=1,v100=1",
		"--table", tbl, "--jobs", jobs, "--json")
	if err != nil || stderr != "" {
		t.Fatalf("%v %q", err, stderr)
	}
	// Other policies do not use entities; allocate says so once, as a note.
	want := "note: " + jobs + ": its entities are used only by the water-filling policies; max_min_fairness_perf does not group jobs by entity\n"
	if _, stderr, err := runAllocateCmd(t, "--policy", "max_min_fairness_perf", "--cluster", "k80=1,p100=1,v100=1",
		"--table", tbl, "--jobs", jobs, "--json"); err != nil || stderr != want {
		t.Fatalf("%v %q, want %q", err, stderr, want)
	}
	var got struct {
		Normalized map[string]float64 `json:"normalized_throughput"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]float64{"0": 0.857143, "1": 0.428571, "2": 1.714286} {
		if math.Abs(got.Normalized[id]-want) > 1e-6 {
			t.Fatalf("normalized %v", got.Normalized)
		}
	}
}

// A solver failure (here: a time limit far too short for a 60-job packed
// LP) is exit status 1 with the LP status in the message.
func TestAllocateSolverFailureExit1(t *testing.T) {
	models := []string{"ResNet-18 (batch size 64)", "ResNet-50 (batch size 64)", "Transformer (batch size 64)",
		"LM (batch size 20)", "Recommendation (batch size 2048)", "CycleGAN", "A3C"}
	var b strings.Builder
	b.WriteString(`{"jobs": [`)
	for i := 0; i < 60; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"id": "j` + string(rune('A'+i/26)) + string(rune('a'+i%26)) + `", "type": "` + models[i%len(models)] + `", "total_steps": 1000}`)
	}
	b.WriteString("]}")
	jobs := writeFile(t, "jobs.json", b.String())
	_, _, err := runAllocateCmd(t, "--policy", "max_min_fairness_packed", "--cluster", "v100=4,p100=4,k80=4",
		"--jobs", jobs, "--time-limit", "1ns")
	if err == nil || cli.ExitCode(err) != 1 || !strings.Contains(err.Error(), "time limit") {
		t.Fatalf("error %v (exit %d)", err, cli.ExitCode(err))
	}
}

// The job table relates normalized throughput to the objective. §9.2's LAS
// instance (T0, T1 on k80 3, p100 2, v100 1): equal-share rates 0.916667 and
// 1.666667 (two jobs on six GPUs: the proportional rate), objective terms and
// normalized both 48/31. The default job set (8 sf-1 jobs) on 2:2:2: the
// equal share is prop·6/8, so normalized = term·8/6 for every job, and the
// objective is the smallest term.
func TestAllocateNormalizedVsObjective(t *testing.T) {
	type result struct {
		Objective  float64            `json:"objective"`
		Meaning    string             `json:"objective_meaning"`
		Effective  map[string]float64 `json:"effective_throughput"`
		EqualShare map[string]float64 `json:"equal_share_throughput"`
		Normalized map[string]float64 `json:"normalized_throughput"`
		Terms      map[string]float64 `json:"objective_terms"`
		Normalizer map[string]float64 `json:"objective_normalizer"`
	}
	run := func(args ...string) result {
		t.Helper()
		out, _, err := runAllocateCmd(t, append(args, "--json")...)
		if err != nil {
			t.Fatal(err)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	tbl := writeFile(t, "t.json", `{
 "k80": {"('T0', 1)": {"null": 0.5}, "('T1', 1)": {"null": 1.0}},
 "p100": {"('T0', 1)": {"null": 1.0}, "('T1', 1)": {"null": 2.0}},
 "v100": {"('T0', 1)": {"null": 2.0}, "('T1', 1)": {"null": 3.0}}}`)
	jobs := writeFile(t, "jobs.json", `{"jobs": [{"id": "0", "type": "T0", "total_steps": 300}, {"id": "1", "type": "T1", "total_steps": 500}]}`)
	r := run("--policy", "max_min_fairness_perf", "--cluster", "k80=3,p100=2,v100=1", "--table", tbl, "--jobs", jobs)
	for id, eq := range map[string]float64{"0": 5.5 / 6, "1": 10.0 / 6} {
		if math.Abs(r.Normalizer[id]-eq) > 1e-9 || math.Abs(r.EqualShare[id]-eq) > 1e-9 || math.Abs(r.Terms[id]-48.0/31) > 1e-6 || math.Abs(r.Normalized[id]-48.0/31) > 1e-6 {
			t.Fatalf("job %s: equal share %v term %v normalized %v", id, r.EqualShare[id], r.Terms[id], r.Normalized[id])
		}
	}
	if !strings.Contains(r.Meaning, "proportional") {
		t.Fatalf("meaning %q", r.Meaning)
	}
	r = run("--policy", "max_min_fairness_packed", "--cluster", "v100=2,p100=2,k80=2")
	low := math.Inf(1)
	for id, term := range r.Terms {
		if math.Abs(r.Normalized[id]-term*8/6) > 1e-6 || math.Abs(r.Normalized[id]-r.Effective[id]/r.EqualShare[id]) > 1e-9 {
			t.Fatalf("job %s: normalized %v, term %v, effective %v, equal share %v", id, r.Normalized[id], term, r.Effective[id], r.EqualShare[id])
		}
		low = math.Min(low, term)
	}
	if len(r.Terms) != 8 || math.Abs(low-r.Objective) > 1e-7 {
		t.Fatalf("objective %v, smallest term %v (%d terms)", r.Objective, low, len(r.Terms))
	}
}

// Same input, byte-identical JSON: twice, and with the jobs file in reverse
// order (jobs are ordered by id inside, so the LP is the same). Only
// solve_seconds, a wall-clock time, may differ and is masked. Randomized
// policies use the seed.
func TestAllocateDeterministicJSON(t *testing.T) {
	models := []string{"ResNet-18 (batch size 64)", "ResNet-50 (batch size 64)", "Transformer (batch size 64)",
		"LM (batch size 20)", "A3C", "CycleGAN"}
	var fwd, rev []string
	for i := 0; i < 12; i++ {
		fwd = append(fwd, fmt.Sprintf(`{"id": "j%02d", "type": %q, "total_steps": %d, "weight": %d, "slo_seconds": 36000}`,
			i, models[i%len(models)], 1000*(1+i%4), 1+i%2))
	}
	for i := len(fwd) - 1; i >= 0; i-- {
		rev = append(rev, fwd[i])
	}
	files := []string{
		writeFile(t, "fwd.json", `{"jobs": [`+strings.Join(fwd, ",\n")+`]}`),
		writeFile(t, "rev.json", `{"jobs": [`+strings.Join(rev, ",\n")+`]}`),
	}
	timing := regexp.MustCompile(`"solve_seconds": [^,\n]*`)
	for _, name := range append(policy.Names(), "allox_alpha=0.5") {
		var first string
		for k, f := range []string{files[0], files[0], files[1]} {
			out, _, err := runAllocateCmd(t, "--policy", name, "--cluster", "v100=2,p100=2,k80=2", "--jobs", f,
				"--prices", "v100=2.48,p100=1.46,k80=0.45", "--seed", "3", "--json")
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out = timing.ReplaceAllString(out, `"solve_seconds": 0`)
			if k == 0 {
				first = out
			} else if out != first {
				t.Fatalf("%s: run %d differs:\n%s\nfirst:\n%s", name, k, out, first)
			}
		}
	}
}

// A jobs file that is not JSON, or not shaped like a jobs file, is named by
// file:line:column and said in the file's terms (a truncated file said only
// "unexpected EOF"; a top-level array printed a Go struct type).
func TestAllocateJobsFileJSONErrors(t *testing.T) {
	trunc := writeFile(t, "trunc.json", "{\"jobs\": [\n  {\"id\": \"a\", \"type\": \"A3C\"")
	array := writeFile(t, "array.json", `[{"id": "a", "type": "A3C", "total_steps": 1}]`)
	for _, tc := range []struct{ file, want string }{
		{trunc, trunc + ":2:28: invalid JSON: unexpected end of file (truncated? a bracket, brace or quote is not closed)"},
		{array, array + `:1:1: want an object with "jobs": [...] (and optionally "entities": {...}), got an array`},
	} {
		_, _, err := runAllocateCmd(t, "--policy", "max_min_fairness_perf", "--cluster", "v100=1", "--jobs", tc.file)
		if cli.ExitCode(err) != 2 || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("error %v (exit %d), want exit 2 ending %q", err, cli.ExitCode(err), tc.want)
		}
	}
}

// allocate says whether rounds can give the allocation: the isolated
// policy's equal shares for two 4-GPU jobs on 6 v100s (0.75 each; they can
// never run together) cannot be, with a warning saying any rounds leave a
// job at least a third short (the nearest give each 0.5 of its 0.75); the
// 14-job max-min packed allocation can.
func TestAllocateRealizable(t *testing.T) {
	for _, c := range realizableCases(t) {
		out, errOut, err := runAllocateCmd(t, "--policy", c.policy, "--cluster", c.cluster, "--jobs", c.jobs, "--json")
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonRealizable(t, out); got == nil || *got != c.want {
			t.Errorf("%s: realizable %v, want %v", c.policy, got, c.want)
		}
		if warned := strings.Contains(errOut, "no sequence of rounds gives this allocation"); warned == c.want {
			t.Errorf("%s: warned %v, want %v (stderr %q)", c.policy, warned, !c.want, errOut)
		}
		var got struct {
			NearestLoss *float64 `json:"nearest_loss"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want && got.NearestLoss != nil:
			t.Errorf("%s: nearest_loss %v for a realizable allocation", c.policy, *got.NearestLoss)
		case !c.want && (got.NearestLoss == nil || math.Abs(*got.NearestLoss-1.0/3) > 1e-6):
			t.Errorf("%s: nearest_loss %v, want 1/3", c.policy, got.NearestLoss)
		case !c.want && !strings.Contains(errOut, "any rounds leave some job at least 33.3% of its allocated throughput short"):
			t.Errorf("%s: the warning does not give the nearest rounds' loss: %q", c.policy, errOut)
		}
	}
}

// --table - reads the command's standard input (not the process's), in
// every planning command: the same allocation as naming the file.
func TestTableFromCommandStdin(t *testing.T) {
	data, err := os.ReadFile("../../examples/partial.json")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=2,k80=2", "--json"}
	want, _, err := runAllocateCmd(t, append(args, "--table", "../../examples/partial.json")...)
	if err != nil {
		t.Fatal(err)
	}
	streams, out, _ := cli.TestIO()
	streams.In = strings.NewReader(string(data))
	cmd := newAllocateCmd(streams)
	cmd.SetArgs(append(args, "--table", "-"))
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil {
		t.Fatalf("allocate --table -: %v", err)
	}
	alloc := func(s string) string {
		var a struct {
			Allocation map[string]map[string]float64 `json:"allocation"`
		}
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(a.Allocation)
		return string(b)
	}
	if alloc(out.String()) != alloc(want) {
		t.Errorf("allocate --table -: allocation %s, naming the file %s", alloc(out.String()), alloc(want))
	}
	streams, _, _ = cli.TestIO()
	streams.In = strings.NewReader(string(data))
	cmd = newRoundsCmd(streams)
	cmd.SetArgs([]string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4,p100=4,k80=4", "--jobs", "../../examples/jobs.json", "--table", "-", "--rounds", "2"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil {
		t.Errorf("rounds --table -: %v", err)
	}
}

// A rate or term too small for four decimals is printed with three significant digits: a
// job of 0.00012 steps/s with a fifth of its GPU printed 0.0000 steps/s, read as a job that
// gets nothing. A true 0 still prints 0.0000, and so does a rate left by the solver's
// tolerance (under 1e-6 of the job's equal share).
func TestAllocateSmallRatesPrinted(t *testing.T) {
	tbl := writeFile(t, "slow.json", `{"old": {"('huge', 1)": {"null": 0.00012}, "('tiny', 1)": {"null": 100000}}}`)
	jobs := writeFile(t, "jobs.json", `{"jobs": [{"id": "h", "type": "huge", "total_steps": 10},
		{"id": "t1", "type": "tiny", "total_steps": 1e9}, {"id": "t2", "type": "tiny", "total_steps": 1e9},
		{"id": "t3", "type": "tiny", "total_steps": 1e9}, {"id": "t4", "type": "tiny", "total_steps": 1e9}]}`)
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf(`{"id": "w%02d", "type": "tiny", "total_steps": 1, "weight": 1000}`, i))
	}
	heavy := writeFile(t, "heavy.json", `{"jobs": [`+strings.Join(many, ", ")+`]}`)
	for _, tc := range []struct {
		policy, jobs, job string
		cells             []string // the job's row: effective, equal share, normalized[, proportional, term]
	}{
		// a fifth of 0.00012 steps/s
		{"max_min_fairness_perf", jobs, "h", []string{"2.4e-05", "2.4e-05", "1.0000", "0.0001", "0.2000"}},
		{"max_min_fairness_perf", jobs, "t1", []string{"20000.0000", "20000.0000", "1.0000", "100000.0000", "0.2000"}},
		// all to the tiny model: h gets nothing, which still reads 0.0000
		{"max_sum_throughput_perf", jobs, "h", []string{"0.0000", "2.4e-05", "0.0000"}},
		// weight 1000, a fortieth of the GPU: a term of 1/40/1000
		{"max_min_fairness", heavy, "w00", []string{"2500.0000", "2500.0000", "1.0000", "1.0000", "2.5e-05"}},
	} {
		t.Run(tc.policy+" "+tc.job, func(t *testing.T) {
			out, _, err := runAllocateCmd(t, "--policy", tc.policy, "--cluster", "old=1", "--table", tbl, "--jobs", tc.jobs)
			if err != nil {
				t.Fatal(err)
			}
			// The job's row of the second table (the first is the fractions').
			rows := regexp.MustCompile(`(?m)^│ +`+tc.job+` │(.*)│$`).FindAllStringSubmatch(out, -1)
			if len(rows) != 2 {
				t.Fatalf("%d rows for %s:\n%s", len(rows), tc.job, out)
			}
			row := rows[1]
			var got []string
			for _, c := range strings.Split(row[1], "│") {
				got = append(got, strings.TrimSpace(c))
			}
			if strings.Join(got, " ") != strings.Join(tc.cells, " ") {
				t.Fatalf("row of %s: %q, want %q\n%s", tc.job, got, tc.cells, out)
			}
		})
	}
}

func TestRateCell(t *testing.T) {
	for _, tc := range []struct {
		v, scale float64
		want     string
	}{
		{0, 0, "0.0000"},
		{0, 1, "0.0000"},
		{0.5, 1, "0.5000"},
		{100000, 1, "100000.0000"},
		{0.00012, 0.00012, "0.0001"},   // four decimals still show it
		{2.4e-05, 2.4e-05, "2.4e-05"},  // they would not
		{1.23456e-7, 1e-3, "1.23e-07"}, // a share of 1e-4 of a slow job
		{1e-12, 1, "0.0000"},           // solver noise: 1e-12 of the job's equal share
		{4e-5, 50, "0.0000"},           // 8e-7 of it
	} {
		if got := rateCell(tc.v, tc.scale); got != tc.want {
			t.Errorf("rateCell(%v, %v) = %q, want %q", tc.v, tc.scale, got, tc.want)
		}
	}
}

// A FIFO job waiting at 0 under water filling keeps a rate of the solver's
// tolerance or 0, printed 0.0000, and its term is the solver's noise:
// it printed 1.81e-12 beside an effective rate of 0.0000. Every job whose
// effective rate prints 0.0000 has a term that prints 0.0000.
func TestAllocateWaitingFIFOTermsPrintZero(t *testing.T) {
	types := []string{"A3C", "CycleGAN", "LM (batch size 20)", "LM (batch size 40)", "Recommendation (batch size 1024)",
		"ResNet-18 (batch size 64)", "ResNet-50 (batch size 32)", "ResNet-50 (batch size 64)", "Transformer (batch size 32)"}
	var js []string
	for i := range 60 {
		js = append(js, fmt.Sprintf(`{"id": "j%02d", "type": %q, "total_steps": %d, "entity": "e%d", "time_run_seconds": %d}`,
			i, types[i%len(types)], 10000+100*i, i%3, 1000-i))
	}
	jobs := writeFile(t, "jobs.json", `{"jobs": [`+strings.Join(js, ", ")+`], "entities": {"e0": {"policy": "fifo"},
		"e1": {"policy": "fifo", "weight": 2}, "e2": {"policy": "fairness"}}}`)
	out, _, err := runAllocateCmd(t, "--policy", "max_min_fairness_water_filling_packed", "--cluster", "v100=4,p100=4,k80=4", "--jobs", jobs)
	if err != nil {
		t.Fatal(err)
	}
	_, jobTable, ok := strings.Cut(out, "effective steps/s") // the second table, the jobs'
	if !ok {
		t.Fatalf("no table of jobs:\n%s", out)
	}
	rows := regexp.MustCompile(`(?m)^│ +(j\d\d) │ +(\S+) │.*│ +(\S+) │$`).FindAllStringSubmatch(jobTable, -1)
	zero := 0
	for _, r := range rows {
		if r[2] == "0.0000" {
			zero++
			if r[3] != "0.0000" {
				t.Errorf("job %s: effective 0.0000, term %s", r[1], r[3])
			}
		}
	}
	if zero == 0 {
		t.Fatalf("no job waits at 0:\n%s", out)
	}
}

// A packing policy on a table without the jobs' pairs (a partly profiled one, before
// 'gavel-profile estimate') packed nothing and said nothing: to the LP a pair not measured
// is no pair. allocate now says how many of the jobs' pairs are missing and where.
func TestAllocateNotesUnmeasuredPairs(t *testing.T) {
	partial := writeFile(t, "partial.json", `{"v100": {"('A', 1)": {"null": 2, "('A', 1)": [1.5, 1.5]}, "('B', 1)": {"null": 3}}}`)
	full := writeFile(t, "full.json", `{"v100": {"('A', 1)": {"null": 2, "('A', 1)": [1.5, 1.5], "('B', 1)": [1.5, 2]},
		"('B', 1)": {"null": 3, "('A', 1)": [2, 1.5]}}}`)
	jobs := writeFile(t, "jobs.json", `{"jobs": [{"id": "a", "type": "A", "total_steps": 100}, {"id": "b", "type": "B", "total_steps": 100}]}`)
	want := "note: table " + partial + ": 1 pair of the jobs' types is not measured on v100; max_min_fairness_packed does not co-locate them"
	_, stderr, err := runAllocateCmd(t, "--policy", "max_min_fairness_packed", "--cluster", "v100=1", "--jobs", jobs, "--table", partial)
	if err != nil || !strings.Contains(stderr, want) {
		t.Errorf("packed on the partial table: %v, stderr %q, want the note %q", err, stderr, want)
	}
	for _, args := range [][]string{
		{"--policy", "max_min_fairness_packed", "--table", full},  // every pair measured
		{"--policy", "max_min_fairness_perf", "--table", partial}, // a policy that does not pack
	} {
		_, stderr, err := runAllocateCmd(t, append(args, "--cluster", "v100=1", "--jobs", jobs)...)
		if err != nil || strings.Contains(stderr, "not measured") {
			t.Errorf("%q: %v, stderr %q, want no note", args, err, stderr)
		}
	}
}
