package policy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gavelkit/gavel/policy/lp"
)

// A round runs some combinations at once: each job in at most one of them,
// every worker type within its GPUs. An allocation is realizable when it is
// a convex combination of rounds (each round's share of the time its
// weight, Σ weight ≤ 1). Decompose finds such a combination or proves there
// is none, with an inequality every round satisfies and the allocation
// breaks; the LP policies add those inequalities as rows (see separate), so
// that they allocate only what rounds can deliver. Where they do not (more
// than 8 jobs), DecomposeNearest gives the combination nearest the
// allocation (nearest.go), which the rounds package follows.

// Slot is something a round can run: a combination on a worker type.
type Slot struct {
	Combination Combination
	Worker      string
	GPUs        int // the GPUs it takes there (its jobs' scale factor)
}

// Decomposition writes time fractions as a convex combination of rounds,
// or from DecomposeNearest the nearest such combination.
type Decomposition struct {
	Rounds  [][]int   // each a feasible round: its slots' indices, ascending
	Weights []float64 // each round's share of the time; they sum to at most 1
	// Short is, from DecomposeNearest for unrealizable targets, the largest
	// share of a job's promised throughput the rounds do not give it;
	// otherwise 0.
	Short float64
}

var (
	// ErrUnrealizable reports targets that no convex combination of rounds
	// covers; Decompose returns it as an *UnrealizableError.
	ErrUnrealizable = errors.New("no sequence of rounds realizes the targets")
	// ErrDecomposeLimit reports a decomposition cut short by its column
	// limit or its pricing MILPs' search budget (see Decompose).
	ErrDecomposeLimit = errors.New("decomposition needs more rounds or search than allowed")
)

// UnrealizableError proves targets unrealizable: Σ_k Coef[k]·x_k ≤ Bound
// holds for the time fractions x of every convex combination of rounds
// (up to 1e-9), and the targets exceed Bound by Short, the least total
// shortfall any combination of rounds leaves.
type UnrealizableError struct {
	Coef  []float64 // one per slot, each within [0, 1]
	Bound float64
	Short float64
}

func (e *UnrealizableError) Error() string {
	return fmt.Sprintf("%v (at best %.3g of the time short in all)", ErrUnrealizable, e.Short)
}

// Is makes errors.Is(err, ErrUnrealizable) true.
func (e *UnrealizableError) Is(target error) bool { return target == ErrUnrealizable }

// Decomposition sizes. Column generation's cost grows fast with the
// targets, in about 4 columns a target (max-min packed allocations on 2
// cores: 43 targets 108 columns 0.06 s, 65-78 targets 0.15-1 s, 98-106
// targets 0.3-1.4 s, 126-162 targets 600-700 columns about 3 s, 203
// targets 842 columns 6.4 s; before the master was warm started and the
// pricing MILPs solved plainly, lp.Options.Plain, 73-75 targets took about
// 5 s and 126 targets 34 s). DecomposeMaxTargets is the most targets
// Decompose takes; beyond decomposeLimit columns it gives up
// (ErrDecomposeLimit).
const (
	DecomposeMaxTargets = 150
	decomposeLimit      = 800
)

// searchBudget is how much search the pricing MILPs of one Decompose
// (DecomposeNearest: each of its decompositions) may do in all: counts, not
// a clock, so that the answer does not depend on the machine's load. The
// decompositions of policies' allocations of 40-80 jobs on 5 worker types
// took at most about 10,000 branch-and-bound nodes and 40,000 simplex
// iterations (4 s); unrealizable finish-time fairness allocations of 40 and
// 60 mixed-size jobs there took 3.9 million nodes (89 s) and 650,000
// iterations in 200,000 nodes (past 3 minutes), where the policy took 0.02
// s. Time per node varies 7-fold between those, per iteration 2-fold.
type searchBudget struct{ nodes, iterations int }

// newSearchBudget returns a fresh budget for lpEnv.budget.
func newSearchBudget() *searchBudget { return &searchBudget{nodes: 100_000, iterations: 200_000} }

// decomposeTol is the total uncovered target a decomposition may leave:
// rounding, as policies solve to 1e-9 a row (below it a round's weight is
// not worth running anyway).
const decomposeTol = 1e-7

// coverBonus adds coverBonus × target to each slot's value in pricing, so
// that among rounds of equal value at the duals (most slots have dual 0) it
// picks full ones that serve many targets. Such rounds resemble the ones an
// allocation is made of, so fewer of them are needed: on 300 random
// allocations made of at most 4 rounds (a scratch sample like the rounds
// package's packed_test.go), up to 44 rounds without it; after 20 rounds of
// the mechanism a mean largest shortfall of 0.021 against 0.027, after 100
// rounds 0.0045 against 0.0061.
const coverBonus = 1e-2

// Decompose writes targets (the time fraction of each slot) as Σ_q
// Weights[q]·Rounds[q] by column generation: a master LP minimizes the
// targets left uncovered, and a pricing MILP finds the round with the
// largest value at the master's duals. It fails with an
// *UnrealizableError when no round would cover more, with ErrDecomposeLimit
// after 800 rounds or when its pricing MILPs have used up their search
// (searchBudget), and with ErrInput for more than DecomposeMaxTargets
// positive targets, a negative or non-finite one or a slot of no GPUs. The
// master is an lp.Session: built without cgo there is no decomposition
// (lp.NewSession's error).
// gpus gives each worker type's GPUs; a slot on a type it lacks can never run.
func Decompose(ctx context.Context, slots []Slot, targets []float64, gpus map[string]int) (*Decomposition, error) {
	if len(targets) != len(slots) {
		return nil, inputErr("%d targets for %d slots", len(targets), len(slots))
	}
	positive := 0
	for k, s := range slots {
		switch {
		case s.GPUs < 1:
			return nil, inputErr("slot %v on %s takes %d GPUs", s.Combination, s.Worker, s.GPUs)
		case !(targets[k] >= 0) || math.IsInf(targets[k], 1):
			return nil, inputErr("slot %v on %s has target %v", s.Combination, s.Worker, targets[k])
		case targets[k] > 0:
			positive++
		}
	}
	if positive > DecomposeMaxTargets {
		return nil, inputErr("%d positive targets, at most %d", positive, DecomposeMaxTargets)
	}
	rs, caps := indexSlots(slots, gpus)
	d, err := decompose(ctx, lpEnv{budget: newSearchBudget()}, rs, caps, targets, nil)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// indexSlots numbers the jobs and worker types of slots in name order, so
// that the LPs do not depend on map order, and returns the slots by index
// with each type's GPUs.
func indexSlots(slots []Slot, gpus map[string]int) ([]roundSlot, []int) {
	jobs, workers := map[string]int{}, map[string]int{}
	for _, s := range slots {
		for _, id := range []string{s.Combination.A, s.Combination.B} {
			if id != "" {
				jobs[id] = 0
			}
		}
		workers[s.Worker] = 0
	}
	for i, id := range slices.Sorted(maps.Keys(jobs)) {
		jobs[id] = i
	}
	caps := make([]int, len(workers))
	for i, w := range slices.Sorted(maps.Keys(workers)) {
		workers[w], caps[i] = i, gpus[w]
	}
	rs := make([]roundSlot, len(slots))
	for k, s := range slots {
		rs[k] = roundSlot{a: jobs[s.Combination.A], b: -1, w: workers[s.Worker], gpus: s.GPUs}
		if s.Combination.IsPair() {
			rs[k].b = jobs[s.Combination.B]
		}
	}
	return rs, caps
}

// roundSlot is a Slot by index: jobs a and b (-1: none) on worker type w.
type roundSlot struct {
	a, b, w int
	gpus    int
}

// lpEnv is how decompose solves its LPs and MILPs: each within timeLimit
// (0: none), counted in st (nil: not counted), the MILPs together within
// budget (nil: no limit), which each solve lowers.
type lpEnv struct {
	timeLimit time.Duration
	st        *SolveStats
	budget    *searchBudget
}

// solve solves m (through sess when it is not nil) and counts it.
func (env lpEnv) solve(ctx context.Context, m *lp.Model, sess *lp.Session, o lp.Options) (*lp.Result, error) {
	o.TimeLimit = env.timeLimit
	t0 := time.Now()
	res, err := solveModel(ctx, lp.Default(), m, sess, o)
	if env.st != nil {
		env.st.LPs++
		env.st.Seconds += time.Since(t0).Seconds()
		if res != nil {
			env.st.Iterations += res.Iterations
		}
	}
	return res, err
}

// decompose is Decompose on indexed slots; caps[w] is type w's GPUs. The
// master starts with the rounds of initial (each a feasible round of
// slots), which spares pricing when they suffice. With an
// *UnrealizableError or ErrDecomposeLimit it returns the rounds it found
// too.
func decompose(ctx context.Context, env lpEnv, slots []roundSlot, caps []int, target []float64, initial [][]int) (*Decomposition, error) {
	master, err := newMaster(target)
	if err != nil {
		return nil, err
	}
	defer master.Close()
	d, res, err := generate(ctx, env, master, len(target), newPricing(slots, caps, env), target, initial)
	switch {
	case err != nil:
		return d, err
	case res.Objective > decomposeTol:
		return d, unrealizable(res, len(target))
	}
	return d, nil
}

// generate runs column generation on master, whose first rows are one a
// target and then Σ weight ≤ 1, and whose first lead columns are not
// rounds: from the rounds of initial it adds the improving round pricing
// finds, one at a time, until the master's objective is at most
// decomposeTol or no round improves. It returns the rounds with their
// weights and the master's last result; ErrDecomposeLimit (with both)
// after decomposeLimit rounds beyond initial; a solver's error alone.
func generate(ctx context.Context, env lpEnv, master *lp.Session, lead int, pricing *pricing, target []float64, initial [][]int) (*Decomposition, *lp.Result, error) {
	d := &Decomposition{}
	n := len(target)
	add := func(q []int) {
		d.Rounds = append(d.Rounds, q)
		rows := append(slices.Clone(q), n) // its targets and the Σ weight row
		master.AddColumn(0, lp.Inf, 0, rows, ones(len(rows)))
	}
	for _, q := range initial {
		add(q)
	}
	for {
		res, err := env.solve(ctx, nil, master, lp.Options{})
		if err != nil {
			return nil, nil, err
		}
		d.Weights = make([]float64, len(d.Rounds))
		for q := range d.Rounds {
			d.Weights[q] = max(0, res.X[lead+q])
		}
		if res.Objective <= decomposeTol {
			return d, res, nil
		}
		if len(d.Rounds) >= len(initial)+decomposeLimit {
			return d, res, ErrDecomposeLimit
		}
		q, err := pricing.improving(ctx, res.Duals, target)
		if errors.Is(err, ErrDecomposeLimit) {
			return d, res, err
		}
		if err != nil {
			return nil, nil, err
		}
		if q == nil {
			return d, res, nil
		}
		add(q)
	}
}

// unrealizable reads the separating inequality from the master's duals
// once no round improves: y_k (the target rows' duals, within [0, 1]) and
// z ≤ 0 (the Σ weight row's) satisfy Σ_{k∈q} y_k + z ≤ 1e-9 for every
// round q, so Σ_k y_k·x_k ≤ −z for every convex combination x of rounds,
// while Σ_k y_k·target_k + z, the uncovered total, is positive.
func unrealizable(res *lp.Result, n int) *UnrealizableError {
	e := &UnrealizableError{Coef: make([]float64, n), Bound: max(0, -res.Duals[n]), Short: res.Objective}
	for k := range n {
		e.Coef[k] = min(1, max(0, res.Duals[k]))
	}
	return e
}

// newMaster returns the master LP before any round, kept loaded so that
// each new round's column is priced in from the last basis (primal
// simplex): min Σ uncovered_k subject to Σ_q weight_q·[k ∈ q] +
// uncovered_k ≥ target_k and Σ weight ≤ 1. Its first columns are the
// uncovered_k, the rounds' weights follow.
func newMaster(target []float64) (*lp.Session, error) {
	m := lp.NewModel(lp.Minimize)
	for k := range target {
		slack := m.AddCol(0, lp.Inf, 1)
		m.AddRow(target[k], lp.Inf, []int{slack}, []float64{1})
	}
	m.AddRow(-lp.Inf, 1, nil, nil)
	return lp.NewSession(m)
}

// pricing finds the round of largest value: a MILP over the slots with
// each job in at most one and every type within its GPUs.
type pricing struct {
	m     *lp.Model
	slots []roundSlot
	caps  []int
	env   lpEnv
}

func newPricing(slots []roundSlot, caps []int, env lpEnv) *pricing {
	m := lp.NewModel(lp.Maximize)
	var byJob, byType [][]int
	grow := func(s [][]int, i int) [][]int {
		for len(s) <= i {
			s = append(s, nil)
		}
		return s
	}
	for k, s := range slots {
		m.SetInteger(m.AddCol(0, 1, 0))
		for _, j := range s.jobs() {
			byJob = grow(byJob, j)
			byJob[j] = append(byJob[j], k)
		}
		byType = grow(byType, s.w)
		byType[s.w] = append(byType[s.w], k)
	}
	for _, ks := range byJob {
		if len(ks) > 0 {
			m.AddRow(-lp.Inf, 1, ks, ones(len(ks)))
		}
	}
	for w, ks := range byType {
		val := make([]float64, len(ks))
		for i, k := range ks {
			val[i] = float64(slots[k].gpus)
		}
		if len(ks) > 0 {
			m.AddRow(-lp.Inf, float64(caps[w]), ks, val)
		}
	}
	return &pricing{m: m, slots: slots, caps: caps, env: env}
}

func (s roundSlot) jobs() []int {
	if s.b >= 0 {
		return []int{s.a, s.b}
	}
	return []int{s.a}
}

// improving returns a round with a negative reduced cost in the master
// (duals: one per target, then the Σ weight row's), preferring full rounds
// (coverBonus), or nil when there is none. A greedy round usually improves
// at a fraction of a MILP's cost; the MILPs settle whether any round does.
func (p *pricing) improving(ctx context.Context, duals, target []float64) ([]int, error) {
	val := slices.Clone(duals[:len(target)])
	for k := range val {
		val[k] += coverBonus * target[k]
	}
	tries := []func() ([]int, error){
		func() ([]int, error) { return p.greedy(val), nil },
		func() ([]int, error) { return p.best(ctx, val) },
		func() ([]int, error) { return p.best(ctx, duals[:len(target)]) },
	}
	for _, try := range tries {
		q, err := try()
		if err != nil {
			return nil, err
		}
		gain := duals[len(target)]
		for _, k := range q {
			gain += duals[k]
		}
		if gain > 1e-9 {
			return q, nil
		}
	}
	return nil, nil
}

// greedy builds a round from the slots of positive value, highest first
// (lowest index on ties), each taken when its jobs are free and its type
// has the GPUs.
func (p *pricing) greedy(value []float64) []int {
	order := make([]int, 0, len(value))
	for k, v := range value {
		if v > 0 {
			order = append(order, k)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(value[b], value[a]) })
	left := slices.Clone(p.caps)
	taken := map[int]bool{}
	var q []int
	for _, k := range order {
		s := p.slots[k]
		if left[s.w] < s.gpus || taken[s.a] || (s.b >= 0 && taken[s.b]) {
			continue
		}
		left[s.w] -= s.gpus
		for _, j := range s.jobs() {
			taken[j] = true
		}
		q = append(q, k)
	}
	slices.Sort(q)
	return q
}

func (p *pricing) best(ctx context.Context, value []float64) ([]int, error) {
	for k, v := range value {
		p.m.SetObj(k, v)
	}
	o := lp.Options{Plain: true}
	b := p.env.budget
	if b != nil {
		if b.nodes <= 0 || b.iterations <= 0 {
			return nil, fmt.Errorf("%w (its search budget)", ErrDecomposeLimit)
		}
		o.MaxNodes = b.nodes
	}
	res, err := p.env.solve(ctx, p.m, nil, o)
	if errors.Is(err, lp.ErrNodeLimit) {
		return nil, fmt.Errorf("%w (its search budget)", ErrDecomposeLimit)
	}
	if err != nil {
		return nil, err
	}
	if b != nil {
		b.nodes -= res.Nodes
		b.iterations -= res.Iterations
	}
	var q []int
	for k := range value {
		if res.X[k] > 0.5 {
			q = append(q, k)
		}
	}
	return q, nil
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}
