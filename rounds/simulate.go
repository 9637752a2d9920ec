package rounds

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// Gavel's simulator constants (gavel-reference §5.1).
const (
	DefaultRoundSeconds = 360.0
	GavelResetInterval  = 1920.0
)

// Config configures a simulation.
type Config struct {
	Table         *table.Table
	Cluster       policy.Cluster
	GPUsPerServer map[string]int // nil: one GPU per server
	Policy        policy.Policy
	Entities      map[string]policy.Entity
	Prices        policy.Prices // per GPU-hour; nil: no cost
	RoundSeconds  float64       // 0: 360
	// GavelCompat reproduces Gavel's simulator (see the package comment).
	GavelCompat bool
	// ResetInterval is Gavel's minimum time between allocation resets in
	// compat mode (0: 1920 s).
	ResetInterval float64
	// Seed drives the per-round worker-type shuffle that Gavel applies to
	// heterogeneity-agnostic policies in compat mode.
	Seed int64
	// WindowStart, WindowEnd (arrival ranks, end exclusive; 0, 0 = all jobs):
	// the simulation stops once those jobs have finished and the averages are
	// over them (Gavel's jobs_to_complete, §8.1).
	WindowStart, WindowEnd int
}

// JobResult is one finished job.
type JobResult struct {
	ID         string  `json:"id"`
	Arrival    float64 `json:"arrival_seconds"`
	Completion float64 `json:"completion_seconds"`
	JCT        float64 `json:"jct_seconds"`
	Deadline   float64 `json:"slo_deadline_seconds,omitempty"` // absolute; 0 = no SLO
	Violated   bool    `json:"slo_violated,omitempty"`
	Cost       float64 `json:"cost,omitempty"`
}

// Result is a simulation's outcome.
type Result struct {
	AvgJCT        float64     `json:"avg_jct_seconds"`
	Makespan      float64     `json:"makespan_seconds"` // end − first arrival
	End           float64     `json:"end_seconds"`
	Utilization   float64     `json:"utilization"`
	Cost          float64     `json:"cost"`
	SLOViolations int         `json:"slo_violations"`
	Jobs          []JobResult `json:"jobs"`
	Rounds        int         `json:"rounds"`
	Allocations   int         `json:"allocations"` // policy solves
	SolveSeconds  float64     `json:"solve_seconds"`
	// LeaseExtensions / LeaseOpportunities: combinations kept on the same
	// GPUs in the next round / combinations still active after a round.
	LeaseExtensions    int `json:"lease_extensions"`
	LeaseOpportunities int `json:"lease_opportunities"`
	// Warnings are what the policy's allocations said they had to relax (SLOs dropped, an
	// iteration cap reached), each message once, in the order first seen.
	Warnings []Warning `json:"warnings,omitempty"`
}

// Warning is one message of the policy's allocations during a simulation.
type Warning struct {
	Message string  `json:"message"`
	First   float64 `json:"first_seconds"` // simulated time of the first allocation that said it
	Count   int     `json:"count"`         // allocations that said it
}

// JobSource yields jobs in arrival order.
type JobSource interface {
	// Peek returns the next job without consuming it.
	Peek() (policy.Job, bool)
	// Next returns the next job and consumes it; false when none is left.
	Next() (policy.Job, bool)
}

type sliceSource struct {
	jobs []policy.Job
	i    int
}

func (s *sliceSource) Peek() (policy.Job, bool) {
	if s.i >= len(s.jobs) {
		return policy.Job{}, false
	}
	return s.jobs[s.i], true
}

func (s *sliceSource) Next() (policy.Job, bool) {
	j, ok := s.Peek()
	s.i++
	return j, ok
}

// SliceSource serves jobs (already in arrival order).
func SliceSource(jobs []policy.Job) JobSource { return &sliceSource{jobs: jobs} }

// ErrStalled is returned when active jobs can never be scheduled.
var ErrStalled = errors.New("simulation stalled: active jobs but nothing can run and nothing will arrive")

// ErrNoProgress is returned in compat mode (Config.GavelCompat) when the
// jobs that run make no whole step for compatNoStepRounds rounds in a row:
// a round's steps are truncated to whole steps, as Gavel's are, so a job
// whose rate on the worker type it runs on times the round is below one
// step never advances, and with nothing else running the clock does not
// move either. Gavel drops such a job after 5 failed rounds (its JCT left
// out of the averages); compat mode stops with this error instead of
// running forever, which it did.
var ErrNoProgress = errors.New("simulation makes no progress: the jobs that run make no whole step a round (compat mode runs whole steps, as Gavel does)")

// compatNoStepRounds is how many rounds in a row without a whole step
// compat mode runs before ErrNoProgress: Gavel's limit of failed
// micro-tasks before it drops a job.
const compatNoStepRounds = 5

// Simulate runs a trace: jobs as Prepare returns them (arrival order,
// unique ids, all runnable; the first two are checked here too).
func Simulate(ctx context.Context, cfg Config, jobs []policy.Job) (*Result, error) {
	// The whole trace is known: a job the policy can never take is refused now, not when it
	// arrives, hours into the simulation. Out of order, a job waited behind later ones; a
	// repeated id replaced the job before it: results without an error.
	seen := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		switch {
		case seen[j.ID]:
			return nil, fmt.Errorf("simulate: jobs[%d]: job %q: duplicate id", i, j.ID)
		case i > 0 && j.Arrival < jobs[i-1].Arrival:
			return nil, fmt.Errorf("simulate: jobs[%d]: job %q arrives at %v, before the job before it (%v): jobs must be in arrival order (Prepare sorts them)",
				i, j.ID, j.Arrival, jobs[i-1].Arrival)
		}
		seen[j.ID] = true
		if err := policy.CheckJob(cfg.Policy, j); err != nil {
			return nil, err
		}
		if err := checkScale(cfg, j); err != nil {
			// Bad input about one job, as the policy's own checks report it.
			return nil, &policy.InputError{Job: j.ID, Msg: fmt.Sprintf("simulate: job %q: %v", j.ID, err)}
		}
	}
	return SimulateSource(ctx, cfg, SliceSource(jobs))
}

// maxRoundsAlone bounds the rounds one job may need alone on its fastest worker type: past it
// a simulation is a mistake in its units (a round of 1e-9 s, 1e20 steps) that would run for
// days, not a workload.
const maxRoundsAlone = 1e8

// checkScale refuses a job the simulation cannot represent: one that alone needs more than
// maxRoundsAlone rounds, or whose arrival is so large that a round is below its precision
// (its times would round to 0).
func checkScale(cfg Config, j policy.Job) error {
	if cfg.Table == nil {
		return nil // newSimulator says what is missing
	}
	round := cfg.RoundSeconds
	if round == 0 {
		round = DefaultRoundSeconds
	}
	if j.Arrival+round == j.Arrival {
		return fmt.Errorf("arrival %v s leaves no precision for rounds of %v s", j.Arrival, round)
	}
	best := 0.0
	for _, w := range cfg.Cluster.WorkerTypes() {
		if r, ok := cfg.Table.Isolated(w, j.Type); ok && cfg.Cluster[w] >= j.Type.ScaleFactor {
			best = math.Max(best, r)
		}
	}
	if n := j.StepsRemaining() / best / round; best > 0 && n > maxRoundsAlone {
		return fmt.Errorf("%v steps at %v steps/s alone take %.3g rounds of %v s (more than %.0g): check the units of the steps and the round length",
			j.StepsRemaining(), best, n, round, float64(maxRoundsAlone))
	}
	if cfg.GavelCompat && best > 0 && j.StepsRemaining() > 0 && math.Trunc(best*round) < 1 {
		return fmt.Errorf("at its best rate, %v steps/s, a round of %v s is %.3g of a step, and Gavel's simulation (compat mode) runs whole steps a round, "+
			"so the job would never advance (Gavel drops such a job after 5 rounds): simulate it without compat mode, or with rounds of at least %.3g s",
			best, round, best*round, 1/best)
	}
	return nil
}

// SimulateSource runs the jobs src yields.
func SimulateSource(ctx context.Context, cfg Config, src JobSource) (*Result, error) {
	sim, err := newSimulator(cfg, src)
	if err != nil {
		return nil, err
	}
	if cfg.GavelCompat {
		err = sim.runCompat(ctx)
	} else {
		err = sim.runDefault(ctx)
	}
	if err != nil {
		return nil, err
	}
	return sim.result(), nil
}

type active struct {
	job   policy.Job
	mech  *Job
	order int
	done  float64 // steps run
	cost  float64
}

type simulator struct {
	cfg     Config
	src     JobSource
	topo    *Topology
	types   []string
	round   float64
	runtime string // Gavel's policy.name
	packing bool
	fifo    bool
	shuffle bool
	rng     *rand.Rand

	active   map[string]*active
	mech     map[string]*Job // the active jobs' mechanism view, kept with active (Plan's State.Jobs)
	admitted int
	results  []JobResult
	first    float64
	end      float64
	busyGPU  float64   // GPU-seconds busy (default mode)
	gpuBusy  []float64 // per GPU (compat mode)
	res      Result
	prev     map[policy.Combination][]int
}

func newSimulator(cfg Config, src JobSource) (*simulator, error) {
	if cfg.Table == nil || cfg.Policy == nil || len(cfg.Cluster) == 0 {
		return nil, fmt.Errorf("simulate: table, policy and cluster are required")
	}
	topo, err := NewTopology(cfg.Cluster, cfg.GPUsPerServer)
	if err != nil {
		return nil, err
	}
	if cfg.RoundSeconds == 0 {
		cfg.RoundSeconds = DefaultRoundSeconds
	}
	if cfg.RoundSeconds < 0 || math.IsNaN(cfg.RoundSeconds) {
		return nil, fmt.Errorf("simulate: round length %v must be positive", cfg.RoundSeconds)
	}
	if cfg.ResetInterval == 0 {
		cfg.ResetInterval = GavelResetInterval
	}
	switch {
	case cfg.ResetInterval < 0 || math.IsNaN(cfg.ResetInterval):
		return nil, fmt.Errorf("simulate: reset interval %v must not be negative", cfg.ResetInterval)
	case cfg.WindowStart < 0 || cfg.WindowEnd < 0:
		return nil, fmt.Errorf("simulate: window [%d, %d) must not be negative", cfg.WindowStart, cfg.WindowEnd)
	case cfg.WindowEnd == 0 && cfg.WindowStart > 0:
		return nil, fmt.Errorf("simulate: window start %d without an end", cfg.WindowStart)
	case cfg.WindowEnd > 0 && cfg.WindowEnd <= cfg.WindowStart:
		return nil, fmt.Errorf("simulate: window [%d, %d) is empty", cfg.WindowStart, cfg.WindowEnd)
	}
	s := &simulator{cfg: cfg, src: src, topo: topo, types: topo.WorkerTypes(), round: cfg.RoundSeconds,
		active: map[string]*active{}, mech: map[string]*Job{}, gpuBusy: make([]float64, topo.NumGPUs())}
	s.runtime = RuntimeName(cfg.Policy)
	s.packing = strings.Contains(s.runtime, "Packing")
	s.fifo = neverBackFills(s.runtime)
	s.shuffle = shuffles(s.runtime)
	s.rng = rand.New(rand.NewPCG(uint64(cfg.Seed)+5, 0x6761_7665_6c))
	if j, ok := src.Peek(); ok {
		s.first = j.Arrival
	}
	return s, nil
}

// shuffles reports whether compat mode shuffles the worker types each round for the policy of
// Gavel runtime name runtime: heterogeneity-agnostic ones, as Gavel does.
func shuffles(runtime string) bool {
	return !strings.Contains(runtime, "Perf") && !strings.Contains(runtime, "Packing")
}

// UsesSeed reports whether Simulate draws random numbers from cfg.Seed: for a policy that
// does (policy.UsesSeed, given the seed as its option by the caller) or, with GavelCompat, the
// per-round worker-type shuffle of a heterogeneity-agnostic policy.
func UsesSeed(cfg Config) bool {
	return policy.UsesSeed(cfg.Policy) || cfg.GavelCompat && shuffles(RuntimeName(cfg.Policy))
}

// RuntimeName returns Gavel's policy.name for p (e.g. "MaxMinFairness_Perf"),
// which decides the mechanism's variant: "Packing" tracks pairs, neither
// "Perf" nor "Packing" shuffles the compat walk order, "FIFO…" never
// back-fills.
func RuntimeName(p policy.Policy) string {
	if r, ok := p.(interface{ RuntimeName() string }); ok {
		return r.RuntimeName()
	}
	n := p.Name()
	var b strings.Builder
	switch {
	case strings.HasPrefix(n, "fifo"):
		b.WriteString("FIFO")
	case n == "gandiva":
		return "Gandiva_Packing"
	case strings.HasPrefix(n, "allox"):
		return "AlloX_Perf"
	default:
		b.WriteString(n)
	}
	switch {
	case strings.Contains(n, "packed"):
		b.WriteString("_Packing")
	case strings.Contains(n, "perf"):
		b.WriteString("_Perf")
	}
	return b.String()
}

// neverBackFills reports whether the mechanism must leave GPUs idle rather
// than run entries with priority 0 for a policy with Gavel runtime name
// runtime: Gavel's FIFO policies never back-fill (a job behind a blocked
// one waits). Simulate and RunRounds both decide by it.
func neverBackFills(runtime string) bool { return strings.HasPrefix(runtime, "FIFO") }

func (s *simulator) mechJob(j policy.Job, order int) *Job {
	m := &Job{ID: j.ID, Type: j.Type, ScaleFactor: j.Type.ScaleFactor, Order: order, Rates: map[string]float64{}}
	for _, w := range s.types {
		if r, ok := s.cfg.Table.Isolated(w, j.Type); ok && r > 0 {
			m.Rates[w] = r
		}
	}
	return m
}

func (s *simulator) pairRates(w string, a, b *Job) (float64, float64) {
	ra, rb, st := s.cfg.Table.Pair(w, a.Type, b.Type)
	if st != table.Measured {
		return 0, 0
	}
	return ra, rb
}

// rate returns member m's rate inside combination c on w.
func (s *simulator) rate(c policy.Combination, w string, m string) float64 {
	if !c.IsPair() {
		return s.active[m].mech.Rates[w]
	}
	ra, rb := s.pairRates(w, s.active[c.A].mech, s.active[c.B].mech)
	if m == c.A {
		return ra
	}
	return rb
}

func members(c policy.Combination) []string {
	if c.IsPair() {
		return []string{c.A, c.B}
	}
	return []string{c.A}
}

// admit makes j active. Steps a trace's job has done when it arrives are not work of this
// simulation: the job arrives as one of its remaining steps, with none done, so that a policy
// does not count them as run since arrival (finish-time fairness credits a job first seen with
// steps done the isolated time they took, which its time since arrival does not include here).
func (s *simulator) admit(j policy.Job) {
	j.TotalSteps, j.StepsDone = j.StepsRemaining(), 0
	a := &active{job: j, mech: s.mechJob(j, s.admitted), order: s.admitted}
	s.active[j.ID] = a
	s.mech[j.ID] = a.mech
	s.admitted++
}

func (s *simulator) allocate(ctx context.Context, now float64) (*policy.Allocation, error) {
	p := &policy.Problem{Table: s.cfg.Table, Cluster: s.cfg.Cluster, Entities: s.cfg.Entities, Prices: s.cfg.Prices}
	ids := s.activeIDs()
	for _, id := range ids {
		a := s.active[id]
		j := a.job
		j.StepsDone = math.Min(j.TotalSteps, j.StepsDone+a.done)
		// Gavel passes the time since arrival (times_since_start).
		j.TimeRun = now - j.Arrival
		p.Jobs = append(p.Jobs, j)
	}
	start := time.Now()
	alloc, err := s.cfg.Policy.Allocate(ctx, p)
	s.res.SolveSeconds += time.Since(start).Seconds()
	s.res.Allocations++
	if err != nil {
		return nil, fmt.Errorf("allocation at t=%.3f s (%d jobs): %w", now, len(p.Jobs), err)
	}
	for x, w := range alloc.Warnings {
		if !slices.Contains(alloc.Warnings[:x], w) {
			s.warn(w, now)
		}
	}
	return alloc, nil
}

// warn records a policy warning at simulated time now.
func (s *simulator) warn(msg string, now float64) {
	for x := range s.res.Warnings {
		if s.res.Warnings[x].Message == msg {
			s.res.Warnings[x].Count++
			return
		}
	}
	s.res.Warnings = append(s.res.Warnings, Warning{Message: msg, First: now, Count: 1})
}

func (s *simulator) activeIDs() []string {
	ids := make([]string, 0, len(s.active))
	for id := range s.active {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return s.active[a].order - s.active[b].order })
	return ids
}

func (s *simulator) inWindow(order int) bool {
	if s.cfg.WindowEnd <= 0 {
		return true
	}
	return order >= s.cfg.WindowStart && order < s.cfg.WindowEnd
}

// windowDone reports whether every window job has finished.
func (s *simulator) windowDone() bool {
	if s.cfg.WindowEnd <= 0 {
		return false
	}
	if s.admitted < s.cfg.WindowEnd {
		_, more := s.src.Peek()
		return !more && s.allWindowFinished()
	}
	return s.allWindowFinished()
}

func (s *simulator) allWindowFinished() bool {
	for _, a := range s.active {
		if s.inWindow(a.order) {
			return false
		}
	}
	return true
}

func (s *simulator) finish(id string, at float64) {
	a := s.active[id]
	r := JobResult{ID: id, Arrival: a.job.Arrival, Completion: at, JCT: at - a.job.Arrival, Cost: a.cost}
	if a.job.SLO > 0 {
		r.Deadline = a.job.Arrival + a.job.SLO
		// §11.9: compare the completion time with the absolute deadline.
		r.Violated = at > r.Deadline
	}
	if s.inWindow(a.order) {
		s.results = append(s.results, r)
	}
	delete(s.active, id)
	delete(s.mech, id)
}

// shuffledTypeOrder is Gavel's type order for a heterogeneity-agnostic
// policy: shuffled every round, since such a policy cannot tell the types
// apart and Gavel spreads its jobs over them at random.
func (s *simulator) shuffledTypeOrder() []string {
	order := GavelTypeOrder()
	s.rng.Shuffle(len(order), func(i, k int) { order[i], order[k] = order[k], order[i] })
	return order
}

// plan plans the round at now for the active jobs and counts its lease
// extensions.
func (s *simulator) plan(state *State, alloc *policy.Allocation, now float64) *RoundPlan {
	state.Jobs = s.mech
	state.Previous = s.prev
	p := Plan(state, alloc, now)
	s.countLeases(p)
	return p
}

func (s *simulator) countLeases(p *RoundPlan) {
	for c := range s.prev {
		if s.active[c.A] != nil || (c.IsPair() && s.active[c.B] != nil) {
			s.res.LeaseOpportunities++
		}
	}
	for _, a := range p.Assignments {
		if g, ok := s.prev[a.Combination]; ok && slices.Equal(sortedInts(g), a.GPUs) {
			s.res.LeaseExtensions++
		}
	}
	s.prev = p.Placement()
}

// runDefault is our simulator: rounds of fixed length that end early when
// every job in them has finished; the allocation is recomputed before any
// round that follows an arrival or a completion.
func (s *simulator) runDefault(ctx context.Context) error {
	j, ok := s.src.Peek()
	if !ok {
		return nil
	}
	now := j.Arrival
	ledger := NewLedger(s.round)
	state := &State{Topology: s.topo, PairRates: s.pairRates, History: ledger, Options: Options{NoBackFill: s.fifo}}
	var alloc *policy.Allocation
	dirty := true
	isActive := func(id string) bool { return s.active[id] != nil }
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.admitArrived(now, nil) {
			dirty = true
		}
		if s.windowDone() {
			break
		}
		if len(s.active) == 0 {
			j, ok := s.src.Peek()
			if !ok {
				break
			}
			now = j.Arrival
			continue
		}
		if dirty {
			var err error
			if alloc, err = s.allocate(ctx, now); err != nil {
				return err
			}
			dirty = false
		}
		plan := s.plan(state, alloc, now)
		if len(plan.Assignments) == 0 {
			j, ok := s.src.Peek()
			if !ok {
				return fmt.Errorf("t=%.3f s, %d active jobs: %w", now, len(s.active), ErrStalled)
			}
			now = j.Arrival
			continue
		}
		s.res.Rounds++
		longest, finished := s.runRound(plan, now, ledger, alloc, isActive)
		dirty = dirty || finished
		now += longest
		s.end = now
	}
	return nil
}

// admitArrived admits every job that has arrived by now (through admit when
// given, else s.admit) and reports whether there was any.
func (s *simulator) admitArrived(now float64, admit func(policy.Job)) bool {
	if admit == nil {
		admit = s.admit
	}
	arrived := false
	for {
		j, ok := s.src.Peek()
		if !ok || j.Arrival > now {
			return arrived
		}
		s.src.Next()
		admit(j)
		arrived = true
	}
}

// runRound runs plan's assignments from now for at most a round: jobs advance
// at their rates and finish mid-round, GPU time and cost are charged for as
// long as a combination occupies its GPUs, and the ledger records it. It
// returns how long the round lasted (until its longest combination stopped)
// and whether any job finished.
func (s *simulator) runRound(plan *RoundPlan, now float64, ledger *Ledger, alloc *policy.Allocation, isActive func(string) bool) (float64, bool) {
	var busy []Busy
	longest := 0.0
	type completion struct {
		id string
		at float64
	}
	var done []completion
	for _, a := range plan.Assignments {
		occupied := 0.0
		ms := members(a.Combination)
		for _, m := range ms {
			act := s.active[m]
			r := s.rate(a.Combination, a.WorkerType, m)
			left := act.job.StepsRemaining() - act.done
			t := s.round
			if r*s.round >= left {
				t = left / r
				done = append(done, completion{m, now + t})
				act.done = act.job.StepsRemaining()
			} else {
				act.done += r * s.round
			}
			occupied = math.Max(occupied, t)
		}
		if p, ok := s.cfg.Prices[a.WorkerType]; ok {
			// A pair's members share its GPUs' cost.
			share := p * occupied / 3600 * float64(len(a.GPUs)) / float64(len(ms))
			for _, m := range ms {
				s.active[m].cost += share
				s.res.Cost += share
			}
		}
		busy = append(busy, Busy{a.Combination, a.WorkerType, occupied})
		s.busyGPU += occupied * float64(len(a.GPUs))
		longest = math.Max(longest, occupied)
	}
	ledger.Record(alloc, isActive, longest, busy)
	for _, d := range done {
		s.finish(d.id, d.at)
		ledger.Forget(d.id)
	}
	return longest, len(done) > 0
}

// compatClock is Gavel's simulated time: a round ends when its slowest task
// does, and the next starts where the last one ended.
type compatClock struct {
	now, roundStart, roundEnd float64
	haveEnd                   bool
}

// advance moves the clock to the end of the round running makes up or, when
// nothing runs, to the next arrival (if any).
func (c *compatClock) advance(running []task, next policy.Job, hasNext bool) {
	maxTs := 0.0
	for _, t := range running {
		maxTs = math.Max(maxTs, t.finish)
	}
	if len(running) > 0 && maxTs > 0 {
		if c.haveEnd {
			c.roundStart = c.roundEnd
		}
		c.roundEnd, c.haveEnd = maxTs, true
		c.now = maxTs
	} else if hasNext {
		c.now = next.Arrival
	}
}

type task struct {
	c      policy.Combination
	w      string
	gpus   []int
	steps  []float64
	finish float64
}

// runCompat is Gavel's Scheduler.simulate in trace mode (gavel-reference
// §5.3-5.8), step for step.
func (s *simulator) runCompat(ctx context.Context) error {
	j, ok := s.src.Peek()
	if !ok {
		return nil
	}
	clock := compatClock{now: j.Arrival}
	hist := newGavelHistory(s.round, s.types)
	state := &State{Topology: s.topo, PairRates: s.pairRates, History: hist,
		Options: Options{GavelCompat: true, TypeOrder: GavelTypeOrder(), NoBackFill: s.fifo}}
	var alloc *policy.Allocation
	need := false
	var running []task
	stuck, noStep := 0, 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, more := s.src.Peek()
		if (!more && len(s.active) == 0 && len(running) == 0) || s.windowDone() {
			break
		}
		next, hasNext := s.src.Peek()
		if !hasNext && len(running) == 0 {
			// Gavel forces a reset when nothing runs and nothing will arrive.
			hist.lastReset = 0
		}
		clock.advance(running, next, hasNext)
		now := clock.now
		// Gavel pops its heap latest finish first.
		slices.SortStableFunc(running, func(a, b task) int { return cmp.Compare(b.finish, a.finish) })
		for _, t := range running {
			s.completeCompat(t, now, clock.roundStart, hist, &need)
		}
		running = running[:0]
		if s.admitArrived(now, func(j policy.Job) { s.admitCompat(j, hist) }) {
			need = true
		}
		if _, more := s.src.Peek(); s.windowDone() || (!more && len(s.active) == 0) {
			s.end = now
			break
		}
		if need && (now-hist.lastReset >= s.cfg.ResetInterval || hist.lastReset == 0) {
			hist.reset(now, alloc)
			var err error
			if alloc, err = s.allocate(ctx, now); err != nil {
				return err
			}
			need = false
		}
		if s.shuffle {
			state.TypeOrder = s.shuffledTypeOrder()
		}
		plan := s.plan(state, alloc, now)
		running = append(running, s.startTasks(plan, now)...)
		if len(running) > 0 && !anySteps(running) {
			// Every task ends now: the clock would stand still (ErrNoProgress).
			if noStep++; noStep >= compatNoStepRounds {
				return fmt.Errorf("t=%.3f s: %s: %w", now, s.noStepReason(running), ErrNoProgress)
			}
		} else {
			noStep = 0
		}
		if len(running) > 0 {
			s.res.Rounds++
			stuck = 0
		} else if _, ok := s.src.Peek(); !ok && len(s.active) > 0 {
			if stuck++; stuck > 2 {
				return fmt.Errorf("t=%.3f s, %d active jobs: %w", now, len(s.active), ErrStalled)
			}
		}
		s.end = now
	}
	return nil
}

// anySteps reports whether some member of some task runs a step.
func anySteps(tasks []task) bool {
	return slices.ContainsFunc(tasks, func(t task) bool { return slices.ContainsFunc(t.steps, func(n float64) bool { return n > 0 }) })
}

// noStepReason names the combinations of tasks and where they ran, for
// ErrNoProgress: "job "a" on v100 (0.001 steps/s × 360 s)".
func (s *simulator) noStepReason(tasks []task) string {
	var parts []string
	for _, t := range tasks {
		for _, m := range members(t.c) {
			parts = append(parts, fmt.Sprintf("job %q on %s (%.3g steps/s × %v s)", m, t.w, s.rate(t.c, t.w, m), s.round))
		}
	}
	return strings.Join(parts, ", ")
}

// admitCompat admits j as Gavel does: a packing policy's history learns the
// job's partners (the active jobs of its scale factor) as it arrives.
func (s *simulator) admitCompat(j policy.Job, hist *gavelHistory) {
	var partners []string
	if s.packing {
		for _, id := range s.activeIDs() {
			if s.active[id].job.Type.ScaleFactor == j.Type.ScaleFactor {
				partners = append(partners, id)
			}
		}
	}
	s.admit(j)
	hist.addJob(j.ID, partners)
}

// startTasks turns plan into Gavel's micro-tasks: whole steps for a round at
// each member's rate (at most what is left), finishing when the slowest
// member is done.
func (s *simulator) startTasks(plan *RoundPlan, now float64) []task {
	tasks := make([]task, 0, len(plan.Assignments))
	for _, a := range plan.Assignments {
		t := task{c: a.Combination, w: a.WorkerType, gpus: a.GPUs, finish: now}
		for _, m := range members(a.Combination) {
			r := s.rate(a.Combination, a.WorkerType, m)
			left := s.active[m].job.StepsRemaining() - s.active[m].done
			steps := math.Min(math.Trunc(r*s.round), left)
			t.steps = append(t.steps, steps)
			t.finish = math.Max(t.finish, now+steps/r)
		}
		tasks = append(tasks, t)
	}
	return tasks
}

// GavelTypeOrder returns the order in which Gavel's mechanism walks worker
// types; compat mode walks the types present in it first, then any others,
// sorted (Gavel never schedules those at all).
func GavelTypeOrder() []string { return []string{"v100", "p100", "k80"} }

// completeCompat is _done_callback for a finished micro-task.
func (s *simulator) completeCompat(t task, now, roundStart float64, hist *gavelHistory, need *bool) {
	exec := t.finish - roundStart
	var finished []string
	for i, m := range members(t.c) {
		act := s.active[m]
		if act == nil {
			continue
		}
		if p, ok := s.cfg.Prices[t.w]; ok {
			c := p * exec / 3600 * float64(len(t.gpus))
			act.cost += c
			s.res.Cost += c
		}
		act.done += t.steps[i]
		if act.job.StepsRemaining()-act.done <= 0 {
			finished = append(finished, m)
		}
	}
	hist.record(t.c, t.w, exec)
	for _, g := range t.gpus {
		s.gpuBusy[g] += exec
	}
	for _, m := range finished {
		s.finish(m, t.finish)
		hist.removeJob(m)
		*need = true
	}
}

func (s *simulator) result() *Result {
	r := s.res
	r.Jobs = s.results
	slices.SortFunc(r.Jobs, func(a, b JobResult) int {
		return policy.CompareIDs(a.ID, b.ID)
	})
	for _, j := range r.Jobs {
		r.AvgJCT += j.JCT
		if j.Violated {
			r.SLOViolations++
		}
	}
	if len(r.Jobs) > 0 {
		r.AvgJCT /= float64(len(r.Jobs))
	}
	r.End = s.end
	r.Makespan = s.end - s.first
	n := float64(s.topo.NumGPUs())
	if s.cfg.GavelCompat {
		// Gavel: mean over workers of busy time / (now − worker start = 0).
		if s.end > 0 {
			for _, b := range s.gpuBusy {
				r.Utilization += b / s.end
			}
			r.Utilization /= n
		}
	} else if r.Makespan > 0 {
		r.Utilization = s.busyGPU / (n * r.Makespan)
	}
	return &r
}
