package main

import (
	"context"
	"encoding/csv"
	"fmt"
	goio "io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/rounds"
)

type simulateOptions struct {
	setupFlags
	trace, jobsOut string
	compat, json   bool
}

func newSimulateCmd(io *cli.IO) *cobra.Command {
	o := &simulateOptions{}
	o.streams = io
	cmd := &cobra.Command{
		Use:   "simulate --trace F --policy P --cluster C",
		Short: "Simulate a trace of jobs on a virtual clock with the round-based mechanism",
		Long: `simulate replays a trace: jobs arrive, the policy's allocation is recomputed
once per round in which a job arrived or finished, and the round mechanism
realizes it; jobs finish mid-round. It reports the average and per-job job
completion time (JCT), makespan, utilization, cost (with --prices, per
GPU-hour, one price for every worker type of the cluster) and SLO violations
(completion later than arrival + deadline).

The trace is Gavel's tab-separated format (10 fields per line) or a jobs file
(JSON) whose jobs carry arrival_seconds. With --gavel-compat the simulator
follows Gavel's own semantics (recomputation only >= 1920 s after the last
reset, its priorities and worker type order, integer steps), so results
compare one to one with Gavel's.

--json prints the contract's fields and more (see the README): cost is 0
without --prices (a number, as the contract has it; not computed, which is
not free); warnings is [] when the policy relaxed nothing; each job has
slo_violated (false without an SLO, as in --jobs-out), slo_deadline_seconds
(null when it has no SLO) and cost (null without --prices).`,
		Example: `  gavel-plan simulate --trace examples/worked_example.trace --policy max_min_fairness_perf --cluster v100=36,p100=36,k80=36
  gavel-plan simulate --trace examples/worked_example.trace --policy fifo_perf --cluster v100=2,p100=2,k80=2 --gavel-compat --json
  gavel-plan simulate --trace examples/jobs.json --policy max_sum_throughput_normalized_by_cost_perf_SLOs \
      --cluster v100=4,k80=8 --prices v100=2.48,k80=0.45 --jobs-out jobs.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd.Context(), io, o) },
	}
	o.setupFlags.register(cmd)
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", "", "trace file (Gavel TSV) or jobs file (JSON with arrival_seconds); - for stdin")
	f.StringVar(&o.jobsOut, "jobs-out", "", "write per-job results to this CSV file")
	f.Lookup("seed").Usage = "seed for randomized policies (fifo, gandiva) and, with --gavel-compat, Gavel's agnostic worker-type shuffle"
	f.Lookup("prices").Usage = "price per GPU-hour per worker type, e.g. v100=2.48,p100=1.46,k80=0.45 (cost policies need it; reports cost)"
	f.BoolVar(&o.compat, "gavel-compat", false, "reproduce Gavel's simulator semantics")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

func runSimulate(ctx context.Context, io *cli.IO, o *simulateOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.trace == "" {
		return cli.UsageError("--trace is required")
	}
	if err := cli.CheckOutput("simulate", "--jobs-out", o.jobsOut); err != nil {
		return err
	}
	if err := oneStdin([2]string{"--table", o.table}, [2]string{"--trace", o.trace}); err != nil {
		return err
	}
	s, err := o.setupFlags.load()
	if err != nil {
		return err
	}
	var tj []rounds.TraceJob
	var entities map[string]policy.Entity
	if o.trace == "-" {
		tj, entities, err = rounds.ReadTrace(io.In, cli.StdinName)
	} else {
		tj, entities, err = rounds.LoadTrace(o.trace)
	}
	if err != nil {
		return cli.UsageError("%v", err)
	}
	jobs, err := rounds.Prepare(s.table, s.cluster, tj)
	if err != nil {
		return cli.UsageError("%s: %v", inputName(o.trace), err)
	}
	noteUnusedWeights(io, inputName(o.trace), s.policy.Name(), jobs)
	cfg := rounds.Config{Table: s.table, Cluster: s.cluster, GPUsPerServer: s.perServer,
		Policy: s.policy, Entities: entities, Prices: s.prices, RoundSeconds: o.roundSeconds,
		GavelCompat: o.compat, Seed: o.seed}
	if o.seed != 0 && !rounds.UsesSeed(cfg) {
		fmt.Fprintf(io.Err, "warning: --seed does nothing with policy %s here (only fifo and gandiva draw random numbers, "+
			"and with --gavel-compat the heterogeneity-agnostic policies' worker-type shuffle)\n", s.policy.Name())
	}
	res, err := rounds.Simulate(ctx, cfg, jobs)
	if err != nil {
		return traceSource(inputName(o.trace), tj).check(err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(io.Err, "warning: %s (first at %.0f s, said by %d allocations)\n", w.Message, w.First, w.Count)
	}
	// The results are printed before --jobs-out is written, so that a failure writing it
	// (checked above, but a disk may fill) loses nothing of what was computed.
	if o.json {
		err = cli.WriteJSON(io.Out, simulationJSON(res, s.prices != nil))
	} else {
		err = printSimulation(io, res, s.prices != nil)
	}
	if err != nil || o.jobsOut == "" {
		return err
	}
	if err := cli.WriteFile(ctx, o.jobsOut, func(w goio.Writer) error { return writeJobsCSV(w, res) }); err != nil {
		return fmt.Errorf("--jobs-out: %w", err)
	}
	return nil
}

// simulateJSON is --json's object: rounds.Result with warnings [] when there are none, and
// each job always with slo_violated (false without an SLO, as in --jobs-out) and
// slo_deadline_seconds and cost, null when the job has none. The total cost stays a number
// (0 without --prices), as the contract has it.
type simulateJSON struct {
	*rounds.Result
	Jobs     []simulatedJobJSON `json:"jobs"`
	Warnings []rounds.Warning   `json:"warnings"`
}

type simulatedJobJSON struct {
	rounds.JobResult
	Deadline *float64 `json:"slo_deadline_seconds"` // absolute simulated time; null without an SLO
	Violated bool     `json:"slo_violated"`
	Cost     *float64 `json:"cost"`
}

// simulationJSON is res as --json prints it; costed says whether costs were computed.
func simulationJSON(res *rounds.Result, costed bool) simulateJSON {
	out := simulateJSON{Result: res, Jobs: make([]simulatedJobJSON, len(res.Jobs)), Warnings: res.Warnings}
	if out.Warnings == nil {
		out.Warnings = []rounds.Warning{}
	}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		out.Jobs[i] = simulatedJobJSON{JobResult: *j, Violated: j.Violated}
		if j.Deadline > 0 {
			out.Jobs[i].Deadline = &j.Deadline
		}
		if costed {
			out.Jobs[i].Cost = &j.Cost
		}
	}
	return out
}

func writeJobsCSV(w goio.Writer, res *rounds.Result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"id", "arrival_seconds", "completion_seconds", "jct_seconds", "slo_deadline_seconds", "slo_violated", "cost"})
	for _, j := range res.Jobs {
		deadline := ""
		if j.Deadline > 0 {
			deadline = ff(j.Deadline)
		}
		cw.Write([]string{j.ID, ff(j.Arrival), ff(j.Completion), ff(j.JCT), deadline, strconv.FormatBool(j.Violated), ff(j.Cost)})
	}
	cw.Flush()
	return cw.Error()
}

func ff(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func printSimulation(io *cli.IO, res *rounds.Result, cost bool) error {
	jt := cli.NewTableWriter(io.Out, "job", "arrival (s)", "completion (s)", "JCT (s)", "JCT (h)", "SLO")
	for _, j := range res.Jobs {
		slo := ""
		switch {
		case j.Violated:
			slo = "violated"
		case j.Deadline > 0:
			slo = "met"
		}
		if err := jt.Append([]string{j.ID, ff(j.Arrival), ff(j.Completion), ff(j.JCT), fmt.Sprintf("%.2f", j.JCT/3600), slo}); err != nil {
			return err
		}
	}
	if err := jt.Render(); err != nil {
		return err
	}
	fmt.Fprintln(io.Out)
	st := cli.NewTableWriter(io.Out, "metric", "value")
	rows := [][]string{
		{"jobs", strconv.Itoa(len(res.Jobs))},
		{"average JCT (s)", ff(res.AvgJCT)},
		{"average JCT (h)", fmt.Sprintf("%.3f", res.AvgJCT/3600)},
		{"makespan (s)", ff(res.Makespan)},
		{"end time (s)", ff(res.End)},
		{"utilization", fmt.Sprintf("%.4f", res.Utilization)},
		{"SLO violations", strconv.Itoa(res.SLOViolations)},
		{"rounds", strconv.Itoa(res.Rounds)},
		{"allocations computed", strconv.Itoa(res.Allocations)},
		{"solve time (s)", fmt.Sprintf("%.3f", res.SolveSeconds)},
		{"lease extensions", fmt.Sprintf("%d / %d", res.LeaseExtensions, res.LeaseOpportunities)},
	}
	if cost {
		rows = append(rows, []string{"cost ($)", fmt.Sprintf("%.2f", res.Cost)})
	}
	for _, r := range rows {
		if err := st.Append(r); err != nil {
			return err
		}
	}
	return st.Render()
}
