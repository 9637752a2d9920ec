package rounds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/policy/lp"
	"github.com/gavelkit/gavel/table"
)

// ContinuousConfig is the paper's headline experiment (gavel-reference §8.1,
// Fig. 8/9): jobs arrive as a Poisson process at each rate; the metric is
// the average JCT of the jobs with arrival ranks in [WindowStart, WindowEnd).
type ContinuousConfig struct {
	Table         *table.Table
	Cluster       policy.Cluster
	GPUsPerServer map[string]int
	Policies      []string  // e.g. max_min_fairness_perf, max_min_fairness
	Rates         []float64 // jobs per hour
	Seeds         []uint64
	WindowStart   int
	WindowEnd     int
	MultiGPU      bool
	RoundSeconds  float64
	PolicyOptions []policy.Option // besides the seed
	// Timeout bounds each simulation's wall-clock time (0 = none); a point
	// that runs out is marked TimedOut, like Gavel's sweep timeout (JCT ∞):
	// past its capacity a policy's queue grows without bound.
	Timeout time.Duration
	// Parallel is how many simulations run at once; 0 or 1 (the zero value), one after
	// another, so that Timeout keeps its meaning unless a caller asks (runtime.GOMAXPROCS(0)
	// gives one per CPU). The points are the same whatever it is; with more than
	// one, simulations share the CPUs, so each takes longer in wall-clock time and a point
	// near Timeout may time out where it would not alone.
	Parallel int
	// Progress, if set, is called after each simulation, with a nil result for a timed-out
	// one. With Parallel above 1 the calls come in the order the simulations finish, not in
	// the order of the points, but never two at once (they are serialized), so Progress
	// needs no locking of its own.
	Progress func(policy string, rate float64, seed uint64, r *Result)
}

// ContinuousPartialError is the error Continuous returns when it stops before every
// simulation finished (its context was cancelled, or a simulation failed): Points is what
// Continuous would have returned, with nil for each point whose simulations did not all
// finish. Err is the error, also what Unwrap gives.
type ContinuousPartialError struct {
	Points []*ContinuousPoint
	Err    error
}

func (e *ContinuousPartialError) Error() string { return e.Err.Error() }
func (e *ContinuousPartialError) Unwrap() error { return e.Err }

// ContinuousPoint is the average JCT of one policy at one rate, over seeds.
type ContinuousPoint struct {
	Policy    string    `json:"policy"`
	Rate      float64   `json:"rate_jobs_per_hour"`
	AvgJCT    float64   `json:"avg_jct_seconds"` // mean over seeds
	PerSeed   []float64 `json:"avg_jct_per_seed_seconds"`
	TimedOut  bool      `json:"timed_out,omitempty"`
	Rounds    int       `json:"rounds"`
	Solves    int       `json:"solves"`
	SolveSecs float64   `json:"solve_seconds"`
}

// MarshalJSON writes avg_jct_seconds as null for a timed-out point, which has no average
// (0, as it was, read as a perfect one).
func (p ContinuousPoint) MarshalJSON() ([]byte, error) {
	type plain ContinuousPoint
	out := struct {
		plain
		AvgJCT *float64 `json:"avg_jct_seconds"`
	}{plain: plain(p)}
	if !p.TimedOut {
		out.AvgJCT = &p.AvgJCT
	}
	return json.Marshal(out)
}

// Continuous runs every (policy, rate, seed) simulation; the same seed gives
// every policy the same jobs. Progress gets a nil result for a timed-out run.
// The points come rate by rate, in Policies' order within a rate. cfg.Parallel
// simulations run at once; the points do not depend on it.
//
// It stops at the first error: a cancelled context stops every running
// simulation, and a simulation's error stops those after it in the order of
// the points (those before it run on, so that the error returned is the first
// in that order, as one after another, whatever finished first). Once a
// simulation has started, the error is a *ContinuousPartialError with the
// points that finished.
func Continuous(ctx context.Context, cfg ContinuousConfig) ([]ContinuousPoint, error) {
	if cfg.WindowEnd <= cfg.WindowStart || cfg.WindowStart < 0 {
		return nil, fmt.Errorf("continuous: window [%d, %d) is empty", cfg.WindowStart, cfg.WindowEnd)
	}
	if len(cfg.Seeds) == 0 {
		cfg.Seeds = []uint64{0}
	}
	for _, rate := range cfg.Rates {
		if rate <= 0 {
			return nil, fmt.Errorf("continuous: rate %v jobs/hour must be positive", rate)
		}
	}
	runs := cfg.runAll(ctx)
	nSeeds := len(cfg.Seeds)
	pts := make([]*ContinuousPoint, len(runs)/nSeeds)
	var first error
	for i := range pts {
		rate, name := cfg.Rates[i/len(cfg.Policies)], cfg.Policies[i%len(cfg.Policies)]
		pt := &ContinuousPoint{Policy: name, Rate: rate}
		for k, seed := range cfg.Seeds {
			r := runs[i*nSeeds+k]
			switch {
			case r.err != nil:
				if first == nil {
					first = fmt.Errorf("%s at %v jobs/hour, seed %d: %w", name, rate, seed, r.err)
				}
				pt = nil
			case !r.done:
				pt = nil
			}
			if pt == nil {
				continue
			}
			if r.timedOut {
				pt.TimedOut = true
				continue
			}
			pt.PerSeed = append(pt.PerSeed, r.res.AvgJCT)
			pt.Rounds += r.res.Rounds
			pt.Solves += r.res.Allocations
			pt.SolveSecs += r.res.SolveSeconds
		}
		if pt == nil {
			continue
		}
		if pt.TimedOut {
			pt.AvgJCT, pt.PerSeed = 0, nil
		}
		for _, v := range pt.PerSeed {
			pt.AvgJCT += v / float64(len(pt.PerSeed))
		}
		pts[i] = pt
	}
	if first == nil && ctx.Err() != nil && slices.Contains(pts, nil) {
		first = ctx.Err() // cancelled before a simulation started
	}
	if first != nil {
		return nil, &ContinuousPartialError{Points: pts, Err: first}
	}
	out := make([]ContinuousPoint, len(pts))
	for i, pt := range pts {
		out[i] = *pt
	}
	return out, nil
}

// continuousRun is the outcome of one simulation; done says it finished (with a result or
// timed out).
type continuousRun struct {
	res            *Result
	timedOut, done bool
	err            error
}

// runAll runs every simulation, cfg.Parallel at once, and returns their outcomes in the
// order rate, policy, seed. A simulation's error cancels those after it in that order and
// keeps any after it from starting; ctx's cancellation stops them all.
func (cfg *ContinuousConfig) runAll(ctx context.Context) []continuousRun {
	type key struct {
		name string
		rate float64
		seed uint64
	}
	var keys []key
	for _, rate := range cfg.Rates {
		for _, name := range cfg.Policies {
			for _, seed := range cfg.Seeds {
				keys = append(keys, key{name, rate, seed})
			}
		}
	}
	runs := make([]continuousRun, len(keys))
	workers := max(1, min(cfg.Parallel, len(keys)))
	var (
		mu       sync.Mutex // guards next, failed, cancels
		next     int
		failed   = len(keys) // the first failed run's index
		cancels  = make([]context.CancelFunc, len(keys))
		progress sync.Mutex // serializes Progress
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				if i >= failed || i >= len(keys) || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				next++
				runCtx, cancel := context.WithCancel(ctx)
				cancels[i] = cancel
				mu.Unlock()

				k := keys[i]
				res, timedOut, err := cfg.simulateOne(runCtx, k.name, k.rate, k.seed)
				mu.Lock()
				cancels[i] = nil
				if err != nil && i < failed {
					failed = i
					for j := i + 1; j < len(keys); j++ {
						if cancels[j] != nil {
							cancels[j]()
						}
					}
				}
				mu.Unlock()
				cancel()
				runs[i] = continuousRun{res: res, timedOut: timedOut, done: err == nil, err: err}
				if err == nil && cfg.Progress != nil {
					progress.Lock()
					cfg.Progress(k.name, k.rate, k.seed, res)
					progress.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	// A run cancelled because an earlier one failed reports that cancellation, not an
	// error of its own: only the first failure counts.
	for i := failed + 1; i < len(runs); i++ {
		if runs[i].err != nil {
			runs[i] = continuousRun{}
		}
	}
	return runs
}

// simulateOne simulates policy name on the jobs that seed draws at rate,
// within cfg.Timeout; timedOut says it ran past it.
func (cfg *ContinuousConfig) simulateOne(ctx context.Context, name string, rate float64, seed uint64) (res *Result, timedOut bool, err error) {
	p, err := policy.New(name, append([]policy.Option{policy.WithSeed(int64(seed))}, cfg.PolicyOptions...)...)
	if err != nil {
		return nil, false, err
	}
	gen, err := NewGenerator(GeneratorConfig{Table: cfg.Table, Cluster: cfg.Cluster, RatePerHour: rate,
		MultiGPU: cfg.MultiGPU, Seed: seed})
	if err != nil {
		return nil, false, err
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if cfg.Timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, cfg.Timeout)
	}
	defer cancel()
	res, err = SimulateSource(runCtx, Config{Table: cfg.Table, Cluster: cfg.Cluster, GPUsPerServer: cfg.GPUsPerServer,
		Policy: p, RoundSeconds: cfg.RoundSeconds, WindowStart: cfg.WindowStart, WindowEnd: cfg.WindowEnd}, gen)
	// The solver may report the deadline in its own words, and its clock may
	// stop it (time limit: the deadline's remainder) just before runCtx's does.
	if err != nil && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || runCtx.Err() != nil ||
		(cfg.Timeout > 0 && errors.Is(err, lp.ErrTimeLimit))) {
		return nil, true, nil
	}
	return res, false, err
}

// HierarchicalConfig is the multi-level fairness experiment (gavel-reference
// §8.5, the paper's hierarchical figure): entities with weights, six jobs
// each, one more job every StepsPerJob timesteps, allocation only.
type HierarchicalConfig struct {
	Table          *table.Table
	Cluster        policy.Cluster // required; the paper's is 3 GPUs of each of v100, p100 and k80
	EntityWeights  []float64      // default 1, 2, 3
	JobsPerEntity  int            // default 6
	StepsPerJob    int            // default 4
	Timesteps      int            // default 72
	Seed           uint64         // picks the job types
	AwarePolicy    string         // default max_min_fairness_water_filling_perf
	AgnosticPolicy string         // default max_min_fairness_water_filling
}

// HierarchicalRow is one job at one timestep under one policy.
type HierarchicalRow struct {
	Timestep   int     `json:"timestep"`
	Policy     string  `json:"policy"`
	Job        string  `json:"job"`
	Entity     string  `json:"entity"`
	Model      string  `json:"model"`
	Effective  float64 `json:"effective_steps_per_second"`
	Normalized float64 `json:"normalized"` // effective ÷ rate with 1/n of its time on each of the n types
}

// HierarchicalResult holds the per-timestep rows and, per policy, the mean
// over timesteps of the total normalized throughput.
type HierarchicalResult struct {
	Rows      []HierarchicalRow
	MeanTotal map[string]float64
	Entities  map[string]policy.Entity
	Jobs      []policy.Job
}

// Hierarchical solves every timestep with the aware and the agnostic policy.
func Hierarchical(ctx context.Context, cfg HierarchicalConfig) (*HierarchicalResult, error) {
	if cfg.Table == nil {
		return nil, fmt.Errorf("hierarchical: table is required")
	}
	if cfg.Cluster.Total() == 0 {
		return nil, fmt.Errorf("hierarchical: cluster is required (it has no GPUs)")
	}
	cfg.setDefaults()
	var types []string // a type listed with no GPUs takes no part, in the reference rate either
	for _, w := range cfg.Cluster.WorkerTypes() {
		if cfg.Cluster[w] > 0 {
			types = append(types, w)
		}
	}
	pool := everywhereJobTypes(cfg.Table, types)
	if len(pool) == 0 {
		return nil, fmt.Errorf("hierarchical: no single-GPU job type runs on every worker type of the cluster")
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x68696572))
	res := &HierarchicalResult{Entities: map[string]policy.Entity{}, MeanTotal: map[string]float64{}}
	for e, w := range cfg.EntityWeights {
		if err := policy.CheckWeight(w); err != nil {
			return nil, fmt.Errorf("hierarchical: entity e%d: %w", e, err)
		}
		res.Entities["e"+strconv.Itoa(e)] = policy.Entity{Weight: w, Policy: policy.EntityFairness}
	}
	n := len(cfg.EntityWeights) * cfg.JobsPerEntity
	ref := make([]float64, n)
	for j := 0; j < n; j++ {
		jt := pool[rng.IntN(len(pool))]
		res.Jobs = append(res.Jobs, policy.Job{ID: strconv.Itoa(j), Type: jt, Weight: float64(j%2 + 1),
			Entity: "e" + strconv.Itoa(j/cfg.JobsPerEntity), TotalSteps: 1e9})
		for _, w := range types {
			r, _ := cfg.Table.Isolated(w, jt)
			ref[j] += r / float64(len(types))
		}
	}
	for _, name := range []string{cfg.AwarePolicy, cfg.AgnosticPolicy} {
		if err := cfg.solveTimesteps(ctx, name, ref, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (cfg *HierarchicalConfig) setDefaults() {
	if len(cfg.EntityWeights) == 0 {
		cfg.EntityWeights = []float64{1, 2, 3}
	}
	if cfg.JobsPerEntity == 0 {
		cfg.JobsPerEntity = 6
	}
	if cfg.StepsPerJob == 0 {
		cfg.StepsPerJob = 4
	}
	if cfg.Timesteps == 0 {
		cfg.Timesteps = 72
	}
	if cfg.AwarePolicy == "" {
		cfg.AwarePolicy = "max_min_fairness_water_filling_perf"
	}
	if cfg.AgnosticPolicy == "" {
		cfg.AgnosticPolicy = "max_min_fairness_water_filling"
	}
}

// everywhereJobTypes returns the single-GPU job types with a positive rate on
// every one of types, the only ones whose equal-time reference rate is
// defined.
func everywhereJobTypes(t *table.Table, types []string) []table.JobType {
	var pool []table.JobType
	for _, jt := range t.JobTypesWithScaleFactor(1) {
		ok := true
		for _, w := range types {
			r, _ := t.Isolated(w, jt)
			ok = ok && r > 0
		}
		if ok {
			pool = append(pool, jt)
		}
	}
	return pool
}

// solveTimesteps allocates with policy name at every timestep (one more job
// present every StepsPerJob timesteps), appends a row per present job to res
// and sets res.MeanTotal[name]; ref holds each job's reference rate.
func (cfg *HierarchicalConfig) solveTimesteps(ctx context.Context, name string, ref []float64, res *HierarchicalResult) error {
	total := 0.0
	for t := 0; t < cfg.Timesteps; t++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		present := min(len(res.Jobs), t/cfg.StepsPerJob+1)
		p, err := policy.New(name)
		if err != nil {
			return err
		}
		alloc, err := p.Allocate(ctx, &policy.Problem{Table: cfg.Table, Cluster: cfg.Cluster,
			Jobs: res.Jobs[:present], Entities: res.Entities})
		if err != nil {
			return fmt.Errorf("timestep %d: %w", t, err)
		}
		for j, job := range res.Jobs[:present] {
			// The allocation's own sum, over the job's combinations: a packing policy's
			// pairs count too (from the job alone, such a job read 0).
			eff := alloc.Effective[job.ID]
			row := HierarchicalRow{Timestep: t, Policy: name, Job: job.ID, Entity: job.Entity, Model: job.Type.Model,
				Effective: eff, Normalized: eff / ref[j]}
			total += row.Normalized
			res.Rows = append(res.Rows, row)
		}
	}
	res.MeanTotal[name] = total / float64(cfg.Timesteps)
	return nil
}
