package cli

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/table"
)

// NewTableCmd returns the `table` command group (show, validate, convert)
// that gavel-plan and gavel-profile both offer; bin is the program name
// used in the examples.
func NewTableCmd(streams *IO, bin string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "table",
		Short: "Inspect, validate and convert throughput tables",
		Long: `Throughput tables hold the rate (steps/s) of each job type on each worker
type, alone and sharing a GPU with each other job type, in Gavel's JSON format
or the CSV that 'table convert' writes (told apart by their content). A table
file named "-" is read from standard input. Without --table (or, for convert,
without FILE), commands use the embedded Gavel simulation table.`,
		Example: fmt.Sprintf(`  %[1]s table show
  %[1]s table validate examples/partial.json`, bin),
		// Runnable, so that an unknown subcommand is an error (exit 2)
		// rather than cobra's help for a command group (exit 0).
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newTableShowCmd(streams, bin), newTableValidateCmd(streams, bin), newTableConvertCmd(streams, bin))
	return cmd
}

// TableShowOptions are the inputs of `table show`.
type TableShowOptions struct {
	Table       string
	WorkerTypes []string
	Pairs       string // job type (model name or key) whose co-location row is shown
	ScaleFactor int
	JSON        bool
}

func newTableShowCmd(streams *IO, bin string) *cobra.Command {
	var o TableShowOptions
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print isolated rates, or one job type's co-location row",
		Long: `Print the isolated rate (steps/s) of every job type on every worker type.
With --pairs JOB, print that job type's co-location row instead: for each
partner and worker type, the two jobs' rates normalized by their isolated
rates, and their sum (above 1 means sharing the GPU beats taking turns). A
measured pair whose isolated rate is missing or 0 is shown as measured, without
normalized rates.`,
		Example: fmt.Sprintf(`  %[1]s table show
  %[1]s table show --table examples/partial.json --worker-type v100
  %[1]s table show --pairs "ResNet-50 (batch size 64)"
  %[1]s table show --scale-factor 2 --json
  cat gavel.csv | %[1]s table show --table -`, bin),
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return TableShow(streams, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Table, "table", "", "throughput table (Gavel JSON or CSV, - for stdin); default: the embedded Gavel table")
	f.StringSliceVar(&o.WorkerTypes, "worker-type", nil, "worker types to show (repeatable); default: all")
	f.StringVar(&o.Pairs, "pairs", "", "show the co-location row of this job type (model name, or key with scale factor)")
	f.IntVar(&o.ScaleFactor, "scale-factor", 1, "scale factor of the job types shown (0: all)")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object")
	return cmd
}

// TableShow runs `table show`.
func TableShow(streams *IO, o TableShowOptions) error {
	t, err := LoadTableFrom(streams.In, streams.Err, o.Table)
	if err != nil {
		return err
	}
	workers := t.WorkerTypes()
	if len(o.WorkerTypes) > 0 {
		for _, w := range o.WorkerTypes {
			if !contains(workers, w) {
				return UsageError("worker type %q is not in the table (it has %s)", w, Listed(workers))
			}
		}
		workers = nil
		for _, w := range o.WorkerTypes {
			if !contains(workers, w) { // --worker-type l4 --worker-type l4: one column
				workers = append(workers, w)
			}
		}
	}
	if o.ScaleFactor < 0 {
		return UsageError("--scale-factor %d: want 0 (all) or a scale factor of the table (%s)", o.ScaleFactor, scaleFactors(t))
	}
	if o.Pairs != "" {
		j, err := findJobType(t, o.Pairs, o.ScaleFactor)
		if err != nil {
			return err
		}
		return showPairs(streams, t, j, workers, o.JSON)
	}
	if o.ScaleFactor > 0 && len(t.JobTypesWithScaleFactor(o.ScaleFactor)) == 0 {
		// An empty table would read as "nothing measured".
		return UsageError("--scale-factor %d: no job type of the table has it (it has %s; 0 shows all)", o.ScaleFactor, scaleFactors(t))
	}
	return showIsolated(streams, t, workers, o.ScaleFactor, o.JSON)
}

// scaleFactors lists the scale factors of t's job types, ascending.
func scaleFactors(t *table.Table) string {
	var sfs []int
	for _, j := range t.JobTypes() {
		if !slices.Contains(sfs, j.ScaleFactor) {
			sfs = append(sfs, j.ScaleFactor)
		}
	}
	if len(sfs) == 0 {
		return "none" // an empty table ("it has ; 0 shows all")
	}
	slices.Sort(sfs)
	s := make([]string, len(sfs))
	for i, sf := range sfs {
		s[i] = strconv.Itoa(sf)
	}
	return strings.Join(s, ", ")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// findJobType accepts a key ("('LM (batch size 20)', 2)") or a model name
// with the scale factor sf, or (sf 0, "all") the model's only one.
func findJobType(t *table.Table, name string, sf int) (table.JobType, error) {
	if j, err := table.ParseJobType(name); err == nil {
		if !t.HasJobType(j) {
			return j, UsageError("job type %s is not in the table", j)
		}
		return j, nil
	}
	var found []table.JobType
	for _, j := range t.JobTypes() {
		if j.Model == name && (sf == 0 || j.ScaleFactor == sf) {
			found = append(found, j)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		sfs := make([]string, len(found))
		for i, j := range found {
			sfs[i] = strconv.Itoa(j.ScaleFactor)
		}
		return found[0], UsageError("model %q has scale factors %s: give --scale-factor", name, strings.Join(sfs, ", "))
	case sf > 0:
		return table.JobType{}, UsageError("job type %s is not in the table", table.JobType{Model: name, ScaleFactor: sf})
	}
	return table.JobType{}, UsageError("model %q is not in the table", name)
}

type isolatedRow struct {
	Model       string             `json:"model"`
	ScaleFactor int                `json:"scale_factor"`
	Rates       map[string]float64 `json:"rates"` // worker type → steps/s; absent when missing
}

func showIsolated(streams *IO, t *table.Table, workers []string, sf int, asJSON bool) error {
	jobs := t.JobTypes()
	if sf > 0 {
		jobs = t.JobTypesWithScaleFactor(sf)
	}
	rows := make([]isolatedRow, 0, len(jobs))
	for _, j := range jobs {
		r := isolatedRow{Model: j.Model, ScaleFactor: j.ScaleFactor, Rates: map[string]float64{}}
		for _, w := range workers {
			if v, ok := t.Isolated(w, j); ok {
				r.Rates[w] = v
			}
		}
		rows = append(rows, r)
	}
	if asJSON {
		return WriteJSON(streams.Out, map[string]any{"worker_types": workers, "job_types": rows})
	}
	tw := NewTableWriter(streams.Out, append([]string{"job type", "sf"}, workers...)...)
	for _, r := range rows {
		cells := []string{r.Model, fmt.Sprint(r.ScaleFactor)}
		for _, w := range workers {
			cells = append(cells, formatRate(r.Rates[w], hasKey(r.Rates, w)))
		}
		tw.Append(cells)
	}
	return tw.Render()
}

func hasKey(m map[string]float64, k string) bool { _, ok := m[k]; return ok }

// formatRate prints an isolated rate with three decimals, "-" when it is missing, and a rate
// too small for three decimals with three significant digits: printed as 0.000 it read as 0,
// a job that cannot run there.
func formatRate(v float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case v != 0 && math.Abs(v) < 0.0005:
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// pairCell is one pair on one worker type. The normalized rates are there whenever the pair
// is measured (0 included: a job its partner starves), but for one whose isolated rate is so
// small that it overflows (JSON has no infinity), and for one whose isolated rate (either job's)
// is missing or 0: its state is still measured.
type pairCell struct {
	State      string   `json:"state"`
	Normalized *float64 `json:"normalized,omitempty"`
	Partner    *float64 `json:"partner_normalized,omitempty"`
}

// finite returns &v, or nil when v is NaN or infinite.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func showPairs(streams *IO, t *table.Table, j table.JobType, workers []string, asJSON bool) error {
	partners := t.JobTypesWithScaleFactor(j.ScaleFactor)
	rows := map[string]map[string]pairCell{}
	for _, k := range partners {
		rows[k.Model] = map[string]pairCell{}
		for _, w := range workers {
			_, _, s := t.Pair(w, j, k)
			c := pairCell{State: s.String()}
			// A measured pair without an isolated rate (missing or 0) is still measured; it
			// has no normalized rates.
			if na, nb, ns := t.Normalized(w, j, k); ns == table.Measured {
				c.Normalized, c.Partner = finite(na), finite(nb)
			}
			rows[k.Model][w] = c
		}
	}
	if asJSON {
		return WriteJSON(streams.Out, map[string]any{"job": j.Model, "scale_factor": j.ScaleFactor, "worker_types": workers, "partners": rows})
	}
	fmt.Fprintf(streams.Out, "%s sharing a GPU: fraction of isolated speed kept (job + partner = sum)\n", j)
	tw := NewTableWriter(streams.Out, append([]string{"partner"}, workers...)...)
	for _, k := range partners {
		cells := []string{k.Model}
		for _, w := range workers {
			c := rows[k.Model][w]
			na, nb, ns := t.Normalized(w, j, k)
			switch {
			case ns == table.Measured:
				cells = append(cells, fmt.Sprintf("%.2f + %.2f = %.2f", na, nb, na+nb))
			case c.State == table.Measured.String():
				cells = append(cells, "measured, isolated rate missing or 0")
			default:
				cells = append(cells, c.State)
			}
		}
		tw.Append(cells)
	}
	return tw.Render()
}

func newTableValidateCmd(streams *IO, bin string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Report every problem in a throughput table",
		Long: `Check a throughput table (Gavel JSON, or the CSV of 'table convert'; "-"
reads standard input) and print every problem found, each naming the file,
the line of the entry (and, in JSON, the column of its key), worker type, job
type, partner and reason: malformed JSON or CSV, bad keys, negative or non-finite rates, pairs present on one side
only or with values that disagree between the sides, partners that are no job
type of the worker type (no entry of their own there), and partners with a
different scale factor. A pair rate above the isolated rate, and a self-pair
(two copies of one job type) holding two different rates, are warnings.
Exits 2 when there is any error, 0 when there are only warnings or none.`,
		Example: fmt.Sprintf(`  %[1]s table validate examples/partial.json
  %[1]s table validate examples/partial.json --json
  cat gavel.csv | %[1]s table validate -`, bin),
		// cobra's "accepts 1 arg(s), received 0" did not say what the argument is.
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return UsageError("table validate: give one table FILE to check (- for stdin), not %d arguments", len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if args[0] == "" {
				return UsageError("table validate: FILE is empty; give a file name, or - for stdin")
			}
			return TableValidate(streams, args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

type problemJSON struct {
	Worker  string `json:"worker_type,omitempty"`
	Job     string `json:"job,omitempty"`
	Partner string `json:"partner,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Warning bool   `json:"warning"`
	Message string `json:"message"`
}

// TableValidate runs `table validate`.
func TableValidate(streams *IO, path string, asJSON bool) error {
	_, ps, err := CheckTable(streams.In, path)
	if err != nil {
		return err
	}
	if path == "-" {
		path = StdinName
	}
	if asJSON {
		out := make([]problemJSON, len(ps))
		for i, p := range ps {
			out[i] = problemJSON{p.Worker, p.Job, p.Partner, p.Line, p.Column, p.Warning, p.Error()}
		}
		if err := WriteJSON(streams.Out, map[string]any{"file": path, "errors": len(ps.Errors()), "warnings": len(ps.Warnings()), "problems": out}); err != nil {
			return err
		}
	} else {
		for _, p := range ps {
			fmt.Fprintln(streams.Out, p.Error())
		}
		fmt.Fprintf(streams.Out, "%s: %s, %s\n", path, Count(len(ps.Errors()), "error"), Count(len(ps.Warnings()), "warning"))
	}
	if n := len(ps.Errors()); n > 0 {
		return UsageError("%s: %s", path, Count(n, "error"))
	}
	return nil
}

// Count is n followed by noun, plural unless n is 1: "1 error", "0 errors".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func newTableConvertCmd(streams *IO, bin string) *cobra.Command {
	var to, out string
	cmd := &cobra.Command{
		Use:   "convert [FILE] --to csv|json",
		Short: "Convert a table between Gavel JSON and CSV",
		Long: `Convert a throughput table between Gavel's JSON format and CSV (one row per
worker type x job type x partner, isolated rates as rows without a partner,
with normalized rates). The input format is taken from the file's content:
CSV when its first line holds a comma and does not open a JSON object, JSON
otherwise. Use "-" as FILE to read standard input; without FILE the embedded
default table is converted. Output goes to stdout, or atomically to --out.`,
		Example: fmt.Sprintf(`  %[1]s table convert --to csv > gavel.csv
  %[1]s table convert gavel.csv --to json --out gavel.json
  cat examples/partial.json | %[1]s table convert - --to csv`, bin),
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := ""
			if len(args) == 1 {
				path = args[0]
				if path == "" {
					return UsageError("table convert: FILE is empty; omit it for the embedded table, or give - for stdin")
				}
			}
			return TableConvert(cmd.Context(), streams, path, to, out)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "output format: csv or json (required)")
	cmd.Flags().StringVar(&out, "out", "", "write to this file (atomically) instead of stdout")
	return cmd
}

// TableConvert runs `table convert`.
func TableConvert(ctx context.Context, streams *IO, path, to, out string) error {
	if to != "csv" && to != "json" {
		return UsageError("--to must be csv or json, not %q", to)
	}
	if err := CheckOutput("table convert", "--out", out); err != nil {
		return err
	}
	t, err := LoadTableFrom(streams.In, streams.Err, path)
	if err != nil {
		return err
	}
	write := t.Write
	if to == "csv" {
		write = t.WriteCSV
	}
	if out != "" {
		return WriteFile(ctx, out, write)
	}
	return write(streams.Out)
}
