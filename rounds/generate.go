package rounds

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// GeneratorConfig configures synthetic jobs like Gavel's generate_job
// (gavel-reference §1.5). The random streams are Go's (PCG), seeded from Seed
// the way Gavel seeds its streams (jobs seed+2, arrivals seed+3, SLOs seed+6),
// so runs are reproducible but not bit-identical to CPython's.
type GeneratorConfig struct {
	Table   *table.Table
	Cluster policy.Cluster // job types are limited to those that can run on it
	// Reference is the worker type that durations refer to (Gavel: v100).
	// "" picks the type with the highest geometric-mean isolated rate.
	Reference string
	// RatePerHour is the mean arrival rate; 0 puts every job at t=0.
	RatePerHour   float64
	MultiGPU      bool    // draw scale factors 1/2/4/8 with P = .70/.10/.15/.05
	MultiPriority bool    // 20% of jobs get weight 5
	SLOs          bool    // deadlines of 1.2, 2 or 10 × duration
	FixedDuration float64 // seconds; 0 = Gavel's bimodal log-uniform draw
	Seed          uint64
	Limit         int // jobs to generate; 0 = unbounded
}

// Generator yields synthetic jobs; it is a JobSource.
type Generator struct {
	cfg      GeneratorConfig
	ref      string
	bySF     map[int][]table.JobType
	jobs     *rand.Rand
	arrivals *rand.Rand
	slo      *rand.Rand
	n        int
	next     float64
	peeked   *policy.Job
}

// NewGenerator checks cfg and returns a generator.
func NewGenerator(cfg GeneratorConfig) (*Generator, error) {
	if cfg.Table == nil || len(cfg.Cluster) == 0 {
		return nil, fmt.Errorf("generator: table and cluster are required")
	}
	if cfg.RatePerHour < 0 || math.IsNaN(cfg.RatePerHour) {
		return nil, fmt.Errorf("generator: rate %v jobs/hour must be non-negative", cfg.RatePerHour)
	}
	g := &Generator{cfg: cfg, bySF: map[int][]table.JobType{},
		jobs:     rand.New(rand.NewPCG(cfg.Seed+2, 0x6a6f6273)),
		arrivals: rand.New(rand.NewPCG(cfg.Seed+3, 0x61727276)),
		slo:      rand.New(rand.NewPCG(cfg.Seed+6, 0x736c6f73)),
	}
	g.ref = cfg.Reference
	if g.ref == "" {
		g.ref = fastestType(cfg.Table, cfg.Cluster)
	}
	if g.ref == "" {
		// "no job type has a positive rate on reference worker type \"\"" said nothing of why.
		return nil, fmt.Errorf("generator: no worker type of cluster %s has GPUs and is in the table (it has %s)",
			cfg.Cluster, strings.Join(cfg.Table.WorkerTypes(), ", "))
	}
	if cfg.Reference != "" && !contains(cfg.Table.WorkerTypes(), g.ref) {
		return nil, fmt.Errorf("generator: reference worker type %q is not in the table", g.ref)
	}
	for _, sf := range []int{1, 2, 4, 8} {
		for _, jt := range cfg.Table.JobTypesWithScaleFactor(sf) {
			if r, _ := cfg.Table.Isolated(g.ref, jt); r > 0 && runnable(cfg.Table, cfg.Cluster, jt) {
				g.bySF[sf] = append(g.bySF[sf], jt)
			}
		}
	}
	if len(g.bySF[1]) == 0 {
		return nil, fmt.Errorf("generator: no single-GPU job type has a positive rate on reference worker type %q", g.ref)
	}
	return g, nil
}

// Reference returns the worker type durations refer to.
func (g *Generator) Reference() string { return g.ref }

// Unavailable returns the multi-GPU scale factors (2, 4, 8) no job type can be drawn for: none
// in the table has a rate on the reference type and fits some worker type's GPUs. With
// MultiGPU, a draw of such a scale factor becomes a single-GPU job, which changes the mix.
func (g *Generator) Unavailable() []int {
	var out []int
	for _, sf := range []int{2, 4, 8} {
		if len(g.bySF[sf]) == 0 {
			out = append(out, sf)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func runnable(t *table.Table, c policy.Cluster, jt table.JobType) bool {
	for w, n := range c {
		if r, _ := t.Isolated(w, jt); r > 0 && n >= jt.ScaleFactor {
			return true
		}
	}
	return false
}

// fastestType is the cluster's worker type with the highest geometric mean
// isolated rate over the single-GPU job types it has (ties: name order).
func fastestType(t *table.Table, c policy.Cluster) string {
	best, bestScore := "", math.Inf(-1)
	for _, w := range c.WorkerTypes() {
		if c[w] == 0 {
			continue // listed without GPUs: not part of the cluster
		}
		sum, n := 0.0, 0
		for _, jt := range t.JobTypesWithScaleFactor(1) {
			if r, _ := t.Isolated(w, jt); r > 0 {
				sum += math.Log(r)
				n++
			}
		}
		if n > 0 && sum/float64(n) > bestScore {
			best, bestScore = w, sum/float64(n)
		}
	}
	return best
}

// Peek returns the next job without consuming it.
func (g *Generator) Peek() (policy.Job, bool) {
	if g.peeked == nil {
		if g.cfg.Limit > 0 && g.n >= g.cfg.Limit {
			return policy.Job{}, false
		}
		j := g.generate()
		g.peeked = &j
	}
	return *g.peeked, true
}

// Next returns the next job.
func (g *Generator) Next() (policy.Job, bool) {
	j, ok := g.Peek()
	g.peeked = nil
	return j, ok
}

// Jobs returns the next n jobs.
func (g *Generator) Jobs(n int) []policy.Job {
	out := make([]policy.Job, 0, n)
	for i := 0; i < n; i++ {
		j, ok := g.Next()
		if !ok {
			break
		}
		out = append(out, j)
	}
	return out
}

func (g *Generator) generate() policy.Job {
	rng := g.jobs
	// Draw order follows generate_job: scale factor (always drawn), duration,
	// job type, weight.
	r := rng.Float64()
	sf := 1
	switch {
	case r >= 0.7 && r <= 0.8:
		sf = 2
	case r > 0.8 && r <= 0.95:
		sf = 4
	case r >= 0.95:
		sf = 8
	}
	if !g.cfg.MultiGPU || len(g.bySF[sf]) == 0 {
		sf = 1
	}
	duration := g.cfg.FixedDuration
	if duration == 0 {
		if rng.Float64() >= 0.8 {
			duration = 60 * math.Pow(10, 3+rng.Float64())
		} else {
			duration = 60 * math.Pow(10, 1.5+1.5*rng.Float64())
		}
	}
	types := g.bySF[sf]
	jt := types[rng.IntN(len(types))]
	rate, _ := g.cfg.Table.Isolated(g.ref, jt)
	weight := 1.0
	if g.cfg.MultiPriority && rng.Float64() <= 0.2 {
		weight = 5
	}
	j := policy.Job{ID: strconv.Itoa(g.n), Type: jt, Weight: weight, TotalSteps: math.Max(1, math.Trunc(duration*rate)), Arrival: g.next}
	if g.cfg.SLOs {
		u := g.slo.Float64()
		factor := 10.0
		switch {
		case u < 0.33:
			factor = 1.2
		case u < 0.67:
			factor = 2
		}
		j.SLO = factor * duration
	}
	g.n++
	if g.cfg.RatePerHour > 0 {
		lam := 3600 / g.cfg.RatePerHour
		g.next += -math.Log(1-g.arrivals.Float64()) * lam
	}
	return j
}
