package policy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/policy/lp"
	"github.com/gavelkit/gavel/table"
)

// Hand-solved instances for what §9.2 does not cover. Each comment solves
// the LP by hand.

// agnosticHandProblem is TestLASAgnosticHand's instance.
func agnosticHandProblem() *Problem {
	ws := []string{"alpha", "beta"}
	x, y := jt("X"), table.JobType{Model: "Y", ScaleFactor: 2}
	tb := rateTable(ws, map[table.JobType][]float64{x: {10, 1}, y: {7, 3}})
	return &Problem{Table: tb, Cluster: Cluster{"alpha": 2, "beta": 1},
		Jobs: []Job{job("J1", x, 1), job("J2", x, 1), job("J3", y, 1)}}
}

// Agnostic LAS on worker types with made-up names (nothing hard-coded):
// cluster alpha=2, beta=1; J1, J2 sf 1, J3 sf 2 (fits only on alpha).
// Agnostic: maximize t with s1 ≥ t, s2 ≥ t, 2·s3 ≥ t (s = time share).
// GPUs alone, s1 + s2 + 2·s3 ≤ 3, would allow 3t ≤ 3, t = 1 (Gavel's LP:
// s1 = s2 = 1, s3 = 1/2), but no rounds give that: while J3 holds both
// alpha GPUs, J1 and J2 share beta's one GPU, so s1 + s2 ≤ 2 − s3, and
// with s3 = t/2: 2t ≤ 2 − t/2 → t* = 0.8 (s1 = s2 = 0.8, s3 = 0.4: J3
// runs 0.4 of the time, beside J1 on beta for half of it and beside J2 for
// the other half; J1 and J2 run together the remaining 0.6). Rates do not
// matter. With J1 weight 2: s1/2 ≥ t and s1 ≤ 1 → t* = 1/2 (s1 = 1,
// s2 = 1/2, s3 = 1/4 fit: J3 beside J1 a quarter of the time).
func TestLASAgnosticHand(t *testing.T) {
	p := agnosticHandProblem()
	a := mustAllocate(t, "max_min_fairness", p)
	if !approx(a.Objective, 0.8, 1e-8) {
		t.Fatalf("t* = %v, want 0.8", a.Objective)
	}
	if a.Fractions[Single("J3")]["beta"] != 0 {
		t.Fatal("sf-2 job placed on a 1-GPU worker type")
	}
	p.Jobs[0].Weight = 2
	a = mustAllocate(t, "max_min_fairness", p)
	if !approx(a.Objective, 0.5, 1e-9) {
		t.Fatalf("weighted t* = %v, want 0.5", a.Objective)
	}
}

// Zero isolated rate: the job cannot run there and gets no time there
// (Gavel's agnostic LAS allocates it anyway, §3.1.2).
func TestZeroRateForcesZero(t *testing.T) {
	tb := rateTable(kpv, map[table.JobType][]float64{jt("A"): {0, 1, 1}, jt("B"): {1, 1, 1}})
	p := &Problem{Table: tb, Cluster: cluster(4, 1, 1), Jobs: []Job{job("a", jt("A"), 1), job("b", jt("B"), 1)}}
	for _, name := range Names() {
		if strings.Contains(name, "cost") {
			p.Prices = Prices{"k80": 1, "p100": 1, "v100": 1}
		}
		a := mustAllocate(t, name, p) // checkFeasible rejects time on a zero rate
		if a.Fractions[Single("a")]["k80"] != 0 {
			t.Fatalf("%s: job a on k80", name)
		}
	}
}

// Gavel's own test_isolated (§9.1): Isolated's smallest GPU share equals
// agnostic max-min's optimum, and its fractions are 1/3 per type on 4:4:4
// and (k80 1/3, p100 4/9, v100 2/9) on k80 6, p100 8, v100 4.
func TestIsolatedGavel(t *testing.T) {
	for _, c := range []struct {
		cl   Cluster
		frac []float64
	}{{cluster(4, 4, 4), []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}}, {cluster(6, 8, 4), []float64{1.0 / 3, 4.0 / 9, 2.0 / 9}}} {
		for k, sfs := range [][2]int{{1, 1}, {2, 1}, {2, 2}, {4, 1}} {
			want := []float64{1, 1, 2, 1}[k]
			ta := table.JobType{Model: "A", ScaleFactor: sfs[0]}
			tb := table.JobType{Model: "B", ScaleFactor: sfs[1]}
			p := &Problem{Table: rateTable(kpv, map[table.JobType][]float64{ta: {1, 2, 3}, tb: {1, 1, 1}}), Cluster: c.cl,
				Jobs: []Job{job("0", ta, 1), job("1", tb, 1)}}
			iso := mustAllocate(t, "isolated", p)
			las := mustAllocate(t, "max_min_fairness", p)
			if !approx(iso.Objective, want, 1e-9) || !approx(las.Objective, want, 1e-7) {
				t.Fatalf("%v sf %v: isolated %v, LAS %v, want %v", c.cl, sfs, iso.Objective, las.Objective, want)
			}
			for _, id := range []string{"0", "1"} {
				for w, wt := range kpv {
					if !approx(iso.Fractions[Single(id)][wt], c.frac[w], 1e-9) {
						t.Fatalf("%v sf %v job %s: %v", c.cl, sfs, id, iso.Fractions[Single(id)])
					}
				}
			}
		}
	}
}

// Proportional on k80 3, p100 2, v100 2 (N = 7): x_w = n_w/N, times
// min(1, N/Σsf). Jobs sf 2,2,2,2 (Σ = 8): x = (3/8, 2/8, 2/8); k80 takes
// 8·3/8 = 3 GPUs exactly. Smallest share 2·(7/8) = 1.75. On k80 3, p100 2,
// v100 1 the sf-2 jobs cannot use v100 at all (checked by checkFeasible).
func TestProportionalHand(t *testing.T) {
	ty := table.JobType{Model: "A", ScaleFactor: 2}
	p := &Problem{Table: rateTable(kpv, map[table.JobType][]float64{ty: {1, 2, 4}}), Cluster: cluster(3, 2, 2)}
	for i := 0; i < 4; i++ {
		p.Jobs = append(p.Jobs, job(fmt.Sprint(i), ty, 1))
	}
	a := mustAllocate(t, "proportional", p)
	if !approx(a.Objective, 1.75, 1e-12) {
		t.Fatalf("objective %v", a.Objective)
	}
	for w, want := range []float64{3.0 / 8, 2.0 / 8, 2.0 / 8} {
		if got := a.Fractions[Single("2")][kpv[w]]; !approx(got, want, 1e-12) {
			t.Fatalf("%s: %v want %v", kpv[w], got, want)
		}
	}
	p.Cluster = cluster(3, 2, 1)
	mustAllocate(t, "proportional", p)
	// Gavel's proportional throughput of §2.4's example: T = (.5, 1, 2) on 3:2:1 → 5.5/6.
	in, _ := newInstance(&Problem{Table: rateTable(kpv, map[table.JobType][]float64{jt("T"): {.5, 1, 2}}),
		Cluster: cluster(3, 2, 1), Jobs: []Job{job("x", jt("T"), 1)}})
	if !approx(in.prop[0], 5.5/6, 1e-12) {
		t.Fatalf("prop %v", in.prop[0])
	}
}

// Agnostic water filling, cluster 1:1:1. J0 runs only on v100 (rate 5), J1
// and J2 anywhere (rate 1). Agnostic view: rate 1 where runnable and prop 1,
// so norm = time share (s0, s1, s2). Rising together, every job reaches
// share 1 (J0 on v100, J1 and J2 on k80 and p100) and the cluster is full:
// all freeze at 1. True throughputs (5, 1, 1). Plain LAS: 1.
func TestWaterFillingAgnosticHand(t *testing.T) {
	p := wfProblem([][]float64{{0, 0, 5}, {1, 1, 1}, {1, 1, 1}}, []float64{1, 1, 1}, cluster(1, 1, 1))
	a := mustAllocate(t, "max_min_fairness_water_filling", p)
	for i, want := range []float64{5, 1, 1} {
		if !approx(a.Effective[p.Jobs[i].ID], want, 1e-7) {
			t.Fatalf("effective %v", a.Effective)
		}
	}
	if l := mustAllocate(t, "max_min_fairness", p); !approx(l.Objective, 1, 1e-7) {
		t.Fatalf("LAS %v", l.Objective)
	}
}

// packPair is one v100; A and B (type X, rate 2 alone) pair at 1.5 each
// (normalized 0.75 + 0.75); C (type Z, rate 1) pairs with nobody.
func packPair(withC bool) *Problem {
	x, z := jt("X"), jt("Z")
	tb := rateTable([]string{"v100"}, map[table.JobType][]float64{x: {2}, z: {1}})
	tb.SetPair("v100", x, x, 1.5, 1.5)
	p := &Problem{Table: tb, Cluster: Cluster{"v100": 1}, Jobs: []Job{job("A", x, 300), job("B", x, 300)}}
	if withC {
		p.Jobs = append(p.Jobs, job("C", z, 300))
	}
	return p
}

// Packed water filling: norms (eff/prop) with prop = (2, 2, 1). Raising A
// and B together costs 1/0.75 GPU-time per unit in the pair versus 2 as
// singles, so a = 0: 0.75·p = c (A, B), x_C = c, p + c = 1 → c = 3/7, and
// then no job can rise alone (the GPU is full). Norms (3/7, 3/7, 3/7).
func TestWaterFillingPackedHand(t *testing.T) {
	p := packPair(true)
	a := mustAllocate(t, "max_min_fairness_water_filling_packed", p)
	for _, j := range p.Jobs {
		want := 3.0 / 7 * map[string]float64{"A": 2, "B": 2, "C": 1}[j.ID]
		if !approx(a.Effective[j.ID], want, 1e-7) {
			t.Fatalf("effective %v", a.Effective)
		}
	}
	if got := a.Fractions[PairOf("A", "B")]["v100"]; !approx(got, 4.0/7, 1e-7) {
		t.Fatalf("pair fraction %v, want 4/7", got)
	}
}

// Packed FTF and makespan on packPair: iso = 2·1/max(2, 1) = 1, so
// E_iso = 300 s. Packed: the pair full-time gives 1.5 each: ρ = 200/300 =
// 2/3 and makespan 200 s. Without packing each gets half the GPU (rate 1):
// ρ = 1 and makespan 300 s.
func TestPackedFTFAndMakespanHand(t *testing.T) {
	for _, tc := range []struct {
		name string
		want float64
	}{{"finish_time_fairness_packed", 2.0 / 3}, {"finish_time_fairness_perf", 1},
		{"min_total_duration_packed", 200}, {"min_total_duration_perf", 300}} {
		a := mustAllocate(t, tc.name, packPair(false))
		if !approx(a.Objective, tc.want, 1e-7) {
			t.Fatalf("%s: %v, want %v", tc.name, a.Objective, tc.want)
		}
	}
}

// FTF with ages (TimeRun > 0) needs the fractional-programming iterations.
// One v100; A (rate 2, 100 steps, ran 100 s) and B (rate 2, 100 steps, new).
// iso = 1, E_iso = 100 for both. ρ_A = (100 + 100/(2a))/100, ρ_B =
// (100/(2b))/100 with a + b = 1. Equal: 1 + 1/(2a) = 1/(2(1−a)); times
// 2a(1−a): 2a − 2a² + 1 − a = a → 2a² = 1 → a = 1/√2;
// ρ = 1/(2(1 − 1/√2)) = 1.707107.
func TestFTFWithAgeHand(t *testing.T) {
	x := jt("X")
	p := &Problem{Table: rateTable([]string{"v100"}, map[table.JobType][]float64{x: {2}}), Cluster: Cluster{"v100": 1},
		Jobs: []Job{{ID: "A", Type: x, TotalSteps: 100, TimeRun: 100}, {ID: "B", Type: x, TotalSteps: 100}}}
	a := mustAllocate(t, "finish_time_fairness_perf", p)
	want := 1 / (2 * (1 - 1/math.Sqrt2))
	if !approx(a.Objective, want, 1e-7) {
		t.Fatalf("ρ = %v, want %v", a.Objective, want)
	}
	if !approx(a.Fractions[Single("A")]["v100"], 1/math.Sqrt2, 1e-6) {
		t.Fatalf("%v", a.Fractions)
	}
	// Both ratios are equal at the optimum: each job's term is ρ*.
	if !approx(a.Terms["A"], want, 1e-6) || !approx(a.Terms["B"], want, 1e-6) {
		t.Fatalf("terms %v, want both %v", a.Terms, want)
	}
}

// A finish-time fairness policy keeps each job's isolated time across
// calls, for the job it saw last under that id. "A" alone on one v100 at
// rate 2 (isolated rate 2): 100 steps, ρ = 1. Then 1,000 steps, a new job
// under the old id: ρ = 1 again (it used to lose (100 − 1,000)/2 = −450 s
// of isolated time, E_iso = 50, ρ = 10; with two jobs E_iso could turn
// negative and the LP infeasible). Then the same job 400 steps and 200 s
// on: it has 200 s of isolated time, E_iso = 200 + 600/2 = 500, and
// E_alloc = 200 + 600/2, so ρ = 1; 200 steps and 100 s further on, 300 s
// (forgetting the first 200 would give 500/300). Then 100 steps of another
// total, new again: ρ = 1 (inheriting the old job's time would give
// 50/500 = 0.1).
func TestFTFJobsAcrossCalls(t *testing.T) {
	x := jt("X")
	tb := rateTable([]string{"v100"}, map[table.JobType][]float64{x: {2}})
	pol, _ := New("finish_time_fairness_perf")
	for _, j := range []Job{
		{ID: "A", Type: x, TotalSteps: 100},
		{ID: "A", Type: x, TotalSteps: 1000},
		{ID: "A", Type: x, TotalSteps: 1000, StepsDone: 400, TimeRun: 200},
		{ID: "A", Type: x, TotalSteps: 1000, StepsDone: 600, TimeRun: 300},
		{ID: "A", Type: x, TotalSteps: 100},
	} {
		a, err := pol.Allocate(context.Background(), &Problem{Table: tb, Cluster: Cluster{"v100": 1}, Jobs: []Job{j}})
		if err != nil {
			t.Fatal(err)
		}
		if !approx(a.Objective, 1, 1e-9) {
			t.Fatalf("%+v: ρ = %v, want 1", j, a.Objective)
		}
	}
}

// Agnostic makespan, cluster k80 1, v100 1: A (k80 1, v100 4, 400 steps),
// B (k80 1, v100 2, 200 steps). Reference = each job's fastest rate (A 4,
// B 2 everywhere): both full-time give T = 100 s in the planner's view.
// Reference k80: rates 1 → T = 400. Aware: b = B's v100 share, A gets the
// rest: (4 − 3b)/400 = (1 + b)/200 → b = 0.4, T = 200/1.4 = 1000/7.
func TestMakespanAgnosticHand(t *testing.T) {
	a, b := jt("A"), jt("B")
	ws := []string{"k80", "v100"}
	p := &Problem{Table: rateTable(ws, map[table.JobType][]float64{a: {1, 4}, b: {1, 2}}), Cluster: Cluster{"k80": 1, "v100": 1},
		Jobs: []Job{job("a", a, 400), job("b", b, 200)}}
	if got := mustAllocate(t, "min_total_duration", p).Objective; !approx(got, 100, 1e-7) {
		t.Fatalf("agnostic fastest: %v", got)
	}
	if got := mustAllocate(t, "min_total_duration", p, WithReference("k80")).Objective; !approx(got, 400, 1e-7) {
		t.Fatalf("agnostic k80: %v", got)
	}
	if got := mustAllocate(t, "min_total_duration_perf", p).Objective; !approx(got, 1000.0/7, 1e-7) {
		t.Fatalf("aware: %v", got)
	}
	pol, _ := New("min_total_duration", WithReference("tpu"))
	if _, err := pol.Allocate(context.Background(), p); !errors.Is(err, ErrInput) {
		t.Fatalf("unknown reference: %v", err)
	}
}

// Makespan uses the time a job that finishes early could take. twoTypes (k80 1, v100 1), a and
// b both A (k80 1, v100 4), 100 and 1000 steps: b full time on v100 sets T* = 250 s, and a
// then has k80 to itself, finishing in 100 s. Any a-share of 0.4 steps/s meets T*, which is
// what the makespan LP alone returned (a 40% of k80, the rest idle). Agnostic (rate 4 on
// both types): T* = 250 s again, a full time too (25 s in its view), each split by GPUs.
func TestMakespanUsesIdleTime(t *testing.T) {
	for _, tc := range []struct {
		name  string
		termA float64
	}{{"min_total_duration_perf", 100}, {"min_total_duration_packed", 100}, {"min_total_duration", 25}} {
		p := twoTypes(job("a", jt("A"), 100), job("b", jt("A"), 1000))
		a := mustAllocate(t, tc.name, p)
		total := 0.0
		for _, f := range a.Fractions[Single("a")] {
			total += f
		}
		if !approx(a.Objective, 250, 1e-7) || !approx(a.Terms["b"], 250, 1e-7) || !approx(a.Terms["a"], tc.termA, 1e-7) || !approx(total, 1, 1e-7) {
			t.Errorf("%s: T* %v, terms %v, a's time %v (%v); want 250, a %v, 1", tc.name, a.Objective, a.Terms, total, a.Fractions, tc.termA)
		}
	}
}

// Packing with mixed scale factors (Gavel's reshape bug, §11.2). Two v100s;
// A, B sf 1 (rate 2, pair 1.5 each), C sf 2 (rate 4). LAS coefficients
// sf·eff/prop give t ≤ a + 0.75p (A, B with singles a each and pair p),
// t ≤ 2c (C), a + p ≤ 1, 2a + p + 2c ≤ 2. Without more rows the optimum is
// t = 0.8 (a = 0.2, p = 0.8, c = 0.4), which no rounds realize: C takes
// both GPUs, so nothing runs beside it, and A cannot run alone and in the
// pair at once, so a + p + c ≤ 1 (a clique row, cliques.go; 1.4 here).
// With it: c = 1 − a − p, and a + 0.75p < a + p, so p = 0 and t =
// min(a, 2(1 − a)): a = 2/3, c = 1/3, t* = 2/3 (A and B alone 2/3 of the
// time, C the rest). Dual certificate: 1/3 on each t row and on each of
// the cliques {A, A+B, C}, {B, A+B, C}: bound 2/3; the pair's reduced cost
// 2/3 − 0.75·2/3 ≥ 0.
func TestPackedMixedScaleFactors(t *testing.T) {
	x, y := jt("X"), table.JobType{Model: "Y", ScaleFactor: 2}
	tb := rateTable([]string{"v100"}, map[table.JobType][]float64{x: {2}, y: {4}})
	tb.SetPair("v100", x, x, 1.5, 1.5)
	tb.SetPair("v100", y, y, 3, 3)
	p := &Problem{Table: tb, Cluster: Cluster{"v100": 2}, Jobs: []Job{job("A", x, 1), job("B", x, 1), job("C", y, 1)}}
	a := mustAllocate(t, "max_min_fairness_packed", p)
	if !approx(a.Objective, 2.0/3, 1e-7) {
		t.Fatalf("t* = %v, want 2/3", a.Objective)
	}
	for _, j := range []string{"A", "B"} {
		f := a.Fractions
		if sum := f[Single(j)]["v100"] + f[PairOf("A", "B")]["v100"] + f[Single("C")]["v100"]; sum > 1+1e-7 {
			t.Errorf("%s alone, the pair and C take %v of the time; at most one runs at once", j, sum)
		}
	}
	in, _ := prepare(p, packed, &options{})
	if len(in.combos) != 4 { // A, B, C, A+B — never A+C or B+C
		t.Fatalf("%d combinations", len(in.combos))
	}
}

// Cost with SLOs, packed. v100 (price 2) and k80 (price 1), one each; A, B
// type X: v100 2, k80 1; the pair runs only on v100 at 1.5 each (infeasible
// on k80). Objective Σ rate/price: pair 3/2 = 1.5 per unit, single on v100
// 1, on k80 1. Dual y_v100 = y_k80 = 0, job rows 1, 1 bounds it by 2;
// A on k80 + B on v100 reaches 2. SLOs A, B ≥ 1.5 steps/s (150 steps in
// 100 s): with pair share p the best is 2 − p/2, p = 0: each half v100,
// half k80 (1 + 0.5 = 1.5 each): still 2. An SLO of 3 steps/s cannot be
// met (max 2): dropped with a warning that names the job. SLOs of 2 steps/s
// each can each be met alone (v100 full time) but not together (the pair
// gives 1.5): the warning names no job.
func TestCostPackedSLOHand(t *testing.T) {
	x := jt("X")
	tb := rateTable([]string{"k80", "v100"}, map[table.JobType][]float64{x: {1, 2}})
	tb.SetPair("v100", x, x, 1.5, 1.5)
	tb.SetInfeasible("k80", x, x)
	p := &Problem{Table: tb, Cluster: Cluster{"k80": 1, "v100": 1}, Prices: Prices{"k80": 1, "v100": 2},
		Jobs: []Job{{ID: "A", Type: x, TotalSteps: 150, SLO: 100}, {ID: "B", Type: x, TotalSteps: 150, SLO: 100}}}
	a := mustAllocate(t, "max_sum_throughput_normalized_by_cost_packed_SLOs", p)
	if !approx(a.Objective, 2, 1e-7) || a.Effective["A"] < 1.5-1e-7 || a.Effective["B"] < 1.5-1e-7 {
		t.Fatalf("objective %v effective %v", a.Objective, a.Effective)
	}
	p.Jobs[0].TotalSteps = 300
	a = mustAllocate(t, "max_sum_throughput_normalized_by_cost_packed_SLOs", p)
	if want := `SLOs cannot all be met (job "A" needs 3 steps/s, its best rate is 2); solved without SLO constraints (as Gavel does)`; !approx(a.Objective, 2, 1e-7) || len(a.Warnings) != 1 || a.Warnings[0] != want {
		t.Fatalf("objective %v warnings %q, want %q", a.Objective, a.Warnings, want)
	}
	p.Jobs[0].TotalSteps, p.Jobs[1].TotalSteps = 200, 200
	a = mustAllocate(t, "max_sum_throughput_normalized_by_cost_packed_SLOs", p)
	if want := "SLOs cannot all be met; solved without SLO constraints (as Gavel does)"; len(a.Warnings) != 1 || a.Warnings[0] != want {
		t.Fatalf("warnings %q, want %q", a.Warnings, want)
	}
	p.Prices = Prices{"v100": 2}
	pol, _ := New("max_sum_throughput_normalized_by_cost_packed_SLOs")
	if _, err := pol.Allocate(context.Background(), p); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "k80") {
		t.Fatalf("missing price: %v", err)
	}
}

// FIFO, aware: four T0 jobs on 1:1:1 go to v100, p100, k80 in arrival
// order; the fourth waits.
func TestFIFOPerfHand(t *testing.T) {
	p := &Problem{Table: t0t1(false), Cluster: cluster(1, 1, 1)}
	for i := 0; i < 4; i++ {
		j := job(fmt.Sprint(i), jt("T0"), 1)
		j.Arrival = float64(10 - i) // arrival order 3, 2, 1, 0
		p.Jobs = append(p.Jobs, j)
	}
	a := mustAllocate(t, "fifo_perf", p)
	want := map[string]string{"3": "v100", "2": "p100", "1": "k80"}
	for id, w := range want {
		if a.Fractions[Single(id)][w] != 1 {
			t.Fatalf("job %s: %v, want %s", id, a.Fractions[Single(id)], w)
		}
	}
	if a.Effective["0"] != 0 || a.Objective != 3 {
		t.Fatalf("job 0 should wait: %v", a.Effective)
	}
}

// FIFO, agnostic: Gavel puts all 6 jobs of 2:2:2 on v100 (§11.1); ours uses
// each type exactly twice, is deterministic per seed, and keeps jobs on
// their type across calls.
func TestFIFOAgnostic(t *testing.T) {
	p := &Problem{Table: t0t1(false), Cluster: cluster(2, 2, 2)}
	for i := 0; i < 6; i++ {
		p.Jobs = append(p.Jobs, job(fmt.Sprint(i), jt("T1"), 1))
	}
	pol, _ := New("fifo", WithSeed(7))
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkFeasible(t, p, a)
	for _, w := range kpv {
		n := 0.0
		for _, fr := range a.Fractions {
			n += fr[w]
		}
		if n != 2 {
			t.Fatalf("%s used %v times: %v", w, n, a.Fractions)
		}
	}
	b := mustAllocate(t, "fifo", p, WithSeed(7))
	if !reflect.DeepEqual(a.Fractions, b.Fractions) {
		t.Fatal("same seed, different allocation")
	}
	// Call 2: job 0 leaves, job 6 arrives and takes job 0's type.
	p2 := &Problem{Table: p.Table, Cluster: p.Cluster, Jobs: append(append([]Job(nil), p.Jobs[1:]...), job("6", jt("T1"), 1))}
	c, err := pol.Allocate(context.Background(), p2)
	if err != nil {
		t.Fatal(err)
	}
	checkFeasible(t, p2, c)
	for i := 1; i < 6; i++ {
		id := Single(fmt.Sprint(i))
		if !reflect.DeepEqual(a.Fractions[id], c.Fractions[id]) {
			t.Fatalf("job %s moved", id.A)
		}
	}
	if !reflect.DeepEqual(c.Fractions[Single("6")], a.Fractions[Single("0")]) {
		t.Fatalf("job 6 %v, job 0 had %v", c.Fractions[Single("6")], a.Fractions[Single("0")])
	}
}

// Head-of-line blocking: two v100s; A (sf 1) runs, B (sf 2) cannot fit, so
// C (sf 1) waits although a GPU is free.
func TestFIFOHeadOfLine(t *testing.T) {
	x, y := jt("X"), table.JobType{Model: "Y", ScaleFactor: 2}
	p := &Problem{Table: rateTable([]string{"v100"}, map[table.JobType][]float64{x: {1}, y: {1}}), Cluster: Cluster{"v100": 2},
		Jobs: []Job{{ID: "A", Type: x, TotalSteps: 1}, {ID: "B", Type: y, TotalSteps: 1, Arrival: 1}, {ID: "C", Type: x, TotalSteps: 1, Arrival: 2}}}
	a := mustAllocate(t, "fifo_perf", p)
	if a.Effective["A"] != 1 || a.Effective["B"] != 0 || a.Effective["C"] != 0 {
		t.Fatalf("%v", a.Effective)
	}
}

// FIFO ties at equal arrival go by id in CompareIDs' order: "9" before "10" (it was "10",
// by string), and numeric ids before others.
func TestFIFOTiesByID(t *testing.T) {
	x := jt("X")
	tb := rateTable([]string{"v100"}, map[table.JobType][]float64{x: {1}})
	for _, ids := range [][]string{{"10", "9"}, {"b", "9"}, {"10", "09"}} {
		p := &Problem{Table: tb, Cluster: Cluster{"v100": 1}}
		for _, id := range ids {
			p.Jobs = append(p.Jobs, Job{ID: id, Type: x, TotalSteps: 1})
		}
		a := mustAllocate(t, "fifo_perf", p)
		if a.Effective[ids[1]] != 1 || a.Effective[ids[0]] != 0 {
			t.Errorf("ids %q: %v, want %s to run first", ids, a.Effective, ids[1])
		}
	}
}

func TestCompareIDs(t *testing.T) {
	sorted := []string{"01", "1", "2", "9", "10", "100", "A", "a", "a10", "a9"}
	for i, a := range sorted {
		for k, b := range sorted {
			if got, want := CompareIDs(a, b), cmp.Compare(i, k); got != want {
				t.Errorf("CompareIDs(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// FIFO packed: one v100; A runs alone, B joins it when the pair's summed
// normalized rate 1.8/2 + 1.8/2 = 1.8 > 1.5, but not at 1.4/2·2 = 1.4.
func TestFIFOPacked(t *testing.T) {
	for _, tc := range []struct {
		pair    float64
		running float64
	}{{1.8, 2}, {1.4, 1}} {
		x := jt("X")
		tb := rateTable([]string{"v100"}, map[table.JobType][]float64{x: {2}})
		tb.SetPair("v100", x, x, tc.pair, tc.pair)
		p := &Problem{Table: tb, Cluster: Cluster{"v100": 1}, Jobs: []Job{job("A", x, 1), job("B", x, 1)}}
		a := mustAllocate(t, "fifo_packed", p)
		if a.Objective != tc.running {
			t.Fatalf("pair %v: %v running, want %v (%v)", tc.pair, a.Objective, tc.running, a.Fractions)
		}
	}
}

// Gandiva: with enough GPUs it is Isolated; when oversubscribed it forms
// seeded random pairs of equal scale factor only where measured.
func TestGandiva(t *testing.T) {
	p := &Problem{Table: t0t1(true), Cluster: cluster(2, 2, 2), Jobs: []Job{job("0", jt("T0"), 1), job("1", jt("T1"), 1)}}
	g := mustAllocate(t, "gandiva", p)
	iso := mustAllocate(t, "isolated", p)
	if !reflect.DeepEqual(g.Fractions, iso.Fractions) {
		t.Fatalf("gandiva %v, isolated %v", g.Fractions, iso.Fractions)
	}
	x := jt("X")
	tb := rateTable([]string{"v100"}, map[table.JobType][]float64{x: {2}, jt("Y"): {1}})
	tb.SetPair("v100", x, x, 1.5, 1.5)
	tb.SetInfeasible("v100", x, jt("Y"))
	p = &Problem{Table: tb, Cluster: Cluster{"v100": 1}}
	for i := 0; i < 6; i++ {
		p.Jobs = append(p.Jobs, job(fmt.Sprint(i), x, 1))
	}
	p.Jobs = append(p.Jobs, job("y", jt("Y"), 1))
	pol, _ := New("gandiva", WithSeed(3))
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkFeasible(t, p, a)
	if a.Objective < 1 {
		t.Fatalf("no pairs formed: %v", a.Fractions)
	}
	for c := range a.Fractions {
		if c.IsPair() && (c.A == "y" || c.B == "y") {
			t.Fatalf("infeasible pair %s", c)
		}
	}
	b := mustAllocate(t, "gandiva", p, WithSeed(3))
	if !reflect.DeepEqual(a.Fractions, b.Fractions) {
		t.Fatal("same seed, different allocation")
	}
	// Second call: pairs with score 1.5 ≥ 1 persist.
	c, err := pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for k := range a.Fractions {
		if _, ok := c.Fractions[k]; k.IsPair() && !ok {
			t.Fatalf("pair %s dissolved", k)
		}
	}
}

// AlloX, Gavel's test_allox (§9.1). Call 1 on v100 2, p100 1, k80 3 with
// rates (v100, p100, k80) T0 (2,1,.5), T1 (3,2,1), (4,3,2), (1,1,1) and
// steps 300/500/1000/500: six free GPUs, so each job is first on its GPU
// and the cost is Σ steps/rate. Best: 0 and 1 on v100 (150 + 166.7), 2 on
// p100 (333.3), 3 on k80 (500) = 1150 (tied with 0, 2 on v100 and 1 on
// p100: 150 + 250 + 250 + 500). Call 2 keeps the survivors' GPUs; job 4
// takes the free v100.
func TestAlloXGavel(t *testing.T) {
	ty := func(s string) table.JobType { return jt(s) }
	tb := rateTable(kpv, map[table.JobType][]float64{ty("J0"): {.5, 1, 2}, ty("J1"): {1, 2, 3}, ty("J2"): {2, 3, 4}, ty("J3"): {1, 1, 1}, ty("J4"): {1, 2, 4}})
	cl := Cluster{"v100": 2, "p100": 1, "k80": 3}
	p := &Problem{Table: tb, Cluster: cl, Jobs: []Job{job("0", ty("J0"), 300), job("1", ty("J1"), 500), job("2", ty("J2"), 1000), job("3", ty("J3"), 500)}}
	pol, _ := New("allox")
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkFeasible(t, p, a)
	if !approx(a.Objective, 1150, 1e-9) {
		t.Fatalf("cost %v, want 1150", a.Objective)
	}
	if a.Fractions[Single("0")]["v100"] != 1 || a.Fractions[Single("3")]["k80"] != 1 {
		t.Fatalf("%v", a.Fractions)
	}
	p2 := &Problem{Table: tb, Cluster: cl, Jobs: []Job{
		{ID: "1", Type: ty("J1"), TotalSteps: 100, TimeRun: 200}, {ID: "2", Type: ty("J2"), TotalSteps: 800, TimeRun: 200},
		{ID: "3", Type: ty("J3"), TotalSteps: 400, TimeRun: 200}, {ID: "4", Type: ty("J4"), TotalSteps: 100}}}
	b, err := pol.Allocate(context.Background(), p2)
	if err != nil {
		t.Fatal(err)
	}
	checkFeasible(t, p2, b)
	for _, id := range []string{"1", "2", "3"} {
		if !reflect.DeepEqual(a.Fractions[Single(id)], b.Fractions[Single(id)]) {
			t.Fatalf("job %s moved: %v → %v", id, a.Fractions[Single(id)], b.Fractions[Single(id)])
		}
	}
	if b.Fractions[Single("4")]["v100"] != 1 {
		t.Fatalf("job 4: %v", b.Fractions[Single("4")])
	}
	// sf > 1 is rejected.
	y := table.JobType{Model: "Y", ScaleFactor: 2}
	tb.SetIsolated("v100", y, 1)
	tb.SetIsolated("p100", y, 1)
	tb.SetIsolated("k80", y, 1)
	p.Jobs = append(p.Jobs, job("big", y, 1))
	if _, err := pol.Allocate(context.Background(), p); !errors.Is(err, ErrInput) {
		t.Fatalf("sf 2 accepted: %v", err)
	}
}

func TestHungarianBruteForce(t *testing.T) {
	// 3 rows × 4 columns, checked against all 24 injective maps.
	c := [][]float64{{4, 1, 3, 9}, {2, 0, 5, 3}, {3, 2, 2, 7}}
	got, err := hungarian(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(a []int) float64 { return c[0][a[0]] + c[1][a[1]] + c[2][a[2]] }
	best := math.Inf(1)
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			for k := 0; k < 4; k++ {
				if i != j && j != k && i != k {
					best = math.Min(best, sum([]int{i, j, k}))
				}
			}
		}
	}
	if sum(got) != best {
		t.Fatalf("hungarian %v cost %v, brute force %v", got, sum(got), best)
	}
}

// twoTypes: k80 1 and v100 1; A (k80 1, v100 4), B (k80 1, v100 2).
func twoTypes(jobs ...Job) *Problem {
	return &Problem{Table: rateTable([]string{"k80", "v100"}, map[table.JobType][]float64{jt("A"): {1, 4}, jt("B"): {1, 2}, jt("V"): {0, 4}}),
		Cluster: Cluster{"k80": 1, "v100": 1}, Jobs: jobs}
}

// Max-sum throughput: A on v100 (4) + B on k80 (1) = 5 beats the swap (3);
// the dual (v100 3, k80 1, job rows 1, 0) bounds it by 5.
//
// Cost with a binding SLO, prices k80 1, v100 2: per unit of time A earns
// 2 on v100 and 1 on k80, B 1 on either. Without SLOs: A v100, B k80 = 3.
// B's SLO of 150 steps in 100 s needs 2·b_v + b_k ≥ 1.5, so b_v ≥ 1/2;
// the objective is at most 3 − b_v = 2.5 (A keeps k80 time ≤ b_v), reached
// with every share 1/2: A 2.5 steps/s, B 1.5.
func TestMaxSumAndCostHand(t *testing.T) {
	a := mustAllocate(t, "max_sum_throughput_perf", twoTypes(job("a", jt("A"), 1), job("b", jt("B"), 1)))
	if !approx(a.Objective, 5, 1e-9) || a.Fractions[Single("a")]["v100"] != 1 {
		t.Fatalf("%v %v", a.Objective, a.Fractions)
	}
	p := twoTypes(Job{ID: "a", Type: jt("A"), TotalSteps: 100}, Job{ID: "b", Type: jt("B"), TotalSteps: 150, SLO: 100})
	p.Prices = Prices{"k80": 1, "v100": 2}
	if got := mustAllocate(t, "max_sum_throughput_normalized_by_cost_perf", p).Objective; !approx(got, 3, 1e-9) {
		t.Fatalf("no SLO: %v", got)
	}
	a = mustAllocate(t, "max_sum_throughput_normalized_by_cost_perf_SLOs", p)
	if !approx(a.Objective, 2.5, 1e-9) || !approx(a.Effective["a"], 2.5, 1e-7) || !approx(a.Effective["b"], 1.5, 1e-7) {
		t.Fatalf("SLO: %v %v", a.Objective, a.Effective)
	}
	// The SLO counts from arrival and constrains what is left, as Gavel's
	// (deadline − now, steps remaining): B has done 100 of 250 steps and has
	// been in the system 50 s of its 150 s, so again 150 steps in 100 s and
	// 2.5. (Total steps would need 2.5 steps/s, more than B's best, 2: the
	// SLO would be dropped and the objective 3; the full 150 s would need
	// only 1 steps/s, which B gets on k80 alone: 3 again.)
	p.Jobs[1] = Job{ID: "b", Type: jt("B"), TotalSteps: 250, StepsDone: 100, TimeRun: 50, SLO: 150}
	a = mustAllocate(t, "max_sum_throughput_normalized_by_cost_perf_SLOs", p)
	if !approx(a.Objective, 2.5, 1e-9) || !approx(a.Effective["b"], 1.5, 1e-7) || len(a.Warnings) != 0 {
		t.Fatalf("SLO with progress: %v %v %v", a.Objective, a.Effective, a.Warnings)
	}
}

// Agnostic FTF (fastest-rate view): V runs only on v100 (rate 4), B and C
// anywhere (fastest 2). m = 3 > N = 2, so iso = rate·n/3: V 4/3, B and C
// (2+2)/3 = 4/3. Steps V 400, B and C 200: E_iso = 300, 150, 150. With time
// shares s: ρ_V = (100/s_V)/300, ρ_B = (100/s_B)/150, same for C. Equal ρ:
// s_V = 1/(3ρ), s_B = s_C = 2/(3ρ), and s_V + s_B + s_C = 2 GPUs gives
// ρ* = 5/6 (s_V = 0.4 on v100; B and C 0.8 each on k80 + the v100 rest).
func TestFTFAgnosticHand(t *testing.T) {
	p := twoTypes(job("v", jt("V"), 400), job("b", jt("B"), 200), job("c", jt("B"), 200))
	a := mustAllocate(t, "finish_time_fairness", p)
	if !approx(a.Objective, 5.0/6, 1e-7) {
		t.Fatalf("ρ = %v, want 5/6", a.Objective)
	}
}

// The max-min normalizer is Gavel's proportional rate (§2.4, §3.1), computed
// from the table whatever the job can use:
//
// Agnostic (§3.1.2): T ≡ 1, so prop = 1 and attained GPU time is equalized.
// Cluster alpha 1, beta 1; J1 runs only on alpha, J2 and J3 anywhere.
// max t: s1, s2, s3 ≥ t, s1 ≤ 1, s1 + s2 + s3 ≤ 2 → t* = 2/3 (J1 2/3 of
// alpha; J2 and J3 share the rest). Water filling stops there too (the
// cluster is full), so J1 runs at 3·2/3 = 2 steps/s. (A normalizer that
// counted only the types a job can use, prop_J1 = 1/2, gave J1 less GPU
// time: t = 0.8 with s1 = 0.4.)
//
// Aware: one sf-2 job Y (alpha 4, beta 6) on alpha 2, beta 1. It fits only
// on alpha, but prop = (4·2 + 6·1)/3 = 14/3 as in Gavel, so t* = sf·eff/prop
// = 2·4/(14/3) = 12/7 (not 2·4/(8/3) = 3).
func TestLASNormalizerIsGavels(t *testing.T) {
	ws := []string{"alpha", "beta"}
	x, z := jt("X"), jt("Z")
	p := &Problem{Table: rateTable(ws, map[table.JobType][]float64{x: {3, 0}, z: {1, 2}}), Cluster: Cluster{"alpha": 1, "beta": 1},
		Jobs: []Job{job("J1", x, 1), job("J2", z, 1), job("J3", z, 1)}}
	if got := mustAllocate(t, "max_min_fairness", p).Objective; !approx(got, 2.0/3, 1e-9) {
		t.Fatalf("agnostic LAS t* = %v, want 2/3", got)
	}
	if got := mustAllocate(t, "max_min_fairness_water_filling", p).Effective["J1"]; !approx(got, 2, 1e-7) {
		t.Fatalf("agnostic water filling: J1 at %v steps/s, want 2", got)
	}
	y := table.JobType{Model: "Y", ScaleFactor: 2}
	p = &Problem{Table: rateTable(ws, map[table.JobType][]float64{y: {4, 6}}), Cluster: Cluster{"alpha": 2, "beta": 1},
		Jobs: []Job{job("J", y, 1)}}
	if got := mustAllocate(t, "max_min_fairness_perf", p).Objective; !approx(got, 12.0/7, 1e-9) {
		t.Fatalf("aware LAS t* = %v, want 12/7", got)
	}
}

// The equal-share rate is what the equal split (the isolated policy)
// delivers, so the isolated policy's normalized throughput is 1 for every
// job. Hand case: V runs only on v100 (rate 2) of k80 3, v100 1, alone:
// its equal share is the whole cluster, of which it can use the v100 full
// time: 2 steps/s (Gavel's Σ_w T_w·n_w/max(m·sf, N) = 2/4 counts the k80s
// it cannot use). LAS gives it the v100: normalized 1.
func TestEqualShareIsIsolatedRate(t *testing.T) {
	v := jt("V")
	p := &Problem{Table: rateTable(kpv, map[table.JobType][]float64{v: {0, 0, 2}}), Cluster: cluster(3, 0, 1), Jobs: []Job{job("v", v, 1)}}
	a := mustAllocate(t, "max_min_fairness_perf", p)
	if !approx(a.EqualShare["v"], 2, 1e-12) || !approx(a.Normalized["v"], 1, 1e-9) {
		t.Fatalf("equal share %v normalized %v, want 2 and 1", a.EqualShare, a.Normalized)
	}
	// The embedded table has a job type that cannot run on k80 (ResNet-50,
	// batch size 128, sf 2) and sf 4 jobs that fit only where there are 4
	// GPUs; few jobs (m·sf < N) and many.
	tb := table.Default()
	r50 := table.JobType{Model: "ResNet-50 (batch size 128)", ScaleFactor: 2}
	big := table.JobType{Model: "LM (batch size 20)", ScaleFactor: 4}
	for _, jobs := range [][]Job{
		{job("a", r50, 1), job("b", big, 1), job("c", jt("A3C"), 1)},
		defaultJobs(tb, 30),
	} {
		p := &Problem{Table: tb, Cluster: Cluster{"v100": 8, "p100": 2, "k80": 6}, Jobs: jobs}
		iso := mustAllocate(t, "isolated", p)
		for id, n := range iso.Normalized {
			if !approx(n, 1, 1e-9) {
				t.Fatalf("%d jobs: isolated policy, job %s: normalized %v, want 1", len(jobs), id, n)
			}
		}
	}
}

// Top-k partners (k = 1), one v100, rates 1 alone: pair scores (summed
// normalized rates) X+Y 1.8, X+Z 1.2, Y+Z 1.5, W+X 1.5, W+Y 1.5. Best
// partners: X → Y, Y → X, Z → Y, W → X (tie with Y: X is earlier in id
// order). Kept: W+X, X+Y, Y+Z; dropped: W+Y, X+Z.
func TestTopPartners(t *testing.T) {
	ty := map[string]table.JobType{"W": jt("W"), "X": jt("X"), "Y": jt("Y"), "Z": jt("Z")}
	rates := map[table.JobType][]float64{}
	for _, j := range ty {
		rates[j] = []float64{1}
	}
	tb := rateTable([]string{"v100"}, rates)
	for _, p := range []struct {
		a, b  string
		score float64
	}{{"X", "Y", 1.8}, {"X", "Z", 1.2}, {"Y", "Z", 1.5}, {"W", "X", 1.5}, {"W", "Y", 1.5}, {"W", "Z", 0.2}} {
		tb.SetPair("v100", ty[p.a], ty[p.b], p.score/2, p.score/2)
	}
	p := &Problem{Table: tb, Cluster: Cluster{"v100": 1}}
	for _, id := range []string{"W", "X", "Y", "Z"} {
		p.Jobs = append(p.Jobs, job(id, ty[id], 1))
	}
	in, err := prepare(p, packed, &options{maxPartners: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for c := in.m(); c < len(in.combos); c++ {
		got = append(got, in.key(c).Key())
	}
	if fmt.Sprint(got) != "[W+X X+Y Y+Z]" {
		t.Fatalf("pairs %v, want [W+X X+Y Y+Z]", got)
	}
}

// The agnostic policies split each job's time over worker types by GPU count, as Gavel's
// isolated policy does (test_isolated: k80 1/3, p100 4/9, v100 2/9 on 6:8:4): the simplex
// vertex put all of it on k80, the first type by name and in Gavel's table the slowest.
// Objectives are those of the unspread LP (checked against the isolated policy's split,
// which is one of its optima).
func TestAgnosticSpreadsByGPUs(t *testing.T) {
	c := cluster(6, 8, 4)
	want := map[string]float64{"k80": 1.0 / 3, "p100": 4.0 / 9, "v100": 2.0 / 9}
	for _, name := range []string{"max_min_fairness", "max_min_fairness_water_filling", "min_total_duration", "finish_time_fairness"} {
		t.Run(name, func(t *testing.T) {
			p := &Problem{Table: t0t1(false), Cluster: c, Jobs: []Job{job("0", jt("T0"), 300), job("1", jt("T1"), 500)}}
			a := mustAllocate(t, name, p)
			checkFeasible(t, p, a)
			for _, id := range []string{"0", "1"} {
				total := 0.0 // below 1 for makespan's shorter job
				for _, f := range a.Fractions[Single(id)] {
					total += f
				}
				for w, f := range want {
					if got := a.Fractions[Single(id)][w]; total < 0.5 || !approx(got, total*f, 1e-7) {
						t.Errorf("job %s on %s: %v, want %v of its %v (all: %v)", id, w, got, f, total, a.Fractions[Single(id)])
					}
				}
			}
		})
	}
	// Finish-time fairness whose LP moves off its isolated start (job 0 is behind): the
	// vertex put job 0 on v100 and the others on k80.
	jobs := []Job{job("0", jt("T0"), 300), job("1", jt("T1"), 500), job("2", jt("T1"), 500), job("3", jt("T0"), 900)}
	jobs[0].TimeRun = 2000
	ftf := mustAllocate(t, "finish_time_fairness", &Problem{Table: t0t1(false), Cluster: cluster(1, 1, 1), Jobs: jobs})
	for id, fr := range ftf.Fractions {
		if !approx(fr["k80"], fr["p100"], 1e-7) || !approx(fr["k80"], fr["v100"], 1e-7) || fr["k80"] < 0.01 {
			t.Errorf("finish_time_fairness: %v: %v, want the same time on each type", id, fr)
		}
	}
	// Capacity first: A runs only on k80 and needs all of it, so B gets v100 alone.
	a, b := jt("A"), jt("B")
	tb := rateTable([]string{"k80", "v100"}, map[table.JobType][]float64{a: {1, 0}, b: {1, 2}})
	p := &Problem{Table: tb, Cluster: Cluster{"k80": 1, "v100": 1}, Jobs: []Job{job("a", a, 1), job("b", b, 1)}}
	got := mustAllocate(t, "max_min_fairness", p)
	if !approx(got.Fractions[Single("a")]["k80"], 1, 1e-7) || !approx(got.Fractions[Single("b")]["v100"], 1, 1e-7) ||
		got.Fractions[Single("b")]["k80"] > 1e-7 {
		t.Errorf("fractions %v, want a on k80 and b on v100, each full time", got.Fractions)
	}
}

// nthFailSolver solves with COIN but fails its call number fail (from 1) as infeasible.
type nthFailSolver struct {
	fail  int
	calls *int
}

func (f nthFailSolver) Solve(ctx context.Context, m *lp.Model, o lp.Options) (*lp.Result, error) {
	*f.calls++
	if *f.calls == f.fail {
		return nil, &lp.StatusError{Status: lp.Infeasible}
	}
	return lp.Default().Solve(ctx, m, o)
}

// When the spreading LP fails (it can, after an LP that stopped at its limit of re-solves),
// the allocation is the first LP's, with a warning: it was a hard error.
func TestAgnosticSpreadFailureKeepsAllocation(t *testing.T) {
	a, b := jt("A"), jt("B")
	tb := rateTable([]string{"k80", "v100"}, map[table.JobType][]float64{a: {1, 0}, b: {1, 2}})
	p := &Problem{Table: tb, Cluster: Cluster{"k80": 1, "v100": 1}, Jobs: []Job{job("a", a, 1), job("b", b, 1)}}
	calls := 0
	got := mustAllocate(t, "max_min_fairness", p, WithSolver(nthFailSolver{fail: 2, calls: &calls}))
	checkFeasible(t, p, got)
	if calls != 2 || !approx(got.Objective, 1, 1e-7) || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "not split by GPU count") {
		t.Errorf("%d LPs, objective %v, warnings %q: want 2, 1 and the spread's", calls, got.Objective, got.Warnings)
	}
}

// A packed policy refuses a pair rate that is NaN, infinite or negative, as it refuses such an
// isolated rate: it skipped the pair as if not measured.
func TestPackedRefusesBadPairRates(t *testing.T) {
	for _, bad := range []float64{math.NaN(), math.Inf(1), -1} {
		tb := t0t1(true)
		tb.SetPair("v100", jt("T0"), jt("T1"), bad, 1)
		p := &Problem{Table: tb, Cluster: cluster(1, 1, 1), Jobs: []Job{job("0", jt("T0"), 100), job("1", jt("T1"), 100)}}
		pol, _ := New("max_min_fairness_packed")
		_, err := pol.Allocate(context.Background(), p)
		if !errors.Is(err, ErrInput) || !strings.Contains(fmt.Sprint(err), `worker type "v100": pair ('T0', 1) + ('T1', 1)`) {
			t.Errorf("pair rate %v: %v, want an input error naming the pair", bad, err)
		}
	}
}

// Max-sum policies break ties by FIFO order (arrival, then id), not by the simplex corner:
// jobs a and b of one type on one v100 give the same sum whoever runs, so the earlier job
// runs (the corner had given the later id all the time, and a trace of identical jobs ran
// last in, first out). With b arriving first, b runs; "9" comes before "10".
func TestMaxSumTiesFavourEarlierJobs(t *testing.T) {
	prices := Prices{"k80": 1, "v100": 2}
	for _, name := range []string{"max_sum_throughput_perf", "max_sum_throughput_normalized_by_cost_perf",
		"max_sum_throughput_normalized_by_cost_perf_SLOs", "max_sum_throughput_normalized_by_cost_packed_SLOs"} {
		for _, tc := range []struct {
			ids      [2]string
			arrivals [2]float64
			want     string
		}{{[2]string{"a", "b"}, [2]float64{0, 0}, "a"}, {[2]string{"a", "b"}, [2]float64{5, 0}, "b"}, {[2]string{"10", "9"}, [2]float64{0, 0}, "9"}} {
			var jobs []Job
			for k, id := range tc.ids {
				j := job(id, jt("A"), 100)
				j.Arrival = tc.arrivals[k]
				jobs = append(jobs, j)
			}
			p := &Problem{Table: rateTable([]string{"v100"}, map[table.JobType][]float64{jt("A"): {4}}), Cluster: Cluster{"v100": 1}, Jobs: jobs, Prices: prices}
			a := mustAllocate(t, name, p)
			if got := a.Fractions[Single(tc.want)]["v100"]; !approx(got, 1, 1e-7) || !approx(a.Objective, 4/map[bool]float64{true: 2, false: 1}[strings.Contains(name, "cost")], 1e-7) {
				t.Errorf("%s, ids %v arriving %v: %s has %v of the v100 (objective %v), want all of it: %v", name, tc.ids, tc.arrivals, tc.want, got, a.Objective, a.Fractions)
			}
		}
	}
}

// A job whose SLO is already missed is said once in an allocation's warnings (the tie-break
// LP built the SLO rows a second time, and said it again).
func TestMissedSLOWarnedOnce(t *testing.T) {
	p := twoTypes(Job{ID: "a", Type: jt("A"), TotalSteps: 100},
		Job{ID: "b", Type: jt("B"), TotalSteps: 150, TimeRun: 200, SLO: 100})
	p.Prices = Prices{"k80": 1, "v100": 2}
	a := mustAllocate(t, "max_sum_throughput_normalized_by_cost_perf_SLOs", p)
	n := 0
	for _, w := range a.Warnings {
		if strings.Contains(w, "already missed") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the missed SLO said %d times, want once: %q", n, a.Warnings)
	}
}

// Gandiva makes combinations of the pairs it forms alone: it built every
// pair of equal-scale-factor jobs (about 2 million mallocs and 490 MB a
// call at 2,000 jobs; now 22,000 and 5 MB), of which it looks up a few.
func TestGandivaBuildsOnlyFormedPairs(t *testing.T) {
	p := benchProblem(1000)
	p.Cluster = Cluster{"k80": 50, "p100": 50, "v100": 50}
	pol, err := New("gandiva", WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	var a *Allocation
	mallocs := testing.AllocsPerRun(1, func() {
		if a, err = pol.Allocate(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	})
	if a.Objective < 100 {
		t.Fatalf("%v pairs formed, want hundreds", a.Objective)
	}
	if mallocs > 50000 {
		t.Errorf("%.0f mallocs a call for 1,000 jobs, want at most 50,000 (every pair took about 500,000)", mallocs)
	}
}
