package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/estimate"
	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/table"
)

func execCmd(mk func(*cli.IO) *cobra.Command, args ...string) (string, string, error) {
	return execCmdWithInput(mk, "", args...)
}

func execCmdWithInput(mk func(*cli.IO) *cobra.Command, stdin string, args ...string) (string, string, error) {
	streams, out, errb := cli.TestIO()
	streams.In = strings.NewReader(stdin)
	cmd := mk(streams)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

// partialTable writes the sf=1 part of Gavel's table with jobs 12+ measured only against
// job 0 (and isolated), so jobs 0-11 are the references.
func partialTable(t *testing.T) (string, int) {
	t.Helper()
	full := table.Default().Select(nil, []string{"k80", "p100", "v100"})
	jobs := full.JobTypesWithScaleFactor(1)
	p := full.Select(jobs, nil)
	for _, w := range p.WorkerTypes() {
		for i := 12; i < len(jobs); i++ {
			for k := 1; k < len(jobs); k++ {
				p.DeletePair(w, jobs[i], jobs[k])
			}
		}
	}
	path := filepath.Join(t.TempDir(), "partial.json")
	if err := p.Save(path); err != nil {
		t.Fatal(err)
	}
	return path, len(jobs)
}

func TestEstimateCmd(t *testing.T) {
	in, n := partialTable(t)
	out := filepath.Join(t.TempDir(), "full.json")
	stdout, _, err := execCmd(newEstimateCmd, "--table", in, "--out", out, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Estimated           int `json:"estimated"`
		InfeasiblePredicted int `json:"infeasible_predicted"`
		Entries             []struct {
			WorkerType string `json:"worker_type"`
			Infeasible bool   `json:"infeasible"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, stdout)
	}
	// Missing ordered entries per worker type: (i, k) with i ≥ 12 or k ≥ 12, except pairs with job 0.
	missing := 0
	for i := 0; i < n; i++ {
		for k := 0; k < n; k++ {
			if (i >= 12 && k != 0) || (k >= 12 && i != 0) {
				missing++
			}
		}
	}
	if rep.Estimated != 3*missing || len(rep.Entries) != rep.Estimated {
		t.Errorf("estimated %d (%d listed), want %d", rep.Estimated, len(rep.Entries), 3*missing)
	}
	full, err := table.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	jobs := full.JobTypesWithScaleFactor(1)
	for _, w := range []string{"k80", "p100", "v100"} {
		for _, a := range jobs {
			for _, b := range jobs {
				if _, _, s := full.Pair(w, a, b); s == table.Missing {
					t.Fatalf("%s %v %v missing in the output", w, a, b)
				}
			}
		}
	}
}

// TestEstimateOutCSV: an --out named .csv gets the CSV of table convert (it got JSON), holding
// the same table as the JSON output.
func TestEstimateOutCSV(t *testing.T) {
	in, _ := partialTable(t)
	dir := t.TempDir()
	var got []*table.Table
	for _, name := range []string{"full.json", "full.CSV"} {
		out := filepath.Join(dir, name)
		if _, _, err := execCmd(newEstimateCmd, "--table", in, "--out", out); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(out)
		if isCSV := strings.HasPrefix(string(data), "worker_type,"); isCSV != strings.HasSuffix(name, ".CSV") {
			t.Errorf("%s starts %.40q", name, data)
		}
		tb, err := table.LoadAny(out)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tb)
	}
	if !got[0].Equal(got[1]) {
		t.Error("the CSV output holds another table than the JSON output")
	}
}

func TestEstimateCompleteTableUnchanged(t *testing.T) {
	in := filepath.Join(t.TempDir(), "full.json")
	full := table.Default().Select(nil, []string{"v100"})
	if err := full.Save(in); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.json")
	stdout, stderr, err := execCmd(newEstimateCmd, "--table", in, "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := table.Load(out)
	if !got.Equal(full) || !strings.Contains(stderr, "no missing entries") || !strings.Contains(stdout, "0 entries estimated") ||
		strings.Contains(stdout, "worker type") { // no per-type table of no rows
		t.Errorf("complete table: equal %v, stderr %q, stdout %q", got.Equal(full), stderr, stdout)
	}
}

func TestSuggestCompleteTableSuggestsNothing(t *testing.T) {
	in := filepath.Join(t.TempDir(), "full.json")
	if err := table.Default().Select(nil, []string{"v100"}).Save(in); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := execCmd(newSuggestCmd, "--table", in, "--budget", "5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Measurements []any `json:"measurements"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Measurements == nil || len(got.Measurements) != 0 {
		t.Errorf("complete table: stdout %q (err %v), want an empty measurements list", stdout, err)
	}
	if !strings.Contains(stderr, "no missing pairs") {
		t.Errorf("complete table: stderr %q lacks the note", stderr)
	}
}

func TestSuggestCmdJSON(t *testing.T) {
	in, _ := partialTable(t)
	stdout, _, err := execCmd(newSuggestCmd, "--table", in, "--budget", "7", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Measurements []map[string]any `json:"measurements"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Measurements) != 7 {
		t.Fatalf("%d measurements, want 7", len(got.Measurements))
	}
	for _, m := range got.Measurements {
		for _, f := range []string{"worker_type", "job", "partner", "scale_factor", "reason"} {
			if _, ok := m[f]; !ok {
				t.Errorf("measurement %v lacks %q", m, f)
			}
		}
		if strings.HasPrefix(m["job"].(string), "(") {
			t.Errorf("job %q should be a model name, not a key", m["job"])
		}
	}
}

func TestEvaluateCmdJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("fits models")
	}
	stdout, _, err := execCmd(newEvaluateCmd, "--references", "16", "--fraction", "0.2", "--seeds", "0", "--policy", "none", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Methods map[string]map[string]any `json:"methods"`
		Active  *bool                     `json:"active"`
		Aim     *string                   `json:"aim"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Active == nil || *got.Active || got.Aim != nil {
		t.Errorf("random reveals: active %v, aim %v; want false and no aim", got.Active, got.Aim)
	}
	for _, name := range []string{"ours", "gavel", "partner_mean"} {
		m, ok := got.Methods[name]
		if !ok {
			t.Fatalf("no method %q in %v", name, got.Methods)
		}
		for _, f := range []string{"mae", "mape", "raw_mape", "packing_agreement", "infeasible_precision", "infeasible_recall"} {
			if _, ok := m[f]; !ok {
				t.Errorf("%s lacks %q", name, f)
			}
		}
	}
}

// evaluate on a partial table holds out what it has: every method is scored, the downstream
// ratio is left out, and notes on stderr and in the JSON say so.
func TestEvaluateCmdPartialTable(t *testing.T) {
	if testing.Short() {
		t.Skip("fits models")
	}
	in, _ := partialTable(t)
	stdout, stderr, err := execCmd(newEvaluateCmd, "--table", in, "--references", "8", "--seeds", "0", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Methods map[string]map[string]any `json:"methods"`
		Notes   []string                  `json:"notes"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Notes) != 2 || !strings.Contains(stderr, "note: downstream_ratio left out") {
		t.Errorf("notes %q, stderr %q: want the missing truth and the downstream ratio noted", got.Notes, stderr)
	}
	for _, m := range estimate.DefaultMethods(0) {
		rep, ok := got.Methods[m.Name()]
		if down, has := rep["downstream_ratio"]; !ok || !has || down != nil || rep["entries"] == 0.0 {
			t.Errorf("method %s: %v; want scored entries and downstream_ratio null", m.Name(), rep)
		}
	}
}

func TestEstimatorCmdUsageErrors(t *testing.T) {
	in, _ := partialTable(t)
	noRefs := filepath.Join(t.TempDir(), "norefs.json")
	nr := table.Default().Select(nil, []string{"v100"})
	for _, j := range nr.JobTypes() {
		nr.DeletePair("v100", j, j)
	}
	if err := nr.Save(noRefs); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o.json")
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mk   func(*cli.IO) *cobra.Command
		args []string
		want string
	}{
		{"estimate without --out", newEstimateCmd, []string{"--table", in}, "--out"},
		{"estimate no references", newEstimateCmd, []string{"--table", noRefs, "--out", out}, "reference"},
		{"estimate empty table", newEstimateCmd, []string{"--table", empty, "--out", out}, "no job types"},
		{"suggest empty table", newSuggestCmd, []string{"--table", empty, "--budget", "3"}, "no job types"},
		{"estimate missing file", newEstimateCmd, []string{"--table", "/nonexistent.json", "--out", out}, "nonexistent"},
		{"suggest negative budget", newSuggestCmd, []string{"--table", in, "--budget", "-1"}, "budget"},
		{"suggest no references", newSuggestCmd, []string{"--table", noRefs, "--budget", "3"}, "reference"},
		{"evaluate R too large", newEvaluateCmd, []string{"--references", "27"}, "references"},
		{"evaluate R leaves nothing", newEvaluateCmd, []string{"--references", "26"}, "references"},
		{"evaluate R zero", newEvaluateCmd, []string{"--references", "0"}, "references"},
		{"evaluate P zero", newEvaluateCmd, []string{"--fraction", "0"}, "fraction"},
		{"evaluate P above 1", newEvaluateCmd, []string{"--fraction", "1.5"}, "fraction"},
		{"evaluate bad seeds", newEvaluateCmd, []string{"--seeds", "0,x"}, "seeds"},
		{"evaluate seed twice", newEvaluateCmd, []string{"--seeds", "0,1,0"}, `--seeds "0,1,0": 0 given twice`},
		{"evaluate seed out of range", newEvaluateCmd, []string{"--seeds", "18446744073709551616"}, `"18446744073709551616" is above 18446744073709551615`},
		{"evaluate policy without a max-min objective", newEvaluateCmd, []string{"--policy", "fifo"}, "--policy fifo: downstream_ratio is the max-min fairness objective"},
		// A policy that does not pack reads no pair rate: the ratio was 1 for every method.
		{"evaluate max-min policy that does not pack", newEvaluateCmd, []string{"--policy", "max_min_fairness_perf"},
			"want max_min_fairness_packed, max_min_fairness_water_filling_packed or none"},
		{"evaluate too few references measured", newEvaluateCmd, []string{"--table", in}, "scale factor 1: seed 0: --references 16: the largest set of job types measured with themselves and each other on every worker type found has 12"},
		{"evaluate P negative", newEvaluateCmd, []string{"--fraction", "-0.2"}, "fraction"},
		{"evaluate no GPUs", newEvaluateCmd, []string{"--gpus", "0"}, "gpus"},
		{"evaluate no such scale factor", newEvaluateCmd, []string{"--scale-factor", "3"}, "scale factor 3"},
		{"suggest without --table", newSuggestCmd, []string{"--budget", "3"}, "--table"},
		{"estimate unknown worker type", newEstimateCmd, []string{"--table", in, "--out", out, "--worker-types", "v10"}, "worker type v10"},
		{"suggest unknown worker type", newSuggestCmd, []string{"--table", in, "--worker-types", "p100,v10"}, "worker type v10"},
		{"evaluate unknown worker type", newEvaluateCmd, []string{"--worker-types", "v10"}, "worker type v10"},
		{"evaluate unknown policy", newEvaluateCmd, []string{"--policy", "max_min_fairnes", "--seeds", "0"}, "max_min_fairnes"},
		// An empty element was dropped silently ("v100," meant v100 only).
		{"estimate trailing comma", newEstimateCmd, []string{"--table", in, "--out", out, "--worker-types", "v100,"},
			`estimate: --worker-types "v100,": element 2 of 2 is empty`},
		{"suggest empty element", newSuggestCmd, []string{"--table", in, "--worker-types", "v100, ,k80"},
			`suggest: --worker-types "v100, ,k80": element 2 of 3 is empty`},
		{"evaluate leading comma", newEvaluateCmd, []string{"--worker-types", ",k80"}, `evaluate: --worker-types ",k80": element 1 of 2 is empty`},
		// A repeated name panicked in estimate (the block was filled twice, concurrently).
		{"estimate repeated worker type", newEstimateCmd, []string{"--table", in, "--out", out, "--worker-types", "v100,v100"},
			`estimate: --worker-types "v100,v100": v100 given twice`},
		{"suggest repeated worker type", newSuggestCmd, []string{"--table", in, "--worker-types", "k80,v100, k80"},
			`suggest: --worker-types "k80,v100, k80": k80 given twice`},
		{"evaluate repeated worker type", newEvaluateCmd, []string{"--worker-types", "p100,p100"}, `evaluate: --worker-types "p100,p100": p100 given twice`},
		{"suggest unknown aim", newSuggestCmd, []string{"--table", in, "--aim", "fast"}, `suggest: --aim "fast": want balanced or decisions`},
		{"evaluate unknown aim", newEvaluateCmd, []string{"--active", "--aim", "Decisions"}, `evaluate: --aim "Decisions": want balanced or decisions`},
		{"evaluate aim without --active", newEvaluateCmd, []string{"--aim", "decisions"}, "evaluate: --aim decisions: applies only with --active"},
		{"evaluate default aim named without --active", newEvaluateCmd, []string{"--aim", "balanced"}, "evaluate: --aim balanced: applies only with --active"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := execCmd(tt.mk, tt.args...)
			if err == nil {
				t.Fatal("want an error")
			}
			if code := cli.ExitCode(err); code != 2 {
				t.Errorf("exit code %d, want 2 (err %v)", code, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestEstimateCmdSummaryAndList(t *testing.T) {
	in, n := partialTable(t)
	out := filepath.Join(t.TempDir(), "full.json")
	summary, _, err := execCmd(newEstimateCmd, "--table", in, "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	// Per worker type: every ordered pair touching jobs 12+ except those with job 0.
	perWorker := 0
	for i := 0; i < n; i++ {
		for k := 0; k < n; k++ {
			if (i >= 12 && k != 0) || (k >= 12 && i != 0) {
				perWorker++
			}
		}
	}
	for _, w := range []string{"k80", "p100", "v100"} {
		if !strings.Contains(summary, w) {
			t.Errorf("summary lacks worker type %s:\n%s", w, summary)
		}
	}
	if !strings.Contains(summary, fmt.Sprint(perWorker)) || strings.Contains(summary, "ResNet") {
		t.Errorf("summary should count %d entries per worker type and name no job:\n%s", perWorker, summary)
	}
	list, _, err := execCmd(newEstimateCmd, "--table", in, "--out", out, "--list")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(list, "ResNet-50 (batch size 128)"); got == 0 {
		t.Errorf("--list names no entry of ResNet-50 bs128:\n%s", list)
	}
}

// --uncertainty writes the same table and adds, in --json, an interval and packing probability
// to each entry predicted feasible (none to those predicted infeasible), and in --list their
// columns.
func TestEstimateCmdUncertainty(t *testing.T) {
	in, _ := partialTable(t)
	dir := t.TempDir()
	plain, withU := filepath.Join(dir, "plain.json"), filepath.Join(dir, "unc.json")
	if _, stderr, err := execCmd(newEstimateCmd, "--table", in, "--out", plain); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	stdout, stderr, err := execCmd(newEstimateCmd, "--table", in, "--out", withU, "--json", "--uncertainty")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	a, _ := os.ReadFile(plain)
	b, _ := os.ReadFile(withU)
	if !bytes.Equal(a, b) {
		t.Error("--uncertainty changed the written table")
	}
	var rep struct {
		Entries []struct {
			Job, Partner string
			Normalized   float64
			Infeasible   bool
			Uncertainty  *struct {
				NormalizedLow  *float64 `json:"normalized_low"`
				NormalizedHigh *float64 `json:"normalized_high"`
				RateLow        *float64 `json:"rate_low"`
				RateHigh       *float64 `json:"rate_high"`
				PackingWrong   *float64 `json:"packing_wrong"`
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	with := 0
	for _, e := range rep.Entries {
		u := e.Uncertainty
		if e.Infeasible != (u == nil) {
			t.Fatalf("entry infeasible %v with uncertainty %v", e.Infeasible, u != nil)
		}
		if u == nil {
			continue
		}
		with++
		if u.NormalizedLow == nil || u.NormalizedHigh == nil || u.RateLow == nil || u.RateHigh == nil || u.PackingWrong == nil ||
			!(*u.NormalizedLow < e.Normalized && e.Normalized < *u.NormalizedHigh) {
			t.Fatalf("entry %+v: uncertainty fields %+v", e, *u)
		}
	}
	if with == 0 {
		t.Fatal("no entry has an uncertainty")
	}
	var rateInterval string // of the first entry with one, as --list prints it
	for _, e := range rep.Entries {
		if u := e.Uncertainty; u != nil {
			rateInterval = fmt.Sprintf("%.3f-%.3f", *u.RateLow, *u.RateHigh)
			break
		}
	}
	summary, _, err := execCmd(newEstimateCmd, "--table", in, "--out", withU, "--uncertainty")
	if err != nil || !strings.Contains(summary, "80% interval") || !strings.Contains(summary, "P(packing wrong) >= 0.3") {
		t.Errorf("--uncertainty summary: %v\n%s", err, summary)
	}
	list, _, err := execCmd(newEstimateCmd, "--table", in, "--out", withU, "--list", "--uncertainty")
	if err != nil || !strings.Contains(list, "80% interval") || !strings.Contains(list, "P(packing wrong)") || !strings.Contains(list, rateInterval) {
		t.Errorf("--list --uncertainty: %v; want the columns and the rate interval %s\n%.600s", err, rateInterval, list)
	}
	plainList, _, err := execCmd(newEstimateCmd, "--table", in, "--out", withU, "--list")
	if err != nil || strings.Contains(plainList, "interval") || strings.Contains(summaryOf(t, in, withU), "interval") {
		t.Errorf("without --uncertainty: %v; no interval expected\n%.600s", err, plainList)
	}
}

// summaryOf is estimate's summary of table in, written to out, without --uncertainty.
func summaryOf(t *testing.T, in, out string) string {
	t.Helper()
	s, _, err := execCmd(newEstimateCmd, "--table", in, "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The estimator's fits run concurrently; the same seed must still give the same bytes, both the
// JSON report and the written table, and a different seed a different estimate.
func TestEstimateSuggestDeterministic(t *testing.T) {
	in, _ := partialTable(t)
	dir := t.TempDir()
	estimateRun := func(name, seed string) (string, string) {
		t.Helper()
		out := filepath.Join(dir, name)
		stdout, _, err := execCmd(newEstimateCmd, "--table", in, "--out", out, "--seed", seed, "--json")
		if err != nil {
			t.Fatal(err)
		}
		written, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return stdout, string(written)
	}
	j1, t1 := estimateRun("a.json", "7")
	j2, t2 := estimateRun("b.json", "7")
	if j1 != j2 || t1 != t2 {
		t.Errorf("estimate --seed 7 twice: JSON equal %v, tables equal %v", j1 == j2, t1 == t2)
	}
	if j3, _ := estimateRun("c.json", "8"); j3 == j1 {
		t.Error("estimate --seed 8 printed the same JSON as --seed 7: the seed is not used")
	}
	suggestRun := func() string {
		t.Helper()
		stdout, _, err := execCmd(newSuggestCmd, "--table", in, "--budget", "9", "--seed", "7", "--json")
		if err != nil {
			t.Fatal(err)
		}
		return stdout
	}
	if s1, s2 := suggestRun(), suggestRun(); s1 != s2 {
		t.Errorf("suggest --seed 7 twice printed different JSON:\n%s\n%s", s1, s2)
	}
}

// evaluate's output has a row per estimate.DefaultMethods; its help names every one.
func TestEvaluateHelpNamesEveryMethod(t *testing.T) {
	help := newEvaluateCmd(nil).Long
	for _, m := range estimate.DefaultMethods(0) {
		if !strings.Contains(help, m.Name()) {
			t.Errorf("evaluate --help does not name method %s", m.Name())
		}
	}
}

// A k80 without A3C's isolated rate: the other jobs' k80 entries are estimated, A3C's stay
// missing, and the command says so (exit 0, as the table is written).
func TestEstimateCmdReportsEntriesLeftMissing(t *testing.T) {
	full := table.Default().Select(nil, []string{"k80", "p100", "v100"})
	jobs := full.JobTypesWithScaleFactor(1)
	p := full.Select(jobs, nil)
	a3c := table.JobType{Model: "A3C", ScaleFactor: 1}
	p.DeleteIsolated("k80", a3c)
	for _, k := range jobs {
		p.DeletePair("k80", a3c, k)
	}
	p.DeletePair("k80", jobs[len(jobs)-1], jobs[len(jobs)-2])
	in := filepath.Join(t.TempDir(), "partial.json")
	if err := p.Save(in); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := execCmd(newEstimateCmd, "--table", in, "--out", filepath.Join(t.TempDir(), "full.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d entries still missing", 2*len(jobs)-1)
	if !strings.Contains(stdout, "2 entries estimated") || !strings.Contains(stdout, want) {
		t.Errorf("stdout %q, want 2 estimated and %q", stdout, want)
	}
	if !strings.Contains(stderr, "worker type k80: A3C has no isolated rate") || strings.Contains(stderr, "no missing entries; returned unchanged") {
		t.Errorf("stderr %q", stderr)
	}
}

// A method with nothing feasible to score shows n/a, not a perfect 0% error.
func TestPrintEvaluationNothingScored(t *testing.T) {
	none := &estimate.MethodReport{}
	none.Entries, none.Pairs = 10, 6
	some := &estimate.MethodReport{}
	some.Entries, some.Pairs, some.ScoredEntries, some.ScoredPairs = 10, 6, 8, 5
	some.MAPE, some.PackingAgreement = 0.125, 0.8
	some.EstimatedOnly.ScoredEntries, some.EstimatedOnly.ScoredPairs = 4, 2
	some.PerSeed, some.Std.PackingAgreement = make([]estimate.Metrics, 2), 0.05
	single := &estimate.MethodReport{Metrics: some.Metrics, EstimatedOnly: some.EstimatedOnly, PerSeed: make([]estimate.Metrics, 1)}
	ev := &estimate.Evaluation{Methods: map[string]*estimate.MethodReport{"none": none, "some": some, "single": single}, Order: []string{"none", "some", "single"}}
	streams, out, _ := cli.TestIO()
	if err := printEvaluation(streams, ev, false); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		switch {
		case strings.Contains(line, " none "):
			if strings.Count(line, "n/a") != 6 || strings.Contains(line, "%") {
				t.Errorf("nothing scored: want n/a for mae, mape, raw_mape, agreement and both estimated-only, got %q", line)
			}
		case strings.Contains(line, " some "):
			if strings.Contains(line, "n/a") || !strings.Contains(line, "12.50% ± 0.00") || !strings.Contains(line, "80.0% ± 5.0 (5 pairs)") {
				t.Errorf("scored method: got %q", line)
			}
		case strings.Contains(line, " single "):
			// One seed has no spread to show.
			if strings.Contains(line, "±") || !strings.Contains(line, "80.0% (5 pairs)") {
				t.Errorf("one seed: got %q", line)
			}
		}
	}
}

// TestEstimateChecksOutFirst: an --out that cannot be written is bad usage found before the
// table is even read (so before the estimate), naming --out and not a temporary file.
func TestEstimateChecksOutFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	dangling := filepath.Join(dir, "link.json")
	os.Symlink(filepath.Join(dir, "gone", "x.json"), dangling)
	tests := []struct{ out, want string }{
		{"/nonexistent-dir/x.json", "--out /nonexistent-dir/x.json: directory /nonexistent-dir does not exist"},
		{filepath.Join(file, "x.json"), "is not a directory"},
		{dir, "is a directory"},
		{dangling, "directory " + filepath.Join(dir, "gone") + " does not exist"},
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		tests = append(tests, struct{ out, want string }{filepath.Join(ro, "x.json"), "cannot create files in " + ro})
	}
	for _, tc := range tests {
		// The table does not exist either: the --out error must come first.
		_, _, err := execCmd(newEstimateCmd, "--table", filepath.Join(dir, "missing.json"), "--out", tc.out)
		if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), ".tmp") {
			t.Errorf("--out %s: %v (exit %d), want exit 2 with %q", tc.out, err, cli.ExitCode(err), tc.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".gavel-out-check-*")); len(left) > 0 {
		t.Errorf("check files left behind: %v", left)
	}
	// --out naming the table itself, or through a link, would pass estimates for measurements.
	in, _ := partialTable(t)
	before, _ := os.ReadFile(in)
	link := filepath.Join(dir, "same.json")
	os.Symlink(in, link)
	for _, out := range []string{in, link} {
		_, _, err := execCmd(newEstimateCmd, "--table", in, "--out", out)
		if cli.ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "is the --table file") {
			t.Errorf("--out %s of --table %s: %v (exit %d), want exit 2", out, in, err, cli.ExitCode(err))
		}
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(before, after) {
		t.Error("the table was changed")
	}
	// A writable --out passes the check (and fails on the missing table).
	_, _, err := execCmd(newEstimateCmd, "--table", filepath.Join(dir, "missing.json"), "--out", filepath.Join(dir, "ok.json"))
	if err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("writable --out: %v, want the missing table's error", err)
	}
}

// estimate --json left out known_infeasible and left_missing when they were 0 (and printed
// "entries": null): a script reading them found nothing. The complete table comes on stdin
// (--table -), which read the embedded table's stand-in "open -" before.
func TestEstimateJSONAlwaysHasCounts(t *testing.T) {
	var in strings.Builder
	if err := table.Default().Select(nil, []string{"v100"}).Write(&in); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.json")
	stdout, stderr, err := execCmdWithInput(newEstimateCmd, in.String(), "--table", "-", "--out", out, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"estimated": "0", "infeasible_predicted": "0", "known_infeasible": "0", "left_missing": "0", "entries": "[]"} {
		if string(got[key]) != want {
			t.Errorf("%s = %s, want %s", key, got[key], want)
		}
	}
}

// writeReportJSON streams the entries but must write what cli.WriteJSON writes for the whole
// report, byte for byte (scripts read it), whatever the entries and notes hold.
func TestWriteReportJSON(t *testing.T) {
	odd := estimate.Entry{WorkerType: "a<b>&c", Job: "ResNet \"50\"\n", Partner: "é\u2028", ScaleFactor: 2,
		Normalized: 1e-7, Rate: 1e21, Infeasible: true}
	plain := estimate.Entry{WorkerType: "v100", Job: "A", Partner: "B", ScaleFactor: 1, Normalized: 0.5, Rate: 12.25}
	unc := plain
	unc.Uncertainty = &estimate.Uncertainty{NormalizedLow: 0.4, NormalizedHigh: 0.625, RateLow: 9.8, RateHigh: 15.3125, PackingWrong: 1e-30}
	for _, rep := range []estimate.Report{
		{Entries: []estimate.Entry{}},
		{Estimated: 2, Entries: []estimate.Entry{plain, odd}, KnownInfeasible: 3, LeftMissing: 1},
		{Estimated: 2, Entries: []estimate.Entry{unc, plain}},
		{Estimated: 1, InfeasiblePredicted: 1, Entries: []estimate.Entry{odd}, Notes: []string{`"entries": null`, "\n  \"entries\": null"}},
	} {
		var want, got bytes.Buffer
		if err := cli.WriteJSON(&want, &rep); err != nil {
			t.Fatal(err)
		}
		if err := writeReportJSON(&got, &rep); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("report %+v:\ngot  %s\nwant %s", rep, got.String(), want.String())
		}
	}
	// No entries at all is written as [], not null.
	var got bytes.Buffer
	if err := writeReportJSON(&got, &estimate.Report{}); err != nil || !strings.Contains(got.String(), `"entries": []`) {
		t.Errorf("nil entries: %s (err %v), want \"entries\": []", got.String(), err)
	}
}

// evaluate --active --aim decisions runs the active protocol with that aim and says so.
func TestEvaluateCmdActiveAim(t *testing.T) {
	if testing.Short() {
		t.Skip("fits models")
	}
	stdout, stderr, err := execCmd(newEvaluateCmd, "--seeds", "0", "--policy", "none", "--active", "--aim", "decisions", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Active bool   `json:"active"`
		Aim    string `json:"aim"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Active || got.Aim != "decisions" || !strings.Contains(stderr, "measurements (active, aim decisions)") {
		t.Errorf("active %v, aim %q, stderr %q: want the decisions aim reported", got.Active, got.Aim, stderr)
	}
}

// --aim decisions leaves out the picks balanced makes for feasibility doubt, reliance and
// consistency checks (on this table balanced makes some of each kind it has a share for).
func TestSuggestCmdAim(t *testing.T) {
	in, _ := partialTable(t)
	reasons := func(aim string) map[string]int {
		t.Helper()
		stdout, _, err := execCmd(newSuggestCmd, "--table", in, "--budget", "20", "--aim", aim, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Measurements []estimate.Suggestion `json:"measurements"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Measurements) != 20 {
			t.Fatalf("--aim %s: %d measurements, want 20", aim, len(got.Measurements))
		}
		n := map[string]int{}
		for _, m := range got.Measurements {
			n[m.Reason]++
		}
		return n
	}
	other := []string{estimate.ReasonFeasibility, estimate.ReasonRely, estimate.ReasonCheck}
	bal := reasons("balanced")
	if bal[other[0]]+bal[other[1]]+bal[other[2]] == 0 {
		t.Fatalf("balanced reasons %v: none of %q, so this table cannot tell the aims apart", bal, other)
	}
	pack := reasons("decisions")
	for _, r := range other {
		if pack[r] > 0 {
			t.Errorf("--aim decisions reasons %v: %d for %q", pack, pack[r], r)
		}
	}
}

// estimate, suggest and evaluate pass on the table's warnings (here a pair rate above the
// isolated rate); an unknown worker type stops each right after the table is read.
func TestEstimatorCmdsWarnOnTable(t *testing.T) {
	tb := table.Default().Select(nil, []string{"k80", "p100", "v100"})
	jobs := tb.JobTypesWithScaleFactor(1)
	iso, _ := tb.Isolated("v100", jobs[0])
	_, rb, _ := tb.Pair("v100", jobs[0], jobs[1])
	tb.SetPair("v100", jobs[0], jobs[1], 3*iso, rb)
	path := filepath.Join(t.TempDir(), "warn.json")
	if err := tb.Save(path); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o.json")
	for name, mk := range map[string]func(*cli.IO) *cobra.Command{"estimate": newEstimateCmd, "suggest": newSuggestCmd, "evaluate": newEvaluateCmd} {
		args := []string{"--table", path, "--worker-types", "nosuch"}
		if name == "estimate" {
			args = append(args, "--out", out)
		}
		_, stderr, err := execCmd(mk, args...)
		if cli.ExitCode(err) != 2 || !strings.Contains(stderr, "warning: pair rate above isolated rate") {
			t.Errorf("%s: err %v, stderr %q; want the usage error and the table's warning", name, err, stderr)
		}
	}
}

// evaluate scores one group of worker types; when a worker type is left out for lacking a job
// type's isolated rate, a note says so (it was dropped silently).
func TestEvaluateCmdNotesWorkerTypesLeftOut(t *testing.T) {
	tb := table.Default().Select(nil, []string{"k80", "p100", "v100"})
	jobs := tb.JobTypesWithScaleFactor(1)
	for _, k := range jobs {
		tb.DeletePair("k80", jobs[0], k)
	}
	tb.DeleteIsolated("k80", jobs[0])
	path := filepath.Join(t.TempDir(), "t.json")
	if err := tb.Save(path); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := execCmd(newEvaluateCmd, "--table", path, "--worker-types", "k80,p100,v100", "--seeds", "0", "--policy", "none", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("worker types k80 (25 job types have isolated rates there, not %s) not evaluated", jobs[0].Model)
	if !strings.Contains(stderr, "worker types p100,v100;") || len(got.Notes) != 2 || !strings.Contains(got.Notes[0], want) || got.Notes[1] != "downstream_ratio left out (--policy none)" {
		t.Errorf("notes %q, stderr %q: want p100 and v100 evaluated and a note naming k80", got.Notes, stderr)
	}
}

// evaluate on an empty table blamed --worker-types, which was not given: "table e.json:
// --worker-types: the table has no job types or no worker types".
func TestEvaluateEmptyTableNotBlamedOnWorkerTypes(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "e.json")
	if err := os.WriteFile(empty, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := execCmd(newEvaluateCmd, "--table", empty)
	if cli.ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "no job types") || strings.Contains(fmt.Sprint(err), "--worker-types") {
		t.Errorf("evaluate on {}: %v (exit %d); want exit 2 saying the table has no job types, not naming --worker-types", err, cli.ExitCode(err))
	}
}
