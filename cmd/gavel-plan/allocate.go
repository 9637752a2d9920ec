package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/rounds"
	"github.com/gavelkit/gavel/table"
)

type allocateOptions struct {
	problemFlags
	json bool
}

func newAllocateCmd(streams *cli.IO) *cobra.Command {
	var o allocateOptions
	o.streams = streams
	cmd := &cobra.Command{
		Use:   "allocate --policy NAME --cluster TYPE=N,... [--jobs FILE]",
		Short: "Compute a policy's time fractions per job (or pair) and worker type",
		Long: `allocate solves one of Gavel's policies exactly (an LP on COIN-OR CLP for
the LP-based ones) and prints, for every job or co-located pair, the fraction
of time it should spend on each worker type, and for every job:

  effective    its throughput in steps/s under the allocation;
  equal share  its throughput with an equal split of the cluster (what the
               isolated policy gives it): 1/m of every worker type's GPUs
               (m jobs), at most full time, i.e. sum_w rate_w*n_w /
               max(m*scale_factor, N_job) over the worker types it can
               run on (N_job GPUs of them);
  normalized   effective / equal share: 1 = as fast as an equal split;
  proportional (max-min, water filling) the objective's normalizer:
               Gavel's proportional rate, below (1 for agnostic policies);
  term         (max-min, water filling, finish-time fairness, makespan) the
               job's term of the objective, which is their min or max.

The objective is the policy's own (its meaning is printed with it). Max-min
fairness normalizes as Gavel does, by the proportional rate sum_w
rate_w*n_w/N (the job's rate on an average GPU, full time): its term is
scale_factor*effective/(weight*proportional). When there are more jobs than
GPUs, all of one GPU and weight 1, this differs from normalized by a constant:
on the default job set (8 jobs) on v100=2,p100=2,k80=2 (N = 6 GPUs),
normalized = term * 8/6 for every job. Otherwise the two differ job by job
(up to the largest scale factor, 8x): max-min equalizes the terms, so a gang
can get less than an equal split (normalized below 1) while GPUs it could use
sit idle; water filling then raises every job that can still rise.

Gavel's LPs (and so these policies) can ask for time no sequence of rounds
gives: the packed ones carry odd-set rows and, with jobs of several GPUs,
cover and clique rows against the commonest cases, but not against all
(other knapsack facets; a triangle of pairs beside a gang; a job's time over
several types). allocate checks the allocation with the round mechanism's
decomposition (up to 150 targets, 800 columns and a budget of search, some seconds)
and warns when no rounds give it (--json "realizable": false; null when not
checked), saying, where it can,
how much of its allocated throughput any rounds leave some job short, at
least (--json "nearest_loss", a fraction; absent when not known).

Policies (Gavel's names): ` + strings.Join(policy.Names(), ", ") + `, allox_alpha=<a>.
Cost policies need --prices for every worker type of the cluster.

The jobs file (JSON) has "jobs": [{"id" (without '+', which joins the ids
of co-located pairs), "type" (model), "scale_factor"
(default 1), "total_steps", and optionally "weight" (default 1; within
0.001..1000: only the ratios of weights matter, and beyond that range the
LPs lose accuracy or fail), "entity", "steps_done" (below total_steps: a
finished job is left out of the file), "time_run_seconds" (time
since the job arrived), "arrival_seconds", "slo_seconds" (deadline, from
arrival)}] and optional "entities": {name: {"weight" (within
0.001..1000 too; default 1), "policy": "fairness"|"fifo" (default fairness)}}, used by water filling. Errors name the file, the entry (jobs[i]) and its id. --jobs -
reads the jobs file from standard input (errors name "stdin"); it cannot be
combined with --table -.

Without --jobs, a default set of 8 single-GPU jobs from the embedded table is
used (ResNet-18, ResNet-50, Transformer, LM, Recommendation, CycleGAN, A3C;
10,000-80,000 steps; SLO one hour).`,
		Example: `  gavel-plan allocate --policy max_min_fairness_perf --cluster v100=8,p100=16,k80=24 --jobs examples/jobs.json
  gavel-plan allocate --policy max_sum_throughput_normalized_by_cost_perf --cluster v100=4,k80=4 \
      --prices v100=2.48,k80=0.45 --json
  gavel-plan allocate --policy max_min_fairness_packed --cluster v100=4 --max-partners 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAllocate(cmd.Context(), streams, o)
		},
	}
	o.problemFlags.register(cmd, false, "jobs file (JSON, - for stdin; default: a small job set from the embedded table)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

// defaultJobs is the job set used without --jobs.
func defaultJobs() []policy.Job {
	models := []string{"ResNet-18 (batch size 64)", "ResNet-50 (batch size 64)", "Transformer (batch size 64)",
		"LM (batch size 20)", "Recommendation (batch size 2048)", "CycleGAN", "A3C", "ResNet-18 (batch size 128)"}
	jobs := make([]policy.Job, len(models))
	for i, m := range models {
		jobs[i] = policy.Job{ID: fmt.Sprintf("job%d", i), Type: table.JobType{Model: m, ScaleFactor: 1}, Weight: 1,
			TotalSteps: float64(10000 * (i + 1)), SLO: 3600}
	}
	return jobs
}

func runAllocate(ctx context.Context, streams *cli.IO, o allocateOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ps, err := o.problemFlags.load()
	if err != nil {
		return fmt.Errorf("allocate: %w", err)
	}
	noteUnusedEntities(streams, inputName(o.jobs), ps)
	noteUnmeasuredPairs(streams, cli.TableName(o.table), ps)
	noteUnusedWeights(streams, inputName(o.jobs), ps.policy.Name(), ps.problem.Jobs)
	a, err := ps.allocate(ctx)
	if err != nil {
		return fmt.Errorf("allocate: %w", err)
	}
	for _, w := range a.Warnings {
		fmt.Fprintln(streams.Err, "warning:", w)
	}
	chk := ps.check(ctx, a)
	if r := chk.Realizable; r != nil && !*r {
		least := ""
		if loss := chk.NearestLoss; loss != nil {
			least = fmt.Sprintf("; any rounds leave some job at least %.3g%% of its allocated throughput short (before back-fill)", 100**loss)
		}
		fmt.Fprintln(streams.Err, "warning: no sequence of rounds gives this allocation exactly (it is no mix of rounds that fit "+
			"the GPUs, each job once a round)"+least+"; gavel-plan rounds shows how far short each job falls")
	}
	if o.json {
		out := allocationJSON(a)
		out.Realizable, out.NearestLoss = chk.Realizable, chk.NearestLoss
		return cli.WriteJSON(streams.Out, out)
	}
	return printAllocation(streams, ps.problem.Cluster, a)
}

// check checks a with the round mechanism's decomposition (see
// rounds.Check; nothing known when the topology cannot be built). The
// decomposition's own bounds (at most 150 targets, 800 columns and a search
// budget of its pricing MILPs, seconds; see policy.Decompose) limit it, not
// a clock: a time limit made the answer depend on how busy the machine was.
func (ps *problemSetup) check(ctx context.Context, a *policy.Allocation) rounds.Realizability {
	topo, err := rounds.NewTopology(ps.problem.Cluster, nil)
	if err != nil {
		return rounds.Realizability{}
	}
	return rounds.Check(ctx, rounds.RoundsConfig{Topology: topo, Table: ps.table, Jobs: ps.problem.Jobs, Allocation: a})
}

// problemFlags are the flags allocate and rounds share: the policy and its
// options, the table, the cluster and the jobs.
type problemFlags struct {
	clusterFlags
	policyFlags
	jobs string
}

// register adds the flags; servers adds --gpus-per-server (rounds).
func (o *problemFlags) register(cmd *cobra.Command, servers bool, jobsUsage string) {
	o.policyFlags.register(cmd)
	o.clusterFlags.register(cmd, "", servers)
	cmd.Flags().StringVar(&o.jobs, "jobs", "", jobsUsage)
}

// policySetup is what the planning commands start from: the table, the
// cluster and its servers, the policy and its prices.
type policySetup struct {
	table     *table.Table
	cluster   policy.Cluster
	perServer map[string]int
	policy    policy.Policy
	prices    policy.Prices
}

// loadPolicySetup checks the cluster and policy flags and builds the
// policySetup. Every error is a usage error.
func loadPolicySetup(c *clusterFlags, p *policyFlags, simulation bool) (*policySetup, error) {
	var s policySetup
	var err error
	if s.table, s.cluster, s.perServer, err = c.load(); err != nil {
		return nil, err
	}
	if err := p.checkReference(s.table, c); err != nil {
		return nil, err
	}
	if s.policy, s.prices, err = p.load(s.cluster, simulation); err != nil {
		return nil, err
	}
	p.warnUnused(c.io().Err, s.policy, s.prices, s.cluster, simulation)
	return &s, nil
}

// problemSetup is a policy with the problem to allocate.
type problemSetup struct {
	*policySetup
	problem *policy.Problem
	source  jobSource
}

// load checks the flags and builds the policy and its problem. Every error
// is a usage error.
func (o *problemFlags) load() (*problemSetup, error) {
	if err := oneStdin([2]string{"--table", o.table}, [2]string{"--jobs", o.jobs}); err != nil {
		return nil, err
	}
	s, err := loadPolicySetup(&o.clusterFlags, &o.policyFlags, false)
	if err != nil {
		return nil, err
	}
	prob, err := loadProblem(o.clusterFlags.io().In, o.jobs, s.table, s.cluster, s.prices)
	if err != nil {
		return nil, err
	}
	return &problemSetup{policySetup: s, problem: prob, source: jobsFileSource(inputName(o.jobs), prob.Jobs)}, nil
}

// noteUnusedEntities tells, once on stderr, that a jobs file's entities do
// not shape this policy's allocation. It is information, not a warning: a
// jobs file (examples/jobs.json) may well carry entities for the
// water-filling policies and be run with others. Only allocate says it;
// rounds realizes the same allocation and would repeat it.
func noteUnusedEntities(streams *cli.IO, path string, ps *problemSetup) {
	if len(ps.problem.Entities) == 0 || strings.Contains(ps.policy.Name(), "water_filling") {
		return
	}
	fmt.Fprintf(streams.Err, "note: %s: its entities are used only by the water-filling policies; %s does not group jobs by entity\n",
		path, ps.policy.Name())
}

// noteUnmeasuredPairs tells, once on stderr, that a packing policy does not co-locate the
// pairs of the jobs' types that the table does not hold: to the LP a pair not measured is no
// pair, so a partly profiled table (the output of 'gavel-profile run' before 'estimate')
// packed fewer jobs than it could, and nothing said why. Pairs that cannot form anyway (a
// job type without a rate on the worker type, too few GPUs for it, a self-pair of a type
// with one job) are not counted. Only allocate says it, as with entities.
func noteUnmeasuredPairs(streams *cli.IO, tableName string, ps *problemSetup) {
	if !policy.Packs(ps.policy) {
		return
	}
	missing, where := policy.MissingPairs(ps.problem)
	if missing == 0 {
		return
	}
	pairs := fmt.Sprintf("%d pairs of the jobs' types are", missing)
	if missing == 1 {
		pairs = "1 pair of the jobs' types is"
	}
	fmt.Fprintf(streams.Err, "note: table %s: %s not measured on %s; %s does not co-locate them "+
		"('gavel-profile estimate' fills them in)\n", tableName, pairs, strings.Join(where, ", "), ps.policy.Name())
}

// noteUnusedWeights tells, once on stderr, that the jobs' weights do not shape
// policy name's allocations: only max-min fairness (LAS) and water filling
// weigh jobs, and --help's "only the ratios of weights matter" read as if every
// policy did (a reviewer's finish-time fairness run). allocate and simulate say
// it; rounds realizes allocate's allocation and would repeat it.
func noteUnusedWeights(streams *cli.IO, path, name string, jobs []policy.Job) {
	if strings.HasPrefix(name, "max_min_fairness") {
		return
	}
	for _, j := range jobs {
		if j.EffectiveWeight() != 1 {
			fmt.Fprintf(streams.Err, "note: %s: job weights are used only by max-min fairness and water filling; %s ignores them\n",
				path, name)
			return
		}
	}
}

// allocate runs the policy; bad input it finds is a usage error naming the
// jobs file and entry.
func (ps *problemSetup) allocate(ctx context.Context) (*policy.Allocation, error) {
	a, err := ps.policy.Allocate(ctx, ps.problem)
	if err != nil {
		return nil, ps.source.check(err)
	}
	return a, nil
}

type allocationOut struct {
	Policy     string                        `json:"policy"`
	Objective  float64                       `json:"objective"`
	Meaning    string                        `json:"objective_meaning,omitempty"`
	Allocation map[string]map[string]float64 `json:"allocation"`
	Effective  map[string]float64            `json:"effective_throughput"`
	EqualShare map[string]float64            `json:"equal_share_throughput"`
	Normalized map[string]float64            `json:"normalized_throughput"`
	Terms      map[string]float64            `json:"objective_terms,omitempty"`
	Normalizer map[string]float64            `json:"objective_normalizer,omitempty"`
	Seconds    float64                       `json:"solve_seconds"`
	LPs        int                           `json:"lps"`
	Rows       int                           `json:"lp_rows"`
	Cols       int                           `json:"lp_columns"`
	Warnings   []string                      `json:"warnings,omitempty"`
	// Realizable: some sequence of rounds gives the allocation exactly
	// (null: not known; see rounds.Realizable).
	Realizable *bool `json:"realizable"`
	// NearestLoss: when it is not, the least share of its allocated
	// throughput that any rounds leave some job short (rounds.Check).
	NearestLoss *float64 `json:"nearest_loss,omitempty"`
}

func allocationJSON(a *policy.Allocation) allocationOut {
	out := allocationOut{Policy: a.Policy, Objective: a.Objective, Meaning: a.ObjectiveMeaning,
		Allocation: map[string]map[string]float64{}, Effective: a.Effective, EqualShare: a.EqualShare,
		Normalized: a.Normalized, Terms: a.Terms, Normalizer: a.Normalizer, Seconds: a.Stats.Seconds, LPs: a.Stats.LPs,
		Rows: a.Stats.Rows, Cols: a.Stats.Cols, Warnings: a.Warnings}
	for c, fr := range a.Fractions {
		out.Allocation[c.Key()] = fr
	}
	return out
}

func printAllocation(streams *cli.IO, cl policy.Cluster, a *policy.Allocation) error {
	ws := cl.WorkerTypes()
	tw := cli.NewTableWriter(streams.Out, append([]string{"combination"}, ws...)...)
	for _, c := range a.Combinations() {
		row := []string{c.Key()}
		for _, w := range ws {
			row = append(row, fmt.Sprintf("%.4f", a.Fractions[c][w]))
		}
		if err := tw.Append(row); err != nil {
			return err
		}
	}
	if err := tw.Render(); err != nil {
		return err
	}
	ids := make([]string, 0, len(a.Effective))
	for id := range a.Effective {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, policy.CompareIDs)
	header := []string{"job", "effective steps/s", "equal share steps/s", "normalized"}
	if a.Normalizer != nil {
		header = append(header, "proportional steps/s")
	}
	if a.Terms != nil {
		header = append(header, "term")
	}
	jt := cli.NewTableWriter(streams.Out, header...)
	for _, id := range ids {
		eq := a.EqualShare[id]
		row := []string{id, rateCell(a.Effective[id], eq), rateCell(eq, eq), fmt.Sprintf("%.4f", a.Normalized[id])}
		if a.Normalizer != nil {
			row = append(row, rateCell(a.Normalizer[id], a.Normalizer[id]))
		}
		if a.Terms != nil {
			row = append(row, termCell(a.Terms, id, a.Effective[id], eq))
		}
		if err := jt.Append(row); err != nil {
			return err
		}
	}
	if err := jt.Render(); err != nil {
		return err
	}
	fmt.Fprintln(streams.Out, "normalized = effective / equal share (the job's rate with 1/m of every worker type's GPUs, at most full time)")
	if a.Normalizer != nil {
		fmt.Fprintln(streams.Out, "proportional = the job's rate averaged over all GPUs of the cluster, full time (Gavel's max-min normalizer; 1 when agnostic)")
	}
	if a.Terms != nil {
		fmt.Fprintln(streams.Out, "term = the job's term of the objective")
	}
	lps := "LPs"
	if a.Stats.LPs == 1 {
		lps = "LP"
	}
	fmt.Fprintf(streams.Out, "policy %s: objective %.6g (%d %s, largest %d rows x %d columns, %.3fs)\n",
		a.Policy, a.Objective, a.Stats.LPs, lps, a.Stats.Rows, a.Stats.Cols, a.Stats.Seconds)
	if a.ObjectiveMeaning != "" {
		fmt.Fprintf(streams.Out, "objective = %s\n", a.ObjectiveMeaning)
	}
	return nil
}

// rateCell formats a rate in steps/s with four decimals, and one too small
// for four decimals (it would print 0.0000) with three significant digits:
// a job of 0.001 steps/s (a huge model on an old GPU) with a share of its
// GPU printed 0.0000, read as a job that gets nothing. Of a job's effective
// rate, that holds only down to 1e-6 of its equal share (scale): below, it
// is a time share left by the solver's tolerance (fractions under 1e-9 are
// 0), and prints 0.0000 as before.
func rateCell(v, scale float64) string {
	if v != 0 && math.Abs(v) < 5e-5 && math.Abs(v) >= 1e-6*math.Abs(scale) {
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.4f", v)
}

// termCell formats a job's objective term as rateCell does; jobs without
// one (finished jobs under makespan or finish-time fairness) get "-". A
// term is shown with significant digits only where the job's effective rate
// (eff, against its equal share eq) is neither 0 nor the solver's
// tolerance: a FIFO job waiting under water filling has an effective rate
// of 0, printed 0.0000, and a term of 2e-12 of the solver's noise, which
// printed 2e-12.
func termCell(terms map[string]float64, id string, eff, eq float64) string {
	v, ok := terms[id]
	if !ok {
		return "-"
	}
	if math.Abs(eff) < 1e-6*math.Abs(eq) {
		return fmt.Sprintf("%.4f", v) // noise, as its effective rate's cell says
	}
	return rateCell(v, v) // a weight of 1000 can make a term that small
}
