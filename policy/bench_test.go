package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/gavelkit/gavel/table"
)

func benchProblem(n int) *Problem {
	tb := table.Default()
	types := tb.JobTypesWithScaleFactor(1)
	per := max(4, (36*n+64)/128)
	p := &Problem{Table: tb, Cluster: Cluster{"k80": per, "p100": per, "v100": per}}
	for i := 0; i < n; i++ {
		p.Jobs = append(p.Jobs, Job{ID: fmt.Sprintf("j%04d", i), Type: types[(i*7)%len(types)], TotalSteps: float64(1000 * (1 + i%5))})
	}
	return p
}

// mixedProblem is benchProblem with weights 1-4 and gangs: jobs of 1, 2, 4
// and 8 GPUs (half of them of one), on 2n/3 GPUs of each type. Water filling
// freezes few jobs a level on it.
func mixedProblem(n int) *Problem {
	tb := table.Default()
	var types []table.JobType
	for _, sf := range []int{1, 1, 1, 2, 4, 8} {
		types = append(types, tb.JobTypesWithScaleFactor(sf)...)
	}
	per := max(8, 2*n/3)
	p := &Problem{Table: tb, Cluster: Cluster{"k80": per, "p100": per, "v100": per}}
	for i := 0; i < n; i++ {
		p.Jobs = append(p.Jobs, Job{ID: fmt.Sprintf("j%04d", i), Type: types[(i*37)%len(types)],
			Weight: float64(1 + (i*13)%4), TotalSteps: float64(1000 * (1 + i%5))})
	}
	return p
}

// fiveTypeProblem is mixedProblem's jobs on 512 GPUs of five made-up
// worker types, copies of the default table's scaled: a (k80), b (p100),
// c (v100), d (p100 x 0.8), e (v100 x 1.7).
func fiveTypeProblem(n int) *Problem {
	d := table.Default()
	tb := table.New()
	for k, w := range []string{"a", "b", "c", "d", "e"} {
		src, mul := []string{"k80", "p100", "v100", "p100", "v100"}[k], []float64{1, 1, 1, 0.8, 1.7}[k]
		for _, j := range d.JobTypes() {
			if r, ok := d.Isolated(src, j); ok {
				tb.SetIsolated(w, j, r*mul)
			}
			for _, o := range d.Partners(src, j) {
				if ra, rb, st := d.Pair(src, j, o); st == table.Infeasible {
					tb.SetInfeasible(w, j, o)
				} else {
					tb.SetPair(w, j, o, ra*mul, rb*mul)
				}
			}
		}
	}
	p := mixedProblem(n)
	p.Table = tb
	p.Cluster = Cluster{"a": 64, "b": 96, "c": 128, "d": 96, "e": 128}
	return p
}

// entityProblem is mixedProblem's n jobs in four entities, two sharing by
// FIFO (weights 1 and 3) and two by fairness (2 and 1), a fifth of them in
// none, arriving in a scrambled order, on per GPUs of each type: with per
// well below n/3 the cluster is full and most FIFO jobs wait, as in a
// simulation's busy rounds.
func entityProblem(n, per int) *Problem {
	p := mixedProblem(n)
	p.Cluster = Cluster{"k80": per, "p100": per, "v100": per}
	p.Entities = map[string]Entity{
		"a": {Weight: 1, Policy: EntityFIFO}, "b": {Weight: 2, Policy: EntityFairness},
		"c": {Weight: 3, Policy: EntityFIFO}, "d": {Weight: 1, Policy: EntityFairness},
	}
	for i := range p.Jobs {
		p.Jobs[i].Entity = []string{"a", "b", "c", "d", ""}[(i*7)%5]
		p.Jobs[i].Arrival = float64((i * 37) % 101)
	}
	return p
}

func benchPolicy(b *testing.B, name string, n int, opts ...Option) {
	benchAllocate(b, benchProblem(n), name, opts...)
}

func benchAllocate(b *testing.B, p *Problem, name string, opts ...Option) {
	pol, err := New(name, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := pol.Allocate(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLASPerf128(b *testing.B)  { benchPolicy(b, "max_min_fairness_perf", 128) }
func BenchmarkLASPacked64(b *testing.B) { benchPolicy(b, "max_min_fairness_packed", 64) }
func BenchmarkLASPacked128Top8(b *testing.B) {
	benchPolicy(b, "max_min_fairness_packed", 128, WithMaxPartners(8))
}
func BenchmarkWaterFillingPerf128(b *testing.B) {
	benchPolicy(b, "max_min_fairness_water_filling_perf", 128)
}
func BenchmarkWaterFillingMixed200(b *testing.B) {
	benchAllocate(b, mixedProblem(200), "max_min_fairness_water_filling_perf")
}
func BenchmarkWaterFillingPackedMixed200(b *testing.B) {
	benchAllocate(b, mixedProblem(200), "max_min_fairness_water_filling_packed", WithMaxPartners(8))
}
func BenchmarkWaterFillingFiveTypes200(b *testing.B) {
	benchAllocate(b, fiveTypeProblem(200), "max_min_fairness_water_filling_perf")
}
func BenchmarkWaterFillingPackedFiveTypes200(b *testing.B) {
	benchAllocate(b, fiveTypeProblem(200), "max_min_fairness_water_filling_packed", WithMaxPartners(8))
}
func BenchmarkWaterFillingPackedFiveTypes500(b *testing.B) {
	benchAllocate(b, fiveTypeProblem(500), "max_min_fairness_water_filling_packed", WithMaxPartners(8))
}

// 2,000 weighted jobs of 1-8 GPUs, a dozen alike of each kind: most levels
// freeze several identical jobs (see stuckByDuals). Tens of seconds an
// iteration; run with -benchtime 1x.
func BenchmarkWaterFilling2000Weighted(b *testing.B) {
	benchAllocateLPs(b, mixedProblem(2000), "max_min_fairness_water_filling_perf")
}

// Hierarchical water filling: 228 jobs in entities on 48 GPUs (full) and
// on 120; each iteration reports its LPs (LPs/op).
func BenchmarkWaterFillingEntities228(b *testing.B) {
	benchAllocateLPs(b, entityProblem(228, 16), "max_min_fairness_water_filling_perf")
}
func BenchmarkWaterFillingEntities228Roomy(b *testing.B) {
	benchAllocateLPs(b, entityProblem(228, 40), "max_min_fairness_water_filling_perf")
}
func BenchmarkWaterFillingPackedEntities228(b *testing.B) {
	benchAllocateLPs(b, entityProblem(228, 16), "max_min_fairness_water_filling_packed", WithMaxPartners(4))
}

func benchAllocateLPs(b *testing.B, p *Problem, name string, opts ...Option) {
	pol, err := New(name, opts...)
	if err != nil {
		b.Fatal(err)
	}
	lps := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, err := pol.Allocate(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		lps = a.Stats.LPs
	}
	b.ReportMetric(float64(lps), "LPs/op")
}

func BenchmarkFTFPerf128(b *testing.B)       { benchPolicy(b, "finish_time_fairness_perf", 128) }
func BenchmarkMakespanPacked64(b *testing.B) { benchPolicy(b, "min_total_duration_packed", 64) }

// FIFO packing on an oversubscribed cluster: most jobs wait and each
// waiting job scans the running ones.
func BenchmarkFIFOPacked2000(b *testing.B) {
	p := benchProblem(2000)
	p.Cluster = Cluster{"k80": 100, "p100": 100, "v100": 100}
	pol, err := New("fifo_packed", WithMaxPartners(1))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := pol.Allocate(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// Gandiva on an oversubscribed cluster, where it draws pairs.
func BenchmarkGandiva2000(b *testing.B) {
	p := benchProblem(2000)
	p.Cluster = Cluster{"k80": 100, "p100": 100, "v100": 100}
	b.ReportAllocs()
	benchAllocate(b, p, "gandiva", WithSeed(1))
}

// AlloX's assignment of 1,000 waiting jobs to 3,000 free GPUs (1,000
// columns a worker type, all alike within a type).
func BenchmarkHungarian1000(b *testing.B) {
	p := benchProblem(1000)
	p.Cluster = Cluster{"k80": 1000, "p100": 1000, "v100": 1000}
	in, err := newInstance(p)
	if err != nil {
		b.Fatal(err)
	}
	var slots []int
	for w := range in.workers {
		for range int(in.cap[w]) {
			slots = append(slots, w)
		}
	}
	waiting := make([]int, in.m())
	for i := range waiting {
		waiting[i] = i
	}
	cost, _, _ := queueCosts(in, waiting, slots)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := hungarian(context.Background(), cost); err != nil {
			b.Fatal(err)
		}
	}
}

// Small instances with gangs, whose LPs are cut until their solutions
// decompose into rounds (roundcuts.go): the first 20 wide-rate problems of
// at most most jobs (waterfill_test.go), one allocation of each per
// iteration.
func benchSmallGangs(b *testing.B, name string, most int) {
	var ps []*Problem
	for seed := uint64(1); len(ps) < 20; seed++ {
		if p := wideRateProblem(seed); len(p.Jobs) > 0 && len(p.Jobs) <= most {
			ps = append(ps, p)
		}
	}
	pol, err := New(name)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range ps {
			if _, err := pol.Allocate(context.Background(), p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkSmallGangsLAS(b *testing.B) {
	benchSmallGangs(b, "max_min_fairness_perf", separateMaxJobs)
}
func BenchmarkSmallGangsWaterFilling(b *testing.B) {
	benchSmallGangs(b, "max_min_fairness_water_filling_perf", separateMaxJobs)
}
func BenchmarkSmallGangsPackedLAS(b *testing.B) {
	benchSmallGangs(b, "max_min_fairness_packed", separateMaxJobs)
}
func BenchmarkSmallGangsPackedWaterFilling(b *testing.B) {
	benchSmallGangs(b, "max_min_fairness_water_filling_packed", separateMaxJobs)
}
