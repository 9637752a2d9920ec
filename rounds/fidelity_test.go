package rounds

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
	"pgregory.net/rapid"
)

// draws is where a fidelity case gets its random choices: rapid (property
// tests, shrinking) or a seeded generator (a fixed sample).
type draws interface {
	intRange(lo, hi int, label string) int
	float(lo, hi float64, label string) float64
	perm(xs []string, label string) []string
	pick(xs []string, label string) string
	fataler
	Fatal(args ...any)
}

type rapidDraws struct{ *rapid.T }

func (d rapidDraws) intRange(lo, hi int, l string) int { return rapid.IntRange(lo, hi).Draw(d.T, l) }
func (d rapidDraws) float(lo, hi float64, l string) float64 {
	return rapid.Float64Range(lo, hi).Draw(d.T, l)
}
func (d rapidDraws) perm(xs []string, l string) []string { return rapid.Permutation(xs).Draw(d.T, l) }
func (d rapidDraws) pick(xs []string, l string) string   { return rapid.SampledFrom(xs).Draw(d.T, l) }

type seededDraws struct {
	*testing.T
	rng *rand.Rand
}

func (d seededDraws) intRange(lo, hi int, _ string) int { return lo + d.rng.IntN(hi-lo+1) }
func (d seededDraws) float(lo, hi float64, _ string) float64 {
	return lo + (hi-lo)*d.rng.Float64()
}
func (d seededDraws) perm(xs []string, _ string) []string {
	out := append([]string(nil), xs...)
	d.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
func (d seededDraws) pick(xs []string, _ string) string { return xs[d.rng.IntN(len(xs))] }

// drawRealizable returns a steady allocation that is a convex combination of
// k integral schedules (each job on at most one GPU), so it is feasible and,
// with at least as many jobs as GPUs, uses every GPU (every worker type's
// targets sum to its GPU count).
// With singleType, each job's target lies on one worker type.
func drawRealizable(t draws, types []string, cluster policy.Cluster, ids []string, singleType bool) *policy.Allocation {
	k := t.intRange(1, 4, "schedules")
	lambda := make([]float64, k)
	sum := 0.0
	for i := range lambda {
		lambda[i] = t.float(0.05, 1, "lambda")
		sum += lambda[i]
	}
	a := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
	for _, id := range ids {
		a.Fractions[policy.Single(id)] = map[string]float64{}
	}
	home := map[string][]string{}
	next := 0
	for _, w := range types {
		// Every type gets at least as many jobs as GPUs, so none idles.
		for g := 0; g < cluster[w]; g++ {
			home[w] = append(home[w], ids[next])
			next++
		}
	}
	for _, id := range ids[next:] {
		w := t.pick(types, "home")
		home[w] = append(home[w], id)
	}
	for i := 0; i < k; i++ {
		if singleType {
			for _, w := range types {
				perm := t.perm(home[w], "perm")
				for g := 0; g < cluster[w] && g < len(perm); g++ {
					a.Fractions[policy.Single(perm[g])][w] += lambda[i] / sum
				}
			}
			continue
		}
		perm := t.perm(ids, "perm")
		next := 0
		for _, w := range types {
			for g := 0; g < cluster[w] && next < len(perm); g++ {
				a.Fractions[policy.Single(perm[next])][w] += lambda[i] / sum
				next++
			}
		}
	}
	return a
}

// After 20 rounds on a steady job set of single-GPU jobs whose targets each
// lie on one worker type (and sum to each type's GPU count, as
// drawRealizable's do), every job's time fraction is within 0.05 (one round)
// of its target. This is the class the bound is claimed for: each worker type
// is then its own Pfair instance (weights ≤ 1 summing to its GPU count), the
// mechanism schedules it by PD², and PD² is optimal for Pfair (Anderson and
// Srinivasan), i.e. keeps every lag within (-1, 1) round at every round;
// TestFidelityPfairEveryRoundSingleTypeRounds checks that strong form.
func TestFidelityAfter20Rounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		if d := fidelityCase(rapidDraws{t}, true); d > 0.05+1e-9 {
			t.Fatalf("max deviation %.4f after 20 rounds", d)
		}
	})
}

// Targets split over several worker types couple the types (a job runs in
// one place per round), and keeping every entry within one round is then
// not always achieved: of 160,000 random cases (rapid seeds 1, 2, 3, 7) 7
// exceeded 0.05, the worst 0.076 (the greedy walk before the augmenting
// paths: about 1 in 40, worst 0.28). This pins a bound no case
// came near; TestFidelitySplitSampleAfter20Rounds pins the rate.
func TestFidelityMultiTypeAfter20Rounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		if d := fidelityCase(rapidDraws{t}, false); d > 0.15 {
			t.Fatalf("max deviation %.4f after 20 rounds", d)
		}
	})
}

// A fixed sample of 2,000 split-target cases (seeded, so the count is
// reproducible): at most 2 may exceed 0.05, none 0.1 (measured: none above
// 0.05). The greedy walk without augmenting paths exceeded 0.05 in 22 of
// them, the worst 0.106.
func TestFidelitySplitSampleAfter20Rounds(t *testing.T) {
	d := seededDraws{t, rand.New(rand.NewPCG(20, 5))}
	over, worst := 0, 0.0
	for i := 0; i < 2000; i++ {
		dev := fidelityCase(d, false)
		worst = max(worst, dev)
		if dev > 0.05+1e-9 {
			over++
		}
	}
	t.Logf("2000 cases: %d above 0.05, worst %.4f", over, worst)
	if over > 2 || worst > 0.1 {
		t.Errorf("%d of 2000 cases above 0.05 (want at most 2), worst %.4f (want ≤ 0.1)", over, worst)
	}
}

func fidelityCase(t draws, singleType bool) float64 {
	tbl := table.New()
	types := []string{"b", "a", "c"}[:t.intRange(1, 3, "types")]
	cluster := policy.Cluster{}
	total := 0
	for _, w := range types {
		cluster[w] = t.intRange(1, 6, "n_"+w)
		total += cluster[w]
	}
	n := t.intRange(total, 3*total, "jobs")
	var jobs []policy.Job
	var ids []string
	jt := table.JobType{Model: "m", ScaleFactor: 1}
	for _, w := range types {
		tbl.SetIsolated(w, jt, 1)
	}
	for i := 0; i < n; i++ {
		id := strconv.Itoa(i)
		ids = append(ids, id)
		jobs = append(jobs, policy.Job{ID: id, Type: jt})
	}
	alloc := drawRealizable(t, types, cluster, ids, singleType)
	topo, _ := NewTopology(cluster, nil)
	res, err := RunRounds(context.Background(), RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Plans {
		checkPlan(t, &State{Topology: topo, Jobs: JobsFromTable(tbl, types, jobs)}, p)
	}
	return res.MaxDeviation
}

// A hand-solved case: 3 jobs share 2 GPUs equally (2/3 each); in 3 rounds
// each job must run exactly twice.
func TestFidelityThreeJobsTwoGPUs(t *testing.T) {
	tbl := table.New()
	jt := table.JobType{Model: "m", ScaleFactor: 1}
	tbl.SetIsolated("g", jt, 1)
	topo, _ := NewTopology(policy.Cluster{"g": 2}, nil)
	var jobs []policy.Job
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
	for i := 0; i < 3; i++ {
		id := strconv.Itoa(i)
		jobs = append(jobs, policy.Job{ID: id, Type: jt})
		alloc.Fractions[policy.Single(id)] = map[string]float64{"g": 2.0 / 3}
	}
	for _, rounds := range []int{3, 6, 30} {
		res, err := RunRounds(context.Background(), RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: rounds})
		if err != nil {
			t.Fatal(err)
		}
		for id, f := range res.Fidelity {
			if math.Abs(f["g"].Received-2.0/3) > 1e-9 {
				t.Errorf("%d rounds: job %s received %.4f, want 2/3", rounds, id, f["g"].Received)
			}
		}
	}
}

// A real heterogeneity-aware LAS allocation on a steady job set (8 jobs, one
// of them on 2 GPUs, 2 GPUs of each type): the targets are split over up to
// three types per job, and fidelity converges as rounds accumulate
// (measured 0.032, 0.011, 0.005 since allocations with gangs also follow
// their decomposition where it falls less short; the walk alone 0.047,
// 0.022, 0.009; the greedy walk without augmenting paths 0.055, 0.025,
// 0.010).
func TestFidelityMaxMinFairnessPerfRounds(t *testing.T) {
	tbl := table.Default()
	cluster := policy.Cluster{"v100": 2, "p100": 2, "k80": 2}
	var jobs []policy.Job
	for i, m := range []string{"ResNet-18 (batch size 64)", "Transformer (batch size 32)", "Recommendation (batch size 1024)",
		"A3C", "LM (batch size 20)", "CycleGAN", "ResNet-50 (batch size 64)", "LM (batch size 80)"} {
		sf := 1
		if i == 4 {
			sf = 2
		}
		jobs = append(jobs, policy.Job{ID: string(rune('a' + i)), Type: table.JobType{Model: m, ScaleFactor: sf}, TotalSteps: 1e5})
	}
	p, err := policy.New("max_min_fairness_perf")
	if err != nil {
		t.Fatal(err)
	}
	alloc, err := p.Allocate(context.Background(), &policy.Problem{Table: tbl, Cluster: cluster, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	topo, _ := NewTopology(cluster, map[string]int{"v100": 2, "p100": 2, "k80": 2})
	for _, tt := range []struct {
		rounds int
		max    float64
	}{{20, 0.05}, {40, 0.025}, {100, 0.01}} {
		res, err := RunRounds(context.Background(), RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: tt.rounds})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d rounds: max deviation %.4f", tt.rounds, res.MaxDeviation)
		if res.MaxDeviation > tt.max {
			t.Errorf("%d rounds: max deviation %.4f, want ≤ %.3f", tt.rounds, res.MaxDeviation, tt.max)
		}
	}
}

// The single-type class in its strong form: PD² keeps every job within one
// round of its target after every round, not only after 20 (lag strictly
// between -1 and 1 round), so the fraction is within 0.05 from round 20 on.
func TestFidelityPfairEveryRoundSingleTypeRounds(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := rapidDraws{rt}
		types := []string{"b", "a", "c"}[:d.intRange(1, 3, "types")]
		cluster := policy.Cluster{}
		total := 0
		for _, w := range types {
			cluster[w] = d.intRange(1, 8, "n_"+w)
			total += cluster[w]
		}
		n := d.intRange(total, 3*total, "jobs")
		jobs := map[string]*Job{}
		var ids []string
		for i := 0; i < n; i++ {
			id := strconv.Itoa(i)
			ids = append(ids, id)
			jobs[id] = &Job{ID: id, ScaleFactor: 1, Order: i, Rates: map[string]float64{}}
			for _, w := range types {
				jobs[id].Rates[w] = 1
			}
		}
		alloc := drawRealizable(d, types, cluster, ids, true)
		topo, _ := NewTopology(cluster, nil)
		ledger := NewLedger(360)
		s := &State{Topology: topo, Jobs: jobs, History: ledger}
		for r := 1; r <= 40; r++ {
			p := Plan(s, alloc, float64(r-1)*360)
			busy := make([]Busy, len(p.Assignments))
			for k, a := range p.Assignments {
				busy[k] = Busy{a.Combination, a.WorkerType, 360}
			}
			ledger.Record(alloc, func(string) bool { return true }, 360, busy)
			s.Previous = p.Placement()
			for _, id := range ids {
				c := policy.Single(id)
				for _, w := range types {
					if lag := (ledger.Owed(c, w) - ledger.Received(c, w)) / 360; math.Abs(lag) >= 1-1e-9 {
						rt.Fatalf("round %d: job %s on %s is %.3f rounds behind its target %.3f", r, id, w, lag, alloc.Fractions[c][w])
					}
				}
			}
		}
	})
}

// Hand-computed back-fill: time a job gets only because a GPU would idle is
// reported as BackFill and left out of the allocated deviation.
func TestFidelityBackFill(t *testing.T) {
	tbl := table.New()
	jt := table.JobType{Model: "m", ScaleFactor: 1}
	tbl.SetIsolated("a", jt, 1)
	tbl.SetIsolated("b", jt, 1)
	tests := []struct {
		name    string
		cluster policy.Cluster
		targets []map[string]float64 // per job "0", "1", …
		want    []map[string]Fidelity
		maxDev  float64
		rounds  int // 0: 4
	}{{
		// Two jobs share a's GPU half and half; b has no target, so the job
		// that sits out on a runs on b as back-fill: each job gets 2 of 4
		// rounds on a (allocated) and the other 2 on b (back-fill).
		name: "no target on b", cluster: policy.Cluster{"a": 1, "b": 1},
		targets: []map[string]float64{{"a": 0.5}, {"a": 0.5}},
		want: []map[string]Fidelity{
			{"a": {Target: 0.5, Received: 0.5}, "b": {Received: 0.5, BackFill: 0.5}},
			{"a": {Target: 0.5, Received: 0.5}, "b": {Received: 0.5, BackFill: 0.5}}},
		maxDev: 0.5,
	}, {
		// One job with target 1/4 alone on a GPU: round 0 is its due, after
		// that it is a round ahead (1 received ≥ 1/4 owed + 1/4 next), so
		// rounds 1-3 are back-fill.
		name: "already ahead", cluster: policy.Cluster{"a": 1},
		targets: []map[string]float64{{"a": 0.25}},
		want:    []map[string]Fidelity{{"a": {Target: 0.25, Received: 1, BackFill: 0.75}}},
		maxDev:  0.75,
	}, {
		// Target 0.4 over 10 rounds: it runs every round (received 1), of
		// which 4 rounds' worth count towards its target and 0.6 is
		// back-fill. Rounds 1-9 are all marked back-fill in the plans (it is
		// a round ahead from round 1), which once made backfill 0.9 and the
		// allocated deviation -0.3, an under-delivery that never happened.
		name: "ahead, target 0.4", cluster: policy.Cluster{"a": 1}, rounds: 10,
		targets: []map[string]float64{{"a": 0.4}},
		want:    []map[string]Fidelity{{"a": {Target: 0.4, Received: 1, BackFill: 0.6}}},
		maxDev:  0.6,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo, err := NewTopology(tt.cluster, nil)
			if err != nil {
				t.Fatal(err)
			}
			var jobs []policy.Job
			alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
			for i, x := range tt.targets {
				id := strconv.Itoa(i)
				jobs = append(jobs, policy.Job{ID: id, Type: jt})
				alloc.Fractions[policy.Single(id)] = x
			}
			n := tt.rounds
			if n == 0 {
				n = 4
			}
			res, err := RunRounds(context.Background(), RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: n})
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tt.want {
				for w, fw := range want {
					got := res.Fidelity[strconv.Itoa(i)][w]
					if math.Abs(got.Target-fw.Target) > 1e-9 || math.Abs(got.Received-fw.Received) > 1e-9 ||
						math.Abs(got.BackFill-fw.BackFill) > 1e-9 {
						t.Errorf("job %d on %s: got %+v, want %+v", i, w, got, fw)
					}
				}
			}
			if math.Abs(res.MaxDeviation-tt.maxDev) > 1e-9 || math.Abs(res.MaxDeviationAllocated) > 1e-9 {
				t.Errorf("max deviation %.4f (allocated %.4f), want %.4f (0)", res.MaxDeviation, res.MaxDeviationAllocated, tt.maxDev)
			}
		})
	}
}

// FIFO policies never back-fill, in RunRounds as in Simulate: job c, queued
// behind b (4 GPUs, which v100=2 cannot hold), has no target and must wait
// on the idle v100s rather than run there. The policy is known from
// RoundsConfig.Policy or, without it, from the allocation's policy name.
func TestRunRoundsFIFONeverBackFills(t *testing.T) {
	tbl := table.Default()
	cluster := policy.Cluster{"v100": 2, "k80": 4}
	topo, err := NewTopology(cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	r50 := table.JobType{Model: "ResNet-50 (batch size 32)", ScaleFactor: 4}
	jobs := []policy.Job{{ID: "a", Type: r50, TotalSteps: 1e5}, {ID: "b", Type: r50, TotalSteps: 1e5, Arrival: 1},
		{ID: "c", Type: table.JobType{Model: "A3C", ScaleFactor: 1}, TotalSteps: 1e5, Arrival: 2}}
	for _, name := range []string{"fifo", "fifo_perf", "fifo_packed"} {
		pol, err := policy.New(name)
		if err != nil {
			t.Fatal(err)
		}
		alloc, err := pol.Allocate(context.Background(), &policy.Problem{Table: tbl, Cluster: cluster, Jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		for _, known := range []policy.Policy{pol, nil} {
			res, err := RunRounds(context.Background(), RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: 3, Policy: known})
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range res.Plans {
				for _, a := range p.Assignments {
					if a.Target <= 0 || a.BackFill {
						t.Errorf("%s (policy given: %v) round %d: %s runs on %s with target %v", name, known != nil, i, a.Combination, a.WorkerType, a.Target)
					}
				}
			}
		}
	}
	// The same allocation under a policy that back-fills does run c.
	alloc, err := mustPolicy(t, "fifo_perf").Allocate(context.Background(), &policy.Problem{Table: tbl, Cluster: cluster, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	alloc.Policy = "max_min_fairness_perf"
	res, err := RunRounds(context.Background(), RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Fidelity["c"]["v100"].Received != 1 {
		t.Errorf("back-filling policy: c received %v on v100, want 1", res.Fidelity["c"]["v100"].Received)
	}
}

func mustPolicy(t *testing.T, name string) policy.Policy {
	t.Helper()
	p, err := policy.New(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The order of the jobs given changes no plan: ties between equal priorities go by arrival,
// then id (the slice's order decided, and a reordered jobs file put jobs on other GPUs).
func TestRunRoundsIgnoresJobOrder(t *testing.T) {
	jf, err := policy.LoadJobs("../examples/jobs.json")
	if err != nil {
		t.Fatal(err)
	}
	tbl := table.Default()
	cluster := policy.Cluster{"v100": 4, "p100": 4, "k80": 4}
	topo, err := NewTopology(cluster, map[string]int{"v100": 4, "p100": 4, "k80": 4})
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := policy.New("max_min_fairness_packed")
	alloc, err := pol.Allocate(context.Background(), &policy.Problem{Table: tbl, Cluster: cluster, Jobs: jf.Jobs})
	if err != nil {
		t.Fatal(err)
	}
	var plans []string
	reversed := slices.Clone(jf.Jobs)
	slices.Reverse(reversed)
	for _, jobs := range [][]policy.Job{jf.Jobs, reversed} {
		res, err := RunRounds(context.Background(), RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc, Rounds: 6})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, p := range res.Plans {
			fmt.Fprintf(&b, "%+v\n", p.Assignments)
		}
		plans = append(plans, b.String())
	}
	if plans[0] != plans[1] {
		t.Errorf("plans differ with the jobs reversed:\n%s\n%s", plans[0], plans[1])
	}
}

// RunRounds refuses what it planned for without a word: a missing topology, table or
// allocation panicked; a job type the table lacks never ran and showed no loss.
func TestRunRoundsChecksConfig(t *testing.T) {
	tbl := table.New()
	m := table.JobType{Model: "m", ScaleFactor: 1}
	tbl.SetIsolated("g", m, 1)
	topo, _ := NewTopology(policy.Cluster{"g": 2}, nil)
	jobs := []policy.Job{{ID: "a", Type: m}, {ID: "b", Type: m}}
	alloc := func(fr map[string]map[string]float64) *policy.Allocation {
		a := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
		for id, x := range fr {
			a.Fractions[policy.Single(id)] = x
		}
		return a
	}
	good := RoundsConfig{Topology: topo, Table: tbl, Jobs: jobs, Allocation: alloc(map[string]map[string]float64{"a": {"g": 1}, "b": {"g": 0.5}}), Rounds: 4}
	tests := []struct {
		name string
		edit func(*RoundsConfig)
		want string
	}{
		{"no topology", func(c *RoundsConfig) { c.Topology = nil }, "topology, table and allocation are required"},
		{"no allocation", func(c *RoundsConfig) { c.Allocation = nil }, "topology, table and allocation are required"},
		{"NaN round", func(c *RoundsConfig) { c.RoundSeconds = math.NaN() }, "round length NaN"},
		{"type not in table", func(c *RoundsConfig) {
			c.Jobs = []policy.Job{jobs[0], {ID: "b", Type: table.JobType{Model: "typo", ScaleFactor: 1}}}
		},
			`jobs[1]: job "b": job type ('typo', 1) is not in the throughput table`},
		{"repeated id", func(c *RoundsConfig) { c.Jobs = []policy.Job{jobs[0], jobs[0]} }, `jobs[1]: job "a": duplicate id`},
		{"unknown job", func(c *RoundsConfig) { c.Jobs = jobs[:1] }, `allocation: b: job "b" is not among the jobs`},
		{"fraction above 1", func(c *RoundsConfig) { c.Allocation = alloc(map[string]map[string]float64{"a": {"g": 1.5}}) }, "fraction 1.5 is outside [0, 1]"},
	}
	for _, tt := range tests {
		c := good
		tt.edit(&c)
		if _, err := RunRounds(context.Background(), c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := RunRounds(context.Background(), good); err != nil {
		t.Errorf("good config: %v", err)
	}
}
