package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/estimate"
	"github.com/gavelkit/gavel/internal/cli"
)

// estimatorFlags are the flags estimate and suggest share: the partial table and how to
// estimate it.
type estimatorFlags struct {
	table, workers string
	seed           uint64
	json           bool
}

func (f *estimatorFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.table, "table", "", "partial throughput table (Gavel JSON or CSV, - for stdin); required")
	cmd.Flags().StringVar(&f.workers, "worker-types", "", "comma-separated worker types (default: all)")
	cmd.Flags().Uint64Var(&f.seed, "seed", 0, "random seed of the estimator")
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON object")
}

// options are the estimator's options; a bad --worker-types is a usage error.
func (f estimatorFlags) options(command string) (estimate.Options, error) {
	workers, err := parseWorkerTypes(command, f.workers)
	return estimate.Options{Workers: workers, Seed: f.seed}, err
}

// parseWorkerTypes reads --worker-types: comma-separated names, nil (all) when s is blank. An
// empty element ("v100," or "v100,,k80") is a usage error naming it, rather than dropped.
func parseWorkerTypes(command, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if parts[i] = strings.TrimSpace(p); parts[i] == "" {
			return nil, cli.UsageError("%s: --worker-types %q: element %d of %d is empty (a stray comma?)", command, s, i+1, len(parts))
		}
		if slices.Contains(parts[:i], parts[i]) {
			return nil, cli.UsageError("%s: --worker-types %q: %s given twice", command, s, parts[i])
		}
	}
	return parts, nil
}

// tableError wraps an estimator error with the table's path; a table without reference job
// types or without any job type, or a --worker-types name it does not have, is bad input
// (exit 2), anything else a failure while working.
func (f estimatorFlags) tableError(err error) error {
	if errors.Is(err, estimate.ErrUnknownWorkerType) {
		return cli.UsageError("table %s: --worker-types: %v", cli.TableName(f.table), err)
	}
	if errors.Is(err, estimate.ErrNoReference) || errors.Is(err, estimate.ErrEmptyTable) {
		return cli.UsageError("table %s: %v", cli.TableName(f.table), err)
	}
	return fmt.Errorf("table %s: %w", cli.TableName(f.table), err)
}

type estimateOptions struct {
	estimatorFlags
	out         string
	list        bool
	uncertainty bool
}

func newEstimateCmd(io *cli.IO) *cobra.Command {
	var o estimateOptions
	cmd := &cobra.Command{
		Use:   "estimate",
		Short: "Fill in the co-location pairs a partial table is missing",
		Long: `Estimate every missing co-location pair of a partially profiled throughput table and
write the completed table (pairs that cannot be estimated, such as those of a job with no
isolated rate on a worker type, stay missing and are listed in a note). The table needs
reference job types: jobs measured with
themselves and with each other on the worker types estimated (a worker type without
them is set apart; see below). Other jobs need their isolated rates and, ideally, a few
pairs with references.

The estimator is the pairwise model that 'gavel-profile evaluate' scores best on Gavel's
published table (on your own table, 'evaluate --table' tells whether it is best there): log
normalized rates ≈ per-worker mean + job and partner effects (informed by isolated rates)
+ one embedding per job used both as the job that suffers and as the partner that slows,
with a small deviation per worker type. A job measured with few partners has its
embedding pulled towards those of its nearest reference jobs (by its measured pairs and
the shape of its isolated rates; its deviation on a worker type by its pairs there), and
a pair measured at the isolated rate counts as "no slowdown", not as an exact value.
Where fits from different starting points disagree, the estimate is lowered by their
spread: a planner loses more by packing a pair that is not free than by forgoing one.
Infeasible pairs are a class of their own and are predicted separately, never averaged
in as zero throughput.

Each scale factor is estimated on its own; its worker types (--worker-types restricts
them) are grouped by the job types that have an isolated rate on them, and each group is
estimated on those job types. A pair whose job cannot run alone on the worker type
(isolated rate 0; it stays in the group) is filled as infeasible (a fact, counted apart
from the estimates);
a pair whose job has no isolated rate there cannot be normalized and stays missing, and so
do the pairs of a group without reference job types; notes on stderr name them. A worker
type sharing no reference job type with the others (one with isolated rates only) is a
group of its own, so the others are still estimated; 'gavel-profile suggest' proposes its
reference pairs.

The output counts the estimated entries per worker type; --list prints each one
(--json always includes them).

--uncertainty also gives each entry predicted feasible an interval meant to hold its true
normalized rate (and rate) four times in five, and the probability that its pair's
packing decision is wrong (packed, do the two normalized rates sum to more than 1, when
it gains nothing or cannot share at all; or not packed when it would gain): from
cross-validation on the measured pairs, wider for jobs with few measurements on the
worker type, and bootstrap fits (13 single fits more, three to four times the time; the
estimate itself is unchanged), scaled on hold-outs of Gavel's published table. There
the intervals held 73-83% of the true rates on seeds not used to scale them (P = 0.02
to 0.4). The summary gives their mean width and how many entries' decisions are wrong
with probability 0.3 or more; --list and --json give each.`,
		Example: `  gavel-profile estimate --table partial.json --out full.json
  gavel-profile estimate --table partial.json --out full.json --list
  gavel-profile estimate --table partial.json --out full.json --json
  gavel-profile estimate --table partial.json --out full.json --list --uncertainty`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := interruptible(cmd)
			defer stop()
			return runEstimate(ctx, o, io)
		},
	}
	o.register(cmd)
	cmd.Flags().StringVar(&o.out, "out", "", "where to write the completed table (CSV when it ends in .csv, Gavel JSON otherwise); required")
	cmd.Flags().BoolVar(&o.list, "list", false, "print every estimated entry, not only counts")
	cmd.Flags().BoolVar(&o.uncertainty, "uncertainty", false, "give each estimated entry predicted feasible an 80% interval and its pair's probability of a wrong packing decision")
	return cmd
}

func runEstimate(ctx context.Context, o estimateOptions, io *cli.IO) error {
	if o.table == "" || o.out == "" {
		return cli.UsageError("estimate: --table and --out are required")
	}
	if err := cli.CheckOutput("estimate", "--out", o.out); err != nil {
		return err
	}
	if cli.SameFile(o.table, o.out) {
		// The table does not mark estimates: written over the measurements, they would pass for
		// measured, and run and suggest would never measure those pairs.
		return cli.UsageError("estimate: --out %s is the --table file: estimates written there would pass for measurements; write them to another file", o.out)
	}
	opts, err := o.options("estimate")
	if err != nil {
		return err
	}
	opts.Uncertainty = o.uncertainty
	t, err := cli.LoadTableFrom(io.In, io.Err, o.table)
	if err != nil {
		return err
	}
	full, rep, err := estimate.Table(ctx, t, opts)
	if err != nil {
		return o.tableError(err)
	}
	if err := cli.SaveTable(ctx, full, o.out); err != nil {
		return err
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(io.Err, "note:", n)
	}
	if o.json {
		return writeReportJSON(io.Out, rep)
	}
	if err := printEstimated(io, rep, o.list); err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "%d entries estimated (%d predicted infeasible); wrote %s\n", rep.Estimated, rep.InfeasiblePredicted, o.out)
	if rep.KnownInfeasible > 0 {
		fmt.Fprintf(io.Out, "%d entries filled as infeasible: a job of the pair cannot run alone there\n", rep.KnownInfeasible)
	}
	if rep.LeftMissing > 0 {
		fmt.Fprintf(io.Out, "%d entries still missing (see the notes)\n", rep.LeftMissing)
	}
	return nil
}

// entriesKey is how cli.WriteJSON writes a Report's entries when there are none to stream: a
// top-level key, so at the start of a line indented once.
const entriesKey = "\n  \"entries\": null"

// writeReportJSON writes rep as cli.WriteJSON does, byte for byte, with "entries": [] when there
// are none, but one entry at a time: a table of 1,000 job types on 4 worker types has 4 million
// of them, and encoding the report as one value took 29 s and 4 GB of memory for 860 MB of JSON.
// The rest of the report is encoded as usual, with its entries left out, and the entries written
// where they belong.
func writeReportJSON(w io.Writer, rep *estimate.Report) error {
	head := *rep
	head.Entries = nil
	var buf bytes.Buffer
	if err := cli.WriteJSON(&buf, &head); err != nil {
		return err
	}
	before, after, ok := bytes.Cut(buf.Bytes(), []byte(entriesKey))
	if !ok {
		return fmt.Errorf("estimate report: no %q in its JSON", entriesKey)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.Write(before)
	bw.WriteString(strings.Replace(entriesKey, "null", "[", 1))
	var eb bytes.Buffer
	enc := json.NewEncoder(&eb)
	enc.SetIndent("    ", "  ") // an entry is two levels deep: in the entries array, in the report
	enc.SetEscapeHTML(false)    // as cli.WriteJSON
	for x, e := range rep.Entries {
		if x > 0 {
			bw.WriteByte(',')
		}
		eb.Reset()
		if err := enc.Encode(e); err != nil {
			return err
		}
		bw.WriteString("\n    ")
		bw.Write(bytes.TrimSuffix(eb.Bytes(), []byte("\n")))
	}
	if len(rep.Entries) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteByte(']')
	bw.Write(after)
	return bw.Flush()
}

// listEstimated prints every estimated entry, with its uncertainty when the report has one.
func listEstimated(io *cli.IO, rep *estimate.Report) error {
	head := []string{"worker type", "job", "partner", "sf", "normalized", "rate", "infeasible"}
	withUnc := slices.ContainsFunc(rep.Entries, func(e estimate.Entry) bool { return e.Uncertainty != nil })
	if withUnc {
		head = append(head, "80% interval", "rate interval", "P(packing wrong)")
	}
	tw := cli.NewTableWriter(io.Out, head...)
	for _, e := range rep.Entries {
		row := []string{e.WorkerType, e.Job, e.Partner, fmt.Sprint(e.ScaleFactor),
			fmt.Sprintf("%.3f", e.Normalized), fmt.Sprintf("%.3f", e.Rate), fmt.Sprint(e.Infeasible)}
		if u := e.Uncertainty; u != nil {
			row = append(row, fmt.Sprintf("%.3f-%.3f", u.NormalizedLow, u.NormalizedHigh),
				fmt.Sprintf("%.3f-%.3f", u.RateLow, u.RateHigh), fmt.Sprintf("%.2f", u.PackingWrong))
		} else if withUnc {
			row = append(row, "", "", "")
		}
		_ = tw.Append(row)
	}
	return tw.Render()
}

// printEstimated prints every estimated entry when list is set, otherwise
// their count per worker type (a completed table has hundreds of them), with,
// when the report has uncertainties, the geometric mean width of the intervals
// and how many entries' packing decisions are more likely than 0.3 wrong.
func printEstimated(io *cli.IO, rep *estimate.Report, list bool) error {
	if list {
		return listEstimated(io, rep)
	}
	type count struct {
		estimated, infeasible, uncertain, doubtful int
		logWidth                                   float64
	}
	counts := map[string]*count{}
	var workers []string
	var c *count // of worker type last; a large table has millions of entries, in runs of one worker type
	last := ""
	withUnc := false
	for _, e := range rep.Entries {
		if c == nil || e.WorkerType != last {
			if c = counts[e.WorkerType]; c == nil {
				c = &count{}
				counts[e.WorkerType] = c
				workers = append(workers, e.WorkerType)
			}
			last = e.WorkerType
		}
		c.estimated++
		if e.Infeasible {
			c.infeasible++
		}
		// A measured side of a pair (its other side missing) has the measured value as its
		// interval, which may be 0: no width to average.
		if u := e.Uncertainty; u != nil && u.NormalizedLow > 0 {
			withUnc = true
			c.uncertain++
			c.logWidth += math.Log(u.NormalizedHigh / u.NormalizedLow)
			if u.PackingWrong >= doubtfulPacking {
				c.doubtful++
			}
		}
	}
	if len(workers) == 0 { // nothing estimated: a table of no rows said nothing the next line does not
		return nil
	}
	slices.Sort(workers)
	head := []string{"worker type", "entries estimated", "predicted infeasible"}
	if withUnc {
		head = append(head, "80% interval (high/low, mean)", fmt.Sprintf("P(packing wrong) >= %.1f", doubtfulPacking))
	}
	tw := cli.NewTableWriter(io.Out, head...)
	for _, w := range workers {
		c := counts[w]
		row := []string{w, fmt.Sprint(c.estimated), fmt.Sprint(c.infeasible)}
		if withUnc {
			width := "n/a"
			if c.uncertain > 0 {
				width = fmt.Sprintf("x%.2f", math.Exp(c.logWidth/float64(c.uncertain)))
			}
			row = append(row, width, fmt.Sprintf("%d entries", c.doubtful))
		}
		_ = tw.Append(row)
	}
	return tw.Render()
}

// doubtfulPacking is the probability of a wrong packing decision from which the summary counts
// an entry as doubtful.
const doubtfulPacking = 0.3
