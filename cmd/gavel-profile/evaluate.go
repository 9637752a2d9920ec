package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/estimate"
	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

type evaluateOptions struct {
	table, workers, seeds, policy, aim string
	references, scaleFactor, gpus      int
	fraction                           float64
	active, json, aimSet               bool
}

func newEvaluateCmd(io *cli.IO) *cobra.Command {
	var o evaluateOptions
	cmd := &cobra.Command{
		Use:   "evaluate",
		Short: "Score the estimators with Gavel's hold-out protocol",
		Long: `Run Gavel's hold-out protocol on a table: --references job types are fully
measured, isolated rates are always measured, and for every other job type each pair with
a reference is revealed with probability --fraction (one measurement gives both jobs'
rates). The rest is estimated and compared with the truth. With --active the same number
of measurements is chosen instead: 20% to cover every job, then by 'suggest' (with
--aim) in batches of about 12, re-estimating between them.

The table may be partial (your own measurements): each seed's references are then job
types measured with themselves and each other on every worker type (found in random orders,
else by a greedy search; too few found is a usage error naming the largest), only measured
pairs are revealed (at random or by --active) and scored, and downstream_ratio is left out
(it needs every true rate); notes on stderr (and "notes" in the JSON) say so.

Methods: ours (the pairwise model 'estimate' uses), gavel (Gavel's rank-10 completion,
nearest reference by cosine distance, that reference's row), partner_mean (the mean
effect of each partner per worker type), neighbors (each job a weighted mix of its 3
nearest references by fingerprint), and als / als_raw (biased low-rank completion of
Gavel's job × (worker type, partner) matrix of normalized / raw rates, rank and
regularization by cross-validation).

Metrics, over every entry (job i next to k on worker type w) except pairs of two
references, including the measured ones. An entry or pair infeasible in the truth or in
the estimate counts only in infeasible_precision and infeasible_recall. The others give
mae and mape on normalized rates (mape where the true rate is above 0.05), raw_mape on
rates (equal to mape here, since isolated rates are measured), packing_agreement (same
call on "do the two normalized rates sum to more than 1?"), and downstream_ratio: the
max-min fairness objective (policy --policy, one job per job type, --gpus of each worker
type) of the allocation computed on the estimated table and evaluated with true rates,
over the objective on the true table. scored_entries and scored_pairs count the entries
and pairs feasible in both, the other metrics' denominators (they differ by method; n/a
when 0). The JSON also carries "estimated_only": the same metrics over the entries that
were not measured, "std" and "per_seed", and at the top "active" and (with --active)
"aim".

Worker types default to those of the block with the most job types of --scale-factor
(worker types are grouped by the job types they have an isolated rate for), dropping any
that repeats an earlier one exactly (Gavel's "_unconsolidated" types at scale factor 1);
a note names the worker types of --scale-factor left out.`,
		Example: `  gavel-profile evaluate --references 16 --fraction 0.2 --seeds 0,1,2
  gavel-profile evaluate --references 16 --fraction 0.2 --seeds 0,1,2 --active --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Evaluating several seeds takes minutes: an interrupt stops it within a fit.
			ctx, stop := interruptible(cmd)
			defer stop()
			o.aimSet = cmd.Flags().Changed("aim")
			return runEvaluate(ctx, o, io)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.table, "table", "", "throughput table, complete or partial (Gavel JSON or CSV, - for stdin; default: the embedded Gavel table)")
	f.IntVar(&o.references, "references", 16, "number of fully measured reference job types")
	f.Float64Var(&o.fraction, "fraction", 0.2, "probability of revealing each pair with a reference, in (0, 1]")
	f.StringVar(&o.seeds, "seeds", "0,1,2", "comma-separated seeds, one hold-out draw each")
	f.BoolVar(&o.active, "active", false, "choose the measurements with suggest instead of at random")
	f.StringVar(&o.aim, "aim", "balanced", "with --active, suggest's aim: balanced or decisions (see 'gavel-profile suggest --help')")
	f.StringVar(&o.workers, "worker-types", "", "comma-separated worker types (default: see above)")
	f.IntVar(&o.scaleFactor, "scale-factor", 1, "scale factor of the job types evaluated")
	f.StringVar(&o.policy, "policy", "max_min_fairness_packed", "packing max_min_fairness policy for downstream_ratio; \"none\" leaves it out")
	f.IntVar(&o.gpus, "gpus", 4, "GPUs of each worker type for downstream_ratio")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

// parseSeeds parses --seeds, a comma-separated list of distinct non-negative integers: a seed
// given twice would count one draw twice in the means and shrink the spread.
func parseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return nil, fmt.Errorf("--seeds %q: %q is above %d", s, p, uint64(math.MaxUint64))
		case err != nil:
			return nil, fmt.Errorf("--seeds %q: %q is not a non-negative integer", s, p)
		case slices.Contains(out, v):
			return nil, fmt.Errorf("--seeds %q: %d given twice", s, v)
		}
		out = append(out, v)
	}
	return out, nil
}

func runEvaluate(ctx context.Context, o evaluateOptions, io *cli.IO) error {
	seeds, err := parseSeeds(o.seeds)
	if err != nil {
		return cli.UsageError("evaluate: %v", err)
	}
	if !(o.fraction > 0 && o.fraction <= 1) {
		return cli.UsageError("evaluate: --fraction %v: must be in (0, 1]", o.fraction)
	}
	if o.gpus < 1 {
		return cli.UsageError("evaluate: --gpus %d: must be at least 1", o.gpus)
	}
	aim, err := estimate.ParseAim(o.aim)
	if err != nil {
		return cli.UsageError("evaluate: --aim %v", err)
	}
	if o.aimSet && !o.active {
		return cli.UsageError("evaluate: --aim %s: applies only with --active", o.aim)
	}
	if o.policy != "none" {
		// Checked here: the downstream score makes its first policy only after the first
		// seed's fits, minutes in.
		if _, err := policy.New(o.policy); err != nil {
			return cli.UsageError("evaluate: --policy: %v", err)
		}
		// downstream_ratio is a max-min objective: other policies (FIFO, sums of throughput)
		// may rightly give a job nothing, and then there is no ratio to take. And only a
		// packing policy reads the pair rates the estimators fill: with any other the two
		// allocations are the same and the ratio is 1 for every method.
		if maxMin := estimate.DownstreamPolicies(); !slices.Contains(maxMin, o.policy) {
			return cli.UsageError("evaluate: --policy %s: downstream_ratio is the max-min fairness objective of an allocation that packs jobs; want %s or none",
				o.policy, strings.Join(maxMin, ", "))
		}
	}
	truth, notes, err := o.truth(io)
	if err != nil {
		return err
	}
	// A draw is cheap, and on a partial table a seed may find too few references: bad input,
	// told before any fit.
	for _, seed := range seeds {
		if _, err := estimate.Protocol(truth, o.references, o.fraction, seed); err != nil {
			return cli.UsageError("table %s: scale factor %d: seed %d: --%v", cli.TableName(o.table), o.scaleFactor, seed, err)
		}
	}
	opts := estimate.EvalOptions{References: o.references, Fraction: o.fraction, Seeds: seeds, Active: o.active, Aim: aim}
	if o.policy != "none" {
		if opts.Downstream, err = estimate.Downstream(o.policy, o.gpus); err != nil {
			return cli.UsageError("evaluate: %v", err) // checked above, each with its flag
		}
	} else {
		notes = append(notes, "downstream_ratio left out (--policy none)")
	}
	ev, err := estimate.Evaluate(ctx, truth, opts)
	if err != nil {
		return err
	}
	ev.Notes = append(notes, ev.Notes...)
	choice := "random"
	if ev.Active {
		choice = "active, aim " + ev.Aim
	}
	fmt.Fprintf(io.Err, "worker types %s; %d job types; measurements (%s) per seed %v\n", strings.Join(truth.Workers, ","), len(truth.Jobs), choice, ev.Measurements)
	for _, n := range ev.Notes {
		fmt.Fprintln(io.Err, "note:", n)
	}
	if o.json {
		return cli.WriteJSON(io.Out, ev)
	}
	return printEvaluation(io, ev, opts.Downstream != nil)
}

// truth loads the block to evaluate on: --scale-factor's job types of --table, which must have
// more job types than --references, and notes on the worker types left out.
func (o evaluateOptions) truth(io *cli.IO) (*estimate.Data, []string, error) {
	workers, err := parseWorkerTypes("evaluate", o.workers)
	if err != nil {
		return nil, nil, err
	}
	t, err := cli.LoadTableFrom(io.In, io.Err, o.table)
	if err != nil {
		return nil, nil, err
	}
	name := cli.TableName(o.table)
	blocks, _, err := estimate.Blocks(t, workers, true)
	if err != nil {
		// Only an unknown worker type is --worker-types' fault: an empty table, with the flag
		// not given, read "table t.json: --worker-types: the table has no job types ...".
		if errors.Is(err, estimate.ErrUnknownWorkerType) {
			return nil, nil, cli.UsageError("table %s: --worker-types: %v", name, err)
		}
		return nil, nil, cli.UsageError("table %s: %v", name, err)
	}
	// A scale factor may have several blocks (worker types grouped by the job types they can
	// run alone); evaluate the one with the most job types, the first of those on a tie.
	var truth *estimate.Data
	for _, b := range blocks {
		if b.Jobs[0].ScaleFactor == o.scaleFactor && (truth == nil || len(b.Jobs) > len(truth.Jobs)) {
			truth = b
		}
	}
	if truth == nil {
		return nil, nil, cli.UsageError("table %s: no job types of scale factor %d with isolated rates on the worker types", name, o.scaleFactor)
	}
	var notes []string
	for _, b := range blocks {
		if b != truth && b.Jobs[0].ScaleFactor == o.scaleFactor {
			notes = append(notes, fmt.Sprintf("worker types %s (%d job types have isolated rates there%s) not evaluated: evaluate scores one group of worker types, the one with the most job types",
				strings.Join(b.Workers, ","), len(b.Jobs), lacking(truth.Jobs, b.Jobs)))
		}
	}
	if o.references < 1 || o.references >= len(truth.Jobs) {
		return nil, nil, cli.UsageError("evaluate: --references %d: must be between 1 and %d (the %d job types less one to estimate)",
			o.references, len(truth.Jobs)-1, len(truth.Jobs))
	}
	return truth, notes, nil
}

// printEvaluation prints one row per method: means ± standard deviations over seeds (no
// spread for one seed: a standard deviation of 0 would read as certainty).
func printEvaluation(io *cli.IO, ev *estimate.Evaluation, downstream bool) error {
	tw := cli.NewTableWriter(io.Out, "method", "mae", "mape", "raw_mape", "packing_agreement", "infeasible_precision", "infeasible_recall", "downstream_ratio", "mape / agreement (estimated only)")
	for _, n := range ev.Order {
		m := ev.Methods[n]
		spread := func(format string, sd float64) string {
			if len(m.PerSeed) < 2 {
				return ""
			}
			return fmt.Sprintf(" ± "+format, sd)
		}
		ds := "-"
		if downstream && m.DownstreamRatio != nil {
			ds = fmt.Sprintf("%.3f", *m.DownstreamRatio) + spread("%.3f", *m.Std.DownstreamRatio)
		}
		// A method that calls every entry infeasible has no rate to score: say so, not 0%.
		rated := func(n int, s string) string {
			if n == 0 {
				return "n/a"
			}
			return s
		}
		e, p, eo := m.ScoredEntries, m.ScoredPairs, m.EstimatedOnly
		_ = tw.Append([]string{n,
			rated(e, fmt.Sprintf("%.4f", m.MAE)+spread("%.4f", m.Std.MAE)),
			rated(e, fmt.Sprintf("%.2f%%", 100*m.MAPE)+spread("%.2f", 100*m.Std.MAPE)),
			rated(e, fmt.Sprintf("%.2f%%", 100*m.RawMAPE)),
			rated(p, fmt.Sprintf("%.1f%%", 100*m.PackingAgreement)+spread("%.1f", 100*m.Std.PackingAgreement)+fmt.Sprintf(" (%d pairs)", p)),
			fmt.Sprintf("%.3f", m.InfeasiblePrecision), fmt.Sprintf("%.3f", m.InfeasibleRecall), ds,
			rated(eo.ScoredEntries, fmt.Sprintf("%.2f%%", 100*eo.MAPE)) + " / " + rated(eo.ScoredPairs, fmt.Sprintf("%.1f%%", 100*eo.PackingAgreement))})
	}
	return tw.Render()
}

// lacking names the job types of want missing from have, for a note: ", not X, Y, Z and 3
// more", or "" when none is.
func lacking(want, have []table.JobType) string {
	var out []string
	for _, j := range want {
		if !slices.Contains(have, j) {
			out = append(out, j.Model)
		}
	}
	switch {
	case len(out) == 0:
		return ""
	case len(out) > 3:
		return fmt.Sprintf(", not %s and %d more", strings.Join(out[:3], ", "), len(out)-3)
	}
	return ", not " + strings.Join(out, ", ")
}
