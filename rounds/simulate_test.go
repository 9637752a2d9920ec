package rounds

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// equalShare gives every job the same share of every worker type, capped at
// one unit of time (a fixture with a hand-checkable allocation).
type equalShare struct{}

func (equalShare) Name() string { return "equal_share_perf" }

func (equalShare) Allocate(_ context.Context, p *policy.Problem) (*policy.Allocation, error) {
	a := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
	total := float64(p.Cluster.Total())
	for _, j := range p.Jobs {
		x := map[string]float64{}
		share := math.Min(1, total/float64(len(p.Jobs))/float64(j.Type.ScaleFactor))
		for _, w := range p.Cluster.WorkerTypes() {
			x[w] = share * float64(p.Cluster[w]) / total
		}
		a.Fractions[policy.Single(j.ID)] = x
	}
	return a, nil
}

// countingPolicy counts solves.
type countingPolicy struct {
	policy.Policy
	n int
}

func (c *countingPolicy) Allocate(ctx context.Context, p *policy.Problem) (*policy.Allocation, error) {
	c.n++
	return c.Policy.Allocate(ctx, p)
}

func oneTypeTable(rates map[string]float64, sf int) *table.Table {
	t := table.New()
	for m, r := range rates {
		t.SetIsolated("g", table.JobType{Model: m, ScaleFactor: sf}, r)
	}
	return t
}

func TestSimulateDefaultHandSolved(t *testing.T) {
	tbl := oneTypeTable(map[string]float64{"m": 1}, 1)
	jt := table.JobType{Model: "m", ScaleFactor: 1}
	tests := []struct {
		name    string
		steps   [2]float64
		wantJCT [2]float64
		wantEnd float64
	}{
		// Round 1: A (earlier) runs; round 2: B is behind and runs; then A
		// alone.
		{"full rounds", [2]float64{720, 360}, [2]float64{1080, 720}, 1080},
		// B finishes mid-round at 540, which ends the round early.
		{"mid-round completion", [2]float64{720, 180}, [2]float64{900, 540}, 900},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs := []policy.Job{{ID: "A", Type: jt, TotalSteps: tt.steps[0]}, {ID: "B", Type: jt, TotalSteps: tt.steps[1]}}
			p := &countingPolicy{Policy: equalShare{}}
			res, err := Simulate(context.Background(), Config{Table: tbl, Cluster: policy.Cluster{"g": 1}, Policy: p}, jobs)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			for _, j := range res.Jobs {
				got[j.ID] = j.JCT
			}
			if got["A"] != tt.wantJCT[0] || got["B"] != tt.wantJCT[1] {
				t.Errorf("JCTs %v, want A=%v B=%v", got, tt.wantJCT[0], tt.wantJCT[1])
			}
			if res.End != tt.wantEnd || res.Makespan != tt.wantEnd {
				t.Errorf("end %v makespan %v, want %v", res.End, res.Makespan, tt.wantEnd)
			}
			if math.Abs(res.Utilization-1) > 1e-12 {
				t.Errorf("utilization %v, want 1", res.Utilization)
			}
			// One solve at t=0, one after B finishes; none after A (nothing left).
			if p.n != 2 || res.Allocations != 2 {
				t.Errorf("%d solves (reported %d), want 2", p.n, res.Allocations)
			}
		})
	}
}

// Arrivals and completions in the same round coalesce into one solve.
func TestSimulateCoalescesEvents(t *testing.T) {
	tbl := oneTypeTable(map[string]float64{"m": 1}, 1)
	jt := table.JobType{Model: "m", ScaleFactor: 1}
	var jobs []policy.Job
	for i, arr := range []float64{0, 10, 20, 30, 400} {
		jobs = append(jobs, policy.Job{ID: string(rune('a' + i)), Type: jt, TotalSteps: 100, Arrival: arr})
	}
	p := &countingPolicy{Policy: equalShare{}}
	res, err := Simulate(context.Background(), Config{Table: tbl, Cluster: policy.Cluster{"g": 8}, Policy: p}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	// t=0: a; t=100 (a done; b, c, d arrived): one solve; t=200 (b, c, d
	// done): nothing active, no solve; t=400: e.
	if p.n != 3 {
		t.Errorf("%d solves, want 3", p.n)
	}
	want := map[string]float64{"a": 100, "b": 190, "c": 180, "d": 170, "e": 100}
	for _, j := range res.Jobs {
		if j.JCT != want[j.ID] {
			t.Errorf("job %s: JCT %v, want %v", j.ID, j.JCT, want[j.ID])
		}
	}
}

// §11.3: a multi-GPU job whose last remainder is smaller than its scale
// factor completes (Gavel drops it after 5 failed micro-tasks), in both modes.
func TestSimulateSmallRemainderCompletes(t *testing.T) {
	tbl := oneTypeTable(map[string]float64{"big": 10}, 2)
	job := policy.Job{ID: "0", Type: table.JobType{Model: "big", ScaleFactor: 2}, TotalSteps: 3601}
	for _, compat := range []bool{false, true} {
		var p policy.Policy = equalShare{}
		if compat {
			p = refFIFOPerf{}
		}
		res, err := Simulate(context.Background(), Config{Table: tbl, Cluster: policy.Cluster{"g": 2}, Policy: p, GavelCompat: compat}, []policy.Job{job})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 1 || math.Abs(res.Jobs[0].JCT-360.1) > 1e-9 {
			t.Errorf("compat=%v: jobs %+v, want one with JCT 360.1", compat, res.Jobs)
		}
	}
}

// §11.9: a violation compares completion with arrival + deadline.
func TestSimulateSLOViolations(t *testing.T) {
	tbl := oneTypeTable(map[string]float64{"m": 1}, 1)
	jt := table.JobType{Model: "m", ScaleFactor: 1}
	jobs := []policy.Job{
		{ID: "early", Type: jt, TotalSteps: 300, Arrival: 1000, SLO: 400}, // done at 1300 ≤ 1400
		{ID: "late", Type: jt, TotalSteps: 300, Arrival: 1000, SLO: 200},  // done at 1300 > 1200
		{ID: "tight", Type: jt, TotalSteps: 300, Arrival: 1000, SLO: 300}, // done at 1300 = deadline: met
		{ID: "none", Type: jt, TotalSteps: 300, Arrival: 1000},
	}
	res, err := Simulate(context.Background(), Config{Table: tbl, Cluster: policy.Cluster{"g": 4}, Policy: equalShare{}}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if res.SLOViolations != 1 {
		t.Errorf("%d SLO violations, want 1: %+v", res.SLOViolations, res.Jobs)
	}
}

// warnOnce is equalShare with a warning (said twice) on the allocations of more than one job,
// which it counts.
type warnOnce struct {
	equalShare
	n int
}

func (w *warnOnce) Allocate(ctx context.Context, p *policy.Problem) (*policy.Allocation, error) {
	a, err := w.equalShare.Allocate(ctx, p)
	if len(p.Jobs) > 1 {
		a.Warnings = []string{"crowded", "crowded"}
		w.n++
	}
	return a, err
}

func TestSimulateKeepsPolicyWarnings(t *testing.T) {
	tbl := oneTypeTable(map[string]float64{"m": 1}, 1)
	jt := table.JobType{Model: "m", ScaleFactor: 1}
	jobs := []policy.Job{
		{ID: "a", Type: jt, TotalSteps: 300},
		{ID: "b", Type: jt, TotalSteps: 3000, Arrival: 1000},
		{ID: "c", Type: jt, TotalSteps: 300, Arrival: 1000},
	}
	pol := &warnOnce{}
	res, err := Simulate(context.Background(), Config{Table: tbl, Cluster: policy.Cluster{"g": 1}, Policy: pol}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	// a runs alone; from t = 1000 b and c share until c is done, then b runs alone.
	if pol.n == 0 || len(res.Warnings) != 1 || res.Warnings[0].Message != "crowded" || res.Warnings[0].First != 1000 || res.Warnings[0].Count != pol.n {
		t.Errorf("warnings %+v, want one \"crowded\" first at 1000 s, counted once for each of the %d allocations that said it", res.Warnings, pol.n)
	}
}

// A job the policy can never take (AlloX and a 2-GPU job) is refused before anything runs:
// even with the context already done, the answer is that job, not the cancellation.
func TestSimulateChecksJobsFirst(t *testing.T) {
	tbl := oneTypeTable(map[string]float64{"m": 1}, 2)
	jobs := []policy.Job{
		{ID: "a", Type: table.JobType{Model: "m", ScaleFactor: 1}, TotalSteps: 300},
		{ID: "b", Type: table.JobType{Model: "m", ScaleFactor: 2}, TotalSteps: 300, Arrival: 3600},
	}
	pol, err := policy.New("allox")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Simulate(ctx, Config{Table: tbl, Cluster: policy.Cluster{"g": 2}, Policy: pol}, jobs)
	var ie *policy.InputError
	if !errors.As(err, &ie) || ie.Job != "b" {
		t.Errorf("err %v, want policy input error about job b", err)
	}
}

// Jobs out of arrival order waited behind later ones, a repeated id replaced a job, and an
// empty or negative window gave an average JCT of 0: all without an error.
func TestSimulateRejectsBadInput(t *testing.T) {
	tbl := oneTypeTable(map[string]float64{"m": 1}, 1)
	m := table.JobType{Model: "m", ScaleFactor: 1}
	pol, _ := policy.New("max_min_fairness_perf")
	ok := []policy.Job{{ID: "a", Type: m, TotalSteps: 300}, {ID: "b", Type: m, TotalSteps: 300, Arrival: 10}}
	cfg := Config{Table: tbl, Cluster: policy.Cluster{"g": 2}, Policy: pol}
	tests := []struct {
		name string
		cfg  func(*Config)
		jobs []policy.Job
		want string
	}{
		{"out of order", nil, []policy.Job{ok[1], ok[0]}, `simulate: jobs[1]: job "a" arrives at 0, before the job before it (10)`},
		{"duplicate id", nil, []policy.Job{ok[0], ok[0]}, `simulate: jobs[1]: job "a": duplicate id`},
		{"empty window", func(c *Config) { c.WindowStart, c.WindowEnd = 5, 2 }, ok, "window [5, 2) is empty"},
		{"negative window", func(c *Config) { c.WindowStart, c.WindowEnd = -1, 2 }, ok, "must not be negative"},
		{"start without end", func(c *Config) { c.WindowStart = 1 }, ok, "window start 1 without an end"},
		{"negative reset", func(c *Config) { c.ResetInterval = -1 }, ok, "reset interval -1"},
		// Absurd units ran for days or gave a JCT of 0.
		{"tiny rounds", func(c *Config) { c.RoundSeconds = 1e-9 }, ok, `simulate: job "a": 300 steps at 1 steps/s alone take 3e+11 rounds of 1e-09 s`},
		{"huge arrival", nil, []policy.Job{{ID: "a", Type: m, TotalSteps: 300, Arrival: 1e30}}, "arrival 1e+30 s leaves no precision for rounds of 360 s"},
	}
	for _, tt := range tests {
		c := cfg
		if tt.cfg != nil {
			tt.cfg(&c)
		}
		if _, err := Simulate(context.Background(), c, tt.jobs); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := Simulate(context.Background(), cfg, ok); err != nil {
		t.Errorf("good input: %v", err)
	}
}

func TestSimulateCost(t *testing.T) {
	tbl := oneTypeTable(map[string]float64{"m": 1}, 2)
	jobs := []policy.Job{{ID: "0", Type: table.JobType{Model: "m", ScaleFactor: 2}, TotalSteps: 1800}}
	res, err := Simulate(context.Background(), Config{Table: tbl, Cluster: policy.Cluster{"g": 2}, Policy: equalShare{},
		Prices: policy.Prices{"g": 3.6}}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	// 1800 s on 2 GPUs at $3.60/GPU-hour = $3.60.
	if math.Abs(res.Cost-3.6) > 1e-9 {
		t.Errorf("cost %v, want 3.6", res.Cost)
	}
}

// A pair's members share its GPU's cost: two jobs that keep 0.9 of their rate together run
// packed on one GPU for the hour their 3,240 steps take, which costs one GPU-hour, half each.
func TestSimulateCostOfPair(t *testing.T) {
	tbl := oneTypeTable(map[string]float64{"a": 1, "b": 1}, 1)
	a, b := table.JobType{Model: "a", ScaleFactor: 1}, table.JobType{Model: "b", ScaleFactor: 1}
	tbl.SetPair("g", a, b, 0.9, 0.9)
	pol, err := policy.New("max_min_fairness_packed")
	if err != nil {
		t.Fatal(err)
	}
	jobs := []policy.Job{{ID: "a", Type: a, TotalSteps: 3240}, {ID: "b", Type: b, TotalSteps: 3240}}
	res, err := Simulate(context.Background(), Config{Table: tbl, Cluster: policy.Cluster{"g": 1}, Policy: pol,
		Prices: policy.Prices{"g": 2}}, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.Cost-2) > 1e-6 {
		t.Errorf("cost %v, want 2 (one GPU-hour at $2)", res.Cost)
	}
	sum := 0.0
	for _, j := range res.Jobs {
		sum += j.Cost
		if math.Abs(j.Cost-1) > 1e-6 || math.Abs(j.JCT-3600) > 1e-6 {
			t.Errorf("job %s: cost %v after %v s, want 1 after 3600 s", j.ID, j.Cost, j.JCT)
		}
	}
	if math.Abs(sum-res.Cost) > 1e-9 {
		t.Errorf("jobs' costs sum to %v, the total is %v", sum, res.Cost)
	}
}

func TestParseTraceErrors(t *testing.T) {
	good := "A3C\tcmd\t/tmp\t--steps\t0\t100\t1\t1\t-1\t0\n"
	tests := []struct{ name, in, want string }{
		{"field count", good + "A3C\tcmd\t0\t100\n", "t.trace:2: bad trace: 4 tab-separated fields, want 10"},
		{"bad steps", good + good + strings.Replace(good, "\t100\t", "\tlots\t", 1), "t.trace:3: bad trace: field 6 (total_steps): \"lots\""},
		{"bad sf", strings.Replace(good, "\t1\t1\t-1", "\t1.5\t1\t-1", 1), "t.trace:1: bad trace: field 7 (scale_factor)"},
		{"bad arrival", strings.Replace(good, "-1\t0", "-1\tsoon", 1), "t.trace:1: bad trace: field 10 (arrival_time)"},
		{"empty", "\n\n", "t.trace: bad trace: no jobs"},
		{"NaN weight", good + strings.Replace(good, "\t1\t-1", "\tNaN\t-1", 1), "t.trace:2: bad trace: field 8 (priority_weight): \"NaN\" is not a finite number"},
		{"tiny weight", strings.Replace(good, "\t1\t-1", "\t1e-300\t-1", 1), "t.trace:1: bad trace: field 8 (priority_weight): weight 1e-300 is outside 0.001..1000"},
		{"zero weight", strings.Replace(good, "\t1\t-1", "\t0\t-1", 1), "t.trace:1: bad trace: field 8 (priority_weight): weight 0 must be positive"},
		{"zero SLO", strings.Replace(good, "-1\t0", "0\t0", 1), "t.trace:1: bad trace: field 9 (SLO): 0 would put the deadline at the arrival; -1 means no SLO"},
		{"infinite SLO", strings.Replace(good, "-1\t0", "+Inf\t0", 1), "t.trace:1: bad trace: field 9 (SLO)"},
		{"zero steps", strings.Replace(good, "\t100\t", "\t0\t", 1), "t.trace:1: bad trace: field 6 (total_steps): 0 must be positive"},
		{"fractional steps", strings.Replace(good, "\t100\t", "\t100.9\t", 1), "t.trace:1: bad trace: field 6 (total_steps): 100.9 is not a whole number of steps"},
		{"fraction of a step", strings.Replace(good, "\t100\t", "\t0.5\t", 1), "t.trace:1: bad trace: field 6 (total_steps): 0.5 is not a whole number of steps"},
		{"negative arrival", good + "\n" + strings.Replace(good, "-1\t0", "-1\t-5", 1), "t.trace:3: bad trace: field 10 (arrival_time): -5 is negative"},
		{"needs_data_dir", strings.Replace(good, "\t0\t100", "\t2\t100", 1), "t.trace:1: bad trace: field 5 (needs_data_dir)"},
		{"empty job type", " " + good[3:], "t.trace:1: bad trace: field 1 (job_type) is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTrace(strings.NewReader(tt.in), "t.trace")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrTrace) {
				t.Errorf("ParseTrace error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseTrace(t *testing.T) {
	in := "A3C\tpython3 main.py\t/tmp\t--max-steps\t0\t10000\t1\t2\t1.2\t1000.5\n\nLM (batch size 20)\tc\td\t--steps\t1\t500000\t2\t1\t-1\t1500\n"
	jobs, err := ParseTrace(strings.NewReader(in), "t")
	if err != nil {
		t.Fatal(err)
	}
	want := []TraceJob{
		{Job: policy.Job{ID: "0", Type: table.JobType{Model: "A3C", ScaleFactor: 1}, Weight: 2, TotalSteps: 10000, Arrival: 1000.5}, SLOFactor: 1.2, Line: 1},
		{Job: policy.Job{ID: "1", Type: table.JobType{Model: "LM (batch size 20)", ScaleFactor: 2}, Weight: 1, TotalSteps: 500000, Arrival: 1500}, Line: 3},
	}
	if len(jobs) != 2 || jobs[0] != want[0] || jobs[1] != want[1] {
		t.Errorf("ParseTrace = %+v, want %+v", jobs, want)
	}
	// Round trip through FormatTrace, fractional weights and arrival times
	// included (a weight of 0.5 was written as 0).
	jobs = append(jobs, TraceJob{Job: policy.Job{ID: "2", Type: table.JobType{Model: "A3C", ScaleFactor: 1}, Weight: 0.5,
		TotalSteps: 10, Arrival: 1500.123456789}, Line: 4},
		TraceJob{Job: policy.Job{ID: "3", Type: table.JobType{Model: "A3C", ScaleFactor: 1}, Weight: 2.5, TotalSteps: 10, Arrival: 1e7}, Line: 5})
	var b strings.Builder
	if err := FormatTrace(&b, jobs); err != nil {
		t.Fatal(err)
	}
	again, err := ParseTrace(strings.NewReader(b.String()), "t")
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		again[i].Line = jobs[i].Line
		if again[i] != jobs[i] {
			t.Errorf("round trip job %d = %+v, want %+v", i, again[i], jobs[i])
		}
	}
}

// FormatTrace refuses a job the trace format cannot hold instead of dropping what does not fit:
// the SLOs Generator draws (seconds) were written as "no SLO".
func TestFormatTraceRejects(t *testing.T) {
	ok := policy.Job{ID: "7", Type: table.JobType{Model: "A3C", ScaleFactor: 1}, TotalSteps: 100}
	tests := []struct {
		name string
		edit func(*policy.Job)
		want string
	}{
		{"SLO in seconds", func(j *policy.Job) { j.SLO = 3600 }, "SLO of 3600 s"},
		{"fractional steps", func(j *policy.Job) { j.TotalSteps = 100.5 }, "total steps 100.5"},
		{"no steps", func(j *policy.Job) { j.TotalSteps = 0 }, "total steps 0"},
		{"steps done", func(j *policy.Job) { j.StepsDone = 10 }, "10 steps done"},
		{"tab in model", func(j *policy.Job) { j.Type.Model = "A\tB" }, `model "A\tB"`},
		{"spaces around model", func(j *policy.Job) { j.Type.Model = " A3C" }, `model " A3C"`},
		// What ParseTrace refuses (FormatTrace wrote it, and the file could not be read back).
		{"no scale factor", func(j *policy.Job) { j.Type.ScaleFactor = 0 }, `bad trace: field 7 (scale_factor)`},
		{"weight out of range", func(j *policy.Job) { j.Weight = 5000 }, `bad trace: field 8 (priority_weight)`},
		{"negative arrival", func(j *policy.Job) { j.Arrival = -5 }, `bad trace: field 10 (arrival_time)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := ok
			tt.edit(&j)
			var b strings.Builder
			err := FormatTrace(&b, []TraceJob{{Job: ok}, {Job: j}})
			if err == nil || !strings.Contains(err.Error(), `job "7": `+tt.want) || !errors.Is(err, ErrTrace) || b.Len() != 0 {
				t.Errorf("FormatTrace error %v (wrote %q), want one naming job 7 and containing %q", err, b.String(), tt.want)
			}
		})
	}
	// A NaN SLO factor was written as -1, no SLO.
	var b strings.Builder
	if err := FormatTrace(&b, []TraceJob{{Job: ok, SLOFactor: math.NaN()}}); err == nil || !strings.Contains(err.Error(), `job "7": SLO factor NaN`) || b.Len() != 0 {
		t.Errorf("FormatTrace with a NaN SLO factor: %v (wrote %q), want an error naming job 7", err, b.String())
	}
}

func TestPrepareRejects(t *testing.T) {
	tbl := table.New()
	tbl.SetIsolated("a", table.JobType{Model: "m", ScaleFactor: 4}, 1)
	tbl.SetIsolated("b", table.JobType{Model: "m", ScaleFactor: 4}, 0)
	tbl.SetIsolated("a", table.JobType{Model: "z", ScaleFactor: 1}, 0)
	tbl.SetIsolated("b", table.JobType{Model: "z", ScaleFactor: 1}, 0)
	cluster := policy.Cluster{"a": 2, "b": 8}
	tests := []struct {
		name string
		job  table.JobType
		want string
	}{
		{"missing type", table.JobType{Model: "nope", ScaleFactor: 1}, `job type ('nope', 1) is not in the throughput table`},
		{"too wide", table.JobType{Model: "m", ScaleFactor: 4}, "scale factor 4 exceeds the GPU count"},
		{"zero rate", table.JobType{Model: "z", ScaleFactor: 1}, "rate is zero or missing on every worker type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Prepare(tbl, cluster, []TraceJob{{Job: policy.Job{ID: "7", Type: tt.job, TotalSteps: 1}, Line: 3}})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "line 3") {
				t.Errorf("Prepare error %v, want one with line 3 and %q", err, tt.want)
			}
		})
	}
	// Equal arrivals are ordered by id as the round mechanism and FIFO order them ("9" before
	// "10"), not by input order, so rounds and simulate break ties alike.
	m := table.JobType{Model: "m", ScaleFactor: 4}
	got, err := Prepare(tbl, policy.Cluster{"a": 4}, []TraceJob{{Job: policy.Job{ID: "10", Type: m, TotalSteps: 1}}, {Job: policy.Job{ID: "9", Type: m, TotalSteps: 1}},
		{Job: policy.Job{ID: "1", Type: m, TotalSteps: 1, Arrival: 5}}})
	if err != nil || len(got) != 3 || got[0].ID != "9" || got[1].ID != "10" || got[2].ID != "1" {
		t.Errorf("Prepare order %v (%v), want 9, 10, 1", got, err)
	}
	// An empty id passed, to fail at the first allocation; a jobs file's entry is named.
	_, err = Prepare(tbl, cluster, []TraceJob{{Job: policy.Job{Type: m, TotalSteps: 1}}})
	if err == nil || !strings.Contains(err.Error(), "jobs[0]: job of type ('m', 4): empty id") {
		t.Errorf("empty id: %v", err)
	}
}

// An SLO factor's duration is the job's time alone on the fastest worker
// type it can run on: a type listed with 0 GPUs, or with fewer GPUs than
// the job's scale factor, does not count (v100, much faster, did).
func TestPrepareSLOFactorRunnableTypes(t *testing.T) {
	tbl := table.Default()
	a3c := table.JobType{Model: "A3C", ScaleFactor: 1}
	lm2 := table.JobType{Model: "LM (batch size 20)", ScaleFactor: 2}
	k80a3c, _ := tbl.Isolated("k80", a3c)
	k80lm2, _ := tbl.Isolated("k80", lm2)
	tests := []struct {
		name    string
		cluster policy.Cluster
		job     table.JobType
		rate    float64 // the rate the deadline must use
	}{
		{"v100 listed with 0 GPUs", policy.Cluster{"v100": 0, "k80": 1}, a3c, k80a3c},
		{"no v100", policy.Cluster{"k80": 1}, a3c, k80a3c},
		{"v100 too small for scale factor 2", policy.Cluster{"v100": 1, "k80": 2}, lm2, k80lm2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs, err := Prepare(tbl, tt.cluster, []TraceJob{{Job: policy.Job{ID: "0", Type: tt.job, TotalSteps: 1000}, SLOFactor: 1.2, Line: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if want := 1.2 * 1000 / tt.rate; math.Abs(jobs[0].SLO-want) > 1e-9*want {
				t.Errorf("SLO %v s, want %v s (1.2 × 1000 steps at %v steps/s)", jobs[0].SLO, want, tt.rate)
			}
		})
	}
}

// ReadTrace reads either format from a reader; errors name the input as given.
func TestReadTraceNamesInput(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"tsv", "A3C\t\t\t\t0\t1000\t1\t1\t-1\t0\n", ""},
		{"json", `{"jobs": [{"id": "a", "type": "A3C", "total_steps": 1000}]}`, ""},
		{"bad line", "A3C\t1\n", "stdin:1: bad trace"},
		{"bad JSON", `{"jobs": [{"id": "a", "type"`, "stdin:1:29: invalid JSON"},
		{"bad entry", `{"jobs": [{"id": "a", "type": "A3C"}]}`, `stdin: jobs[0] (id "a"): missing total_steps`},
	} {
		jobs, _, err := ReadTrace(strings.NewReader(tc.data), "stdin")
		switch {
		case tc.want == "" && (err != nil || len(jobs) != 1 || jobs[0].TotalSteps != 1000):
			t.Errorf("%s: %v, %v; want one job of 1000 steps", tc.name, jobs, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// A JSON trace that does not parse, or is a list, is named by file, line and column.
func TestLoadTraceJSONErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, data, want string }{
		{"trunc.json", `{"jobs": [{"id": "a", "type"`, "trunc.json:1:29: invalid JSON"},
		{"list.json", `[1, 2]`, `list.json:1:1: want an object with "jobs"`},
	} {
		path := dir + "/" + tc.name
		if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadTrace(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// A job that arrives with steps done is simulated as a job of its remaining steps: finish-time
// fairness must not credit it isolated time for work done before it arrived (its time since
// arrival does not include that work), or it is held back against the others.
func TestSimulateStepsDoneAtArrivalAreNotRunTime(t *testing.T) {
	done := loadWorkedExample(t)
	short := slices.Clone(done)
	for i := range done {
		if i%2 == 0 {
			done[i].StepsDone = done[i].TotalSteps * 0.6
			short[i].TotalSteps -= done[i].StepsDone
		}
	}
	for _, compat := range []bool{false, true} {
		var jct [2]float64
		for x, jobs := range [][]policy.Job{done, short} {
			p, err := policy.New("finish_time_fairness_perf")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Simulate(context.Background(), Config{Table: table.Default(), Cluster: workedCluster(), Policy: p, GavelCompat: compat}, jobs)
			if err != nil {
				t.Fatal(err)
			}
			jct[x] = res.AvgJCT
		}
		if jct[0] != jct[1] {
			t.Errorf("compat=%v: average JCT %v with steps done at arrival, %v with the jobs shortened by them", compat, jct[0], jct[1])
		}
	}
}
