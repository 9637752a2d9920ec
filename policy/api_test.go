package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gavelkit/gavel/policy/lp"
	"github.com/gavelkit/gavel/table"
)

func TestParseCluster(t *testing.T) {
	c, err := ParseCluster("v100=8, p100=16,k80=24")
	if err != nil || c["v100"] != 8 || c["p100"] != 16 || c["k80"] != 24 || c.String() != "k80=24,p100=16,v100=8" {
		t.Fatalf("%v %v", c, err)
	}
	for _, bad := range []string{"", "v100", "v100=-1", "v100=x", "v100=1,v100=2", "=3"} {
		if _, err := ParseCluster(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	p, err := ParsePrices("v100=2.48,k80=0.45")
	if err != nil || p["v100"] != 2.48 || p["k80"] != 0.45 {
		t.Fatalf("%v %v", p, err)
	}
	for _, bad := range []string{"", "v100=-1", "v100=NaN", "v100"} {
		if _, err := ParsePrices(bad); err == nil {
			t.Errorf("prices %q accepted", bad)
		}
	}
}

func TestReadJobs(t *testing.T) {
	in := `{"entities": {"teamA": {"weight": 1, "policy": "fairness"}, "teamB": {"weight": 2, "policy": "fifo"}},
	"jobs": [{"id": "resnet-a", "type": "ResNet-50 (batch size 64)", "scale_factor": 1, "weight": 1, "entity": "teamA",
	"total_steps": 100000, "steps_done": 10, "time_run_seconds": 5, "arrival_seconds": 3, "slo_seconds": 36000},
	{"id": "lm", "type": "LM (batch size 20)", "scale_factor": 2, "entity": "teamB", "total_steps": 5}]}`
	jf, err := ReadJobs(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Job{ID: "resnet-a", Type: table.JobType{Model: "ResNet-50 (batch size 64)", ScaleFactor: 1}, Weight: 1, Entity: "teamA",
		TotalSteps: 100000, StepsDone: 10, TimeRun: 5, Arrival: 3, SLO: 36000}
	if jf.Jobs[0] != want || jf.Jobs[1].Weight != 1 || jf.Jobs[1].Type.ScaleFactor != 2 || jf.Entities["teamB"].Policy != EntityFIFO {
		t.Fatalf("%+v", jf)
	}
	if jf.Jobs[0].StepsRemaining() != 99990 {
		t.Fatal(jf.Jobs[0].StepsRemaining())
	}
	// An entity's weight left out is 1, as a job's is (it was read as 0 and refused as such).
	noWeight, err := ReadJobs(strings.NewReader(`{"entities": {"e": {"policy": "fifo"}}, "jobs": [{"id": "a", "type": "A", "total_steps": 1, "entity": "e"}]}`))
	if err != nil || noWeight.Entities["e"] != (Entity{Weight: 1, Policy: EntityFIFO}) {
		t.Fatalf("entity without a weight: %+v, %v; want weight 1", noWeight, err)
	}
	var b strings.Builder
	if err := WriteJobs(&b, jf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJobs(strings.NewReader(b.String()))
	if err != nil || fmt.Sprint(back) != fmt.Sprint(jf) {
		t.Fatalf("round trip: %v %v", back, err)
	}
	for _, tc := range []struct{ in, msg string }{
		{`{"jobs": []}`, "jobs file: no jobs"},
		{`{"jobs": [{"type": "A", "total_steps": 1}]}`, "jobs file: jobs[0]: missing id"},
		{`{"jobs": [{"id": "a", "type": "A", "weight": -1}]}`, `jobs file: jobs[0] (id "a"): weight -1`},
		{`{"jobs": [{"id": "a", "type": "A", "weight": 1e-300}]}`, `jobs file: jobs[0] (id "a"): weight 1e-300 is outside 0.001..1000`},
		{`{"jobs": [{"id": "a", "type": "A", "total_steps": 1}, {"id": "b", "type": "A", "weight": 1001}]}`, `jobs file: jobs[1] (id "b"): weight 1001 is outside 0.001..1000`},
		{`{"jobs": [{"id": "a", "type": "A", "total_steps": 1}, {"id": "a", "type": "A"}]}`, `jobs[1] (id "a"): duplicate id`},
		// cli-contract.md: total_steps is not optional; 0 would read as "finished".
		{`{"jobs": [{"id": "a", "type": "A"}]}`, `jobs[0] (id "a"): missing total_steps`},
		{`{"jobs": [{"id": "a", "type": "A", "scale_factor": 0}]}`, `jobs[0] (id "a"): scale_factor 0`},
		{`{"jobs": [{"id": "a", "type": "A", "total_steps": 1, "steps_done": 2}]}`, `jobs[0] (id "a"): steps_done 2 exceeds`},
		// A finished job got GPU time from FIFO and AlloX (allocate) where rounds refused it.
		{`{"jobs": [{"id": "a", "type": "A", "total_steps": 500, "steps_done": 500}]}`, `jobs[0] (id "a"): no steps left to run (steps_done 500 of total_steps 500)`},
		{`{"jobs": [{"id": "a", "type": "A", "total_steps": 0}]}`, `jobs[0] (id "a"): no steps left to run`},
		{`{"entities": {"e": {"weight": 1}}, "jobs": [{"id": "a", "type": "A", "entity": "f"}]}`, `jobs[0] (id "a"): entity "f"`},
		{`{"entities": {"e": {"weight": 1, "policy": "lifo"}}, "jobs": [{"id": "a", "type": "A"}]}`, `entity "e": policy "lifo"`},
		// As a job's weight (an entity at 1e300 ended in "numerical trouble").
		{`{"entities": {"e": {"weight": 1e300}}, "jobs": [{"id": "a", "type": "A", "entity": "e"}]}`, `entity "e": weight 1e+300 is outside 0.001..1000`},
		{`{"entities": {"e": {"weight": 0}}, "jobs": []}`, `entity "e": weight 0 must be positive`},
		{`{"jobs": [{"id": "a", "type": "A", "total_steps": 1}, {"id": "b", "type": "A", "color": 1}]}`, `jobs[1] (id "b"): unknown field "color"`},
		// A wrongly typed field names the entry, not only the Go struct.
		{`{"jobs": [{"id": "a", "type": "A", "total_steps": 1}, {"id": "b", "type": "A", "total_steps": "many"}]}`, `jobs[1] (id "b"): "total_steps": want a number, got a string`},
		{`{"jobs": [{"id": "a", "type": "A", "total_steps": 1}, {"id": "a+b", "type": "A", "total_steps": 1}]}`, `jobs file: jobs[1] (id "a+b"): id "a+b" contains '+'`},
		{"{\"jobs\": [\n{\"id\": \"a\",, }]}", "jobs file: line 2, column 12: invalid JSON: invalid character ','"},
		// A truncated file said only "unexpected EOF", with no position.
		{"{\"jobs\": [\n  {\"id\": \"a\"", "jobs file: line 2, column 13: invalid JSON: unexpected end of file (truncated?"},
		{"", "jobs file: the file is empty (want an object with \"jobs\": [...]"},
		{`{"jobs": [{"id": "a", "type": "A", "total_steps": 1}]} {}`, "jobs file: line 1, column 56: invalid JSON: unexpected text after the JSON value"},
		// Wrong shapes are said in the file's terms, not Go's types.
		{`[{"id": "a"}]`, `jobs file: line 1, column 1: want an object with "jobs": [...] (and optionally "entities": {...}), got an array`},
		{`{"jobs": {"a": 1}}`, `jobs file: line 1, column 10: "jobs": want an array of job objects, got an object`},
		{`{"jobs": ["a"]}`, `jobs file: jobs[0]: want a job object {"id", "type", "total_steps", ...}, got a string`},
		{`{"jobs": [{"id": "a", "type": "A", "total_steps": 1, "scale_factor": 1.5}]}`, `jobs[0] (id "a"): "scale_factor": want a whole number, got number 1.5`},
		{`{"entities": [], "jobs": []}`, `"entities": want an object of name: {"weight": number, "policy": "fairness" or "fifo"}, got an array`},
		{`{"entities": {"e": {"weight": "x"}}, "jobs": []}`, `"entities": an entity's "weight": want a number, got a string`},
		{`{"job": []}`, `jobs file: line 1, column 2: unknown field "job" (want an object with "jobs"`},
		// An entity's unknown field was hinted at with the file's shape.
		{"{\"jobs\": [],\n \"entities\": {\"e\": {\"weight\": 1, \"colour\": 1}}}", `jobs file: line 2, column 34: unknown field "colour" in an entity (want name: {"weight": number, "policy": "fairness" or "fifo"})`},
	} {
		_, err := ReadJobs(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.msg) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.msg)
		}
	}
}

func TestNewAndNames(t *testing.T) {
	names := Names()
	// gavel-reference §2.1, plus proportional.
	want := []string{"allox", "fifo", "fifo_packed", "fifo_perf", "finish_time_fairness", "finish_time_fairness_packed",
		"finish_time_fairness_perf", "gandiva", "isolated", "max_min_fairness", "max_min_fairness_packed", "max_min_fairness_perf",
		"max_min_fairness_water_filling", "max_min_fairness_water_filling_packed", "max_min_fairness_water_filling_perf",
		"max_sum_throughput_normalized_by_cost_packed_SLOs", "max_sum_throughput_normalized_by_cost_perf",
		"max_sum_throughput_normalized_by_cost_perf_SLOs", "max_sum_throughput_perf", "min_total_duration",
		"min_total_duration_packed", "min_total_duration_perf", "proportional"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("names %v", names)
	}
	for _, n := range names {
		p, err := New(n)
		if err != nil || p.Name() != n {
			t.Fatalf("%s: %v", n, err)
		}
	}
	_, err := New("lottery")
	var u *UnknownPolicyError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "max_min_fairness_perf") {
		t.Fatalf("%v", err)
	}
	if p, err := New("allox_alpha=0.5"); err != nil || p.Name() != "allox_alpha=0.5" {
		t.Fatalf("%v", err)
	}
	// Options out of range were taken silently.
	for _, tc := range []struct {
		opt  Option
		want string
	}{{WithTimeLimit(-time.Second), "time limit -1s is negative"}, {WithMaxPartners(-1), "max partners -1 is negative"},
		{WithMethod(Method(99)), "unknown LP method"}} {
		if _, err := New("max_min_fairness_perf", tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with a bad option: %v, want an error containing %q", err, tc.want)
		}
	}
	for _, bad := range []string{"x", "-1", "NaN", "Inf", "+Inf", "-Inf", "1e400"} {
		if _, err := New("allox_alpha=" + bad); err == nil || !strings.Contains(err.Error(), "finite non-negative") {
			t.Errorf("allox_alpha=%s: error %v", bad, err)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), -0.5} {
		if _, err := New("allox", WithAlloxAlpha(bad)); err == nil {
			t.Errorf("WithAlloxAlpha(%v) accepted", bad)
		}
	}
}

func TestInputErrors(t *testing.T) {
	base := func() *Problem { return twoJobs(false, 1, 1, cluster(1, 1, 1)) }
	for _, tc := range []struct {
		name string
		edit func(p *Problem)
		msg  string
	}{
		{"missing type", func(p *Problem) { p.Jobs[0].Type = jt("Nope") }, `job "0": job type ('Nope', 1) is not in the throughput table`},
		{"sf too big", func(p *Problem) { p.Jobs[0].Type.ScaleFactor = 2 }, `scale factor 2 exceeds`},
		{"negative weight", func(p *Problem) { p.Jobs[1].Weight = -1 }, `job "1": weight -1`},
		// Of two bad jobs the first given is named, not the first by id.
		{"first bad in given order", func(p *Problem) {
			p.Jobs[0], p.Jobs[1] = p.Jobs[1], p.Jobs[0]
			p.Jobs[0].Weight, p.Jobs[1].Type = -1, jt("Nope")
		}, `job "1": weight -1`},
		{"first bad entity in given order", func(p *Problem) {
			p.Jobs[0], p.Jobs[1] = p.Jobs[1], p.Jobs[0]
			p.Entities = map[string]Entity{"e": {Weight: 1}}
			p.Jobs[0].Entity, p.Jobs[1].Weight = "nope", -1
		}, `job "1": entity "nope" is not defined`},
		// A weight far from 1 made the LP fail ("numerical trouble", exit 1) or lose its accuracy.
		{"tiny weight", func(p *Problem) { p.Jobs[1].Weight = 1e-300 }, `job "1": weight 1e-300 is outside 0.001..1000`},
		{"huge weight", func(p *Problem) { p.Jobs[0].Weight = 1e9 }, `job "0": weight 1e+09 is outside 0.001..1000`},
		{"empty cluster", func(p *Problem) { p.Cluster = Cluster{} }, "cluster is empty"},
		{"zero cluster", func(p *Problem) { p.Cluster = Cluster{"v100": 0} }, "cluster is empty"},
		{"no table", func(p *Problem) { p.Table = nil }, "no throughput table"},
		{"worker not in table", func(p *Problem) { p.Cluster["tpu"] = 4 }, `no isolated rate on worker type "tpu"`},
		{"duplicate", func(p *Problem) { p.Jobs[1].ID = "0" }, "duplicate"},
		{"empty id", func(p *Problem) { p.Jobs[1].ID = "" }, "job 1 (in the order given): empty id"},
		{"unknown entity", func(p *Problem) { p.Entities = map[string]Entity{"e": {Weight: 1}}; p.Jobs[0].Entity = "f" }, `entity "f"`},
		{"negative steps", func(p *Problem) { p.Jobs[0].StepsDone = -1 }, "steps done"},
		// "0+1" would be the key of the pair of jobs "0" and "1".
		{"plus in id", func(p *Problem) { p.Jobs = append(p.Jobs, job("0+1", p.Jobs[0].Type, 1)) }, `job "0+1": id "0+1" contains '+'`},
	} {
		for _, name := range Names() {
			p := base()
			tc.edit(p)
			pol, _ := New(name)
			_, err := pol.Allocate(context.Background(), p)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%s / %s: error %v, want %q", tc.name, name, err, tc.msg)
			}
		}
	}
	// A job that can run nowhere.
	p := &Problem{Table: rateTable(kpv, map[table.JobType][]float64{jt("Z"): {0, 0, 0}}), Cluster: cluster(1, 1, 1), Jobs: []Job{job("z", jt("Z"), 1)}}
	if _, err := mustNew(t, "max_min_fairness_perf").Allocate(context.Background(), p); !errors.Is(err, ErrInput) {
		t.Fatalf("%v", err)
	}
}

// Weights at the bounds are read and allocated; beyond them the jobs file is
// refused (the LPs failed or lost accuracy there).
func TestJobWeightBounds(t *testing.T) {
	for _, tc := range []struct {
		weight float64
		ok     bool
	}{{MinWeight, true}, {MaxWeight, true}, {1, true}, {0.5 * MinWeight, false}, {2 * MaxWeight, false},
		{1e-300, false}, {1e9, false}, {0, false}, {math.Inf(1), false}} {
		in := fmt.Sprintf(`{"jobs": [{"id": "a", "type": "A", "total_steps": 1, "weight": %v}]}`, tc.weight)
		if math.IsInf(tc.weight, 0) {
			in = `{"jobs": [{"id": "a", "type": "A", "total_steps": 1, "weight": 1e400}]}`
		}
		_, err := ReadJobs(strings.NewReader(in))
		if (err == nil) != tc.ok {
			t.Errorf("weight %v: error %v, want ok %v", tc.weight, err, tc.ok)
		}
		if !tc.ok {
			continue
		}
		p := twoJobs(false, 1, 1, cluster(1, 1, 1))
		p.Jobs[0].Weight = tc.weight
		for _, name := range []string{"max_min_fairness", "max_min_fairness_perf", "max_min_fairness_packed", "max_min_fairness_water_filling_perf"} {
			if _, err := mustNew(t, name).Allocate(context.Background(), p); err != nil {
				t.Errorf("weight %v, %s: %v", tc.weight, name, err)
			}
		}
	}
}

func mustNew(t *testing.T, name string, opts ...Option) Policy {
	t.Helper()
	p, err := New(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// An LP failure comes back as a typed error, never an empty allocation.
type failingSolver struct{ status lp.Status }

func (f failingSolver) Solve(context.Context, *lp.Model, lp.Options) (*lp.Result, error) {
	return nil, &lp.StatusError{Status: f.status, Detail: "injected"}
}

func TestSolverErrorsPropagate(t *testing.T) {
	p := twoJobs(false, 10, 10, cluster(1, 1, 1))
	p.Prices = Prices{"k80": 1, "p100": 1, "v100": 1}
	for _, name := range Names() {
		pol := mustNew(t, name, WithSolver(failingSolver{lp.Numerical}))
		a, err := pol.Allocate(context.Background(), p)
		lpBased := !strings.HasPrefix(name, "fifo") && !strings.HasPrefix(name, "gandiva") && !strings.HasPrefix(name, "allox") &&
			name != "isolated" && name != "proportional"
		if lpBased {
			if !errors.Is(err, lp.ErrNumerical) || a != nil {
				t.Fatalf("%s: %v %v", name, a, err)
			}
		} else if err != nil {
			t.Fatalf("%s does not use the LP but failed: %v", name, err)
		} else {
			checkFeasible(t, p, a)
		}
	}
}

func TestEmptyJobs(t *testing.T) {
	for _, name := range Names() {
		a := mustAllocate(t, name, &Problem{Table: t0t1(false), Cluster: cluster(1, 1, 1)})
		if len(a.Fractions) != 0 {
			t.Fatalf("%s: %v", name, a.Fractions)
		}
	}
}

// defaultJobs draws n jobs from the embedded table: sf 1 and 2 types in turn.
func defaultJobs(tb *table.Table, n int) []Job {
	types := tb.JobTypes()
	var jobs []Job
	for i := 0; i < n; i++ {
		ty := types[(i*7)%len(types)]
		jobs = append(jobs, Job{ID: fmt.Sprintf("j%03d", i), Type: ty, Weight: float64(1 + i%3), TotalSteps: float64(1000 * (1 + i%5)),
			TimeRun: float64(i % 4 * 100), Arrival: float64(i), SLO: float64(5000 * (1 + i%2))})
	}
	return jobs
}

// Every policy on the embedded Gavel table and the paper's 8:16:24 cluster.
func TestEveryPolicyOnDefaultTable(t *testing.T) {
	tb := table.Default()
	p := &Problem{Table: tb, Cluster: Cluster{"v100": 8, "p100": 16, "k80": 24}, Jobs: defaultJobs(tb, 30),
		Prices: Prices{"v100": 2.48, "p100": 1.46, "k80": 0.45}}
	for _, name := range Names() {
		if name == "allox" {
			continue // sf 1 only, below
		}
		a := mustAllocate(t, name, p)
		if a.Policy != name {
			t.Fatalf("%s: policy %q", name, a.Policy)
		}
	}
	var sf1 []Job
	for _, j := range p.Jobs {
		if j.Type.ScaleFactor == 1 {
			sf1 = append(sf1, j)
		}
	}
	mustAllocate(t, "allox", &Problem{Table: tb, Cluster: p.Cluster, Jobs: sf1})
}

// Capping partners keeps the packed LP small and sits between no packing and
// all pairs: t*(perf) ≤ t*(top-k) ≤ t*(all pairs).
func TestMaxPartners(t *testing.T) {
	tb := table.Default()
	var jobs []Job
	types := tb.JobTypesWithScaleFactor(1)
	for i := 0; i < 24; i++ {
		jobs = append(jobs, job(fmt.Sprintf("j%02d", i), types[i%len(types)], 1))
	}
	p := &Problem{Table: tb, Cluster: Cluster{"v100": 4, "p100": 4, "k80": 4}, Jobs: jobs}
	perf := mustAllocate(t, "max_min_fairness_perf", p)
	all := mustAllocate(t, "max_min_fairness_packed", p)
	top := mustAllocate(t, "max_min_fairness_packed", p, WithMaxPartners(2))
	if !(perf.Objective <= top.Objective+1e-9 && top.Objective <= all.Objective+1e-9) {
		t.Fatalf("perf %v top-2 %v all %v", perf.Objective, top.Objective, all.Objective)
	}
	// At most 24 singles + 24·2 pairs, 3 worker types each, plus t.
	if top.Stats.Cols > (24+48)*3+1 || all.Stats.Cols <= top.Stats.Cols {
		t.Fatalf("columns: top-2 %d, all %d", top.Stats.Cols, all.Stats.Cols)
	}
}

// Water filling refines max-min: every job's sf·norm/w is at least LAS's
// optimum, and the smallest equals it. 64 jobs with weights 1-3 and sf 1-2 on
// the embedded table (this size once exposed a tolerance bug: a level met
// only to 1e-9 made the next LP infeasible).
func TestWaterFillingRefinesLAS(t *testing.T) {
	tb := table.Default()
	for _, md := range []string{"_perf", "_packed", ""} {
		p := &Problem{Table: tb, Cluster: Cluster{"v100": 8, "p100": 8, "k80": 8}, Jobs: defaultJobs(tb, 64)}
		las := mustAllocate(t, "max_min_fairness"+md, p)
		wf := mustAllocate(t, "max_min_fairness_water_filling"+md, p)
		// Water filling's objective is the same max-min value as LAS's.
		if !approx(wf.Objective, las.Objective, 1e-5) {
			t.Fatalf("%s: water filling objective %v, LAS %v", md, wf.Objective, las.Objective)
		}
		in, _ := newInstance(p)
		prop := in.prop
		// Agnostic norms are in units of time share, not true throughput.
		if md == "" {
			continue
		}
		lowest := math.Inf(1)
		for i, j := range in.jobs {
			v := in.sf(i) * wf.Effective[j.ID] / prop[i] / in.weight[i]
			if v < las.Objective*(1-1e-5) {
				t.Fatalf("%s: job %s at %v below LAS %v", md, j.ID, v, las.Objective)
			}
			lowest = math.Min(lowest, v)
		}
		if !approx(lowest, las.Objective, 1e-5) {
			t.Fatalf("%s: lowest %v, LAS %v", md, lowest, las.Objective)
		}

	}
}

// randomTable draws 6 job types m0-m5 on worker types g1-g3 with scale factors from sfs,
// isolated rates rate(u) for u uniform in [0, 1) (a sixth of them 0), and every pair of one
// scale factor infeasible with probability 1/4, else each job keeping lo + span·u of its rate.
func randomTable(r *rand.Rand, sfs []int, rate func(float64) float64, lo, span float64) (*table.Table, []table.JobType) {
	ws := []string{"g1", "g2", "g3"}
	tb := table.New()
	var types []table.JobType
	for k := 0; k < 6; k++ {
		ty := table.JobType{Model: fmt.Sprintf("m%d", k), ScaleFactor: sfs[r.IntN(len(sfs))]}
		types = append(types, ty)
		for _, w := range ws {
			v := rate(r.Float64())
			if r.IntN(6) == 0 {
				v = 0
			}
			tb.SetIsolated(w, ty, v)
		}
	}
	for _, a := range types {
		for _, b := range types {
			if a.ScaleFactor != b.ScaleFactor || a.Model > b.Model {
				continue
			}
			for _, w := range ws {
				ra, _ := tb.Isolated(w, a)
				rb, _ := tb.Isolated(w, b)
				if r.IntN(4) == 0 {
					tb.SetInfeasible(w, a, b)
				} else {
					tb.SetPair(w, a, b, ra*(lo+span*r.Float64()), rb*(lo+span*r.Float64()))
				}
			}
		}
	}
	return tb, types
}

// Random instances: every LP policy succeeds and is feasible, and water
// filling refines max-min, with random rates (some zero), weights, scale
// factors and pairs.
func TestRandomInstances(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		tb, types := randomTable(r, []int{1, 2}, func(u float64) float64 { return 0.5 + 4*u }, 0.3, 0.6)
		p := &Problem{Table: tb, Cluster: Cluster{"g1": 1 + r.IntN(6), "g2": 2 + r.IntN(6), "g3": 2 + r.IntN(3)},
			Prices: Prices{"g1": 1, "g2": 2, "g3": 3}}
		n := 5 + r.IntN(40)
		for i := 0; i < n; i++ {
			ty := types[r.IntN(len(types))]
			if in, _ := newInstance(&Problem{Table: tb, Cluster: p.Cluster, Jobs: []Job{job("x", ty, 1)}}); in == nil {
				continue // runs nowhere on this cluster
			}
			p.Jobs = append(p.Jobs, Job{ID: fmt.Sprintf("j%02d", i), Type: ty, Weight: float64(1 + r.IntN(3)),
				TotalSteps: float64(100 + r.IntN(1000)), TimeRun: float64(r.IntN(3) * 50), SLO: float64(r.IntN(2) * 2000)})
		}
		for _, name := range Names() {
			if name == "allox" {
				continue
			}
			a := mustAllocate(t, name, p)
			if strings.HasPrefix(name, "max_min_fairness_water_filling_p") {
				las := mustAllocate(t, strings.Replace(name, "_water_filling", "", 1), p)
				in, _ := prepare(p, perf, &options{})
				for i, j := range in.jobs {
					if v := in.sf(i) * a.Effective[j.ID] / in.prop[i] / in.weight[i]; v < las.Objective*(1-1e-5) {
						t.Fatalf("seed %d %s: job %s %v < %v", seed, name, j.ID, v, las.Objective)
					}
				}
			}
		}
	}
}

func TestGavelName(t *testing.T) {
	for name, want := range map[string]string{"max_min_fairness_perf": "MaxMinFairness_Perf", "fifo_packed": "FIFO_Packing",
		"allox_alpha=0.5": "AlloX_Perf", "gandiva": "Gandiva_Packing", "min_total_duration": "MinTotalDuration"} {
		if got := GavelName(mustNew(t, name)); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// methodRecorder records the LP method of every solve and fails it: only
// the choice is under test.
type methodRecorder struct{ methods *[]lp.Method }

func (r methodRecorder) Solve(_ context.Context, _ *lp.Model, o lp.Options) (*lp.Result, error) {
	*r.methods = append(*r.methods, o.Method)
	return nil, &lp.StatusError{Status: lp.Numerical, Detail: "recorded"}
}

// Automatic method choice on wide packed LPs (128 jobs, about 23,000
// columns), as measured in benchmarks/policy/RESULTS.md: barrier for the
// max-min-shaped LPs whose job rows are tight at the optimum (LAS, water
// filling, FTF: 1.4-5x faster than dual), dual simplex for makespan and
// throughput sums (dual 8-28x faster on makespan, 2x on cost), and dual
// for narrow LPs.
func TestAutoMethod(t *testing.T) {
	tb := table.Default()
	types := tb.JobTypesWithScaleFactor(1)
	wide := &Problem{Table: tb, Cluster: Cluster{"k80": 36, "p100": 36, "v100": 36}, Prices: Prices{"k80": 1, "p100": 2, "v100": 3}}
	for i := 0; i < 128; i++ {
		wide.Jobs = append(wide.Jobs, Job{ID: fmt.Sprintf("j%03d", i), Type: types[(i*7)%len(types)], TotalSteps: 1000})
	}
	for _, tc := range []struct {
		name string
		want lp.Method
	}{
		{"max_min_fairness_packed", lp.Barrier}, {"max_min_fairness_water_filling_packed", lp.Barrier},
		{"finish_time_fairness_packed", lp.Barrier}, {"min_total_duration_packed", lp.Dual},
		{"max_sum_throughput_normalized_by_cost_packed_SLOs", lp.Dual}, {"max_min_fairness_perf", lp.Dual},
	} {
		var got []lp.Method
		pol := mustNew(t, tc.name, WithSolver(methodRecorder{&got}))
		// Water filling retries a level LP the solver fails on with the other methods.
		retries := strings.Contains(tc.name, "water_filling")
		if _, err := pol.Allocate(context.Background(), wide); err == nil || len(got) == 0 || got[0] != tc.want || len(got) != 1 && !retries {
			t.Errorf("%s: methods %v (err %v), want %v", tc.name, got, err, tc.want)
		}
	}
}

// Every policy says what its objective means (the CLI prints it).
func TestObjectiveMeaning(t *testing.T) {
	p := twoJobs(false, 10, 10, cluster(1, 1, 1))
	p.Prices = Prices{"k80": 1, "p100": 1, "v100": 1}
	for _, name := range Names() {
		if a := mustAllocate(t, name, p); a.ObjectiveMeaning == "" {
			t.Errorf("%s: no ObjectiveMeaning", name)
		}
	}
}

// CheckJob says what a policy can never take: AlloX a job of several GPUs (as its Allocate
// does); other policies, and one-GPU jobs, nothing.
func TestCheckJob(t *testing.T) {
	one := Job{ID: "a", Type: table.JobType{Model: "m", ScaleFactor: 1}}
	two := Job{ID: "b", Type: table.JobType{Model: "m", ScaleFactor: 2}}
	for _, tt := range []struct {
		policy string
		job    Job
		bad    bool
	}{
		{"allox", two, true}, {"allox_alpha=0.5", two, true}, {"allox", one, false},
		{"max_min_fairness_packed", two, false}, {"fifo", two, false},
	} {
		p, err := New(tt.policy)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckJob(p, tt.job)
		if got := err != nil; got != tt.bad || got && (!errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "policy "+tt.policy+": job \"b\"")) {
			t.Errorf("%s, scale factor %d: %v; want an input error naming the policy and job: %v", tt.policy, tt.job.Type.ScaleFactor, err, tt.bad)
		}
	}
}

// A written jobs file names types as given, not with json.Marshal's \u003e and \u0026.
func TestWriteJobsLeavesNamesReadable(t *testing.T) {
	jf := &JobsFile{Jobs: []Job{{ID: "a&b", Type: table.JobType{Model: "MemGrow (10 -> 75 GiB)", ScaleFactor: 1}, Weight: 1, TotalSteps: 5}}}
	var b strings.Builder
	if err := WriteJobs(&b, jf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id": "a&b"`, `"type": "MemGrow (10 -> 75 GiB)"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("jobs file lacks %s:\n%s", want, b.String())
		}
	}
}

// WriteJobs writes only what ReadJobs reads back: a job it would refuse is an error naming the
// entry, and nothing is written.
func TestWriteJobsRefusesWhatReadJobsRefuses(t *testing.T) {
	typ := table.JobType{Model: "m", ScaleFactor: 1}
	for _, tt := range []struct {
		name string
		job  Job
		want string
	}{
		{"plus in id", Job{ID: "a+b", Type: typ, Weight: 1, TotalSteps: 5}, `"a+b"`},
		{"weight out of range", Job{ID: "a", Type: typ, Weight: 1e9, TotalSteps: 5}, "weight"},
		{"finished", Job{ID: "a", Type: typ, Weight: 1, TotalSteps: 5, StepsDone: 5}, "no steps left"},
		{"unknown entity", Job{ID: "a", Type: typ, Weight: 1, TotalSteps: 5, Entity: "x"}, `"x"`},
	} {
		var b strings.Builder
		err := WriteJobs(&b, &JobsFile{Jobs: []Job{tt.job}})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "jobs[0]") {
			t.Errorf("%s: %v, want an error naming jobs[0] and %s", tt.name, err, tt.want)
		}
		if b.Len() != 0 {
			t.Errorf("%s: wrote %q with the error", tt.name, b.String())
		}
	}
}

func TestParseMethod(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Method
		ok   bool
	}{
		{"auto", MethodAuto, true},
		{"dual", MethodDual, true},
		{"barrier", MethodBarrier, true},
		{"sprint", MethodSprint, true},
		{"", 0, false},
		{"Dual", 0, false},
		{"simplex", 0, false},
	} {
		got, err := ParseMethod(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseMethod(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if tt.ok && got.String() != tt.in {
			t.Errorf("ParseMethod(%q).String() = %q, want it back", tt.in, got.String())
		}
	}
}

// MissingPairs counts only the pairs a packing policy could form: both types runnable on the
// worker type (an isolated rate above 0, enough GPUs), equal scale factors, a self-pair only
// with two jobs of the type; measured and infeasible pairs are not missing.
func TestMissingPairs(t *testing.T) {
	x, y := table.JobType{Model: "X", ScaleFactor: 1}, table.JobType{Model: "Y", ScaleFactor: 1}
	z, g := table.JobType{Model: "Z", ScaleFactor: 2}, table.JobType{Model: "G", ScaleFactor: 1}
	tb := table.New()
	for jt, r := range map[table.JobType]float64{x: 1, y: 1, z: 2, g: 0} {
		tb.SetIsolated("a", jt, r)
	}
	tb.SetPair("a", x, y, 0.5, 0.5) // missing on a: X+X only (one Y, one Z; G cannot run there)
	for jt, r := range map[table.JobType]float64{x: 1, y: 1, z: 2, g: 1} {
		tb.SetIsolated("b", jt, r)
		tb.SetIsolated("c", jt, r) // not in the cluster
	}
	tb.SetInfeasible("b", x, y) // missing on b: X+X, X+G, Y+G (Z needs 2 GPUs)
	jobs := []Job{{ID: "x1", Type: x}, {ID: "x2", Type: x}, {ID: "y", Type: y}, {ID: "z", Type: z}, {ID: "g", Type: g}}
	for _, tt := range []struct {
		name    string
		cluster Cluster
		jobs    []Job
		want    int
		where   []string
	}{
		{"both", Cluster{"a": 2, "b": 1, "d": 4}, jobs, 4, []string{"a", "b"}},
		{"one X", Cluster{"a": 2, "b": 1}, jobs[1:], 2, []string{"b"}},
		{"no jobs", Cluster{"a": 2, "b": 1}, nil, 0, nil},
	} {
		n, where := MissingPairs(&Problem{Table: tb, Cluster: tt.cluster, Jobs: tt.jobs})
		if n != tt.want || !slices.Equal(where, tt.where) {
			t.Errorf("%s: MissingPairs = %d, %v; want %d, %v", tt.name, n, where, tt.want, tt.where)
		}
	}
}
