package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	goio "io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/rounds"
	"github.com/gavelkit/gavel/table"
)

func newExperimentCmd(io *cli.IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment",
		Short: "Run the paper's experiments (continuous JCT vs load, hierarchical fairness)",
		Long: `experiment runs the Gavel paper's experiments on the simulator and the
policies: "continuous" compares average JCT against input load for
heterogeneity-aware and -agnostic LAS; "hierarchical" measures multi-level
(entity) fairness with water filling.`,
		Example: `  gavel-plan experiment continuous --rates 1,2,3
  gavel-plan experiment hierarchical --csv hierarchical.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newContinuousCmd(io), newHierarchicalCmd(io))
	return cmd
}

type continuousOptions struct {
	clusterFlags
	policies, rates, seeds, window string
	roundSeconds                   float64
	maxPartners, parallel          int
	timeout                        time.Duration
	multiGPU, json                 bool
}

func newContinuousCmd(io *cli.IO) *cobra.Command {
	o := &continuousOptions{}
	o.streams = io
	cmd := &cobra.Command{
		Use:   "continuous",
		Short: "Average JCT vs input load for heterogeneity-aware vs -agnostic LAS",
		Long: `continuous is the paper's headline experiment: jobs of types drawn uniformly
from the table arrive as a Poisson process at each rate (jobs/hour), with
Gavel's duration and scale-factor distributions; each policy is simulated on
the same jobs (same seed), and the average JCT of the jobs in the window
(arrival ranks [start, end)) is reported, with the ratio of the first
policy's JCT to the second's (in the table; --json gives each point, with
avg_jct_seconds null where a point ran past --timeout).

The paper used 36 GPUs of each type, rates up to 6 jobs/hour, window
4000:5000 and seeds 0,1,2; the defaults here are smaller so the run takes a
few minutes on two cores.`,
		Example: `  gavel-plan experiment continuous
  gavel-plan experiment continuous --rates 1,2,3,4,5 --window 500:1500 --seeds 0,1,2 --json
  gavel-plan experiment continuous --policies max_min_fairness_perf,max_min_fairness,max_min_fairness_packed --multi-gpu --max-partners 8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runContinuous(cmd.Context(), io, o) },
	}
	o.clusterFlags.register(cmd, "v100=36,p100=36,k80=36", true)
	registerRoundSeconds(cmd, &o.roundSeconds)
	f := cmd.Flags()
	f.StringVar(&o.policies, "policies", "max_min_fairness_perf,max_min_fairness", "policies to compare (the ratio is first / second)")
	f.StringVar(&o.rates, "rates", "2,4,6", "arrival rates, jobs per hour")
	f.StringVar(&o.seeds, "seeds", "0", "seeds; JCTs are averaged over them")
	f.StringVar(&o.window, "window", "100:400", "jobs measured, by arrival rank start:end (end exclusive)")
	f.BoolVar(&o.multiGPU, "multi-gpu", false, "draw multi-GPU jobs (scale factors 1/2/4/8)")
	f.IntVar(&o.maxPartners, "max-partners", 0, "packed policies: keep each job's k best partners (0 = all)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "wall-clock limit per simulation (0: none); past it the point reads \"timeout\" (overloaded)")
	f.IntVar(&o.parallel, "parallel", 1, "simulations run at once (0: one per CPU, GOMAXPROCS); same points, progress lines in finishing order. Above 1 they share the CPUs, so each takes longer and a point near --timeout may time out")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

func parseFloats(flag, s string) ([]float64, error) {
	var out []float64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || checkFinite(flag, v, true) != nil {
			return nil, cli.UsageError("--%s: %q is not a positive finite number", flag, p)
		}
		out = append(out, v)
	}
	return out, nil
}

// continuousRun is the parsed form of continuousOptions' list flags.
type continuousRun struct {
	rates      []float64
	seeds      []uint64
	start, end int
	names      []string
}

func (o *continuousOptions) parse() (*continuousRun, error) {
	var r continuousRun
	var err error
	if r.rates, err = parseFloats("rates", o.rates); err != nil {
		return nil, err
	}
	for _, p := range strings.Split(o.seeds, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, cli.UsageError("--seeds: %q is not a non-negative integer", p)
		}
		r.seeds = append(r.seeds, v)
	}
	a, b, ok := strings.Cut(o.window, ":")
	start, err1 := strconv.Atoi(strings.TrimSpace(a))
	end, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || start < 0 || end <= start {
		return nil, cli.UsageError("--window %q: want start:end with 0 <= start < end", o.window)
	}
	r.start, r.end = start, end
	if o.maxPartners < 0 {
		return nil, cli.UsageError("--max-partners %d must be at least 0", o.maxPartners)
	}
	if o.timeout < 0 {
		return nil, cli.UsageError("--timeout %v must be at least 0", o.timeout)
	}
	if o.parallel < 0 {
		return nil, cli.UsageError("--parallel %d must be at least 0 (0: one per CPU)", o.parallel)
	}
	r.names = strings.Split(o.policies, ",")
	packs := false
	for i, n := range r.names {
		r.names[i] = strings.TrimSpace(n)
		pol, err := policy.New(r.names[i])
		if err != nil {
			return nil, cli.UsageError("--policies: %v", err)
		}
		if needsPrices(r.names[i]) {
			// It failed at its first allocation, after the policies before it had run.
			return nil, cli.UsageError("--policies: policy %s needs prices, which experiment continuous does not take (simulate --prices runs it)", r.names[i])
		}
		packs = packs || policy.Packs(pol)
	}
	if o.maxPartners > 0 && !packs {
		fmt.Fprintf(o.io().Err, "warning: --max-partners does nothing with policies %s (only the packing policies, *_packed and gandiva, pack pairs)\n",
			strings.Join(r.names, ", "))
	}
	return &r, nil
}

func runContinuous(ctx context.Context, io *cli.IO, o *continuousOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := checkRoundSeconds(o.roundSeconds); err != nil {
		return err
	}
	tbl, cluster, perServer, err := o.clusterFlags.load()
	if err != nil {
		return err
	}
	r, err := o.parse()
	if err != nil {
		return err
	}
	if o.multiGPU {
		warnUnavailable(io, tbl, cluster)
	}
	began := time.Now()
	pts, err := rounds.Continuous(ctx, rounds.ContinuousConfig{Table: tbl, Cluster: cluster, GPUsPerServer: perServer,
		Policies: r.names, Rates: r.rates, Seeds: r.seeds, WindowStart: r.start, WindowEnd: r.end, MultiGPU: o.multiGPU,
		RoundSeconds: o.roundSeconds, PolicyOptions: []policy.Option{policy.WithMaxPartners(o.maxPartners)}, Timeout: o.timeout,
		Parallel: cmp.Or(o.parallel, runtime.GOMAXPROCS(0)),
		Progress: func(p string, rate float64, seed uint64, res *rounds.Result) {
			if res == nil {
				fmt.Fprintf(io.Err, "%-28s rate %5s/h seed %d: timed out after %v\n", p, rateLabel(rate), seed, o.timeout)
				return
			}
			fmt.Fprintf(io.Err, "%-28s rate %5s/h seed %d: avg JCT %8.2f h, %d rounds, %d solves (%.1f s), %.0f s elapsed\n",
				p, rateLabel(rate), seed, res.AvgJCT/3600, res.Rounds, res.Allocations, res.SolveSeconds, time.Since(began).Seconds())
		}})
	var partial *rounds.ContinuousPartialError
	if errors.As(err, &partial) && errors.Is(err, context.Canceled) && slices.ContainsFunc(partial.Points, func(p *rounds.ContinuousPoint) bool { return p != nil }) {
		// Interrupted: print what finished, then the error (exit status 1).
		if perr := writeContinuous(io, o, cluster, r, partial.Points, true); perr != nil {
			return errors.Join(err, perr)
		}
		return err
	}
	if err != nil {
		return err
	}
	all := make([]*rounds.ContinuousPoint, len(pts))
	for i := range pts {
		all[i] = &pts[i]
	}
	return writeContinuous(io, o, cluster, r, all, false)
}

// writeContinuous prints the points as JSON or a table; partial says the run was
// interrupted, and nil points are those it did not finish (null in the JSON, "-" in the
// table, with a line saying so).
func writeContinuous(io *cli.IO, o *continuousOptions, cluster policy.Cluster, r *continuousRun,
	pts []*rounds.ContinuousPoint, partial bool) error {
	if o.json {
		out := map[string]any{"cluster": cluster.String(), "window": []int{r.start, r.end},
			"seeds": r.seeds, "policies": r.names, "points": pts}
		if partial {
			out["partial"] = true
		}
		return cli.WriteJSON(io.Out, out)
	}
	if err := printContinuous(io, r.names, r.rates, pts); err != nil {
		return err
	}
	if partial {
		_, err := fmt.Fprintln(io.Out, "partial: interrupted; \"-\" marks points whose simulations did not all finish")
		return err
	}
	return nil
}

// warnUnavailable says which scale factors --multi-gpu cannot draw on cluster, whose draws
// become single-GPU jobs (an 8-GPU job on 4 GPUs a type was changed without a word).
func warnUnavailable(io *cli.IO, tbl *table.Table, cluster policy.Cluster) {
	g, err := rounds.NewGenerator(rounds.GeneratorConfig{Table: tbl, Cluster: cluster, MultiGPU: true})
	if err != nil {
		return // Continuous reports it
	}
	if sfs := g.Unavailable(); len(sfs) > 0 {
		names := make([]string, len(sfs))
		for i, sf := range sfs {
			names[i] = strconv.Itoa(sf)
		}
		fmt.Fprintf(io.Err, "warning: --multi-gpu: no job type of %s GPUs has a rate on %s and fits a worker type of cluster %s; those draws become single-GPU jobs\n",
			strings.Join(names, " or "), g.Reference(), cluster)
	}
}

// rateLabel formats a rate with two decimals, or as many as it needs (0.125 and
// 0.12 both read 0.12, 0.005 read 0.01).
func rateLabel(rate float64) string {
	s := fmt.Sprintf("%.2f", rate)
	if v, _ := strconv.ParseFloat(s, 64); v == rate {
		return s
	}
	return strconv.FormatFloat(rate, 'f', -1, 64)
}

// printContinuous prints one row per rate; pts holds, per rate, one point per
// policy in names' order, nil for one not finished.
func printContinuous(io *cli.IO, names []string, rates []float64, pts []*rounds.ContinuousPoint) error {
	header := []string{"rate (jobs/h)"}
	for _, n := range names {
		header = append(header, n+" JCT (h)")
	}
	if len(names) >= 2 {
		header = append(header, names[0]+" / "+names[1])
	}
	tw := cli.NewTableWriter(io.Out, header...)
	for i := 0; i < len(pts); i += len(names) {
		row := []string{rateLabel(rates[i/len(names)])}
		for k := range names {
			switch pt := pts[i+k]; {
			case pt == nil:
				row = append(row, "-")
			case pt.TimedOut:
				row = append(row, "timeout")
			default:
				row = append(row, fmt.Sprintf("%.3f", pt.AvgJCT/3600))
			}
		}
		if len(names) >= 2 {
			switch {
			case pts[i] == nil || pts[i+1] == nil || pts[i].TimedOut || pts[i+1].TimedOut:
				row = append(row, "-")
			default:
				row = append(row, fmt.Sprintf("%.3f", pts[i].AvgJCT/pts[i+1].AvgJCT))
			}
		}
		if err := tw.Append(row); err != nil {
			return err
		}
	}
	return tw.Render()
}

type hierarchicalOptions struct {
	clusterFlags
	csv, aware, agnostic string
	seed                 uint64
	json                 bool
}

func newHierarchicalCmd(io *cli.IO) *cobra.Command {
	o := &hierarchicalOptions{}
	o.streams = io
	cmd := &cobra.Command{
		Use:   "hierarchical",
		Short: "Multi-level fairness: entities weighted 1:2:3 vs 1:1:1, aware vs agnostic water filling",
		Long: `hierarchical reproduces the paper's multi-level fairness experiment: 3
entities (weights 1, 2, 3, or 1, 1, 1 for comparison), six jobs each (job j
in entity j/6, weight j%2+1), one more job present every 4 timesteps over 72
timesteps, 3 GPUs of each type, allocation only. Each timestep is solved with
hierarchical water filling, heterogeneity-aware and -agnostic.

Each job's effective throughput is normalized by its equal-time reference
rate (its rate with an equal share of its time on each worker type); the
table reports the mean over timesteps of the total normalized throughput.
The paper reports the agnostic version about 17% lower. --csv writes the
per-timestep, per-job values.`,
		Example: `  gavel-plan experiment hierarchical
  gavel-plan experiment hierarchical --csv hierarchical.csv --seed 3 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runHierarchical(cmd.Context(), io, o) },
	}
	o.clusterFlags.register(cmd, "v100=3,p100=3,k80=3", false)
	f := cmd.Flags()
	f.StringVar(&o.csv, "csv", "", "write per-timestep, per-job normalized throughput to this CSV file")
	f.StringVar(&o.aware, "aware", "max_min_fairness_water_filling_perf", "heterogeneity-aware policy")
	f.StringVar(&o.agnostic, "agnostic", "max_min_fairness_water_filling", "heterogeneity-agnostic policy")
	f.Uint64Var(&o.seed, "seed", 0, "seed that picks the job types")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	return cmd
}

type hierarchicalSummary struct {
	Weights  string  `json:"weights"`
	Aware    float64 `json:"aware_mean_total_normalized"`
	Agnostic float64 `json:"agnostic_mean_total_normalized"`
	Drop     float64 `json:"agnostic_drop"` // 1 − agnostic/aware
}

func runHierarchical(ctx context.Context, io *cli.IO, o *hierarchicalOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := cli.CheckOutput("experiment hierarchical", "--csv", o.csv); err != nil {
		return err
	}
	tbl, cluster, _, err := o.clusterFlags.load()
	if err != nil {
		return err
	}
	for _, n := range []string{o.aware, o.agnostic} {
		if _, err := policy.New(n); err != nil {
			return cli.UsageError("%v", err)
		}
		if needsPrices(n) {
			return cli.UsageError("policy %s needs prices, which experiment hierarchical does not take", n)
		}
	}
	var sums []hierarchicalSummary
	var rows [][]string
	for _, weights := range [][]float64{{1, 2, 3}, {1, 1, 1}} {
		label := fmt.Sprintf("%g:%g:%g", weights[0], weights[1], weights[2])
		res, err := rounds.Hierarchical(ctx, rounds.HierarchicalConfig{Table: tbl, Cluster: cluster, EntityWeights: weights,
			Seed: o.seed, AwarePolicy: o.aware, AgnosticPolicy: o.agnostic})
		if err != nil {
			return err
		}
		aw, ag := res.MeanTotal[o.aware], res.MeanTotal[o.agnostic]
		sums = append(sums, hierarchicalSummary{Weights: label, Aware: aw, Agnostic: ag, Drop: 1 - ag/aw})
		for _, r := range res.Rows {
			rows = append(rows, []string{label, strconv.Itoa(r.Timestep), r.Policy, r.Job, r.Entity, r.Model,
				strconv.FormatFloat(r.Effective, 'g', 8, 64), strconv.FormatFloat(r.Normalized, 'g', 8, 64)})
		}
	}
	if o.csv != "" {
		err := cli.WriteFile(ctx, o.csv, func(w goio.Writer) error {
			cw := csv.NewWriter(w)
			cw.Write([]string{"weights", "timestep", "policy", "job", "entity", "model", "effective_steps_per_second", "normalized"})
			cw.WriteAll(rows)
			return cw.Error()
		})
		if err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	if o.json {
		return cli.WriteJSON(io.Out, map[string]any{"cluster": cluster.String(), "aware": o.aware, "agnostic": o.agnostic, "results": sums})
	}
	tw := cli.NewTableWriter(io.Out, "entity weights", "aware", "agnostic", "agnostic vs aware")
	for _, s := range sums {
		if err := tw.Append([]string{s.Weights, fmt.Sprintf("%.3f", s.Aware), fmt.Sprintf("%.3f", s.Agnostic),
			fmt.Sprintf("%+.1f%%", -100*s.Drop)}); err != nil {
			return err
		}
	}
	if err := tw.Render(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(io.Out, "values: mean over timesteps of the total normalized effective throughput")
	return err
}
