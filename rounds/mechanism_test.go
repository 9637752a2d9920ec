package rounds

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
	"pgregory.net/rapid"
)

// world is a random cluster, job set and allocation for property tests.
type world struct {
	topo  *Topology
	jobs  map[string]*Job
	alloc *policy.Allocation
}

func drawWorld(t *rapid.T, maxSF, perServer int) world {
	names := []string{"zeta", "alpha", "mid"}
	nTypes := rapid.IntRange(1, 3).Draw(t, "types")
	cluster := policy.Cluster{}
	per := map[string]int{}
	for _, w := range names[:nTypes] {
		cluster[w] = rapid.IntRange(1, 16).Draw(t, "count_"+w)
		if perServer == 0 {
			per[w] = rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "per_"+w)
		} else {
			per[w] = perServer
		}
	}
	topo, err := NewTopology(cluster, per)
	if err != nil {
		t.Fatal(err)
	}
	n := rapid.IntRange(1, 24).Draw(t, "jobs")
	jobs := map[string]*Job{}
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
	var sfs []int
	for s := 1; s <= maxSF; s *= 2 {
		sfs = append(sfs, s)
	}
	for i := 0; i < n; i++ {
		id := strconv.Itoa(i)
		j := &Job{ID: id, ScaleFactor: rapid.SampledFrom(sfs).Draw(t, "sf"), Order: i, Rates: map[string]float64{}}
		x := map[string]float64{}
		for _, w := range names[:nTypes] {
			if rapid.IntRange(0, 4).Draw(t, "zero") > 0 {
				j.Rates[w] = rapid.Float64Range(0.1, 100).Draw(t, "rate")
			}
			x[w] = rapid.Float64Range(0, 1).Draw(t, "x")
		}
		jobs[id] = j
		alloc.Fractions[policy.Single(id)] = x
	}
	return world{topo, jobs, alloc}
}

// checkPlan verifies the mechanism's invariants on one plan.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func checkPlan(t fataler, s *State, p *RoundPlan) {
	t.Helper()
	gpuUsed := map[int]policy.Combination{}
	jobUsed := map[string]policy.Combination{}
	perType := map[string]int{}
	for _, a := range p.Assignments {
		for _, m := range members(a.Combination) {
			j := s.Jobs[m]
			if j == nil {
				t.Fatalf("assignment %v: job %s is not active", a.Combination, m)
			}
			if prev, dup := jobUsed[m]; dup {
				t.Fatalf("job %s runs in %v and %v", m, prev, a.Combination)
			}
			jobUsed[m] = a.Combination
			if len(a.GPUs) != j.ScaleFactor {
				t.Fatalf("%v: %d GPUs, scale factor %d", a.Combination, len(a.GPUs), j.ScaleFactor)
			}
			if !a.Combination.IsPair() && j.Rates[a.WorkerType] <= 0 {
				t.Fatalf("%v placed on %s where its rate is 0", a.Combination, a.WorkerType)
			}
		}
		if a.Combination.IsPair() {
			if s.PairRates == nil {
				t.Fatalf("pair %v planned without pair rates", a.Combination)
			}
			if ra, rb := s.PairRates(a.WorkerType, s.Jobs[a.Combination.A], s.Jobs[a.Combination.B]); ra <= 0 || rb <= 0 {
				t.Fatalf("pair %v placed on %s where it cannot share a GPU (rates %v, %v)", a.Combination, a.WorkerType, ra, rb)
			}
		}
		for _, g := range a.GPUs {
			if prev, dup := gpuUsed[g]; dup {
				t.Fatalf("GPU %d booked for %v and %v", g, prev, a.Combination)
			}
			gpuUsed[g] = a.Combination
			if w := s.Topology.WorkerType(g); w != a.WorkerType {
				t.Fatalf("%v on %s got GPU %d of type %s", a.Combination, a.WorkerType, g, w)
			}
		}
		perType[a.WorkerType] += len(a.GPUs)
	}
	for w, n := range perType {
		if n > s.Topology.Count(w) {
			t.Fatalf("type %s: %d GPUs used of %d", w, n, s.Topology.Count(w))
		}
	}
}

func TestPlanInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		wd := drawWorld(t, 8, 0)
		ledger := NewLedger(360)
		s := &State{Topology: wd.topo, Jobs: wd.jobs, History: ledger}
		for r := 0; r < 6; r++ {
			p := Plan(s, wd.alloc, float64(r)*360)
			checkPlan(t, s, p)
			if again := Plan(s, wd.alloc, float64(r)*360); !reflect.DeepEqual(p, again) {
				t.Fatalf("round %d: Plan is not deterministic", r)
			}
			var busy []Busy
			for _, a := range p.Assignments {
				busy = append(busy, Busy{a.Combination, a.WorkerType, 360})
			}
			ledger.Record(wd.alloc, func(string) bool { return true }, 360, busy)
			s.Previous = p.Placement()
		}
	})
}

// Largest-first best fit never splits a job that fits on a server when scale
// factors and server sizes are powers of two.
func TestPlanConsolidatesFirstRound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		wd := drawWorld(t, 8, 4)
		s := &State{Topology: wd.topo, Jobs: wd.jobs, History: NewLedger(360)}
		p := Plan(s, wd.alloc, 0)
		checkPlan(t, s, p)
		for _, a := range p.Assignments {
			sf := len(a.GPUs)
			want := (sf + 3) / 4
			if got := s.Topology.ServersSpanned(a.GPUs); got != want {
				t.Fatalf("%v (sf %d) spans %d servers, want %d: %v", a.Combination, sf, got, want, a.GPUs)
			}
		}
	})
}

func TestPlanConsolidationExample(t *testing.T) {
	topo, err := NewTopology(policy.Cluster{"x": 8}, map[string]int{"x": 4})
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]*Job{
		"a": {ID: "a", ScaleFactor: 1, Order: 0, Rates: map[string]float64{"x": 1}},
		"b": {ID: "b", ScaleFactor: 4, Order: 1, Rates: map[string]float64{"x": 1}},
		"c": {ID: "c", ScaleFactor: 2, Order: 2, Rates: map[string]float64{"x": 1}},
		"d": {ID: "d", ScaleFactor: 1, Order: 3, Rates: map[string]float64{"x": 1}},
	}
	s := &State{Topology: topo, Jobs: jobs, History: NewLedger(360)}
	// Last round a sat on GPU 5; b must not split servers to avoid it, and
	// a keeps GPU 5.
	s.Previous = map[policy.Combination][]int{policy.Single("a"): {5}}
	p := Plan(s, fullTimeOn("x", jobs), 0)
	checkPlan(t, s, p)
	got, _ := placed(p)
	want := map[string][]int{"b": {0, 1, 2, 3}, "a": {5}, "c": {4, 6}, "d": {7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("placement %v, want %v", got, want)
	}
}

// A lease on GPUs of two servers, taken in a round that had to split a gang,
// is given up when the gang now fits on one server (a reviewer's case: it
// kept GPUs 2 and 5 for rounds while 3 and 4 were free to take), and its GPUs
// are then free to all: the gang placed afresh does not take those single
// jobs want back first (a final read: it broke both their leases).
func TestPlanSplitLeaseReplaced(t *testing.T) {
	topo, err := NewTopology(policy.Cluster{"x": 6}, map[string]int{"x": 3})
	if err != nil {
		t.Fatal(err)
	}
	single := policy.Single
	for _, tc := range []struct {
		name     string
		sf       map[string]int // the jobs, by scale factor
		previous map[policy.Combination][]int
		want     map[string][]int
		extended []string
	}{
		{"split lease given up", map[string]int{"g1": 2, "g2": 2, "s1": 1, "s2": 1},
			map[policy.Combination][]int{single("g1"): {0, 1}, single("g2"): {2, 5}},
			map[string][]int{"g1": {0, 1}, "g2": {3, 4}, "s1": {2}, "s2": {5}}, []string{"g1"}},
		{"its GPUs freed", map[string]int{"g1": 2, "g2": 2, "s1": 1, "s2": 1},
			map[policy.Combination][]int{single("g1"): {0, 1}, single("g2"): {2, 5}, single("s1"): {3}, single("s2"): {4}},
			map[string][]int{"g1": {0, 1}, "g2": {3, 5}, "s1": {2}, "s2": {4}}, []string{"g1", "s2"}},
		// With a third gang there is no room to unsplit: the lease is kept
		// rather than moving the split to another gang.
		{"split unavoidable", map[string]int{"g1": 2, "g2": 2, "g3": 2},
			map[policy.Combination][]int{single("g1"): {0, 1}, single("g2"): {2, 5}, single("g3"): {3, 4}},
			map[string][]int{"g1": {0, 1}, "g2": {2, 5}, "g3": {3, 4}}, []string{"g1", "g2", "g3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := map[string]*Job{}
			for _, id := range slices.Sorted(maps.Keys(tc.sf)) {
				jobs[id] = &Job{ID: id, ScaleFactor: tc.sf[id], Order: len(jobs), Rates: map[string]float64{"x": 1}}
			}
			s := &State{Topology: topo, Jobs: jobs, History: NewLedger(360), Previous: tc.previous}
			p := Plan(s, fullTimeOn("x", jobs), 0)
			checkPlan(t, s, p)
			got, extended := placed(p)
			if !reflect.DeepEqual(got, tc.want) || !slices.Equal(extended, tc.extended) {
				t.Errorf("placement %v, extended %v; want %v, %v", got, extended, tc.want, tc.extended)
			}
		})
	}
}

// fullTimeOn allocates every job all of its time on worker type w.
func fullTimeOn(w string, jobs map[string]*Job) *policy.Allocation {
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
	for id := range jobs {
		alloc.Fractions[policy.Single(id)] = map[string]float64{w: 1}
	}
	return alloc
}

// placed returns each single job's GPUs in p and, sorted, the jobs that kept
// last round's.
func placed(p *RoundPlan) (map[string][]int, []string) {
	got := map[string][]int{}
	var extended []string
	for _, a := range p.Assignments {
		got[a.Combination.A] = a.GPUs
		if a.Extended {
			extended = append(extended, a.Combination.A)
		}
	}
	slices.Sort(extended)
	return got, extended
}

func TestPlanLeaseExtension(t *testing.T) {
	topo, _ := NewTopology(policy.Cluster{"k": 3, "v": 2}, nil)
	jobs := map[string]*Job{}
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
	for i := 0; i < 5; i++ {
		id := strconv.Itoa(i)
		jobs[id] = &Job{ID: id, ScaleFactor: 1, Order: i, Rates: map[string]float64{"k": 1, "v": 2}}
		w := "k"
		if i >= 3 {
			w = "v"
		}
		alloc.Fractions[policy.Single(id)] = map[string]float64{w: 1}
	}
	ledger := NewLedger(360)
	s := &State{Topology: topo, Jobs: jobs, History: ledger}
	var first map[policy.Combination][]int
	for r := 0; r < 5; r++ {
		p := Plan(s, alloc, float64(r)*360)
		checkPlan(t, s, p)
		if len(p.Assignments) != 5 {
			t.Fatalf("round %d: %d assignments, want 5", r, len(p.Assignments))
		}
		for _, a := range p.Assignments {
			if alloc.Fractions[a.Combination][a.WorkerType] != 1 {
				t.Fatalf("round %d: %v on %s, want its allocated type", r, a.Combination, a.WorkerType)
			}
			if r > 0 && !a.Extended {
				t.Fatalf("round %d: %v moved from %v to %v", r, a.Combination, first[a.Combination], a.GPUs)
			}
		}
		if r == 0 {
			first = p.Placement()
		}
		var busy []Busy
		for _, a := range p.Assignments {
			busy = append(busy, Busy{a.Combination, a.WorkerType, 360})
		}
		ledger.Record(alloc, func(string) bool { return true }, 360, busy)
		s.Previous = p.Placement()
	}
}

// A job whose scale factor exceeds the free GPUs does not block smaller jobs
// behind it (no head-of-line blocking), and a job never runs twice.
func TestPlanNoHeadOfLineBlocking(t *testing.T) {
	topo, _ := NewTopology(policy.Cluster{"g": 3}, map[string]int{"g": 4})
	jobs := map[string]*Job{
		"big":   {ID: "big", ScaleFactor: 2, Order: 1, Rates: map[string]float64{"g": 1}},
		"small": {ID: "small", ScaleFactor: 1, Order: 2, Rates: map[string]float64{"g": 1}},
		"first": {ID: "first", ScaleFactor: 2, Order: 0, Rates: map[string]float64{"g": 1}},
	}
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
		policy.Single("first"): {"g": 0.9}, policy.Single("big"): {"g": 0.5}, policy.Single("small"): {"g": 0.2},
	}}
	p := Plan(&State{Topology: topo, Jobs: jobs, History: NewLedger(360)}, alloc, 0)
	var got []string
	for _, a := range p.Assignments {
		got = append(got, a.Combination.A)
	}
	if fmt.Sprint(got) != "[first small]" {
		t.Errorf("ran %v, want [first small]", got)
	}
}

// Packed allocations by a real policy, on a table whose pairs are measured
// on some worker types, infeasible on others and missing on the rest, give
// plans that never put a pair where it cannot share a GPU, with the walk
// and with decomposed rounds, over rounds that record what ran; so does an
// allocation that gives every pair time on every type.
func TestPackedPlansKeepPairStates(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	pol, err := policy.New("max_min_fairness_packed")
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for n := 0; n < 12; n++ {
		tbl := table.New()
		workers := []string{"x", "y", "z"}[:2+rng.IntN(2)]
		cluster := policy.Cluster{}
		for _, w := range workers {
			cluster[w] = 1 + rng.IntN(4)
		}
		var types []table.JobType
		for k := 0; k < 4; k++ {
			jt := table.JobType{Model: fmt.Sprintf("m%d", k), ScaleFactor: []int{1, 1, 2}[rng.IntN(3)]}
			types = append(types, jt)
			for _, w := range workers {
				tbl.SetIsolated(w, jt, 0.5+rng.Float64())
			}
		}
		for a, ta := range types {
			for _, tb := range types[a:] {
				for _, w := range workers {
					switch rng.IntN(3) {
					case 0:
						r, _ := tbl.Isolated(w, ta)
						q, _ := tbl.Isolated(w, tb)
						tbl.SetPair(w, ta, tb, r*(0.5+0.4*rng.Float64()), q*(0.5+0.4*rng.Float64()))
					case 1:
						tbl.SetInfeasible(w, ta, tb)
					}
				}
			}
		}
		var jobs []policy.Job
		for i := 0; i < 3+rng.IntN(6); i++ {
			jobs = append(jobs, policy.Job{ID: fmt.Sprintf("j%d", i), Type: types[rng.IntN(len(types))], TotalSteps: 1000})
		}
		alloc, err := pol.Allocate(context.Background(), &policy.Problem{Table: tbl, Cluster: cluster, Jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		topo, err := NewTopology(cluster, nil)
		if err != nil {
			t.Fatal(err)
		}
		// An allocation that names pairs everywhere, their infeasible and
		// missing states included: the mechanism must not follow it there.
		every := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
		for i := range jobs {
			for _, k := range jobs[i+1:] {
				x := map[string]float64{}
				for _, w := range workers {
					x[w] = 0.2
				}
				every.Fractions[policy.PairOf(jobs[i].ID, k.ID)] = x
			}
		}
		for _, c := range []struct {
			alloc     *policy.Allocation
			decompose bool
		}{{alloc, false}, {alloc, true}, {every, false}} {
			alloc, decompose := c.alloc, c.decompose
			ledger := NewLedger(DefaultRoundSeconds)
			st := &State{Topology: topo, Jobs: JobsFromTable(tbl, topo.WorkerTypes(), jobs), PairRates: TablePairRates(tbl),
				History: ledger, Options: Options{Decompose: decompose}}
			for r := 0; r < 8; r++ {
				p := Plan(st, alloc, float64(r)*DefaultRoundSeconds)
				checkPlan(t, st, p)
				for _, a := range p.Assignments {
					if a.Combination.IsPair() {
						pairs++
					}
				}
				commitRound(st, ledger, alloc, p, DefaultRoundSeconds)
			}
		}
	}
	if pairs == 0 {
		t.Fatal("no pair was planned; the test checks nothing")
	}
}

// A lead earned on GPUs that would otherwise idle is not banked: a job
// allocated a quarter of a GPU nothing else wanted ran every round for 100
// rounds; when a second job arrives and both are allocated half, the first
// must not sit out while its 75 rounds of lead wear off (it ran in 13 of
// the next 100 rounds before).
func TestLedgerLeadNotBanked(t *testing.T) {
	topo, err := NewTopology(policy.Cluster{"x": 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ledger := NewLedger(360)
	s := &State{Topology: topo, History: ledger, Jobs: map[string]*Job{
		"a": {ID: "a", ScaleFactor: 1, Order: 0, Rates: map[string]float64{"x": 1}}}}
	run := func(alloc *policy.Allocation, rounds int) map[string]int {
		ran := map[string]int{}
		for r := 0; r < rounds; r++ {
			p := Plan(s, alloc, 0)
			var busy []Busy
			for _, a := range p.Assignments {
				busy = append(busy, Busy{a.Combination, a.WorkerType, 360})
				ran[a.Combination.A]++
			}
			ledger.Record(alloc, func(string) bool { return true }, 360, busy)
			s.Previous = p.Placement()
		}
		return ran
	}
	if ran := run(&policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
		policy.Single("a"): {"x": 0.25}}}, 100); ran["a"] != 100 {
		t.Fatalf("alone, a ran in %d of 100 rounds, want all (back-fill)", ran["a"])
	}
	s.Jobs["b"] = &Job{ID: "b", ScaleFactor: 1, Order: 1, Rates: map[string]float64{"x": 1}}
	ran := run(&policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
		policy.Single("a"): {"x": 0.5}, policy.Single("b"): {"x": 0.5}}}, 20)
	if ran["a"] < 9 || ran["b"] < 9 {
		t.Errorf("at half each, a ran in %d and b in %d of 20 rounds, want about 10 each", ran["a"], ran["b"])
	}
	if got := ledger.Received(policy.Single("a"), "x"); got != 360*(100+float64(ran["a"])) {
		t.Errorf("a received %v s, want every second it ran", got)
	}
}

// A job without a scale factor (a hand-built Job's zero value) is named in
// Plan's panic; it was an index out of range in the sort of assignments.
func TestPlanNamesJobWithoutScaleFactor(t *testing.T) {
	topo, err := NewTopology(policy.Cluster{"x": 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &State{Topology: topo, History: NewLedger(360), Jobs: map[string]*Job{
		"a": {ID: "a", ScaleFactor: 1, Rates: map[string]float64{"x": 1}},
		"z": {ID: "z", Rates: map[string]float64{"x": 1}}}}
	defer func() {
		msg := fmt.Sprint(recover())
		if !strings.Contains(msg, `job "z": scale factor 0`) {
			t.Errorf("panic %q, want one naming job z and its scale factor", msg)
		}
	}()
	Plan(s, nil, 0)
}

// Servers of unequal sizes: v100 servers of 4, 3 and 4 GPUs (a GPU out of service in the
// second). Ids follow NewTopology's order; a 4-GPU gang never lands on the 3-GPU server, and
// NewTopology's cluster gives the same topology as its server sizes.
func TestTopologyOfServers(t *testing.T) {
	topo, err := NewTopologyOfServers(map[string][]int{"v100": {4, 3, 4}, "k80": {2}, "p100": {}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := topo.Cluster(), (policy.Cluster{"k80": 2, "p100": 0, "v100": 11}); !reflect.DeepEqual(got, want) {
		t.Errorf("cluster %v, want %v", got, want)
	}
	if got := topo.Servers("v100")[1].GPUs; !reflect.DeepEqual(got, []int{6, 7, 8}) {
		t.Errorf("second v100 server %v, want GPUs 6-8 (k80s are 0 and 1)", got)
	}
	if topo.Server(9) != 2 || topo.WorkerType(1) != "k80" || topo.MaxServerSize("v100") != 4 {
		t.Errorf("GPU 9 on server %d, GPU 1 a %s, largest v100 server %d", topo.Server(9), topo.WorkerType(1), topo.MaxServerSize("v100"))
	}
	jobs := map[string]*Job{
		"a": {ID: "a", ScaleFactor: 4, Order: 0, Rates: map[string]float64{"v100": 1}},
		"b": {ID: "b", ScaleFactor: 4, Order: 1, Rates: map[string]float64{"v100": 1}},
		"c": {ID: "c", ScaleFactor: 3, Order: 2, Rates: map[string]float64{"v100": 1}},
	}
	s := &State{Topology: topo, Jobs: jobs, History: NewLedger(360)}
	p := Plan(s, fullTimeOn("v100", jobs), 0)
	checkPlan(t, s, p)
	got, _ := placed(p)
	want := map[string][]int{"a": {2, 3, 4, 5}, "b": {9, 10, 11, 12}, "c": {6, 7, 8}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("placement %v, want %v", got, want)
	}
	same, err := NewTopology(policy.Cluster{"v100": 10}, map[string]int{"v100": 4})
	if err != nil {
		t.Fatal(err)
	}
	sized, _ := NewTopologyOfServers(map[string][]int{"v100": {4, 4, 2}})
	if !reflect.DeepEqual(same, sized) {
		t.Errorf("NewTopology %+v, from its server sizes %+v", same, sized)
	}
	for _, bad := range []map[string][]int{{"v100": {4, 0}}, {"": {1}}} {
		if _, err := NewTopologyOfServers(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// State.Check names what Plan would panic on or pass over without a word.
func TestStateCheck(t *testing.T) {
	topo, err := NewTopology(policy.Cluster{"v100": 4, "k80": 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, sf int) *Job {
		return &Job{ID: id, ScaleFactor: sf, Rates: map[string]float64{"v100": 1, "k80": 1}}
	}
	alloc := func(c policy.Combination, w string, x float64) *policy.Allocation {
		return &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{c: {w: x}}}
	}
	a, b := policy.Single("a"), policy.Single("b")
	for _, tc := range []struct {
		name  string
		state State
		alloc *policy.Allocation
		want  string // "" for no error
	}{
		{"consistent", State{Topology: topo, History: NewLedger(360), Jobs: map[string]*Job{"a": job("a", 4)}}, alloc(a, "v100", 1), ""},
		{"zero fraction on a small type", State{Topology: topo, History: NewLedger(360), Jobs: map[string]*Job{"a": job("a", 4)}}, alloc(a, "k80", 0), ""},
		{"no topology", State{History: NewLedger(360)}, nil, "no Topology"},
		{"no history", State{Topology: topo}, nil, "no History"},
		{"nil job", State{Topology: topo, History: NewLedger(360), Jobs: map[string]*Job{"a": nil}}, nil, `job "a" is nil`},
		{"filed under another id", State{Topology: topo, History: NewLedger(360), Jobs: map[string]*Job{"a": job("b", 1)}}, nil, `job "b" is filed under "a"`},
		{"no scale factor", State{Topology: topo, History: NewLedger(360), Jobs: map[string]*Job{"a": job("a", 0)}}, nil, `job "a": scale factor 0`},
		{"job not in state", State{Topology: topo, History: NewLedger(360), Jobs: map[string]*Job{"a": job("a", 1)}}, alloc(b, "v100", 0.5), `job "b" is not in the state's jobs`},
		{"NaN fraction", State{Topology: topo, History: NewLedger(360), Jobs: map[string]*Job{"a": job("a", 1)}}, alloc(a, "v100", math.NaN()), "fraction NaN"},
		{"unknown worker type", State{Topology: topo, History: NewLedger(360), Jobs: map[string]*Job{"a": job("a", 1)}}, alloc(a, "h100", 0.5), "not in the topology (it has k80, v100)"},
		{"gang larger than the type", State{Topology: topo, History: NewLedger(360), Jobs: map[string]*Job{"a": job("a", 4)}}, alloc(a, "k80", 0.5), `job "a" needs 4 GPUs; the type has 2`},
	} {
		err := tc.state.Check(tc.alloc)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
