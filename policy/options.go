package policy

import (
	"fmt"
	"time"

	"github.com/gavelkit/gavel/policy/lp"
)

// Option configures a policy built by New.
type Option func(*options)

type options struct {
	alloxAlpha  float64
	seed        int64
	maxPartners int    // 0 = all; else top-k partners per job in packed LPs
	reference   string // worker type used as the reference by agnostic FTF/makespan; "" = fastest
	timeLimit   time.Duration
	method      Method
	solverImpl  lp.Solver
	// oddSetRounds caps a packed LP's odd-set re-solves: 0 = the default
	// (the oddSetRounds constant), negative = none (tests).
	oddSetRounds int
	// stallFreezeAll makes water filling freeze every active job when its
	// level LPs stall, the earlier rule (tests compare with it).
	stallFreezeAll bool
	// wfOneByOne makes water filling's bottleneck tests try every active
	// job, those at their ceiling too, and no FIFO job waiting behind one
	// (they become active one an iteration): the earlier rule (tests
	// compare with it).
	wfOneByOne bool
}

func (o *options) solver() lp.Solver {
	if o.solverImpl != nil {
		return o.solverImpl
	}
	return lp.Default()
}

// WithSolver replaces the LP backend (default: COIN-OR CLP/CBC).
func WithSolver(s lp.Solver) Option { return func(o *options) { o.solverImpl = s } }

func (o *options) defaults() {
	o.alloxAlpha = 1
	o.seed = 0
}

// Method selects the LP algorithm.
type Method int

// LP methods. MethodAuto picks barrier with presolve for wide packed LPs
// (over 20,000 columns) of max-min shape (LAS, water filling, finish-time
// fairness) and dual simplex for the rest, including makespan and
// throughput sums, where dual is faster at every size measured
// (benchmarks/policy/RESULTS.md).
const (
	MethodAuto Method = iota
	MethodDual
	MethodBarrier
	MethodSprint
)

// String returns the method's name as ParseMethod reads it.
func (m Method) String() string {
	switch m {
	case MethodDual:
		return "dual"
	case MethodBarrier:
		return "barrier"
	case MethodSprint:
		return "sprint"
	}
	return "auto"
}

// ParseMethod returns the method String names: "auto", "dual", "barrier" or "sprint".
func ParseMethod(s string) (Method, error) {
	for _, m := range []Method{MethodAuto, MethodDual, MethodBarrier, MethodSprint} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("LP method %q: want auto, dual, barrier or sprint", s)
}

// WithSeed sets the seed of the policies that draw random numbers:
// heterogeneity-agnostic FIFO (which worker type with room) and gandiva
// (see UsesSeed).
func WithSeed(seed int64) Option { return func(o *options) { o.seed = seed } }

// WithMaxPartners caps the partners of each job in packed LPs to the k with
// the highest combined normalized rate (0 = all). With n jobs of one scale
// factor the packed LP has about n²/2 pair columns per worker type; k keeps it
// at n·k. Use it above a few hundred jobs.
func WithMaxPartners(k int) Option { return func(o *options) { o.maxPartners = k } }

// WithReference sets the worker type that heterogeneity-agnostic FTF and
// makespan use as every job's rate (Gavel reads "v100"); by default the
// fastest worker type for each job (its highest isolated rate).
func WithReference(workerType string) Option { return func(o *options) { o.reference = workerType } }

// WithTimeLimit bounds each LP solve. A policy may solve many (water
// filling one or more a level, finish-time fairness a search, an LP with
// pairs or gangs up to 26 with its odd-set and cover rows, and on
// instances of up to 8 jobs up to 101, each solution decomposed into
// rounds by LPs and MILPs of its own, see roundcuts.go; SolveStats.LPs
// counts them all), so bound the whole allocation with the context's
// deadline.
func WithTimeLimit(d time.Duration) Option { return func(o *options) { o.timeLimit = d } }

// WithMethod selects the LP algorithm.
func WithMethod(m Method) Option { return func(o *options) { o.method = m } }

// WithAlloxAlpha sets AlloX's alpha (allox_alpha=<a> does the same by name).
func WithAlloxAlpha(a float64) Option { return func(o *options) { o.alloxAlpha = a } }
