package rounds

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// drawRealizablePairs returns an allocation that is a convex combination
// of k feasible rounds in which each GPU runs a single or, at random, a
// pair of jobs (each job at most once a round), so it can be realized.
func drawRealizablePairs(rng *rand.Rand, types []string, cluster policy.Cluster, ids []string, k int) *policy.Allocation {
	lambda := make([]float64, k)
	sum := 0.0
	for i := range lambda {
		lambda[i] = 0.05 + rng.Float64()
		sum += lambda[i]
	}
	a := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
	for i := 0; i < k; i++ {
		perm := append([]string(nil), ids...)
		rng.Shuffle(len(perm), func(a, b int) { perm[a], perm[b] = perm[b], perm[a] })
		next := 0
		for _, w := range types {
			for g := 0; g < cluster[w] && next < len(perm); g++ {
				c := policy.Single(perm[next])
				next++
				if next < len(perm) && rng.IntN(2) == 0 {
					c = policy.PairOf(c.A, perm[next])
					next++
				}
				if a.Fractions[c] == nil {
					a.Fractions[c] = map[string]float64{}
				}
				a.Fractions[c][w] += lambda[i] / sum
			}
		}
	}
	return a
}

// packedCase draws a cluster, jobs and a realizable packed allocation.
func packedCase(rng *rand.Rand) (*table.Table, *Topology, []policy.Job, *policy.Allocation) {
	tbl := table.New()
	types := []string{"b", "a", "c"}[:1+rng.IntN(3)]
	cluster := policy.Cluster{}
	total := 0
	for _, w := range types {
		cluster[w] = 1 + rng.IntN(6)
		total += cluster[w]
	}
	jt := table.JobType{Model: "m", ScaleFactor: 1}
	for _, w := range types {
		tbl.SetIsolated(w, jt, 1)
		tbl.SetPair(w, jt, jt, 0.7, 0.7)
	}
	var jobs []policy.Job
	var ids []string
	for i := 0; i < total+rng.IntN(3*total); i++ {
		ids = append(ids, strconv.Itoa(i))
		jobs = append(jobs, policy.Job{ID: ids[i], Type: jt})
	}
	alloc := drawRealizablePairs(rng, types, cluster, ids, 1+rng.IntN(4))
	topo, _ := NewTopology(cluster, nil)
	return tbl, topo, jobs, alloc
}

// The decomposition covers a realizable allocation's every target exactly
// with feasible rounds: each job at most once, each type within its GPUs,
// weights summing to at most 1.
func TestDecomposeCoversTargets(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	for i := 0; i < 100; i++ {
		tbl, topo, jobs, alloc := packedCase(rng)
		targets, _, caps := servedTargets(RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc})
		cs, err := decompose(context.Background(), targets, scheduleSignature(targets, caps), caps, nil)
		if err != nil {
			t.Fatal(err)
		}
		covered := make([]float64, len(cs.keys))
		sum := 0.0
		for q, conf := range cs.confs {
			sum += cs.weight[q]
			jobs, used := map[string]bool{}, map[string]int{}
			for _, k := range conf {
				covered[k] += cs.weight[q]
				key := cs.keys[k]
				used[key.w]++
				for _, j := range members(key.c) {
					if jobs[j] {
						t.Fatalf("case %d: configuration %d runs job %s twice", i, q, j)
					}
					jobs[j] = true
				}
			}
			for w, n := range used {
				if n > caps[w] {
					t.Fatalf("case %d: configuration %d uses %d GPUs of %s (has %d)", i, q, n, w, caps[w])
				}
			}
		}
		if sum > 1+1e-9 {
			t.Fatalf("case %d: weights sum to %v", i, sum)
		}
		for k, key := range cs.keys {
			if want := alloc.Fractions[key.c][key.w]; covered[k] < want-1e-7 {
				t.Fatalf("case %d: %v on %s covered %.6f of %.6f", i, key.c, key.w, covered[k], want)
			}
		}
	}
}

// On a sample of realizable packed allocations, following the
// decomposition keeps every job near its targets: after 100 rounds the
// mean of the largest shortfall is 0.0034 and the worst 0.023 (measured;
// the walk serves the cases with more than policy.DecomposeMaxTargets targets; the
// per-entry walk alone: 0.012 and 0.11). RunRounds keeps whichever of the
// two plans falls less short: the walk's on some cases (counted), the
// decomposition's on the others.
func TestFidelityPackedSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 200
	worst, mean := 0.0, 0.0
	walkWins, skipped := 0, 0
	for i := 0; i < n; i++ {
		tbl, topo, jobs, alloc := packedCase(rng)
		cfg := RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: 100, RoundSeconds: DefaultRoundSeconds}
		walk, _, _ := runRounds(context.Background(), cfg, false)
		dec, _, _ := runRounds(context.Background(), cfg, true)
		used := dec != nil
		if !used { // over policy.DecomposeMaxTargets targets
			dec = walk
			skipped++
		}
		worst = max(worst, dec.MaxDeviationAllocated)
		mean += dec.MaxDeviationAllocated / n
		res, err := RunRounds(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		want, wantDec := walk.MaxDeviationAllocated, false
		if used && dec.MaxDeviationAllocated < walk.MaxDeviationAllocated-1e-9 {
			want, wantDec = dec.MaxDeviationAllocated, true
		}
		if res.MaxDeviationAllocated != want || res.Decomposed != wantDec {
			t.Fatalf("case %d: RunRounds kept shortfall %v (decomposed %v); walk %v, decomposition %v",
				i, res.MaxDeviationAllocated, res.Decomposed, walk.MaxDeviationAllocated, dec.MaxDeviationAllocated)
		}
		if used && !res.Decomposed {
			walkWins++
		}
	}
	t.Logf("%d cases (%d too large to decompose): decomposition mean %.4f, worst %.4f; the walk's plan kept in %d of the others",
		n, skipped, mean, worst, walkWins)
	if mean > 0.0055 || worst > 0.035 {
		t.Errorf("mean shortfall %.4f (want ≤ 0.0055), worst %.4f (want ≤ 0.035)", mean, worst)
	}
	if walkWins == 0 || walkWins == n-skipped {
		t.Errorf("the walk's plan kept in %d of %d cases: the sample no longer exercises both", walkWins, n)
	}
}

// A max-min packed allocation of 14 jobs on 3+3+3 GPUs, every GPU busy and
// most jobs at their full time: the per-entry walk's largest shortfall did
// not shrink with the rounds (0.17 after 100 rounds, 0.14 after 400); the
// decomposition converges (0.018, 0.002).
func TestPackedAllocationConverges(t *testing.T) {
	jf, err := policy.LoadJobs("../policy/testdata/packed14.json")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := policy.New("max_min_fairness_packed")
	cluster := policy.Cluster{"v100": 3, "p100": 3, "k80": 3}
	tbl := table.Default()
	alloc, err := p.Allocate(context.Background(), &policy.Problem{Table: tbl, Cluster: cluster, Jobs: jf.Jobs})
	if err != nil {
		t.Fatal(err)
	}
	topo, _ := NewTopology(cluster, nil)
	for _, c := range []struct {
		rounds int
		max    float64
	}{{100, 0.025}, {400, 0.005}} {
		res, err := RunRounds(context.Background(), RoundsConfig{Topology: topo, Table: tbl, Jobs: jf.Jobs, Allocation: alloc, Rounds: c.rounds})
		if err != nil {
			t.Fatal(err)
		}
		if res.MaxDeviationAllocated > c.max {
			t.Errorf("%d rounds: largest shortfall %.4f, want ≤ %.3f", c.rounds, res.MaxDeviationAllocated, c.max)
		}
	}
}

// Max-min packed allocations on Gavel's table (k80, p100, v100, single-GPU
// job types drawn at random) fall in two regimes. With about one job per
// GPU, most GPUs run pairs and the walk drifts (largest shortfall after 100
// rounds 0.02-0.11, measured) while the decomposition stays within
// 0.005-0.021, targets up to 74 included (more than the 60 the
// decomposition was limited to before its master was warm started). With
// 4-5 jobs per GPU each job has a small share, the walk keeps within
// 0.008-0.017 and the decomposition's 0.016-0.028 loses; RunRounds keeps the
// walk's plan there.
func TestPackedPolicyRegimes(t *testing.T) {
	tbl := table.Default()
	var types []table.JobType
	for _, jt := range tbl.JobTypes() {
		if jt.ScaleFactor == 1 {
			types = append(types, jt)
		}
	}
	p, _ := policy.New("max_min_fairness_packed")
	cases := []struct {
		jobs, gpus int
		decBetter  bool
	}{{12, 4, true}, {24, 8, true}, {36, 12, true}, {40, 3, false}, {60, 4, false}}
	for _, c := range cases {
		sumWalk, sumDec := 0.0, 0.0
		for seed := uint64(0); seed < 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(c.jobs)))
			var jobs []policy.Job
			for i := 0; i < c.jobs; i++ {
				jobs = append(jobs, policy.Job{ID: "j" + strconv.Itoa(i), Type: types[rng.IntN(len(types))]})
			}
			cluster := policy.Cluster{"k80": c.gpus, "p100": c.gpus, "v100": c.gpus}
			alloc, err := p.Allocate(context.Background(), &policy.Problem{Table: tbl, Cluster: cluster, Jobs: jobs})
			if err != nil {
				t.Fatal(err)
			}
			topo, _ := NewTopology(cluster, nil)
			cfg := RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: 100, RoundSeconds: DefaultRoundSeconds}
			walk, _, _ := runRounds(context.Background(), cfg, false)
			dec, _, _ := runRounds(context.Background(), cfg, true)
			if dec == nil {
				t.Fatalf("%d jobs on %d GPUs a type, seed %d: not decomposed", c.jobs, c.gpus, seed)
			}
			t.Logf("%d jobs on %d GPUs a type, seed %d: walk %.4f, decomposition %.4f", c.jobs, c.gpus, seed,
				walk.MaxDeviationAllocated, dec.MaxDeviationAllocated)
			sumWalk += walk.MaxDeviationAllocated
			sumDec += dec.MaxDeviationAllocated
			if c.decBetter && dec.MaxDeviationAllocated > 0.025 {
				t.Errorf("%d jobs on %d GPUs a type, seed %d: decomposition %.4f, want ≤ 0.025", c.jobs, c.gpus, seed, dec.MaxDeviationAllocated)
			}
		}
		if c.decBetter && sumDec > sumWalk/2 {
			t.Errorf("%d jobs on %d GPUs a type: mean decomposition %.4f, walk %.4f: want under half", c.jobs, c.gpus, sumDec/3, sumWalk/3)
		}
		if !c.decBetter && sumWalk >= sumDec {
			t.Errorf("%d jobs on %d GPUs a type: mean walk %.4f, decomposition %.4f: want the walk ahead", c.jobs, c.gpus, sumWalk/3, sumDec/3)
		}
	}
}

// A decomposition is for the GPUs it was made on: when the cluster shrinks
// under the same allocation, the next round decomposes again (here: no
// longer realizable, so the walk alternates the pairs) instead of counting
// a configuration for 2 GPUs as run on 1, which starved c+d.
func TestDecompositionFollowsTopology(t *testing.T) {
	tbl := table.New()
	jt := table.JobType{Model: "m", ScaleFactor: 1}
	tbl.SetIsolated("w", jt, 1)
	tbl.SetPair("w", jt, jt, 0.7, 0.7)
	var jobs []policy.Job
	for _, id := range []string{"a", "b", "c", "d"} {
		jobs = append(jobs, policy.Job{ID: id, Type: jt})
	}
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
		policy.PairOf("a", "b"): {"w": 1}, policy.PairOf("c", "d"): {"w": 1},
		policy.Single("a"): {}, policy.Single("b"): {}, policy.Single("c"): {}, policy.Single("d"): {},
	}}
	big, _ := NewTopology(policy.Cluster{"w": 2}, nil)
	small, _ := NewTopology(policy.Cluster{"w": 1}, nil)
	ledger := NewLedger(DefaultRoundSeconds)
	st := &State{Topology: big, Jobs: JobsFromTable(tbl, big.WorkerTypes(), jobs), PairRates: TablePairRates(tbl),
		History: ledger, Options: Options{Decompose: true}}
	Plan(st, alloc, 0) // decomposed for 2 GPUs, not committed
	st.Topology = small
	count := map[string]int{}
	for i := 0; i < 10; i++ {
		p := Plan(st, alloc, float64(i)*DefaultRoundSeconds)
		commitRound(st, ledger, alloc, p, DefaultRoundSeconds)
		for _, a := range p.Assignments {
			count[a.Combination.String()]++
		}
	}
	if count["a+b"] != 5 || count["c+d"] != 5 {
		t.Errorf("rounds per pair on 1 GPU over 10 rounds: %v, want 5 each", count)
	}
}

// Planning the same round twice counts it once: a plan may be discarded.
func TestDecomposedPlanTwiceCountsOnce(t *testing.T) {
	tbl, topo, jobs, alloc := packedCase(rand.New(rand.NewPCG(1, 2)))
	st := &State{Topology: topo, Jobs: JobsFromTable(tbl, topo.WorkerTypes(), jobs), PairRates: TablePairRates(tbl),
		History: NewLedger(DefaultRoundSeconds), Options: Options{Decompose: true}}
	first := Plan(st, alloc, 0)
	again := Plan(st, alloc, 0)
	if !slices.EqualFunc(first.Assignments, again.Assignments, func(a, b Assignment) bool {
		return a.Combination == b.Combination && a.WorkerType == b.WorkerType
	}) {
		t.Errorf("the same round planned twice differs: %v, %v", first.Assignments, again.Assignments)
	}
	Plan(st, alloc, DefaultRoundSeconds)
	if st.schedule == nil || st.schedule.rounds != 2 {
		t.Fatalf("schedule %+v: want 2 rounds counted", st.schedule)
	}
	ran := 0.0
	for _, r := range st.schedule.ran {
		ran += r
	}
	if ran > 2 {
		t.Errorf("configurations counted %v times in 2 rounds", ran)
	}
}

// gangAndSingle is a table of one worker type, w, with a 4-GPU job type g and a 1-GPU job type
// m, both at rate 1 alone there.
func gangAndSingle() (tbl *table.Table, gang, one table.JobType) {
	tbl = table.New()
	gang = table.JobType{Model: "g", ScaleFactor: 4}
	one = table.JobType{Model: "m", ScaleFactor: 1}
	tbl.SetIsolated("w", gang, 1)
	tbl.SetIsolated("w", one, 1)
	return tbl, gang, one
}

// Two 4-GPU gangs on 6 GPUs can never run together, so targets of 0.75
// each cannot both be met. The decomposition refuses (its LP would put the
// whole shortfall on one gang, about 0.5); the plan that follows rounds
// follows the nearest ones instead, which share it (0.25 each, the pair
// beside them served in full), and RunRounds says the allocation is not
// realizable.
func TestDecomposeNearestUnrealizable(t *testing.T) {
	tbl, gang, one := gangAndSingle()
	tbl.SetPair("w", one, one, 0.7, 0.7)
	jobs := []policy.Job{{ID: "g1", Type: gang}, {ID: "g2", Type: gang}, {ID: "a", Type: one}, {ID: "b", Type: one}}
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
		policy.Single("g1"): {"w": 0.75}, policy.Single("g2"): {"w": 0.75},
		policy.PairOf("a", "b"): {"w": 1}, policy.Single("a"): {}, policy.Single("b"): {},
	}}
	topo, _ := NewTopology(policy.Cluster{"w": 6}, nil)
	cfg := RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: 40, RoundSeconds: DefaultRoundSeconds}
	targets, _, caps := servedTargets(cfg)
	if _, err := decompose(context.Background(), targets, scheduleSignature(targets, caps), caps, nil); !errors.Is(err, policy.ErrUnrealizable) {
		t.Fatalf("decompose: err %v, want policy.ErrUnrealizable", err)
	}
	dec, sched, _ := runRounds(context.Background(), cfg, true)
	if dec == nil || sched == nil || !sched.nearest {
		t.Fatalf("plan %v, schedule %+v: want the nearest rounds followed", dec, sched)
	}
	for _, id := range []string{"g1", "g2"} {
		if f := dec.Fidelity[id]["w"]; math.Abs(f.Received-0.5) > 1e-9 {
			t.Errorf("%s received %.4f, want 0.5", id, f.Received)
		}
	}
	for _, id := range []string{"a", "b"} {
		if f := dec.Fidelity[id]["w"]; f.AllocatedDeviation() < -1e-9 {
			t.Errorf("%s short by %.4f, want served in full", id, -f.AllocatedDeviation())
		}
	}
	got, err := RunRounds(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxDeviationAllocated > 0.25+1e-9 || math.Abs(got.MaxThroughputLoss-1.0/3) > 1e-9 {
		t.Errorf("largest shortfall %.3f, throughput loss %.4f; want 0.25 and 1/3 (the gangs share it)",
			got.MaxDeviationAllocated, got.MaxThroughputLoss)
	}
	if got.Realizable == nil || *got.Realizable {
		t.Errorf("realizable %v, want false", got.Realizable)
	}
}

// RunRounds says whether an allocation is realizable: for single-GPU jobs
// without pairs, when it keeps within the jobs' time and the GPUs (three
// jobs at full time on 2 GPUs: no); by the decomposition with gangs or pairs
// (the gangs of TestDecomposeNearestUnrealizable without the pair: still
// not; one gang at 0.75 beside a single at 0.25: yes; two gangs at half the
// time on 4 GPUs and a rounding error more: yes; a realizable packed draw:
// yes); never with a target no round can serve.
func TestRoundsRealizable(t *testing.T) {
	tbl, gang, one := gangAndSingle()
	topo, _ := NewTopology(policy.Cluster{"w": 6}, nil)
	jobs := []policy.Job{{ID: "g1", Type: gang}, {ID: "g2", Type: gang}, {ID: "a", Type: one}, {ID: "b", Type: one}}
	fr := func(g1, g2, a, b float64) *policy.Allocation {
		return &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
			policy.Single("g1"): {"w": g1}, policy.Single("g2"): {"w": g2}, policy.Single("a"): {"w": a}, policy.Single("b"): {"w": b}}}
	}
	rng := rand.New(rand.NewPCG(2, 3))
	ptbl, ptopo, pjobs, palloc := packedCase(rng)
	small, _ := NewTopology(policy.Cluster{"w": 2}, nil)
	four, _ := NewTopology(policy.Cluster{"w": 4}, nil)
	none := table.JobType{Model: "n", ScaleFactor: 1} // rate 0 on w
	tbl = tbl.Clone()
	tbl.SetIsolated("w", none, 0)
	for _, c := range []struct {
		name string
		cfg  RoundsConfig
		want bool
	}{
		{"two gangs", RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: fr(0.75, 0.75, 0, 0)}, false},
		{"gang beside a single", RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: fr(0.75, 0.25, 1, 1)}, true},
		{"singles", RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs[2:], Allocation: fr(0, 0, 1, 1)}, true},
		{"packed draw", RoundsConfig{Topology: ptopo, Table: ptbl, Jobs: pjobs, Allocation: palloc}, true},
		{"singles over the GPUs", RoundsConfig{Topology: small, Table: tbl, Jobs: append(jobs[2:], policy.Job{ID: "c", Type: one}),
			Allocation: &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
				policy.Single("a"): {"w": 1}, policy.Single("b"): {"w": 1}, policy.Single("c"): {"w": 1}}}}, false},
		{"a target on a type the job cannot run on", RoundsConfig{Topology: topo, Table: tbl, Jobs: append(jobs[2:], policy.Job{ID: "n", Type: none}),
			Allocation: &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
				policy.Single("a"): {"w": 1}, policy.Single("n"): {"w": 1}}}}, false},
		// Two gangs that cannot share 4 GPUs, each half the time and a rounding more.
		{"gangs within rounding", RoundsConfig{Topology: four, Table: tbl, Jobs: jobs[:2], Allocation: fr(0.5+6e-10, 0.5+6e-10, 0, 0)}, true},
	} {
		c.cfg.Rounds = 10
		res, err := RunRounds(context.Background(), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Realizable == nil || *res.Realizable != c.want {
			got := "nil"
			if res.Realizable != nil {
				got = strconv.FormatBool(*res.Realizable)
			}
			t.Errorf("%s: realizable %s, want %v", c.name, got, c.want)
		}
	}
}

// RunRounds stops with its context's error, with no result, for a plain allocation and for one
// with gangs and a pair (whose decomposition takes LPs and MILPs); before it took no context and
// ran every round and decomposition to the end whatever the caller wanted.
func TestRunRoundsStopsWithContext(t *testing.T) {
	tbl, gang, one := gangAndSingle()
	tbl.SetPair("w", one, one, 0.7, 0.7)
	topo, _ := NewTopology(policy.Cluster{"w": 6}, nil)
	packed := RoundsConfig{Topology: topo, Table: tbl, Rounds: 40,
		Jobs: []policy.Job{{ID: "g1", Type: gang}, {ID: "g2", Type: gang}, {ID: "a", Type: one}, {ID: "b", Type: one}},
		Allocation: &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
			policy.Single("g1"): {"w": 0.75}, policy.Single("g2"): {"w": 0.75},
			policy.PairOf("a", "b"): {"w": 1}, policy.Single("a"): {}, policy.Single("b"): {},
		}}}
	plain := RoundsConfig{Topology: topo, Table: tbl, Rounds: 40, Jobs: []policy.Job{{ID: "a", Type: one}},
		Allocation: &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{policy.Single("a"): {"w": 0.5}}}}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, cfg := range map[string]RoundsConfig{"packed": packed, "plain": plain} {
		if res, err := RunRounds(canceled, cfg); res != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("%s: RunRounds(canceled) = %v, %v; want no result and context.Canceled", name, res, err)
		}
		if res, err := RunRounds(context.Background(), cfg); err != nil || len(res.Plans) != cfg.Rounds {
			t.Errorf("%s: RunRounds = %v, %v; want %d plans", name, res, err, cfg.Rounds)
		}
	}
}
