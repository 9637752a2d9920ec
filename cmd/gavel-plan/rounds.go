package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/rounds"
	"github.com/gavelkit/gavel/table"
)

type roundsOptions struct {
	problemFlags
	roundSeconds     float64
	rounds           int
	noBackFill, json bool
}

func newRoundsCmd(io *cli.IO) *cobra.Command {
	o := &roundsOptions{}
	o.streams = io
	cmd := &cobra.Command{
		Use:   "rounds --policy P --cluster C --jobs J --rounds N",
		Short: "Realize an allocation as round-by-round GPU assignments and report fidelity",
		Long: `rounds computes the policy's allocation for a fixed set of jobs, then plans N
consecutive rounds with Gavel's round-based mechanism: each round, jobs (or
co-located pairs) are picked by priority (target time fraction vs fraction
received), never one job in two places, multi-GPU jobs on as few servers as
possible, and jobs kept on the same GPUs when they can be. An allocation
with co-located pairs or jobs of several GPUs is also written as a mix of
feasible rounds (each job at most once a round) and planned by following
that mix; of the two plans the one with the smaller max allocated
deviation is printed (a line says so, and --json's "decomposed" is true,
when it is the mix's). When no mix of feasible rounds gives the allocation
exactly (jobs of several GPUs or pairs can ask for more than any rounds
give; checked for at most 150 targets), a note says so: that shortfall is
the allocation's; the mix planned is then the nearest one, where the
largest share of a job's allocated throughput lost is least, and of the
two plans the one that loses the worst-served job less throughput is
printed (see below).

The policy takes allocate's flags (--prices for cost policies, --seed,
--max-partners, --reference, --time-limit) and gives the same allocation;
FIFO policies never back-fill, as in simulate.

It prints which job or pair runs on which GPUs in every round (priority:
the combination's target against the time it had received, as Gavel's
mechanism ranks it, higher first, 0 for back-fill; target: its allocated
time fraction there), then the fidelity report, per job and worker type:

  target      the allocation's time fraction (summed over the job's
              combinations);
  received    the fraction of the rounds it actually ran there;
  backfill    the part of received beyond the target, max(0, received -
              target): time it got because GPUs would otherwise idle, where
              it had no target or was already ahead of it (--no-backfill
              leaves GPUs idle rather than run jobs with no target there);
  deviation   received - target;
  allocated   received - backfill - target = min(received, target) - target:
              the shortfall against the allocation (0 when it got its
              target or more).

max deviation is the largest |deviation|; on a cluster with spare GPUs it is
mostly back-fill, which is harmless. max allocated deviation is the largest
|allocated|, the worst shortfall, and measures how well the rounds realize
the allocation (a job given too much where GPUs are scarce leaves another
short).
The last line also gives the largest share of a job's allocated throughput
(rate × target time on the types and pairs it has targets on) that the
rounds did not give it, back-fill included (steps it got anywhere); where
no rounds give the allocation, the plan kept is the one with the smaller
such share.
--json has the same fields: fidelity {job → {worker type → {target,
received, backfill}}}, max_deviation, max_deviation_allocated,
max_throughput_loss, decomposed and realizable (true, false, or null when
not checked).`,
		Example: `  gavel-plan rounds --policy max_min_fairness_perf --cluster v100=4,p100=4,k80=4 \
      --gpus-per-server v100=4,p100=4,k80=4 --jobs examples/jobs.json --rounds 20
  gavel-plan rounds --policy max_min_fairness_packed --cluster v100=4,p100=4,k80=4 --jobs examples/jobs.json \
      --rounds 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := runRounds(cmd.Context(), io, o); err != nil {
				return fmt.Errorf("rounds: %w", err)
			}
			return nil
		},
	}
	o.problemFlags.register(cmd, true, `jobs file (required; - for stdin): JSON {"jobs": [{"id", "type", "total_steps", ...}]}, as allocate --help describes; e.g. examples/jobs.json`)
	registerRoundSeconds(cmd, &o.roundSeconds)
	f := cmd.Flags()
	f.IntVar(&o.rounds, "rounds", 10, "number of rounds to plan")
	f.BoolVar(&o.noBackFill, "no-backfill", false, "leave GPUs idle rather than run jobs with no allocation there (always so for FIFO policies)")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

// clusterFlags are the flags that say what is scheduled on: the throughput
// table, the cluster and its servers.
type clusterFlags struct {
	table, cluster, perServer string
	streams                   *cli.IO // where --table - reads and warnings go; nil: the process's
}

// register adds --table, --cluster and, with servers, --gpus-per-server;
// defaultCluster may be "" (then --cluster is required).
func (c *clusterFlags) register(cmd *cobra.Command, defaultCluster string, servers bool) {
	f := cmd.Flags()
	f.StringVar(&c.table, "table", "", "throughput table (Gavel JSON or CSV, - for stdin; default: the embedded Gavel table)")
	usage := "GPUs per worker type (a type with 0 takes no part: a warning)"
	if defaultCluster == "" {
		usage += ", e.g. v100=4,p100=4,k80=4"
	}
	f.StringVar(&c.cluster, "cluster", defaultCluster, usage)
	if servers {
		f.StringVar(&c.perServer, "gpus-per-server", "", "GPUs per server per worker type (default 1), e.g. v100=4,p100=4")
	}
}

// load reads the table and parses the cluster and servers; flag errors are
// usage errors.
func (c *clusterFlags) load() (tbl *table.Table, cluster policy.Cluster, perServer map[string]int, err error) {
	if c.cluster == "" {
		return nil, nil, nil, cli.UsageError("--cluster is required, e.g. --cluster v100=4,p100=4,k80=4")
	}
	streams := c.io()
	if tbl, err = cli.LoadTableFrom(streams.In, streams.Err, c.table); err != nil {
		return nil, nil, nil, err
	}
	if cluster, err = policy.ParseCluster(c.cluster); err != nil {
		return nil, nil, nil, cli.UsageError("--cluster: %v", err)
	}
	if cluster.Total() == 0 {
		return nil, nil, nil, cli.UsageError("--cluster %q has no GPUs", c.cluster)
	}
	for _, w := range cluster.WorkerTypes() {
		if cluster[w] == 0 { // a type listed with no GPUs takes no part (ParseCluster allows it)
			fmt.Fprintf(streams.Err, "warning: --cluster %s=0: a worker type without GPUs takes no part (leave it out)\n", w)
			continue
		}
		if err := c.checkWorkerType(tbl, "--cluster", w); err != nil {
			return nil, nil, nil, err
		}
	}
	if perServer, err = rounds.ParseGPUsPerServer(c.perServer); err != nil {
		return nil, nil, nil, cli.UsageError("--gpus-per-server: %v", err)
	}
	return tbl, cluster, perServer, nil
}

// io returns the streams the command reads and warns on: c.streams, or the
// process's when nil.
func (c *clusterFlags) io() *cli.IO {
	if c.streams != nil {
		return c.streams
	}
	return cli.StdIO()
}

// checkWorkerType returns a usage error naming flag when worker type w is
// not in table tbl, so that a misspelled type ("V100") is reported as such
// rather than as a job without a rate on it.
func (c *clusterFlags) checkWorkerType(tbl *table.Table, flag, w string) error {
	known := tbl.WorkerTypes()
	if slices.Contains(known, w) {
		return nil
	}
	name := "the table"
	if c.table != "" {
		name = "table " + cli.TableName(c.table)
	}
	hint := ""
	for _, k := range known {
		if strings.EqualFold(k, w) {
			hint = fmt.Sprintf("; did you mean %q?", k)
		}
	}
	return cli.UsageError("%s: worker type %q is not in %s (it has %s)%s", flag, w, name, cli.Listed(known), hint)
}

// setupFlags are simulate's flags: cluster, policy and round length.
type setupFlags struct {
	clusterFlags
	policyFlags
	roundSeconds float64
}

func (o *setupFlags) register(cmd *cobra.Command) {
	o.policyFlags.register(cmd)
	o.clusterFlags.register(cmd, "", true)
	registerRoundSeconds(cmd, &o.roundSeconds)
}

func registerRoundSeconds(cmd *cobra.Command, v *float64) {
	cmd.Flags().Float64Var(v, "round-seconds", rounds.DefaultRoundSeconds, "round length in seconds")
}

func checkRoundSeconds(v float64) error { return checkFinite("round-seconds", v, true) }

// setup is what simulate runs on: a policySetup and the cluster's topology.
type setup struct {
	*policySetup
	topo *rounds.Topology
}

func (o *setupFlags) load() (*setup, error) {
	if err := checkRoundSeconds(o.roundSeconds); err != nil {
		return nil, err
	}
	ps, err := loadPolicySetup(&o.clusterFlags, &o.policyFlags, true)
	if err != nil {
		return nil, err
	}
	s := &setup{policySetup: ps}
	if s.topo, err = rounds.NewTopology(s.cluster, s.perServer); err != nil {
		return nil, cli.UsageError("%v", err)
	}
	return s, nil
}

type roundsJSON struct {
	Policy       string                                `json:"policy"`
	RoundSeconds float64                               `json:"round_seconds"`
	Rounds       []roundJSON                           `json:"rounds"`
	Fidelity     map[string]map[string]rounds.Fidelity `json:"fidelity"`
	MaxDeviation float64                               `json:"max_deviation"`
	// MaxDeviationAllocated leaves back-fill out (see rounds.Fidelity).
	MaxDeviationAllocated float64 `json:"max_deviation_allocated"`
	// MaxThroughputLoss: the largest share of a job's allocated throughput
	// the rounds left short (see rounds.RoundsResult).
	MaxThroughputLoss float64 `json:"max_throughput_loss"`
	// Decomposed: the plan follows the allocation's mix of feasible rounds.
	Decomposed bool `json:"decomposed"`
	// Realizable: some sequence of rounds gives the allocation exactly
	// (null: not checked; see rounds.RoundsResult).
	Realizable *bool                         `json:"realizable"`
	Allocation map[string]map[string]float64 `json:"allocation"`
}

type roundJSON struct {
	Index       int              `json:"index"`
	Assignments []assignmentJSON `json:"assignments"`
}

type assignmentJSON struct {
	GPU        int      `json:"gpu"`
	WorkerType string   `json:"worker_type"`
	Jobs       []string `json:"jobs"`
}

func runRounds(ctx context.Context, io *cli.IO, o *roundsOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.jobs == "" {
		return cli.UsageError("--jobs is required")
	}
	if o.rounds < 1 {
		return cli.UsageError("--rounds %d: want at least 1", o.rounds)
	}
	if err := checkRoundSeconds(o.roundSeconds); err != nil {
		return err
	}
	ps, err := o.problemFlags.load()
	if err != nil {
		return err
	}
	prob := ps.problem
	topo, err := rounds.NewTopology(prob.Cluster, ps.perServer)
	if err != nil {
		return cli.UsageError("%v", err)
	}
	// The jobs file's reader and the policy check the jobs (what rounds.Prepare would refuse,
	// they refuse too), and their errors name the entry of the file.
	alloc, err := ps.allocate(ctx)
	if err != nil {
		return err
	}
	for _, w := range alloc.Warnings {
		fmt.Fprintln(io.Err, "warning:", w)
	}
	res, err := rounds.RunRounds(ctx, rounds.RoundsConfig{Topology: topo, Table: prob.Table, Jobs: prob.Jobs, Allocation: alloc,
		Rounds: o.rounds, RoundSeconds: o.roundSeconds, NoBackFill: o.noBackFill, Policy: ps.policy})
	if err != nil {
		return err
	}
	if o.json {
		return cli.WriteJSON(io.Out, newRoundsJSON(o, alloc, res))
	}
	return printRounds(io, topo, res, prob.Jobs)
}

func newRoundsJSON(o *roundsOptions, alloc *policy.Allocation, res *rounds.RoundsResult) roundsJSON {
	out := roundsJSON{Policy: o.policy, RoundSeconds: o.roundSeconds, Fidelity: res.Fidelity, MaxDeviation: res.MaxDeviation,
		MaxDeviationAllocated: res.MaxDeviationAllocated, MaxThroughputLoss: res.MaxThroughputLoss, Decomposed: res.Decomposed, Realizable: res.Realizable, Allocation: map[string]map[string]float64{}}
	for c, x := range alloc.Fractions {
		out.Allocation[c.Key()] = x
	}
	for i, p := range res.Plans {
		r := roundJSON{Index: i, Assignments: []assignmentJSON{}}
		for _, a := range p.Assignments {
			ids := []string{a.Combination.A}
			if a.Combination.IsPair() {
				ids = append(ids, a.Combination.B)
			}
			for _, g := range a.GPUs {
				r.Assignments = append(r.Assignments, assignmentJSON{GPU: g, WorkerType: a.WorkerType, Jobs: ids})
			}
		}
		sort.Slice(r.Assignments, func(i, j int) bool { return r.Assignments[i].GPU < r.Assignments[j].GPU })
		out.Rounds = append(out.Rounds, r)
	}
	return out
}

func printRounds(io *cli.IO, topo *rounds.Topology, res *rounds.RoundsResult, jobs []policy.Job) error {
	tw := cli.NewTableWriter(io.Out, "round", "worker type", "GPU ids", "servers", "job(s)", "priority", "target")
	for i, p := range res.Plans {
		for _, a := range p.Assignments {
			if err := tw.Append([]string{strconv.Itoa(i), a.WorkerType, intsString(a.GPUs),
				strconv.Itoa(topo.ServersSpanned(a.GPUs)), a.Combination.Key(),
				fmt.Sprintf("%.3f", a.Priority), fmt.Sprintf("%.3f", a.Target)}); err != nil {
				return err
			}
		}
	}
	if err := tw.Render(); err != nil {
		return err
	}
	fmt.Fprintln(io.Out)
	return printFidelity(io, res, jobs)
}

// printFidelity prints the fidelity report in job order, leaving out worker
// types where a job neither had a target nor ran.
func printFidelity(io *cli.IO, res *rounds.RoundsResult, jobs []policy.Job) error {
	ft := cli.NewTableWriter(io.Out, "job", "worker type", "target", "received", "backfill", "deviation", "allocated")
	for _, j := range jobs {
		f := res.Fidelity[j.ID]
		for _, w := range slices.Sorted(maps.Keys(f)) {
			e := f[w]
			if e.Target == 0 && e.Received == 0 {
				continue
			}
			if err := ft.Append([]string{j.ID, w, fmt.Sprintf("%.4f", e.Target), fmt.Sprintf("%.4f", e.Received),
				fmt.Sprintf("%.4f", e.BackFill), signed4(e.Deviation()), signed4(e.AllocatedDeviation())}); err != nil {
				return err
			}
		}
	}
	if err := ft.Render(); err != nil {
		return err
	}
	if res.Decomposed {
		how := "the allocation's mix of feasible rounds (its plan fell less short than the per-entry walk's)"
		if res.Realizable != nil && !*res.Realizable {
			how = "the nearest mix of feasible rounds (its plan lost the worst-served job less of its allocated throughput than the per-entry walk's)"
		}
		if _, err := fmt.Fprintf(io.Out, "planned by following %s\n", how); err != nil {
			return err
		}
	}
	if res.Realizable != nil && !*res.Realizable {
		if _, err := fmt.Fprintln(io.Out, "note: no sequence of rounds gives this allocation exactly (it is no mix of feasible rounds): "+
			"part of the shortfall is the allocation's, not the rounds'"); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(io.Out, "max deviation: %.4f over %d rounds (back-fill included); max allocated deviation: %.4f; "+
		"largest share of a job's allocated throughput short: %.3g%%\n",
		noNoise(res.MaxDeviation), len(res.Plans), noNoise(res.MaxDeviationAllocated), 100*noNoise(res.MaxThroughputLoss))
	return err
}

// signed4 formats x with a sign and 4 decimals; what rounds to zero is "+0.0000", not "-0.0000".
func signed4(x float64) string {
	if math.Abs(x) < 5e-5 {
		x = 0
	}
	return fmt.Sprintf("%+.4f", x)
}

// noNoise returns 0 for what is solver noise in a share of time or throughput (printed as
// "-0.0000" or "1e-10%"), x otherwise.
func noNoise(x float64) float64 {
	if math.Abs(x) < 1e-9 {
		return 0
	}
	return x
}

func intsString(xs []int) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ","
		}
		s += strconv.Itoa(x)
	}
	return s
}
