package rounds

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// gangInstance draws n jobs of 1, 2 and 4 GPUs with Gavel's generator from
// the embedded table, on 4-16 GPUs of each of k80, p100 and v100; n is
// drawn from [lo, hi].
func gangInstance(tb *table.Table, lo, hi int, seed uint64) *policy.Problem {
	rng := rand.New(rand.NewPCG(seed, 0x6d656173))
	cl := policy.Cluster{"k80": 4 + rng.IntN(13), "p100": 4 + rng.IntN(13), "v100": 4 + rng.IntN(13)}
	n := lo + rng.IntN(hi-lo+1)
	g, err := NewGenerator(GeneratorConfig{Table: tb, Cluster: cl, Reference: "v100", MultiGPU: true, Seed: seed})
	if err != nil {
		panic(err)
	}
	var jobs []policy.Job
	for len(jobs) < n {
		if j, _ := g.Next(); j.Type.ScaleFactor <= 4 {
			jobs = append(jobs, j)
		}
	}
	return &policy.Problem{Table: tb, Cluster: cl, Jobs: jobs}
}

// worstLoss returns the largest fraction of a job's promised throughput
// (the allocation's Effective) that res's rounds did not give it, back-fill
// included, over jobs with at least 0.05 of the time in all.
func worstLoss(p *policy.Problem, a *policy.Allocation, res *RoundsResult) float64 {
	topo, _ := NewTopology(p.Cluster, nil)
	jobs := JobsFromTable(p.Table, topo.WorkerTypes(), p.Jobs)
	pairRate := TablePairRates(p.Table)
	got := map[string]float64{}
	n := float64(len(res.Plans))
	for _, pl := range res.Plans {
		for _, as := range pl.Assignments {
			if c := as.Combination; c.IsPair() {
				ra, rb := pairRate(as.WorkerType, jobs[c.A], jobs[c.B])
				got[c.A] += ra / n
				got[c.B] += rb / n
			} else {
				got[c.A] += jobs[c.A].Rates[as.WorkerType] / n
			}
		}
	}
	worst := 0.0
	for id, eff := range a.Effective {
		time := 0.0
		for _, f := range res.Fidelity[id] {
			time += f.Target
		}
		if eff > 1e-9 && time >= 0.05 {
			worst = max(worst, 1-got[id]/eff)
		}
	}
	return worst
}

// planGangs allocates p with the named policy and plans 200 rounds: the
// configuration, the walk's plan, and RunRounds's.
func planGangs(name string, p *policy.Problem) (cfg RoundsConfig, walk, kept *RoundsResult, err error) {
	pol, _ := policy.New(name)
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		return cfg, nil, nil, err
	}
	topo, _ := NewTopology(p.Cluster, nil)
	cfg = RoundsConfig{Topology: topo, Table: p.Table, Jobs: p.Jobs, Allocation: a, Rounds: 200, RoundSeconds: DefaultRoundSeconds}
	walk, _, _ = runRounds(context.Background(), cfg, false)
	kept, err = RunRounds(context.Background(), cfg)
	return cfg, walk, kept, err
}

// gangPlans is planGangs failing t on an error.
func gangPlans(t *testing.T, name string, p *policy.Problem) (walk, kept *RoundsResult) {
	t.Helper()
	_, walk, kept, err := planGangs(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return walk, kept
}

// Allocations with jobs of several GPUs follow their decomposition where
// it falls less short than the walk. On this realizable finish-time
// fairness allocation of 11 jobs (seed 9027) the walk alone left a 4-GPU
// job 0.34 of its v100 time short after 200 rounds (0.376 after 800).
func TestGangAllocationFollowsRounds(t *testing.T) {
	walk, res := gangPlans(t, "finish_time_fairness_perf", gangInstance(table.Default(), 9, 12, 9027))
	if res.Realizable == nil || !*res.Realizable {
		t.Fatalf("realizable %v, want true", res.Realizable)
	}
	if walk.MaxDeviationAllocated < 0.3 || !res.Decomposed || res.MaxDeviationAllocated > 0.02 {
		t.Errorf("largest shortfall: walk %.3f, kept plan %.3f (decomposed %v); want the walk's above 0.3, the decomposition's kept within 0.02",
			walk.MaxDeviationAllocated, res.MaxDeviationAllocated, res.Decomposed)
	}
}

// Where no rounds realize an allocation (LP policies on more than 8 jobs),
// RunRounds follows the nearest rounds when they fall less short than the
// walk; on 12 instances of 13-20 jobs (seeds 13000 and up) under max-min
// fairness, the worst job's lost share of its promised throughput falls
// from 0.083 to 0.022 on average (measured; over 100 such instances and
// four policies the README gives the figures).
func TestUnrealizableFollowsNearestRounds(t *testing.T) {
	tb := table.Default()
	pol, _ := policy.New("max_min_fairness_perf")
	var walkLoss, keptLoss float64
	n := 0
	for seed := uint64(13000); n < 12; seed++ {
		p := gangInstance(tb, 13, 20, seed)
		a, err := pol.Allocate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		topo, _ := NewTopology(p.Cluster, nil)
		cfg := RoundsConfig{Topology: topo, Table: p.Table, Jobs: p.Jobs, Allocation: a, Rounds: 200, RoundSeconds: DefaultRoundSeconds}
		if r := Realizable(context.Background(), cfg); r == nil || *r {
			continue
		}
		n++
		walk, _, _ := runRounds(context.Background(), cfg, false)
		res, err := RunRounds(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Realizable == nil || *res.Realizable {
			t.Errorf("seed %d: realizable %v, want false", seed, res.Realizable)
		}
		// The plan kept loses the worst-served job no more than either plan.
		dec, _, _ := runRounds(context.Background(), cfg, true)
		if dec == nil || res.MaxThroughputLoss > min(walk.MaxThroughputLoss, dec.MaxThroughputLoss)+1e-9 {
			t.Errorf("seed %d: largest loss: kept %.4f, walk %.4f, nearest rounds' plan %v", seed, res.MaxThroughputLoss, walk.MaxThroughputLoss, dec)
		}
		walkLoss += worstLoss(p, a, walk) / 12
		keptLoss += worstLoss(p, a, res) / 12
	}
	t.Logf("worst job's lost share of its throughput, mean: walk %.3f, kept plan %.3f", walkLoss, keptLoss)
	if keptLoss > 0.6*walkLoss {
		t.Errorf("mean worst loss: walk %.3f, kept plan %.3f; want at most 0.6 of the walk's", walkLoss, keptLoss)
	}
	if math.IsNaN(keptLoss) {
		t.Error("NaN loss")
	}
}

// The nearest rounds weigh each job's time by its rate there: alone, its
// isolated rate; in a pair, its rate beside the partner.
func TestScheduleRates(t *testing.T) {
	tbl, _, one := gangAndSingle()
	two := table.JobType{Model: "n", ScaleFactor: 1}
	tbl.SetIsolated("w", two, 3)
	tbl.SetPair("w", one, two, 0.25, 2)
	jobs := []policy.Job{{ID: "a", Type: one}, {ID: "b", Type: two}}
	topo, _ := NewTopology(policy.Cluster{"w": 1}, nil)
	s := &State{Topology: topo, Jobs: JobsFromTable(tbl, []string{"w"}, jobs), PairRates: TablePairRates(tbl)}
	targets := []*entry{{c: policy.Single("b"), w: "w", sf: 1}, {c: policy.PairOf("a", "b"), w: "w", sf: 1}}
	rate := s.rate(targets)
	for _, c := range []struct {
		id   string
		k    int
		want float64
	}{{"b", 0, 3}, {"a", 1, 0.25}, {"b", 1, 2}} {
		if got := rate(c.id, c.k); got != c.want {
			t.Errorf("rate(%s, %d) = %v, want %v", c.id, c.k, got, c.want)
		}
	}
}

// The nearest rounds weigh targets by rate, so a schedule made for some
// rates is not kept when they change under the same targets: gang a runs
// on v (rate 4) or k (1), gang b on v only, 4 GPUs each; a wants 0.5 on
// each type and b all of v. At rate 4 a keeps 4/13 of v (as in policy's
// TestDecomposeNearestWeighsRates); once a's v rate is 1, 1/4.
func TestScheduleFollowsRates(t *testing.T) {
	tbl := table.New()
	ga := table.JobType{Model: "ga", ScaleFactor: 4}
	gb := table.JobType{Model: "gb", ScaleFactor: 4}
	tbl.SetIsolated("v", ga, 4)
	tbl.SetIsolated("k", ga, 1)
	tbl.SetIsolated("v", gb, 1)
	jobs := []policy.Job{{ID: "a", Type: ga}, {ID: "b", Type: gb}}
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
		policy.Single("a"): {"v": 0.5, "k": 0.5}, policy.Single("b"): {"v": 1}}}
	topo, _ := NewTopology(policy.Cluster{"v": 4, "k": 4}, nil)
	s := &State{Topology: topo, Jobs: JobsFromTable(tbl, topo.WorkerTypes(), jobs), History: NewLedger(DefaultRoundSeconds),
		Options: Options{Decompose: true}}
	aOnV := func() float64 {
		ents := s.entries(alloc)
		es := make([]*entry, len(ents))
		for i := range ents {
			es[i] = &ents[i]
		}
		cs := s.scheduleFor(es)
		if cs == nil || !cs.nearest {
			t.Fatalf("schedule %+v: want the nearest rounds", cs)
		}
		got := 0.0
		for q, conf := range cs.confs {
			for _, k := range conf {
				if cs.keys[k] == (entryKey{policy.Single("a"), "v"}) {
					got += cs.weight[q]
				}
			}
		}
		return got
	}
	if got := aOnV(); math.Abs(got-4.0/13) > 1e-6 {
		t.Errorf("at rate 4, a gets %.4f of v, want 4/13", got)
	}
	s.Jobs["a"].Rates["v"] = 1
	if got := aOnV(); math.Abs(got-0.25) > 1e-6 {
		t.Errorf("at rate 1, a gets %.4f of v, want 1/4", got)
	}
}

// RunRounds says what Realizable says when no gang or pair has time (here
// the 4-GPU job is listed but allocated nothing): true for two single-GPU
// jobs on 4 GPUs, false for three at full time on 2.
func TestRunRoundsVerdictIdleGang(t *testing.T) {
	tbl, gang, one := gangAndSingle()
	for _, c := range []struct {
		gpus int
		ids  []string
		want bool
	}{{4, []string{"a", "b"}, true}, {2, []string{"a", "b", "c"}, false}} {
		jobs := []policy.Job{{ID: "g", Type: gang}}
		alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{policy.Single("g"): {}}}
		for _, id := range c.ids {
			jobs = append(jobs, policy.Job{ID: id, Type: one})
			alloc.Fractions[policy.Single(id)] = map[string]float64{"w": 1}
		}
		topo, _ := NewTopology(policy.Cluster{"w": c.gpus}, nil)
		cfg := RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: 10}
		res, err := RunRounds(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		direct := Realizable(context.Background(), cfg)
		if res.Realizable == nil || *res.Realizable != c.want || direct == nil || *direct != c.want {
			t.Errorf("%d jobs on %d GPUs: RunRounds says %v, Realizable %v; want %v", len(c.ids), c.gpus, res.Realizable, direct, c.want)
		}
	}
}

// Check is Realizable with the nearest rounds' largest loss where no
// rounds give the allocation: two 4-GPU gangs at 0.75 of 6 GPUs (each gets
// 0.5, a third short); three single-GPU jobs at full time on 2 GPUs (the
// rows say no; the nearest rounds give each 2/3, a third short); none for
// a realizable one (one gang at 0.75 beside a single-GPU job), nor where a
// target cannot be served at all (a type the cluster lacks).
func TestCheck(t *testing.T) {
	tbl, gang, one := gangAndSingle()
	check := func(gpus int, jobs []policy.Job, fr map[policy.Combination]map[string]float64) Realizability {
		topo, _ := NewTopology(policy.Cluster{"w": gpus}, nil)
		cfg := RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: &policy.Allocation{Fractions: fr}}
		got := Check(context.Background(), cfg)
		if want := Realizable(context.Background(), cfg); (got.Realizable == nil) != (want == nil) || want != nil && *got.Realizable != *want {
			t.Errorf("Check says %v, Realizable %v", got.Realizable, want)
		}
		return got
	}
	gangs := []policy.Job{{ID: "g1", Type: gang}, {ID: "g2", Type: gang}}
	for _, c := range []struct {
		name string
		got  Realizability
		want *float64
	}{
		{"two gangs", check(6, gangs, map[policy.Combination]map[string]float64{
			policy.Single("g1"): {"w": 0.75}, policy.Single("g2"): {"w": 0.75}}), ptr(1.0 / 3)},
		{"three singles on 2 GPUs", check(2, []policy.Job{{ID: "a", Type: one}, {ID: "b", Type: one}, {ID: "c", Type: one}},
			map[policy.Combination]map[string]float64{policy.Single("a"): {"w": 1}, policy.Single("b"): {"w": 1}, policy.Single("c"): {"w": 1}}),
			ptr(1.0 / 3)},
		{"realizable", check(6, []policy.Job{{ID: "g1", Type: gang}, {ID: "a", Type: one}}, map[policy.Combination]map[string]float64{
			policy.Single("g1"): {"w": 0.75}, policy.Single("a"): {"w": 1}}), nil},
		{"a target on a missing type", check(6, gangs, map[policy.Combination]map[string]float64{
			policy.Single("g1"): {"w": 0.75, "x": 0.25}, policy.Single("g2"): {"w": 0.75}}), nil},
	} {
		switch got := c.got.NearestLoss; {
		case c.want == nil && got != nil:
			t.Errorf("%s: loss %v, want none", c.name, *got)
		case c.want != nil && (got == nil || math.Abs(*got-*c.want) > 1e-6):
			t.Errorf("%s: loss %v, want %v", c.name, got, *c.want)
		}
	}
}

// Where no rounds give the allocation, RunRounds keeps the plan that loses
// the worst-served job less throughput, not the one less short in time: on
// this max-min allocation of 16 jobs (seed 13085) the walk is 0.038 short
// in time and loses a job 4.5% of its throughput, the nearest rounds 0.076
// and 1.6%.
func TestUnrealizableKeepsLessThroughputLoss(t *testing.T) {
	walk, res := gangPlans(t, "max_min_fairness_perf", gangInstance(table.Default(), 13, 20, 13085))
	t.Logf("walk: %.4f short, loss %.4f; kept: %.4f, %.4f", walk.MaxDeviationAllocated, walk.MaxThroughputLoss, res.MaxDeviationAllocated, res.MaxThroughputLoss)
	if !res.Decomposed || res.MaxThroughputLoss >= walk.MaxThroughputLoss || res.MaxDeviationAllocated <= walk.MaxDeviationAllocated {
		t.Errorf("kept plan: decomposed %v, loss %.4f, time short %.4f; walk %.4f, %.4f: want the nearest rounds, less loss, more time short",
			res.Decomposed, res.MaxThroughputLoss, res.MaxDeviationAllocated, walk.MaxThroughputLoss, walk.MaxDeviationAllocated)
	}
}
