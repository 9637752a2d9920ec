package policy

import (
	"context"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// The reference optima of gavel-reference §9.2.

func twoJobs(withPair bool, s0, s1 float64, c Cluster) *Problem {
	return &Problem{Table: t0t1(withPair), Cluster: c,
		Jobs: []Job{job("0", jt("T0"), s0), job("1", jt("T1"), s1)}}
}

func TestReferenceProportionalThroughput(t *testing.T) {
	in, err := newInstance(twoJobs(false, 1, 1, cluster(3, 2, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{0.916667, 1.666667} {
		if !approx(in.prop[i], want, 1e-6) || !approx(in.iso[i], want, 1e-6) {
			t.Fatalf("job %d: prop %v iso %v, want %v", i, in.prop[i], in.iso[i], want)
		}
	}
}

func TestReferenceLASPerf(t *testing.T) {
	a := mustAllocate(t, "max_min_fairness_perf", twoJobs(false, 1, 1, cluster(3, 2, 1)))
	if !approx(a.Objective, 48.0/31, 1e-7) {
		t.Fatalf("t* = %v, want 48/31", a.Objective)
	}
	if !approx(a.Effective["0"], 1.419355, 1e-6) || !approx(a.Effective["1"], 2.580645, 1e-6) {
		t.Fatalf("effective %v", a.Effective)
	}
	for id, n := range a.Normalized {
		if !approx(n, 48.0/31, 1e-6) || !approx(a.Terms[id], 48.0/31, 1e-6) {
			t.Fatalf("job %s normalized %v term %v", id, n, a.Terms[id])
		}
	}
	// Two jobs on six GPUs: the equal share is the proportional rate.
	if !approx(a.EqualShare["0"], 5.5/6, 1e-12) || !approx(a.EqualShare["1"], 10.0/6, 1e-12) {
		t.Fatalf("equal share %v", a.EqualShare)
	}
}

func TestReferenceLASPacked(t *testing.T) {
	a := mustAllocate(t, "max_min_fairness_packed", twoJobs(true, 1, 1, cluster(1, 1, 1)))
	if !approx(a.Objective, 1.5, 1e-7) {
		t.Fatalf("t* = %v, want 1.5", a.Objective)
	}
	// The optimum is degenerate (job 1 may also run alone on v100), but 1.5
	// exceeds the no-pair optimum, so the pair must be used.
	if got := a.Fractions[PairOf("0", "1")]["v100"]; got < 0.5 {
		t.Fatalf("pair on v100 = %v (%v)", got, a.Fractions)
	}
	// Without the pair measured: 24/19.
	a = mustAllocate(t, "max_min_fairness_packed", twoJobs(false, 1, 1, cluster(1, 1, 1)))
	if !approx(a.Objective, 24.0/19, 1e-7) {
		t.Fatalf("t* without pair = %v, want 24/19", a.Objective)
	}
}

func TestReferenceMaxSum(t *testing.T) {
	a := mustAllocate(t, "max_sum_throughput_perf", twoJobs(false, 1, 1, cluster(1, 1, 1)))
	if !approx(a.Objective, 4, 1e-7) || !approx(a.Effective["0"]+a.Effective["1"], 4, 1e-7) {
		t.Fatalf("objective %v effective %v, want 4", a.Objective, a.Effective)
	}
}

func TestReferenceCost(t *testing.T) {
	prices := Prices{"v100": 3.1, "p100": 2.0, "k80": 0.8}
	for _, name := range []string{"max_sum_throughput_normalized_by_cost_perf", "max_sum_throughput_normalized_by_cost_perf_SLOs"} {
		p := twoJobs(false, 100, 100, cluster(1, 1, 1))
		p.Prices = prices
		p.Jobs[0].SLO = 1000
		a := mustAllocate(t, name, p)
		if !approx(a.Objective, 1.895161, 1e-6) {
			t.Fatalf("%s: objective %v, want 1.895161", name, a.Objective)
		}
		if a.Fractions[Single("0")]["v100"] != 1 || a.Fractions[Single("1")]["k80"] != 1 {
			t.Fatalf("%s: %v, want job 0 on v100 and job 1 on k80", name, a.Fractions)
		}
		if len(a.Warnings) != 0 {
			t.Fatalf("%s: warnings %v", name, a.Warnings)
		}
	}
}

func TestReferenceMakespan(t *testing.T) {
	for _, tc := range []struct {
		s0, s1 float64
		c      Cluster
		want   float64
	}{{300, 500, cluster(3, 2, 1), 200}, {3000, 5000, cluster(1, 1, 1), 2000}} {
		a := mustAllocate(t, "min_total_duration_perf", twoJobs(false, tc.s0, tc.s1, tc.c))
		if !approx(a.Objective, tc.want, 1e-7) {
			t.Fatalf("T* = %v, want %v", a.Objective, tc.want)
		}
		if a.Stats.LPs != 2 { // T*, then the time left (makespanUseIdle)
			t.Fatalf("%d LPs, want 2", a.Stats.LPs)
		}
		// Every job finishes by T*.
		for _, j := range twoJobs(false, tc.s0, tc.s1, tc.c).Jobs {
			if fin := j.StepsRemaining() / a.Effective[j.ID]; fin > tc.want*(1+1e-7) || !approx(a.Terms[j.ID], fin, 1e-7) {
				t.Fatalf("job %s finishes at %v > %v (term %v)", j.ID, fin, tc.want, a.Terms[j.ID])
			}
		}
	}
}

func TestReferenceFTF(t *testing.T) {
	pol, err := New("finish_time_fairness_perf")
	if err != nil {
		t.Fatal(err)
	}
	p := twoJobs(false, 300, 500, cluster(3, 2, 1))
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkFeasible(t, p, a)
	if !approx(a.Objective, 0.645833, 1e-6) {
		t.Fatalf("call 1: rho = %v, want 0.645833", a.Objective)
	}
	p.Jobs[0].StepsDone, p.Jobs[1].StepsDone = 100, 200 // 200 and 300 left
	a, err = pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkFeasible(t, p, a)
	if !approx(a.Objective, 0.402778, 1e-6) {
		t.Fatalf("call 2: rho = %v, want 0.402778", a.Objective)
	}
	// A fresh policy has no memory, but credits the steps done with the isolated time they
	// took at today's isolated rates: those did not change, so it finds Gavel's second ρ too
	// (with no credit it gave 0.646 here, the jobs looking further behind than they are).
	a = mustAllocate(t, "finish_time_fairness_perf", p)
	if !approx(a.Objective, 0.402778, 1e-6) {
		t.Fatalf("fresh policy given the jobs' progress: rho = %v, want 0.402778", a.Objective)
	}
	a = mustAllocate(t, "finish_time_fairness", twoJobs(false, 300, 500, cluster(3, 2, 1)))
	if !approx(a.Objective, 1, 1e-7) {
		t.Fatalf("agnostic: rho = %v, want 1", a.Objective)
	}
}

// wfProblem builds a water-filling instance from rate rows in (k80, p100, v100).
func wfProblem(rates [][]float64, weights []float64, c Cluster) *Problem {
	m := map[table.JobType][]float64{}
	p := &Problem{Cluster: c}
	for i, r := range rates {
		ty := jt(string(rune('A' + i)))
		m[ty] = r
		p.Jobs = append(p.Jobs, Job{ID: string(rune('0' + i)), Type: ty, Weight: weights[i], TotalSteps: 1})
	}
	p.Table = rateTable(kpv, m)
	return p
}

// normOf returns eff/prop per job, in job order.
func normOf(t *testing.T, p *Problem, a *Allocation) []float64 {
	in, err := newInstance(p)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		out[i] = a.Effective[j.ID] / in.prop[in.idx[j.ID]]
	}
	return out
}

func assertNorms(t *testing.T, got, want []float64) {
	t.Helper()
	for i := range want {
		if !approx(got[i], want[i], 1e-6) {
			t.Fatalf("norms %v, want %v", got, want)
		}
	}
}

func TestReferenceWaterFilling(t *testing.T) {
	// A: plain max-min gives 1.0; water filling lifts jobs 0 and 1 to 1.5.
	pa := wfProblem([][]float64{{0, 0, 1}, {0, 0, 1}, {1, 1, 1}}, []float64{1, 1, 1}, cluster(1, 1, 1))
	a := mustAllocate(t, "max_min_fairness_water_filling_perf", pa)
	assertNorms(t, normOf(t, pa, a), []float64{1.5, 1.5, 1})
	if l := mustAllocate(t, "max_min_fairness_perf", pa); !approx(l.Objective, 1, 1e-7) {
		t.Fatalf("plain max-min %v, want 1", l.Objective)
	}
	// B: weights (1, 2, 1).
	pb := wfProblem([][]float64{{1, 2, 4}, {1, 2, 4}, {1, 1, 1}}, []float64{1, 2, 1}, cluster(1, 1, 1))
	a = mustAllocate(t, "max_min_fairness_water_filling_perf", pb)
	assertNorms(t, normOf(t, pb, a), []float64{0.857143, 1.714286, 1})
	for i, want := range []float64{2, 4, 1} {
		if id := pb.Jobs[i].ID; !approx(a.Effective[id], want, 1e-6) {
			t.Fatalf("B: effective %v", a.Effective)
		}
	}
	// C: entities e0 = {0, 1} weight 1, e1 = {2} weight 2.
	for _, tc := range []struct {
		policy string
		want   []float64
	}{{EntityFairness, []float64{0.642857, 0.642857, 1.714286}}, {EntityFIFO, []float64{0.857143, 0.428571, 1.714286}}} {
		pc := wfProblem([][]float64{{1, 2, 4}, {1, 2, 4}, {1, 2, 4}}, []float64{1, 1, 1}, cluster(1, 1, 1))
		pc.Entities = map[string]Entity{"e0": {Weight: 1, Policy: tc.policy}, "e1": {Weight: 2, Policy: EntityFairness}}
		pc.Jobs[0].Entity, pc.Jobs[1].Entity, pc.Jobs[2].Entity = "e0", "e0", "e1"
		a = mustAllocate(t, "max_min_fairness_water_filling_perf", pc)
		assertNorms(t, normOf(t, pc, a), tc.want)
	}
}
