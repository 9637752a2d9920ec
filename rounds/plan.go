package rounds

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// JobsFromTable builds the mechanism's view of jobs (rates on the given
// worker types from t); Order is the arrival rank, ties by id
// (policy.CompareIDs), so that the slice's order changes no plan.
func JobsFromTable(t *table.Table, types []string, jobs []policy.Job) map[string]*Job {
	out := make(map[string]*Job, len(jobs))
	byArrival := slices.Clone(jobs)
	slices.SortStableFunc(byArrival, func(a, b policy.Job) int {
		return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), policy.CompareIDs(a.ID, b.ID))
	})
	for i, j := range byArrival {
		m := &Job{ID: j.ID, Type: j.Type, ScaleFactor: j.Type.ScaleFactor, Order: i, Rates: map[string]float64{}}
		for _, w := range types {
			if r, ok := t.Isolated(w, j.Type); ok && r > 0 {
				m.Rates[w] = r
			}
		}
		out[j.ID] = m
	}
	return out
}

// TablePairRates reads co-located rates from t (measured entries only).
func TablePairRates(t *table.Table) PairRates {
	return func(w string, a, b *Job) (float64, float64) {
		ra, rb, st := t.Pair(w, a.Type, b.Type)
		if st != table.Measured {
			return 0, 0
		}
		return ra, rb
	}
}

// RoundsConfig configures RunRounds: a steady job set under one allocation.
type RoundsConfig struct {
	Topology     *Topology
	Table        *table.Table
	Jobs         []policy.Job
	Allocation   *policy.Allocation
	Rounds       int
	RoundSeconds float64 // 0: 360
	// NoBackFill leaves GPUs idle rather than run entries with priority 0.
	// It is on anyway for FIFO policies, as in Simulate: for Policy, or,
	// when Policy is nil, for the policy Allocation.Policy names.
	NoBackFill bool
	Policy     policy.Policy // the policy that made Allocation; optional
}

// check refuses what RunRounds would otherwise plan for without a word: no
// topology, table or allocation (a panic), a round length that is not a
// positive number, a job type the table lacks (it never ran, and showed no
// loss since its rate is 0), repeated job ids, and an allocation naming jobs
// that are not there (with time) or fractions outside [0, 1].
func (cfg RoundsConfig) check() error {
	switch {
	case cfg.Topology == nil || cfg.Table == nil || cfg.Allocation == nil:
		return errors.New("rounds: topology, table and allocation are required")
	case !(cfg.RoundSeconds > 0) || math.IsInf(cfg.RoundSeconds, 0):
		return fmt.Errorf("rounds: round length %v must be a positive number of seconds", cfg.RoundSeconds)
	}
	ids := make(map[string]bool, len(cfg.Jobs))
	for i, j := range cfg.Jobs {
		switch {
		case ids[j.ID]:
			return fmt.Errorf("rounds: jobs[%d]: job %q: duplicate id", i, j.ID)
		case !cfg.Table.HasJobType(j.Type):
			return fmt.Errorf("rounds: jobs[%d]: job %q: job type %s is not in the throughput table", i, j.ID, j.Type)
		}
		ids[j.ID] = true
	}
	combos := slices.Collect(maps.Keys(cfg.Allocation.Fractions))
	sortCombinations(combos) // the first problem found is the same on every run
	for _, c := range combos {
		for w, f := range cfg.Allocation.Fractions[c] {
			for _, m := range members(c) {
				if !ids[m] && f > 0 {
					return fmt.Errorf("rounds: allocation: %s: job %q is not among the jobs", c.Key(), m)
				}
			}
			// A type the topology lacks is a target no round serves: unrealizable, not wrong.
			if !(f >= 0 && f <= 1+1e-6) {
				return fmt.Errorf("rounds: allocation: %s on %s: fraction %v is outside [0, 1]", c.Key(), w, f)
			}
		}
	}
	return nil
}

// noBackFill is NoBackFill, or whether the allocation's policy never
// back-fills.
func (cfg RoundsConfig) noBackFill() bool {
	if cfg.NoBackFill {
		return true
	}
	p := cfg.Policy
	if p == nil && cfg.Allocation != nil {
		if named, err := policy.New(cfg.Allocation.Policy); err == nil {
			p = named
		}
	}
	return p != nil && neverBackFills(RuntimeName(p))
}

// Fidelity compares the time fraction a job received on a worker type with
// its target (both summed over the combinations it belongs to). BackFill is
// the part of Received beyond the target, max(0, Received − Target): time
// the job got because GPUs would otherwise idle (all of Received where it
// has no target). It is not the sum of the rounds marked
// Assignment.BackFill: once a job is a round ahead, every round it runs is
// marked so, including the rounds that later count towards its target.
type Fidelity struct {
	Target   float64 `json:"target"`
	Received float64 `json:"received"`
	BackFill float64 `json:"backfill"`
}

// Deviation is received minus target, back-fill included.
func (f Fidelity) Deviation() float64 { return f.Received - f.Target }

// AllocatedDeviation is received minus back-fill minus target, that is
// min(received, target) − target: never positive, and below zero by how far
// the job fell short of its target. Time beyond the target is back-fill and
// harmless; a mechanism that gives one job too much where GPUs are scarce
// shows up as another job's shortfall.
func (f Fidelity) AllocatedDeviation() float64 { return math.Min(f.Received, f.Target) - f.Target }

// RoundsResult is a sequence of round plans and how well they realized the
// allocation.
type RoundsResult struct {
	Plans    []*RoundPlan
	Fidelity map[string]map[string]Fidelity // job id → worker type → fractions
	// MaxDeviation is the largest |Deviation| over jobs and worker types; on
	// a cluster with idle GPUs it is mostly back-fill.
	MaxDeviation float64
	// MaxDeviationAllocated is the largest |AllocatedDeviation|.
	MaxDeviationAllocated float64
	// MaxThroughputLoss is the largest share of a job's allocated
	// throughput (rate × target over the combinations and worker types it
	// has a target on) that the rounds did not give it, back-fill included
	// (rate × time received anywhere): what the job lost in steps.
	MaxThroughputLoss float64
	// Decomposed says the plan follows the allocation's decomposition into
	// feasible rounds, or the nearest rounds when Realizable is false (an
	// allocation with pairs or gangs whose plan that way fell less short or,
	// when Realizable is false, lost the worst-served job less throughput;
	// see RunRounds).
	Decomposed bool
	// Realizable says whether some sequence of rounds gives every job and
	// pair its allocation exactly (see the function Realizable): when false,
	// a shortfall is the allocation's, not the mechanism's; nil when not
	// known.
	Realizable *bool
}

// RunRounds plans cfg.Rounds consecutive rounds for a job set that neither
// grows nor finishes, feeding each round's placement and received time into
// the next, and reports the fidelity to the allocation.
//
// An allocation with pairs or gangs is planned twice, with the per-entry
// walk and following its decomposition into feasible rounds
// (Options.Decompose; the nearest rounds when none realizes it), and the
// plan with the smaller largest shortfall is kept (for an allocation no
// rounds give, the smaller MaxThroughputLoss; the walk's on a tie):
// neither is better on every allocation. The walk drifted on a 14-job
// max-min packed allocation (0.17 behind after 100 rounds, 0.14 after 400,
// where the decomposition gave 0.018 and 0.002), but its plan was the
// better one on 100 of the 194 random realizable allocations of
// TestFidelityPackedSample, and on max-min packed allocations with 4-5 jobs
// a GPU (TestPackedPolicyRegimes: 0.008-0.017 against 0.016-0.028 after 100
// rounds; with about one job a GPU the decomposition is ahead, 0.005-0.021
// against 0.02-0.11).
//
// The decompositions (LPs and MILPs) take up to seconds each, and a plan of
// many rounds more: RunRounds stops with ctx's error once ctx is done,
// between rounds and within a decomposition.
func RunRounds(ctx context.Context, cfg RoundsConfig) (*RoundsResult, error) {
	if cfg.Rounds < 1 {
		return nil, fmt.Errorf("rounds: %d rounds, want at least 1", cfg.Rounds)
	}
	if cfg.RoundSeconds == 0 {
		cfg.RoundSeconds = DefaultRoundSeconds
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	res, _, err := runRounds(ctx, cfg, false)
	if err != nil {
		return nil, err
	}
	if !hasPairs(cfg.Allocation) && !hasGangs(cfg.Jobs) {
		res.Realizable = Realizable(ctx, cfg)
		return res, ctx.Err()
	}
	dec, sched, err := runRounds(ctx, cfg, true)
	if err != nil {
		return nil, err
	}
	res.Realizable = scheduleVerdict(sched)
	if sched == nil { // no gang or pair has time: the rows decide, as Realizable does
		res.Realizable = Realizable(ctx, cfg)
		if err := ctx.Err(); err != nil {
			return nil, err // Realizable's nil was the context's, not "not known"
		}
	}
	if _, dropped, _ := servedTargets(cfg); dropped {
		res.Realizable = ptr(false)
	}
	// A plan must fall short by clearly less (beyond rounding) to replace
	// the walk's, so that the choice does not turn on the last bit. Where
	// no rounds give the allocation, no plan meets every target, and the
	// one that loses the worst-served job less throughput is kept (by time
	// short, the plan kept lost more on some: min total duration's 5
	// unrealizable allocations of 21-40 jobs, README).
	better := dec != nil && dec.MaxDeviationAllocated < res.MaxDeviationAllocated-1e-9
	if dec != nil && sched.nearest {
		better = dec.MaxThroughputLoss < res.MaxThroughputLoss-1e-9
	}
	if better {
		dec.Decomposed, dec.Realizable = true, res.Realizable
		return dec, nil
	}
	return res, nil
}

// Realizable says whether some sequence of rounds gives every job and pair
// of cfg.Allocation its time on every worker type exactly (cfg.Rounds is
// not used), as RoundsResult.Realizable does: nil when not known. An
// allocation of single-GPU jobs without pairs is realizable exactly when it
// keeps each job within its time and each type within its GPUs (those rows
// form a bipartite system, whose vertices are rounds); with gangs or pairs,
// the decomposition decides (at most 150 targets). A target that no round
// can serve at all (a job without a rate there, a type the cluster lacks)
// makes it unrealizable. The decomposition can take seconds (about 4 s for
// 110 targets on 8 GPUs a type); when ctx ends first the answer is nil.
func Realizable(ctx context.Context, cfg RoundsConfig) *bool {
	return check(ctx, cfg, false).Realizable
}

// Realizability is what Check finds of an allocation.
type Realizability struct {
	// Realizable is Realizable's answer.
	Realizable *bool
	// NearestLoss is, when Realizable is false, the least largest share of
	// a job's allocated throughput (rate × time on its allocated worker
	// types and pairs, back-fill aside) that a mix of rounds leaves short:
	// whatever the rounds, some job loses at least that much, and the
	// nearest rounds (policy.DecomposeNearest) lose no job more. Nil when
	// not known: a target no round can serve, or the decomposition's
	// limits.
	NearestLoss *float64
}

// Check is Realizable that, for an allocation no rounds give, also finds
// how far the nearest rounds fall short, with one decomposition.
func Check(ctx context.Context, cfg RoundsConfig) Realizability {
	return check(ctx, cfg, true)
}

// check is Check, or Realizable where nearest is false: the decomposition
// is then Decompose's alone, which proves the verdict at less cost.
func check(ctx context.Context, cfg RoundsConfig, nearest bool) Realizability {
	if cfg.RoundSeconds == 0 {
		cfg.RoundSeconds = DefaultRoundSeconds
	}
	if cfg.check() != nil {
		return Realizability{} // not known: RunRounds says what is wrong
	}
	targets, dropped, caps := servedTargets(cfg)
	if dropped {
		return Realizability{Realizable: ptr(false)}
	}
	var out Realizability
	if !hasGangs(cfg.Jobs) && !hasPairs(cfg.Allocation) {
		// The job and GPU rows decide (their system is bipartite); the
		// decomposition then only measures how far short the nearest
		// rounds fall.
		if within := withinRows(cfg); within || !nearest {
			return Realizability{Realizable: ptr(within)}
		}
		out.Realizable = ptr(false)
	}
	if len(targets) > policy.DecomposeMaxTargets {
		return out
	}
	var rate func(string, int) float64
	if nearest {
		s := &State{Jobs: JobsFromTable(cfg.Table, cfg.Topology.WorkerTypes(), cfg.Jobs), PairRates: TablePairRates(cfg.Table)}
		rate = s.rate(targets)
	}
	cs, err := decompose(ctx, targets, "", caps, rate)
	switch {
	case err == nil && cs.nearest:
		out.Realizable, out.NearestLoss = ptr(false), &cs.short
	case out.Realizable == nil:
		out.Realizable = verdict(err == nil, err)
	}
	return out
}

// rowTol is how far a job's time or a type's GPUs may be exceeded by
// rounding (policies solve to 1e-9) and still count as within.
const rowTol = 1e-7

// withinRows reports whether an allocation of single-GPU jobs keeps every
// job within all of its time and every type within its GPUs.
func withinRows(cfg RoundsConfig) bool {
	used := map[string]float64{}
	for _, j := range cfg.Jobs {
		t := 0.0
		for w, v := range cfg.Allocation.Fractions[policy.Single(j.ID)] {
			t += v
			used[w] += v
		}
		if t > 1+rowTol {
			return false
		}
	}
	for w, v := range used {
		if v > float64(cfg.Topology.Count(w))+rowTol {
			return false
		}
	}
	return true
}

// servedTargets returns the allocation's positive targets the mechanism has
// an entry for (sortedTargets), whether it has a positive target the
// mechanism has none for, so that it can never run (the job is not among
// cfg.Jobs or has no rate on the type, the type has no GPUs or too few for
// the job, the pair has no rates there), and each type's GPUs.
func servedTargets(cfg RoundsConfig) (targets []*entry, dropped bool, caps map[string]int) {
	st := &State{Topology: cfg.Topology, Jobs: JobsFromTable(cfg.Table, cfg.Topology.WorkerTypes(), cfg.Jobs),
		PairRates: TablePairRates(cfg.Table), History: NewLedger(DefaultRoundSeconds)}
	served := map[entryKey]bool{}
	var es []*entry
	for _, e := range st.entries(cfg.Allocation) {
		served[entryKey{e.c, e.w}] = true
		es = append(es, &e)
	}
	for c, x := range cfg.Allocation.Fractions {
		for w, v := range x {
			dropped = dropped || (v > rowTol && !served[entryKey{c, w}])
		}
	}
	return sortedTargets(es), dropped, gpuCounts(cfg.Topology)
}

// gpuCounts returns the GPUs of each worker type of topo.
func gpuCounts(topo *Topology) map[string]int {
	caps := map[string]int{}
	for _, w := range topo.WorkerTypes() {
		caps[w] = topo.Count(w)
	}
	return caps
}

// verdict turns a decomposition's outcome into RoundsResult.Realizable.
func verdict(decomposed bool, err error) *bool {
	switch {
	case decomposed:
		return ptr(true)
	case errors.Is(err, policy.ErrUnrealizable):
		return ptr(false)
	}
	return nil
}

// scheduleVerdict is verdict for the schedule a plan followed (nil: none).
func scheduleVerdict(cs *configSchedule) *bool {
	switch {
	case cs == nil:
		return nil
	case cs.nearest:
		return ptr(false)
	}
	return verdict(cs.err == nil, cs.err)
}

func ptr[T any](v T) *T { return &v }

// hasGangs reports whether a job takes several GPUs.
func hasGangs(jobs []policy.Job) bool {
	return slices.ContainsFunc(jobs, func(j policy.Job) bool { return j.Type.ScaleFactor > 1 })
}

func sortedCombinations[V any](m map[policy.Combination]V) []policy.Combination {
	cs := slices.Collect(maps.Keys(m))
	sortCombinations(cs)
	return cs
}

func hasPairs(a *policy.Allocation) bool {
	if a == nil {
		return false
	}
	for c, x := range a.Fractions {
		if c.IsPair() && slices.ContainsFunc(slices.Collect(maps.Values(x)), func(v float64) bool { return v > 0 }) {
			return true
		}
	}
	return false
}

// runRounds is RunRounds with or without the decomposition. With it, the
// plan is nil when the first round did not follow a decomposition, and
// sched is the schedule it followed or the one that failed (nil when none
// was made: no pair or gang with time, or beyond the size limit).
func runRounds(ctx context.Context, cfg RoundsConfig, decompose bool) (res *RoundsResult, sched *configSchedule, err error) {
	types := cfg.Topology.WorkerTypes()
	ledger := NewLedger(cfg.RoundSeconds)
	state := &State{Topology: cfg.Topology, Jobs: JobsFromTable(cfg.Table, types, cfg.Jobs),
		PairRates: TablePairRates(cfg.Table), History: ledger, Options: Options{NoBackFill: cfg.noBackFill(), Decompose: decompose},
		decomposeCtx: ctx}
	res = &RoundsResult{}
	for i := 0; i < cfg.Rounds; i++ {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		p := Plan(state, cfg.Allocation, float64(i)*cfg.RoundSeconds)
		// A decomposition cut short by ctx reads as one that failed: the walk's plan, not
		// the allocation's verdict.
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		commitRound(state, ledger, cfg.Allocation, p, cfg.RoundSeconds)
		res.Plans = append(res.Plans, p)
		if i == 0 && decompose && (state.schedule == nil || state.schedule.err != nil) {
			return nil, state.schedule, nil
		}
	}
	res.Fidelity = fidelity(cfg, types, ledger)
	for _, f := range res.Fidelity {
		for _, e := range f {
			res.MaxDeviation = math.Max(res.MaxDeviation, math.Abs(e.Deviation()))
			res.MaxDeviationAllocated = math.Max(res.MaxDeviationAllocated, math.Abs(e.AllocatedDeviation()))
		}
	}
	res.MaxThroughputLoss = maxThroughputLoss(cfg, state, ledger)
	return res, state.schedule, nil
}

// maxThroughputLoss is RoundsResult.MaxThroughputLoss: for each job, 1 −
// Σ rate × time received over Σ rate × target (rates as the mechanism's,
// state.rate), at least 0, the largest; jobs promised under 1e-7 of time
// or no throughput left out.
func maxThroughputLoss(cfg RoundsConfig, state *State, ledger *Ledger) float64 {
	if cfg.Allocation == nil || ledger.Elapsed() <= 0 {
		return 0
	}
	promised, time := map[string]float64{}, map[string]float64{}
	addSteps(promised, time, state, cfg.Allocation.Fractions, 1)
	got := map[string]float64{}
	addSteps(got, nil, state, ledger.got, 1/ledger.Elapsed())
	worst := 0.0
	for id, p := range promised {
		if p > 0 && time[id] > 1e-7 {
			worst = max(worst, 1-got[id]/p)
		}
	}
	return worst
}

// addSteps adds to steps[j] each job's rate × scale × time over fr's
// combinations and types (and to time[j], when not nil, scale × time), in
// a fixed order so that sums come out the same on every run.
func addSteps(steps, time map[string]float64, state *State, fr map[policy.Combination]map[string]float64, scale float64) {
	var es []*entry
	for _, c := range sortedCombinations(fr) {
		for _, w := range typesOf(fr[c]) {
			if fr[c][w] > 0 {
				es = append(es, &entry{c: c, w: w, target: fr[c][w]})
			}
		}
	}
	rate := state.rate(es)
	for k, e := range es {
		for _, id := range members(e.c) {
			steps[id] += rate(id, k) * scale * e.target
			if time != nil {
				time[id] += scale * e.target
			}
		}
	}
}

// fidelity sums targets (from the allocation) and received time (from the
// ledger) per job and worker type; back-fill is received time beyond the
// target.
func fidelity(cfg RoundsConfig, types []string, ledger *Ledger) map[string]map[string]Fidelity {
	out := make(map[string]map[string]Fidelity, len(cfg.Jobs))
	for _, j := range cfg.Jobs {
		f := make(map[string]Fidelity, len(types))
		for _, w := range types {
			f[w] = Fidelity{}
		}
		out[j.ID] = f
	}
	add := func(c policy.Combination, w string, upd func(*Fidelity)) {
		for _, m := range members(c) {
			if f, ok := out[m]; ok {
				if e, ok := f[w]; ok {
					upd(&e)
					f[w] = e
				}
			}
		}
	}
	// Sums run in a fixed order (combinations sorted, types sorted), so they
	// come out the same to the last bit on every run.
	if cfg.Allocation != nil {
		for _, c := range sortedCombinations(cfg.Allocation.Fractions) {
			x := cfg.Allocation.Fractions[c]
			for _, w := range typesOf(x) {
				add(c, w, func(e *Fidelity) { e.Target += x[w] })
			}
		}
	}
	total := ledger.Elapsed()
	for _, c := range sortedCombinations(ledger.got) {
		x := ledger.got[c]
		for _, w := range typesOf(x) {
			add(c, w, func(e *Fidelity) { e.Received += x[w] / total })
		}
	}
	for _, f := range out {
		for w, e := range f {
			e.BackFill = math.Max(0, e.Received-e.Target)
			f[w] = e
		}
	}
	return out
}
