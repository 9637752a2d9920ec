package rounds

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/policy/lp"
)

// Packed allocations can be realized through a decomposition
// (Options.Decompose). With pairs, a round is a matching of the jobs (each
// in one combination) within every worker type's GPUs, and keeping each
// (combination, worker type) near its target one entry at a time can drift:
// on a max-min packed allocation of 14 jobs the walk's largest shortfall
// did not shrink with the rounds (0.17 after 100, 0.14 after 400;
// packed_test.go), and on random realizable packed allocations it averaged
// 0.012 after 100 rounds (worst 0.11). So the allocation's targets are written as a convex
// combination of configurations, each a feasible round (decompose), and
// every round runs the configuration furthest behind its weight, which
// keeps each configuration within about a round of its share (see next):
// 0.018 after 100 rounds and 0.002 after 400; mean 0.0034, worst 0.023. On max-min packed allocations with about one job a
// GPU it stays within 0.005-0.021 where the walk falls 0.02-0.11 behind. It
// is not better everywhere: with about as many configurations as targets
// an entry can still drift by a few rounds, and with 4-5 jobs a GPU the walk
// does better (0.008-0.017 against 0.016-0.028 after 100 rounds;
// TestPackedPolicyRegimes), which is why RunRounds plans both and keeps the
// better.

// followSchedule takes this round's configuration of a packed allocation
// into w and reports whether it did: not without Options.Decompose, not
// without pair targets (the walk alone is PD² there), not with more than
// decomposeMaxTargets targets, not when the decomposition failed (the walk
// then serves the targets alone). selectEntries never calls it in compat
// mode.
//
// The schedule counts the round as planned; planning the round that starts
// at the same time again (a plan discarded, or asked for twice) takes the
// earlier count back, so Plan may be called more than once a round.
func (s *State) followSchedule(w *walk, es []*entry, now float64) bool {
	cs := s.scheduleFor(es)
	if cs == nil {
		return false
	}
	if cs.planned && cs.lastStart == now {
		cs.unrun(cs.last)
	}
	q := cs.next()
	cs.run(q)
	cs.planned, cs.lastStart, cs.last = true, now, q
	if q < 0 {
		return true
	}
	byKey := map[entryKey]*entry{}
	for _, e := range es {
		if e.target > 0 {
			byKey[entryKey{e.c, e.w}] = e
		}
	}
	for _, k := range cs.confs[q] {
		if e := byKey[cs.keys[k]]; e != nil {
			w.try(e)
		}
	}
	return true
}

// scheduleFor returns the decomposition of es's targets (cached in s while
// they stay the same), or nil where the walk serves them alone.
func (s *State) scheduleFor(es []*entry) *configSchedule {
	targets := sortedTargets(es)
	if !s.Decompose || len(targets) > decomposeMaxTargets || !slices.ContainsFunc(targets, func(e *entry) bool { return e.c.IsPair() }) {
		return nil
	}
	caps := gpuCounts(s.Topology)
	sig := scheduleSignature(targets, caps)
	if s.schedule == nil || s.schedule.sig != sig {
		cs, err := decompose(context.Background(), targets, sig, caps)
		if err != nil {
			cs = &configSchedule{sig: sig, err: err}
		}
		s.schedule = cs
	}
	if s.schedule.err != nil {
		return nil
	}
	return s.schedule
}

// config is one feasible round: entries (indices into a configSchedule's
// keys) that share no job and fit every worker type's GPUs.
type config []int

// entryKey names a (combination, worker type) target.
type entryKey struct {
	c policy.Combination
	w string
}

// configSchedule decomposes one allocation's targets (for one set of jobs)
// and remembers how often each configuration ran since.
type configSchedule struct {
	sig    string // the targets it decomposes and the GPUs, see scheduleSignature
	keys   []entryKey
	confs  []config
	weight []float64 // each configuration's share of the rounds
	ran    []float64 // rounds each configuration ran
	rounds float64   // rounds planned with this schedule
	err    error     // why the decomposition failed (the walk serves the targets), or nil
	// The last round planned: its start and configuration.
	planned   bool
	lastStart float64
	last      int
}

// Column generation's cost grows fast with the targets, in about 4 columns
// a target (max-min packed allocations on 2 cores: 43 targets 108 columns
// 0.06 s, 65-78 targets 0.15-1 s, 98-106 targets 0.3-1.4 s, 126-162
// targets 600-700 columns about 3 s, 203 targets 842 columns 6.4 s; before
// the master was warm started and the pricing MILPs solved plainly,
// lp.Options.Plain, 73-75 targets took about 5 s and 126 targets 34 s),
// and a partial decomposition is worse than none (its uncovered targets,
// served by the walk after it, came out 0.06 behind at 126 targets against
// the walk's 0.047 alone). So an allocation with more than
// decomposeMaxTargets targets, or one whose decomposition needs more than
// decomposeLimit columns, is left to the walk.
const (
	decomposeMaxTargets = 150
	decomposeLimit      = 800
)

// decomposeTol is the total uncovered target a decomposition may leave:
// rounding, as policies solve to 1e-9 a row (below it a configuration's
// weight is not worth a round anyway).
const decomposeTol = 1e-7

var (
	// errDecomposeLimit reports a decomposition cut short by decomposeLimit.
	errDecomposeLimit = errors.New("decomposition needs more columns than allowed")
	// errNotRealizable reports targets no convex combination of rounds
	// covers (a gang able to take every GPU of a type, say). The walk
	// spreads such a shortfall over the jobs; the master LP, minimizing the
	// total uncovered, would put it all on one (0.51 short against the
	// walk's 0.25 on two 4-GPU gangs sharing 6 GPUs).
	errNotRealizable = errors.New("no sequence of rounds realizes the targets")
)

// coverBonus adds coverBonus × target to each entry's value in pricing, so
// that among rounds of equal value at the duals (most entries have dual 0)
// it picks full ones that serve many targets. Such rounds resemble the ones
// an allocation is made of, so fewer of them are needed: on 300 random
// allocations made of at most 4 rounds (a scratch sample like
// packed_test.go's), up to 44 configurations without it; after 20 rounds a
// mean largest shortfall of 0.021 against 0.027, after 100 rounds 0.0045
// against 0.0061.
const coverBonus = 1e-2

// decompose writes the targets (sortedTargets, identified by sig) as Σ_q weight_q · q over
// configurations q, Σ weight ≤ 1, by column generation: a master LP
// minimizes the targets left uncovered, and a pricing MILP finds the round
// (a matching of jobs within every type's GPUs) with the largest value at
// the master's duals. It stops when the targets are covered, and fails with
// errNotRealizable when no round would cover more. The master is an
// lp.Session (COIN only): without one the decomposition fails and the walk
// serves the targets.
func decompose(ctx context.Context, targets []*entry, sig string, caps map[string]int) (*configSchedule, error) {
	cs := &configSchedule{sig: sig}
	var target []float64
	var sfs []int
	for _, e := range targets {
		cs.keys = append(cs.keys, entryKey{e.c, e.w})
		target = append(target, e.target)
		sfs = append(sfs, e.sf)
	}
	pricing := newPricing(cs.keys, sfs, caps)
	master, err := newMaster(target)
	if err != nil {
		return nil, err
	}
	defer master.Close()
	for {
		res, err := master.Solve(ctx, lp.Options{})
		if err != nil {
			return nil, err
		}
		cs.setWeights(res, len(target))
		if res.Objective <= decomposeTol {
			break
		}
		if len(cs.confs) >= decomposeLimit {
			return nil, errDecomposeLimit
		}
		q, err := pricing.improving(ctx, res.Duals, target)
		if err != nil {
			return nil, err
		}
		if q == nil {
			return nil, errNotRealizable
		}
		cs.confs = append(cs.confs, q)
		rows := append(slices.Clone(q), len(target)) // its targets and the Σ weight row
		master.AddColumn(0, lp.Inf, 0, rows, ones(len(rows)))
	}
	cs.ran = make([]float64, len(cs.confs))
	return cs, nil
}

// newMaster returns the master LP before any configuration, kept loaded so
// that each new configuration's column is priced in from the last basis
// (primal simplex): min Σ uncovered_e subject to Σ_q weight_q·[e ∈ q] +
// uncovered_e ≥ target_e and Σ weight ≤ 1. Its first columns are the
// uncovered_e, the configurations' weights follow.
func newMaster(target []float64) (*lp.Session, error) {
	m := lp.NewModel(lp.Minimize)
	for e := range target {
		slack := m.AddCol(0, lp.Inf, 1)
		m.AddRow(target[e], lp.Inf, []int{slack}, []float64{1})
	}
	m.AddRow(-lp.Inf, 1, nil, nil)
	return lp.NewSession(m)
}

// setWeights reads the configurations' weights from the master's solution,
// whose first n columns are the uncovered targets.
func (cs *configSchedule) setWeights(res *lp.Result, n int) {
	cs.weight = make([]float64, len(cs.confs))
	for q := range cs.confs {
		cs.weight[q] = max(0, res.X[n+q])
	}
}

// pricing finds the round of largest value: a MILP over the entries with
// each job in at most one and every type within its GPUs.
type pricing struct {
	m    *lp.Model
	keys []entryKey
	sfs  []int
	caps map[string]int
}

func newPricing(keys []entryKey, sfs []int, caps map[string]int) *pricing {
	m := lp.NewModel(lp.Maximize)
	byJob := map[string][]int{}
	byType := map[string][]int{}
	for k, key := range keys {
		m.SetInteger(m.AddCol(0, 1, 0))
		for _, j := range members(key.c) {
			byJob[j] = append(byJob[j], k)
		}
		byType[key.w] = append(byType[key.w], k)
	}
	for _, j := range slices.Sorted(maps.Keys(byJob)) {
		m.AddRow(-lp.Inf, 1, byJob[j], ones(len(byJob[j])))
	}
	for _, w := range slices.Sorted(maps.Keys(byType)) {
		val := make([]float64, len(byType[w]))
		for i, k := range byType[w] {
			val[i] = float64(sfs[k])
		}
		m.AddRow(-lp.Inf, float64(caps[w]), byType[w], val)
	}
	return &pricing{m: m, keys: keys, sfs: sfs, caps: caps}
}

// improving returns a round with a negative reduced cost in the master
// (duals: one per target, then the Σ weight row's), preferring full rounds
// (coverBonus), or nil when there is none. A greedy round usually improves
// at a fraction of a MILP's cost; the MILPs settle whether any round does.
func (p *pricing) improving(ctx context.Context, duals, target []float64) (config, error) {
	val := slices.Clone(duals[:len(target)])
	for e := range val {
		val[e] += coverBonus * target[e]
	}
	tries := []func() (config, error){
		func() (config, error) { return p.greedy(val), nil },
		func() (config, error) { return p.best(ctx, val) },
		func() (config, error) { return p.best(ctx, duals[:len(target)]) },
	}
	for _, try := range tries {
		q, err := try()
		if err != nil {
			return nil, err
		}
		gain := duals[len(target)]
		for _, e := range q {
			gain += duals[e]
		}
		if gain > 1e-9 {
			return q, nil
		}
	}
	return nil, nil
}

// greedy builds a round from the entries of positive value, highest first
// (lowest index on ties), each taken when its jobs are free and its type
// has the GPUs.
func (p *pricing) greedy(value []float64) config {
	order := make([]int, 0, len(value))
	for k, v := range value {
		if v > 0 {
			order = append(order, k)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(value[b], value[a]) })
	left := maps.Clone(p.caps)
	taken := map[string]bool{}
	var q config
	for _, k := range order {
		key := p.keys[k]
		if left[key.w] < p.sfs[k] || taken[key.c.A] || (key.c.IsPair() && taken[key.c.B]) {
			continue
		}
		left[key.w] -= p.sfs[k]
		for _, j := range members(key.c) {
			taken[j] = true
		}
		q = append(q, k)
	}
	slices.Sort(q)
	return q
}

func (p *pricing) best(ctx context.Context, value []float64) (config, error) {
	for k, v := range value {
		p.m.SetObj(k, v)
	}
	res, err := lp.Default().Solve(ctx, p.m, lp.Options{Plain: true})
	if err != nil {
		return nil, err
	}
	var q config
	for k := range value {
		if res.X[k] > 0.5 {
			q = append(q, k)
		}
	}
	return q, nil
}

// next returns the configuration to run this round: the one whose runs
// fall furthest behind its weight by the end of the round (the lowest index
// on ties), or -1 when the idle share (1 - Σ weight) is further behind than
// any (such a round is not left idle: followSchedule's caller fills it as
// the walk finishes a round, targets first, then back-fill). It is not PD²: a configuration can fall slightly more than a round
// behind (1.10 rounds at worst in a review's 6,000 random weightings of
// 400 rounds). Earliest pseudo-deadline first, which keeps every one within
// a round, measured worse where it matters, on the entries, which sum
// several configurations: on TestFidelityPackedSample a mean largest
// shortfall of 0.0042 (worst 0.040) against 0.0034 (0.023), and behind in
// 12 of the 15 allocations of TestPackedPolicyRegimes. Its runs may fall
// anywhere in their windows; the largest lag keeps each configuration near
// its share at every round.
func (cs *configSchedule) next() int {
	end := cs.rounds + 1
	best, lag := -1, 0.0
	idle := 1.0 // the idle share's lag: end·(1 - Σ weight) - (rounds - Σ ran)
	for q, w := range cs.weight {
		idle -= w * end
		idle += cs.ran[q]
		if l := w*end - cs.ran[q]; w > 0 && (best < 0 || l > lag+1e-12) {
			best, lag = q, l
		}
	}
	if best < 0 || idle > lag+1e-12 {
		return -1
	}
	return best
}

// run records that configuration q (-1: none) runs this round.
func (cs *configSchedule) run(q int) {
	if q >= 0 {
		cs.ran[q]++
	}
	cs.rounds++
}

// unrun takes back run(q).
func (cs *configSchedule) unrun(q int) {
	if q >= 0 {
		cs.ran[q]--
	}
	cs.rounds--
}

// scheduleSignature identifies targets (from sortedTargets) and the GPUs
// of each type they were decomposed for: the cluster may change under an
// allocation, and a configuration for more GPUs would then be counted as
// run while part of it cannot.
func scheduleSignature(targets []*entry, caps map[string]int) string {
	var b strings.Builder
	for _, w := range slices.Sorted(maps.Keys(caps)) {
		b.WriteString(w)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(caps[w]))
		b.WriteByte(';')
	}
	for _, e := range targets {
		b.WriteString(e.c.String())
		b.WriteByte('@')
		b.WriteString(e.w)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(e.target, 'g', -1, 64))
		b.WriteByte(';')
	}
	return b.String()
}

// sortedTargets returns es's entries with positive targets in a fixed
// order (combination, then worker type), so the decomposition does not
// depend on the queue's order.
func sortedTargets(es []*entry) []*entry {
	var out []*entry
	for _, e := range es {
		if e.target > 0 {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(a.c.A, b.c.A), cmp.Compare(a.c.B, b.c.B), cmp.Compare(a.w, b.w))
	})
	return out
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}
