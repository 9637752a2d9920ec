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

	"github.com/gavelkit/gavel/policy/lp"
	"github.com/gavelkit/gavel/table"
)

// allRounds enumerates every round over slots by brute force: each subset
// with every job at most once and every type within its GPUs.
func allRounds(slots []Slot, gpus map[string]int) [][]int {
	var out [][]int
	var walk func(k int, q []int, used map[string]bool, left map[string]int)
	walk = func(k int, q []int, used map[string]bool, left map[string]int) {
		if k == len(slots) {
			out = append(out, slices.Clone(q))
			return
		}
		walk(k+1, q, used, left)
		s := slots[k]
		ids := []string{s.Combination.A}
		if s.Combination.IsPair() {
			ids = append(ids, s.Combination.B)
		}
		for _, id := range ids {
			if used[id] {
				return
			}
		}
		if left[s.Worker] < s.GPUs {
			return
		}
		for _, id := range ids {
			used[id] = true
		}
		left[s.Worker] -= s.GPUs
		walk(k+1, append(q, k), used, left)
		left[s.Worker] += s.GPUs
		for _, id := range ids {
			used[id] = false
		}
	}
	left := map[string]int{}
	for w, n := range gpus {
		left[w] = n
	}
	walk(0, nil, map[string]bool{}, left)
	return out
}

// leastShort solves, over every enumerated round at once (no column
// generation), min Σ uncovered_k subject to Σ_q λ_q·[k ∈ q] + uncovered_k
// ≥ target_k and Σ λ ≤ 1.
func leastShort(t *testing.T, rounds [][]int, targets []float64) float64 {
	t.Helper()
	m := lp.NewModel(lp.Minimize)
	rows := make([][]int, len(targets))
	for k := range targets {
		rows[k] = []int{m.AddCol(0, lp.Inf, 1)}
	}
	var all []int
	for _, q := range rounds {
		j := m.AddCol(0, lp.Inf, 0)
		all = append(all, j)
		for _, k := range q {
			rows[k] = append(rows[k], j)
		}
	}
	for k, idx := range rows {
		m.AddRow(targets[k], lp.Inf, idx, ones(len(idx)))
	}
	m.AddRow(-lp.Inf, 1, all, ones(len(all)))
	res, err := lp.Default().Solve(context.Background(), m, lp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Objective
}

// randomSlots draws 3-5 jobs of 1, 2 or 4 GPUs on one or two types of 4-6
// GPUs: each job alone on every type it fits, and some pairs of jobs of
// equal GPUs.
func randomSlots(rng *rand.Rand) ([]Slot, map[string]int) {
	gpus := map[string]int{}
	workers := []string{"a", "b"}[:1+rng.IntN(2)]
	for _, w := range workers {
		gpus[w] = 4 + rng.IntN(3)
	}
	n := 3 + rng.IntN(3)
	sf := make([]int, n)
	var slots []Slot
	for i := range sf {
		sf[i] = []int{1, 1, 2, 4}[rng.IntN(4)]
		for _, w := range workers {
			slots = append(slots, Slot{Combination: Single(fmt.Sprint("j", i)), Worker: w, GPUs: sf[i]})
		}
	}
	for i := range sf {
		for j := i + 1; j < n; j++ {
			if sf[i] == sf[j] && rng.IntN(2) == 0 {
				w := workers[rng.IntN(len(workers))]
				slots = append(slots, Slot{Combination: PairOf(fmt.Sprint("j", i), fmt.Sprint("j", j)), Worker: w, GPUs: sf[i]})
			}
		}
	}
	return slots, gpus
}

// randomTargets draws slots (randomSlots), enumerates their rounds, and
// sets targets to a mix of three random rounds scaled by 0.7-1.4, so that
// some fit and some do not.
func randomTargets(rng *rand.Rand) ([]Slot, map[string]int, [][]int, []float64) {
	slots, gpus := randomSlots(rng)
	rounds := allRounds(slots, gpus)
	targets := make([]float64, len(slots))
	scale := 0.7 + 0.7*rng.Float64()
	for range 3 {
		for _, k := range rounds[rng.IntN(len(rounds))] {
			targets[k] += scale / 3
		}
	}
	return slots, gpus, rounds, targets
}

// Decompose agrees with an LP over every round enumerated by brute force:
// it decomposes exactly the targets that LP covers, with feasible rounds
// covering them, and otherwise proves them unrealizable with the LP's
// least shortfall and an inequality that every enumerated round meets and
// the targets break by that shortfall.
func TestDecomposeAgainstEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	decomposed, refused := 0, 0
	for n := 0; n < 300; n++ {
		slots, gpus, rounds, targets := randomTargets(rng)
		want := leastShort(t, rounds, targets)
		d, err := Decompose(context.Background(), slots, targets, gpus)
		var proof *UnrealizableError
		switch {
		case want <= 1e-8 && err == nil:
			decomposed++
			checkDecomposition(t, n, slots, gpus, targets, d)
		case want > 1e-6 && errors.As(err, &proof):
			refused++
			checkProof(t, n, rounds, targets, want, proof)
		case want > 1e-8 && want <= 1e-6:
			// within the tolerances: either answer will do
		default:
			t.Fatalf("case %d: least shortfall %.3g by enumeration, Decompose: %v", n, want, err)
		}
	}
	if decomposed < 50 || refused < 50 {
		t.Fatalf("%d decomposed, %d refused: the sample should have plenty of both", decomposed, refused)
	}
}

func checkDecomposition(t *testing.T, n int, slots []Slot, gpus map[string]int, targets []float64, d *Decomposition) {
	t.Helper()
	covered := served(t, fmt.Sprintf("case %d: ", n), slots, gpus, d)
	for k := range slots {
		if covered[k] < targets[k]-1e-7 {
			t.Fatalf("case %d: slot %v covered %v of %v", n, slots[k], covered[k], targets[k])
		}
	}
}

func checkProof(t *testing.T, n int, rounds [][]int, targets []float64, want float64, proof *UnrealizableError) {
	t.Helper()
	if math.Abs(proof.Short-want) > 1e-6 {
		t.Fatalf("case %d: shortfall %v, enumeration %v", n, proof.Short, want)
	}
	for _, q := range rounds {
		lhs := 0.0
		for _, k := range q {
			lhs += proof.Coef[k]
		}
		if lhs > proof.Bound+1e-9 {
			t.Fatalf("case %d: round %v breaks the inequality (%v > %v)", n, q, lhs, proof.Bound)
		}
	}
	lhs := 0.0
	for k, c := range proof.Coef {
		lhs += c * targets[k]
	}
	if lhs-proof.Bound < want-1e-6 {
		t.Fatalf("case %d: the targets break the inequality by %v, want the shortfall %v", n, lhs-proof.Bound, want)
	}
}

func TestDecomposeInput(t *testing.T) {
	one := []Slot{{Combination: Single("a"), Worker: "w", GPUs: 1}}
	many := make([]Slot, DecomposeMaxTargets+1)
	for k := range many {
		many[k] = Slot{Combination: Single(fmt.Sprint("j", k)), Worker: "w", GPUs: 1}
	}
	full := make([]float64, len(many))
	for k := range full {
		full[k] = 0.001
	}
	for _, c := range []struct {
		name    string
		slots   []Slot
		targets []float64
		want    string
	}{
		{"lengths", one, []float64{0.5, 0.5}, "2 targets for 1 slots"},
		{"no GPUs", []Slot{{Combination: Single("a"), Worker: "w"}}, []float64{0.5}, "takes 0 GPUs"},
		{"negative", one, []float64{-0.5}, "target -0.5"},
		{"not a number", one, []float64{math.NaN()}, "target NaN"},
		{"too many", many, full, "151 positive targets, at most 150"},
	} {
		_, err := Decompose(context.Background(), c.slots, c.targets, map[string]int{"w": 1})
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInput saying %q", c.name, err, c.want)
		}
	}
	// A slot on a type the cluster lacks can never run.
	_, err := Decompose(context.Background(), one, []float64{0.5}, map[string]int{"other": 4})
	if !errors.Is(err, ErrUnrealizable) {
		t.Errorf("slot on a missing type: %v, want ErrUnrealizable", err)
	}
}

// randomGangProblem is a small cluster (one or two types of 4-6 GPUs) with
// 3-6 jobs of 1, 2 and 4 GPUs and random rates: where Gavel's rows let
// gangs take more time together than rounds give. With pairs, jobs of
// equal GPUs share them at 0.4-0.9 of their rates.
func randomGangProblem(rng *rand.Rand, pairs bool) *Problem {
	workers := []string{"a", "b"}[:1+rng.IntN(2)]
	cl := Cluster{}
	for _, w := range workers {
		cl[w] = 4 + rng.IntN(3)
	}
	tb := table.New()
	var jobs []Job
	for i := 0; i < 3+rng.IntN(4); i++ {
		ty := table.JobType{Model: fmt.Sprint("m", i), ScaleFactor: []int{1, 1, 2, 4}[rng.IntN(4)]}
		for _, w := range workers {
			tb.SetIsolated(w, ty, 1+4*rng.Float64())
		}
		jobs = append(jobs, Job{ID: fmt.Sprint("j", i), Type: ty, TotalSteps: 1000, Weight: 1})
	}
	for i, a := range jobs {
		for _, b := range jobs[i+1:] {
			if !pairs || a.Type.ScaleFactor != b.Type.ScaleFactor {
				continue
			}
			for _, w := range workers {
				ra, _ := tb.Isolated(w, a.Type)
				rb, _ := tb.Isolated(w, b.Type)
				tb.SetPair(w, a.Type, b.Type, (0.4+0.5*rng.Float64())*ra, (0.4+0.5*rng.Float64())*rb)
			}
		}
	}
	return &Problem{Table: tb, Cluster: cl, Jobs: jobs}
}

// randomPairProblem is 5-6 jobs of one GPU on two types of 1-3 and 1-2
// GPUs, every two jobs able to share a GPU at 0.4-1 of their rates: where
// the odd-set rows do not suffice, a job's time over both types.
func randomPairProblem(rng *rand.Rand) *Problem {
	cl := Cluster{"a": 1 + rng.IntN(3), "b": 1 + rng.IntN(2)}
	tb := table.New()
	var jobs []Job
	n := 5 + rng.IntN(2)
	for i := 0; i < n; i++ {
		ty := table.JobType{Model: fmt.Sprint("m", i), ScaleFactor: 1}
		tb.SetIsolated("a", ty, 1+4*rng.Float64())
		tb.SetIsolated("b", ty, 1+4*rng.Float64())
		jobs = append(jobs, Job{ID: fmt.Sprint("j", i), Type: ty, TotalSteps: 1000, Weight: 1})
	}
	for i, a := range jobs {
		for _, b := range jobs[i+1:] {
			for _, w := range []string{"a", "b"} {
				ra, _ := tb.Isolated(w, a.Type)
				rb, _ := tb.Isolated(w, b.Type)
				tb.SetPair(w, a.Type, b.Type, (0.4+0.6*rng.Float64())*ra, (0.4+0.6*rng.Float64())*rb)
			}
		}
	}
	return &Problem{Table: tb, Cluster: cl, Jobs: jobs}
}

// bestRealizableMaxMin solves max-min fairness over every round of p's
// combinations (single jobs; packed: pairs too) enumerated by brute force:
// maximize t subject to each job's term sf·Σ rate·x/prop ≥ t (agnostic:
// rate 1 and prop 1), x = Σ_q λ_q·q, Σ λ ≤ 1. prop is Σ_w rate_w·GPUs_w /
// all GPUs, from the table.
func bestRealizableMaxMin(t *testing.T, p *Problem, md mode) float64 {
	t.Helper()
	var slots []Slot
	var rate []map[string]float64 // each slot's members' rates
	total := 0
	for _, n := range p.Cluster {
		total += n
	}
	prop := map[string]float64{}
	for i, j := range p.Jobs {
		for w, n := range p.Cluster {
			r, _ := p.Table.Isolated(w, j.Type)
			prop[j.ID] += r * float64(n) / float64(total)
			if j.Type.ScaleFactor > n || r <= 0 {
				continue
			}
			slots = append(slots, Slot{Combination: Single(j.ID), Worker: w, GPUs: j.Type.ScaleFactor})
			rate = append(rate, map[string]float64{j.ID: r})
			for _, k := range p.Jobs[i+1:] {
				ra, rb, st := p.Table.Pair(w, j.Type, k.Type)
				if md == packed && st == table.Measured && ra > 0 && rb > 0 {
					slots = append(slots, Slot{Combination: PairOf(j.ID, k.ID), Worker: w, GPUs: j.Type.ScaleFactor})
					rate = append(rate, map[string]float64{j.ID: ra, k.ID: rb})
				}
			}
		}
	}
	rounds := allRounds(slots, p.Cluster)
	m := lp.NewModel(lp.Maximize)
	tc := m.AddCol(0, lp.Inf, 1)
	lam := make([]int, len(rounds))
	for q := range rounds {
		lam[q] = m.AddCol(0, lp.Inf, 0)
	}
	m.AddRow(-lp.Inf, 1, lam, ones(len(lam)))
	for _, j := range p.Jobs {
		idx, val := []int{tc}, []float64{-1}
		for q, r := range rounds {
			v := 0.0
			for _, k := range r {
				switch r, ok := rate[k][j.ID]; {
				case !ok:
				case md == agnostic:
					v += float64(j.Type.ScaleFactor)
				default:
					v += float64(j.Type.ScaleFactor) * r / prop[j.ID]
				}
			}
			if v != 0 {
				idx, val = append(idx, lam[q]), append(val, v)
			}
		}
		m.AddRow(0, lp.Inf, idx, val)
	}
	res, err := lp.Default().Solve(context.Background(), m, lp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Objective
}

// Max-min fairness (aware, agnostic and packed) on small clusters with
// gangs is the best that rounds can realize: its objective equals the
// optimum of the LP over every enumerated round, and its allocation
// decomposes into rounds.
func TestMaxMinRealizableOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for n := 0; n < 60; n++ {
		p := randomGangProblem(rng, n%2 == 1)
		for _, c := range []struct {
			name string
			md   mode
		}{{"max_min_fairness_perf", perf}, {"max_min_fairness", agnostic}, {"max_min_fairness_packed", packed}} {
			a := mustAllocate(t, c.name, p)
			if want := bestRealizableMaxMin(t, p, c.md); !approx(a.Objective, want, 1e-6) {
				t.Fatalf("case %d %s: objective %v, best realizable %v", n, c.name, a.Objective, want)
			}
			checkRealizable(t, fmt.Sprintf("case %d %s", n, c.name), p, a)
		}
	}
	for n := 0; n < 40; n++ {
		p := randomPairProblem(rng)
		a := mustAllocate(t, "max_min_fairness_packed", p)
		if want := bestRealizableMaxMin(t, p, packed); !approx(a.Objective, want, 1e-6) {
			t.Fatalf("pairs case %d: objective %v, best realizable %v", n, a.Objective, want)
		}
		checkRealizable(t, fmt.Sprintf("pairs case %d", n), p, a)
	}
}

// checkRealizable decomposes a's fractions of p into rounds.
func checkRealizable(t *testing.T, name string, p *Problem, a *Allocation) {
	t.Helper()
	sf := map[string]int{}
	for _, j := range p.Jobs {
		sf[j.ID] = j.Type.ScaleFactor
	}
	var slots []Slot
	var targets []float64
	for c, x := range a.Fractions {
		for w, v := range x {
			if v > 1e-9 {
				slots = append(slots, Slot{Combination: c, Worker: w, GPUs: sf[c.A]})
				targets = append(targets, v)
			}
		}
	}
	if _, err := Decompose(context.Background(), slots, targets, p.Cluster); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// otherSolver is a solver that is not lp.COIN (it solves with COIN), as a
// HiGHS binding would be.
type otherSolver struct{}

func (otherSolver) Solve(ctx context.Context, m *lp.Model, o lp.Options) (*lp.Result, error) {
	return lp.Default().Solve(ctx, m, o)
}

// The decomposition needs COIN's sessions: with another solver the LPs are
// not cut, and TestLASAgnosticHand's instance keeps Gavel's LP value, 1,
// where COIN's cut LPs give 0.8; the cut LPs count their decompositions'
// LPs and MILPs in SolveStats.
func TestRoundCutsNeedCOIN(t *testing.T) {
	p := agnosticHandProblem()
	other := mustAllocate(t, "max_min_fairness", p, WithSolver(otherSolver{}))
	coin := mustAllocate(t, "max_min_fairness", p)
	if !approx(other.Objective, 1, 1e-8) || !approx(coin.Objective, 0.8, 1e-8) {
		t.Fatalf("objective %v with another solver (want 1), %v with COIN (want 0.8)", other.Objective, coin.Objective)
	}
	// Two LPs without cuts (LAS, then spread); with them more, a master LP
	// and pricing MILPs for each decomposition.
	if other.Stats.LPs != 2 || coin.Stats.LPs < 6 {
		t.Errorf("LPs: %d with another solver (want 2), %d with COIN (want 6 or more)", other.Stats.LPs, coin.Stats.LPs)
	}
}

// The pricing MILPs stop at the search budget: with none left, targets that need a MILP to
// settle give ErrDecomposeLimit (not a verdict) with the rounds found; with the default budget
// the same targets are settled, as by enumeration (TestDecomposeAgainstEnumeration).
func TestDecomposeSearchBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	limited := 0
	for n := 0; n < 100; n++ {
		slots, gpus, _, targets := randomTargets(rng)
		rs, caps := indexSlots(slots, gpus)
		_, full := decompose(context.Background(), lpEnv{budget: newSearchBudget()}, rs, caps, targets, nil)
		if full != nil && !errors.Is(full, ErrUnrealizable) {
			t.Fatalf("case %d, default budget: %v", n, full)
		}
		d, err := decompose(context.Background(), lpEnv{budget: &searchBudget{}}, rs, caps, targets, nil)
		switch {
		case errors.Is(err, ErrDecomposeLimit):
			limited++
			if d == nil {
				t.Errorf("case %d: no rounds come with the budget's error", n)
			}
		case err != nil && !errors.Is(err, ErrUnrealizable):
			t.Fatalf("case %d, no budget: %v", n, err)
		}
	}
	if limited == 0 {
		t.Error("no case needed a MILP: the test does not reach the budget")
	}
}
