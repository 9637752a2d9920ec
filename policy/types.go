package policy

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gavelkit/gavel/table"
)

// Cluster maps a worker type to the number of GPUs of that type.
type Cluster map[string]int

// ParseCluster parses "v100=8,p100=16,k80=24".
func ParseCluster(s string) (Cluster, error) {
	c, err := parseAssignments(s, "cluster", "count", "a non-negative integer", func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= 0
	})
	return Cluster(c), err
}

// parseAssignments parses "name=value,..." for ParseCluster and ParsePrices;
// kind, unit and want only word the errors.
func parseAssignments[V any](s, kind, unit, want string, parse func(string) (V, bool)) (map[string]V, error) {
	out := map[string]V{}
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%s: empty", kind)
	}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("%s %q: entry %q: want worker_type=%s", kind, s, part, unit)
		}
		v, ok := parse(strings.TrimSpace(val))
		if !ok {
			return nil, fmt.Errorf("%s %q: worker type %q: %s %q is not %s", kind, s, name, unit, val, want)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s %q: worker type %q given twice", kind, s, name)
		}
		out[name] = v
	}
	return out, nil
}

// WorkerTypes returns the worker types, sorted.
func (c Cluster) WorkerTypes() []string {
	ws := make([]string, 0, len(c))
	for w := range c {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	return ws
}

// Total returns the number of GPUs in the cluster.
func (c Cluster) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// String formats the cluster as ParseCluster reads it, sorted by worker type.
func (c Cluster) String() string {
	parts := make([]string, 0, len(c))
	for _, w := range c.WorkerTypes() {
		parts = append(parts, fmt.Sprintf("%s=%d", w, c[w]))
	}
	return strings.Join(parts, ",")
}

// Prices maps a worker type to its price per GPU-hour.
type Prices map[string]float64

// ParsePrices parses "v100=2.48,p100=1.46,k80=0.45".
func ParsePrices(s string) (Prices, error) {
	p, err := parseAssignments(s, "prices", "price", "a finite non-negative number", func(v string) (float64, bool) {
		x, err := strconv.ParseFloat(v, 64)
		return x, err == nil && x >= 0 && !math.IsInf(x, 0)
	})
	return Prices(p), err
}

// Entity is a group of jobs (a user, a team) in hierarchical water filling:
// entities share the cluster by Weight, and inside an entity jobs share by
// Policy, "fairness" (weighted max-min) or "fifo" (arrival order). Weight must
// lie within 0.001..1000: unlike Job.Weight, 0 is an error here, not 1 (a jobs
// file's entity without a weight reads as 1); an empty Policy is "fairness".
type Entity struct {
	Weight float64 `json:"weight"`
	Policy string  `json:"policy"`
}

// Entity policies.
const (
	EntityFairness = "fairness"
	EntityFIFO     = "fifo"
)

// Job is one job to allocate.
type Job struct {
	ID         string
	Type       table.JobType
	Weight     float64 // 0 means 1
	Entity     string
	TotalSteps float64
	StepsDone  float64
	// TimeRun is the seconds since the job arrived, now − Arrival (Gavel's
	// times_since_start; rounds sets it so): FTF's elapsed time, AlloX's
	// age, and the part of the SLO already used.
	TimeRun float64
	Arrival float64 // seconds; FIFO order
	// SLO is the job's deadline in seconds from its arrival (0 = none); the
	// time left is SLO − TimeRun, in which StepsRemaining must be done.
	SLO float64
}

// StepsRemaining returns TotalSteps-StepsDone, never negative.
func (j Job) StepsRemaining() float64 {
	return math.Max(0, j.TotalSteps-j.StepsDone)
}

// MinWeight and MaxWeight bound a job's (and an entity's) weight. Only the ratios of weights
// shape an allocation, but the LPs' tolerances are absolute: measured on
// max-min fairness (agnostic, perf, packed), weights within 1e-3..1e3 leave
// the LP's objective within 1e-6 of the smallest job's term; 1e-4..1e4 within
// 1e-4; 1e-6..1e6 off by 6%; 1e9 beside 1e-9 starves jobs (a term of 0), and
// 1e-300 fails ("numerical trouble").
const (
	MinWeight = 1e-3
	MaxWeight = 1e3
)

// CheckWeight says why w cannot be a job's or an entity's weight (nil when it can): it must
// be a finite number within MinWeight..MaxWeight.
func CheckWeight(w float64) error {
	switch {
	case !(w > 0) || math.IsInf(w, 0):
		return fmt.Errorf("weight %v must be positive", w)
	case w < MinWeight || w > MaxWeight:
		return fmt.Errorf("weight %v is outside %g..%g, where the LPs stay accurate (only the ratios of weights matter: scale them into it)", w, MinWeight, MaxWeight)
	}
	return nil
}

// EffectiveWeight returns Weight, with 0 meaning 1.
func (j Job) EffectiveWeight() float64 {
	if j.Weight == 0 {
		return 1
	}
	return j.Weight
}

// Problem is the input of a policy.
type Problem struct {
	Table    *table.Table
	Cluster  Cluster
	Jobs     []Job
	Entities map[string]Entity // hierarchical water filling; nil = every job its own entity
	Prices   Prices            // cost policies
}

// Combination is a single job (B == "") or a co-located pair (A < B).
type Combination struct{ A, B string }

// Single returns the combination of job a alone.
func Single(a string) Combination { return Combination{A: a} }

// PairOf returns the pair of a and b in canonical order.
func PairOf(a, b string) Combination {
	if b < a {
		a, b = b, a
	}
	return Combination{A: a, B: b}
}

// Key returns "a" or "a+b".
func (c Combination) Key() string {
	if c.B == "" {
		return c.A
	}
	return c.A + "+" + c.B
}

// String is Key.
func (c Combination) String() string { return c.Key() }

// IsPair reports whether c is a co-located pair.
func (c Combination) IsPair() bool { return c.B != "" }

// Contains reports whether job id is a member of c.
func (c Combination) Contains(id string) bool { return c.A == id || (c.B != "" && c.B == id) }

// Less orders singles before pairs, then by A, then by B.
func (c Combination) Less(d Combination) bool {
	if c.IsPair() != d.IsPair() {
		return !c.IsPair()
	}
	if c.A != d.A {
		return c.A < d.A
	}
	return c.B < d.B
}

// SolveStats describes the LP work behind an allocation.
type SolveStats struct {
	Rows, Cols int // of the largest LP solved
	Iterations int // total simplex/barrier iterations, when the solver reports them
	LPs        int // number of LPs (or MILPs) solved, those of decompositions into rounds included
	Seconds    float64
	// Unsettled counts LPs that stopped when the re-solves ran out, or the
	// search of 5-job sets was cut short, with a solution that may break
	// an odd-set row (oddsets.go) or a cover row (covers.go) or, on the
	// small instances whose solutions are decomposed into rounds
	// (roundcuts.go), that no rounds realize; finish-time fairness also
	// counts a starting point it could not make realizable. Allocate then
	// warns.
	Unsettled int
}

func (s *SolveStats) add(rows, cols, iters int, d time.Duration) {
	if rows > s.Rows {
		s.Rows = rows
	}
	if cols > s.Cols {
		s.Cols = cols
	}
	s.Iterations += iters
	s.LPs++
	s.Seconds += d.Seconds()
}

// Allocation is a policy's result.
type Allocation struct {
	Policy     string
	Fractions  map[Combination]map[string]float64 // combination → worker type → time fraction
	Effective  map[string]float64                 // job id → steps/s
	Normalized map[string]float64                 // job id → effective / equal-share rate
	Objective  float64
	Stats      SolveStats
	Warnings   []string // what the policy had to relax (e.g. SLOs dropped), for the user

	// EqualShare is each job's equal-share rate in steps/s, the denominator
	// of Normalized: the job's rate when it gets 1/m of every worker type's
	// GPUs (m jobs), at most full time, Σ_w T_w·n_w / max(m·sf, N_i) over
	// the worker types it can run on (N_i GPUs): what the isolated policy
	// gives it. Normalized 1 means "as fast as an equal split of the
	// cluster".
	EqualShare map[string]float64
	// Terms is each job's term of the objective for policies whose objective
	// is a min or max over jobs (max-min fairness and water filling: min;
	// finish-time fairness and makespan: max); nil for the others.
	Terms map[string]float64
	// Normalizer is each job's normalizer in the max-min objectives (LAS,
	// water filling): Gavel's proportional rate Σ_w T_w·n_w/N in steps/s,
	// or 1 in the agnostic view, where terms are GPU-time shares; the job's
	// term is sf·effective/(weight·normalizer). Nil for other policies.
	Normalizer map[string]float64
	// ObjectiveMeaning says in words what Objective (and Terms) measure.
	ObjectiveMeaning string
}

// Combinations returns the combinations with an allocation, sorted.
func (a *Allocation) Combinations() []Combination {
	cs := make([]Combination, 0, len(a.Fractions))
	for c := range a.Fractions {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Less(cs[j]) })
	return cs
}

// Policy computes an allocation.
type Policy interface {
	Name() string
	Allocate(ctx context.Context, p *Problem) (*Allocation, error)
}

// CompareIDs orders job ids naturally, as FIFO ties and listings take them: numeric ids by
// value ("9" before "10", as Gavel's integer ids), numeric before non-numeric, the rest as
// strings; "01" and "1" by string after their equal value.
func CompareIDs(a, b string) int {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	switch {
	case errA == nil && errB == nil:
		return cmp.Or(cmp.Compare(x, y), cmp.Compare(a, b))
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return cmp.Compare(a, b)
}
