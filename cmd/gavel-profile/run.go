package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/profile"
	"github.com/gavelkit/gavel/table"
)

type runOptions struct {
	name        string
	scaleFactor int
	gpu         string
	cpu         bool
	cpuSlots    int
	workerTypes string
	references  string
	fraction    float64
	// fractionSet, pairsSet and pairsFromSet say the flag was given, so that --fraction 0 and
	// an empty --pairs are not mistaken for an absent flag.
	fractionSet, pairsSet, pairsFromSet bool
	seed                                uint64
	pairs                               []string
	pairsFrom                           string
	noPairs                             bool
	referenceBlock                      bool
	tablePath                           string
	sharing                             string
	forceSharing                        bool
	progress                            string
	env                                 []string
	shell                               bool
	json                                bool
	settings                            profile.Settings
	refresh                             time.Duration
	mpsControl                          string
	command                             []string
	open                                func() (profile.Devices, error) // profile.OpenNVML; tests use fakes
}

func newRunCmd(io *cli.IO) *cobra.Command {
	opts := runOptions{open: profile.OpenNVML}
	def := profile.DefaultSettings()
	cmd := &cobra.Command{
		Use:   "run --name MODEL --table OUT.json [flags] -- CMD [ARGS...]",
		Short: "Measure a training command alone and co-located with reference jobs",
		Long: `Run a training command, measure its rate (steps/s) alone on every selected GPU
type, then sharing a GPU with each reference job (and with a copy of itself),
and merge the results into a Gavel-format throughput table. Every GPU of the
node is used at once. With --reference-block instead of --name and a command,
measure the references of --references alone and every pair of them (each with
itself too), with their own commands: the block 'estimate' builds on. A rerun
after adding a reference measures only its pairs.

Progress protocol: the command prints lines "GAVEL_STEPS <cumulative steps>" on
stdout or stderr. With --progress-regex, a regular expression with one capture
group reads the cumulative count from matching lines; one with no group counts
each matching line as one step.

Each measurement warms up until the rate settles (at most --max-warmup), then
measures over --window batches until the 95% confidence half-width is within
--precision of the rate (at most --max-window). Pairs start both commands on one
GPU together; they are normalized by isolated rates re-measured close in time
(--refresh-isolated). A job that crashes, hangs, never reports progress or prints
malformed progress is recorded failed with the reason; out of memory, or isolated
peak memories that do not fit the GPU together, make a pair infeasible.

The table is written atomically after every measurement, with a sidecar
OUT.measurements.json holding what the Gavel format cannot (sharing mode, CI,
samples, seconds, peak memory, failures). A rerun skips what the table holds.
Commands are executed directly (no shell unless --shell) with an explicit
environment: PATH, HOME, USER, LOGNAME, LANG, LC_ALL, TZ, TMPDIR and
LD_LIBRARY_PATH, the per-GPU CUDA_VISIBLE_DEVICES, GAVEL_DEVICE and
GAVEL_WORKER_TYPE, plus --env and the references' env.

References file (--references):
  {"references": [{"name": "ResNet-18 (batch size 64)", "scale_factor": 1,
                   "command": ["python3", "resnet.py"], "env": {"K": "V"},
                   "dir": "", "progress_regex": ""}]}

Exit status: 0 when every measurement is ok or infeasible, 1 when one failed or
the run was interrupted (SIGINT, SIGTERM or SIGHUP: the jobs are stopped, what
finished is kept), 2 for bad usage or input.`,
		Example: `  # Once: the references alone and with each other:
  gavel-profile run --reference-block --references refs.json --table out.json

  # Isolated on every GPU, then paired with each reference job:
  gavel-profile run --name "MyNet (batch size 32)" --references refs.json \
      --table out.json -- python3 train.py --batch-size 32

  # Pairs suggested by the estimator, under MPS, on GPUs 0 and 1:
  gavel-profile suggest --table out.json --budget 5 --json |
    gavel-profile run --name my-model --gpu 0,1 --sharing mps \
      --references refs.json --pairs-from - --table out.json -- ./train.sh

  # No GPU: profile on the CPU, reading progress from "iter 120/5000" lines:
  gavel-profile run --cpu --name tiny --table cpu.json \
      --progress-regex 'iter (\d+)/' -- python3 tiny.py`,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.referenceBlock {
				if len(args) > 0 {
					return cli.UsageError("run: --reference-block runs the references' own commands; give no command (found %q)", args)
				}
				return nil
			}
			if cmd.ArgsLenAtDash() < 0 || len(args) == 0 {
				return cli.UsageError("run: give the training command after --, e.g. gavel-profile run --name M --table out.json -- python3 train.py")
			}
			if cmd.ArgsLenAtDash() > 0 {
				return cli.UsageError("run: unexpected arguments before --: %q", args[:cmd.ArgsLenAtDash()])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.command = args
			fl := cmd.Flags()
			opts.fractionSet, opts.pairsSet, opts.pairsFromSet = fl.Changed("fraction"), fl.Changed("pairs"), fl.Changed("pairs-from")
			return runRun(cmd, opts, io)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.name, "name", "", "model name of the job in the table (required, but for --reference-block)")
	f.IntVar(&opts.scaleFactor, "scale-factor", 1, "GPUs per job (a job with scale factor n gets n GPUs of one type)")
	f.StringVar(&opts.gpu, "gpu", "all", "GPUs to use: all, or indices IDX,... (with --cpu: CPU slots, indices below --cpu-slots)")
	f.BoolVar(&opts.cpu, "cpu", false, "profile on the CPU (worker type cpu), without NVML")
	f.IntVar(&opts.cpuSlots, "cpu-slots", 1, "with --cpu: measurements run at the same time (1 or more)")
	f.StringVar(&opts.workerTypes, "worker-type", "", "override worker types: NAME for every GPU, or IDX=NAME,...")
	f.StringVar(&opts.references, "references", "", "reference jobs file (JSON, see above)")
	f.Float64Var(&opts.fraction, "fraction", 0, "measure each reference pair with probability P in [0, 1] (seeded by --seed; 0: no pairs)")
	f.Uint64Var(&opts.seed, "seed", 0, "seed for --fraction")
	// Not a StringSlice: that splits at every comma, and a reference name may hold one.
	f.StringArrayVar(&opts.pairs, "pairs", nil, "partners to pair with the job (reference names, the job's own name, or A+B), comma-separated or repeated; a value that names a job whole is that job")
	f.StringVar(&opts.pairsFrom, "pairs-from", "", "measure the pairs listed by 'gavel-profile suggest --json' in this file (- for stdin)")
	f.BoolVar(&opts.noPairs, "no-pairs", false, "measure isolated rates only")
	f.BoolVar(&opts.referenceBlock, "reference-block", false, "measure the references alone and every pair of them, each with itself too (what estimate builds on); no --name, no command")
	f.StringVar(&opts.tablePath, "table", "", "throughput table to merge into, created if missing (required)")
	f.StringVar(&opts.sharing, "sharing", "time-slicing", "how pairs share a GPU: time-slicing or mps")
	f.BoolVar(&opts.forceSharing, "force-sharing", false, "allow pairs of another sharing mode in the same table")
	f.StringVar(&opts.progress, "progress-regex", "", "progress lines of the job: one capture group = cumulative steps, none = one step per line")
	f.StringArrayVar(&opts.env, "env", nil, "environment variable for the jobs, K=V or K (copied from here); repeatable")
	f.BoolVar(&opts.shell, "shell", false, "run the command through /bin/sh -c (joined by spaces)")
	f.BoolVar(&opts.json, "json", false, "print one JSON object")
	f.DurationVar(&opts.settings.Window, "window", def.Window, "batch length of the rate estimator")
	f.Float64Var(&opts.settings.Precision, "precision", def.Precision, "target relative 95% confidence half-width, in (0, 1)")
	f.IntVar(&opts.settings.MinBatches, "min-batches", def.MinBatches, "least number of batches measured")
	f.DurationVar(&opts.settings.MaxWindow, "max-window", def.MaxWindow, "longest measurement (after warm-up)")
	f.DurationVar(&opts.settings.MaxWarmup, "max-warmup", def.MaxWarmup, "longest warm-up")
	f.Float64Var(&opts.settings.Settle, "settle", def.Settle, "warm-up ends when the rate moves less than this, relative")
	f.DurationVar(&opts.settings.StartupTimeout, "startup-timeout", def.StartupTimeout, "longest wait for the first progress report")
	f.DurationVar(&opts.settings.StallTimeout, "stall-timeout", def.StallTimeout, "a job silent for this long is killed as hung")
	f.DurationVar(&opts.settings.KillGrace, "kill-grace", def.KillGrace, "time between SIGTERM and SIGKILL")
	f.DurationVar(&opts.refresh, "refresh-isolated", 30*time.Minute, "re-measure isolated rates older than this before a pair (0: always; negative: never)")
	f.StringVar(&opts.mpsControl, "mps-control", profile.DefaultMPSControl, "MPS control program")
	return cmd
}

// runSetup is what runRun builds from the flags before measuring.
type runSetup struct {
	runner *profile.Runner
	tasks  []profile.Task
	notes  []string
}

func setupRun(ctx context.Context, opts runOptions, io *cli.IO) (*runSetup, func(), error) {
	noop := func() {}
	if err := checkRunFlags(opts); err != nil {
		return nil, noop, err
	}
	sharing, err := profile.ParseSharing(opts.sharing)
	if err != nil {
		return nil, noop, cli.UsageError("run: --sharing: %v", err)
	}
	env, err := profile.BaseEnv(os.Environ(), opts.env)
	if err != nil {
		return nil, noop, cli.UsageError("run: %v", err)
	}
	var model table.JobType // none for the reference block
	if !opts.referenceBlock {
		model = table.JobType{Model: opts.name, ScaleFactor: opts.scaleFactor}
	}
	commands, refs, err := loadCommands(opts, model)
	if err != nil {
		return nil, noop, err
	}
	suggestions, err := loadSuggestions(ctx, opts.pairsFrom, io)
	if err != nil {
		return nil, noop, err
	}
	devs, all, usable, err := openDevices(ctx, opts, io)
	if err != nil {
		return nil, noop, err
	}
	closeDevs := func() { devs.Close() }
	if sharing == profile.MPS && usable[0].CPU {
		closeDevs()
		return nil, noop, cli.UsageError("run: --sharing mps needs GPUs")
	}
	tasks, notes, err := profile.Plan(profile.PlanSpec{Model: model, References: refs, WorkerTypes: workerTypes(usable),
		Fraction: opts.fraction, UseFraction: opts.fractionSet, Seed: opts.seed, Partners: opts.pairs, Suggestions: suggestions, NoPairs: opts.noPairs,
		ReferenceBlock: opts.referenceBlock})
	if err != nil {
		closeDevs()
		return nil, noop, cli.UsageError("run: %v", err)
	}
	if len(suggestions) > 0 && !slices.ContainsFunc(tasks, profile.Task.IsPair) {
		// Measuring the job alone instead would look like success.
		closeDevs()
		from := opts.pairsFrom
		if from == "-" {
			from = cli.StdinName
		}
		return nil, noop, cli.UsageError("run: --pairs-from %s: none of its %d measurements can be made here: %s",
			from, len(suggestions), strings.Join(notes, "; "))
	}
	if err := checkScaleFactors(opts, tasks, all, usable); err != nil {
		closeDevs()
		return nil, noop, err
	}
	r := &profile.Runner{
		TablePath: opts.tablePath, Commands: commands, GPUs: usable, Devices: devs,
		Settings: opts.settings, Sharing: sharing, ForceSharing: opts.forceSharing,
		MPSControl: opts.mpsControl, Env: env, Refresh: opts.refresh,
	}
	if opts.refresh == 0 {
		r.Refresh = profile.RefreshAlways // 0s: every isolated rate is too old
	}
	return &runSetup{runner: r, tasks: tasks, notes: notes}, closeDevs, nil
}

// checkRunFlags rejects flag values that are wrong on their own or together.
func checkRunFlags(opts runOptions) error {
	if err := checkJobFlags(opts); err != nil {
		return err
	}
	if opts.tablePath == "" {
		return cli.UsageError("run: --table is required")
	}
	if strings.EqualFold(filepath.Ext(opts.tablePath), ".csv") {
		return cli.UsageError("run: --table %s: measurements are merged into Gavel's JSON format; name the table .json (gavel-plan table convert turns a CSV table into one)", opts.tablePath)
	}
	if cli.IsDevNull(opts.tablePath) {
		return cli.UsageError("run: --table %s is the null device; the table is read back to resume a run", opts.tablePath)
	}
	if err := profile.CheckTableName(opts.tablePath); err != nil {
		return cli.UsageError("run: --table: %v", err)
	}
	if err := cli.CheckOutput("run", "--table", opts.tablePath); err != nil {
		return err
	}
	// The sidecar is written beside the table, atomically: a read-only one would be replaced.
	if err := cli.CheckOutput("run", "--table's sidecar", profile.SidecarPath(opts.tablePath)); err != nil {
		return err
	}
	chosen := 0
	for _, set := range []bool{opts.fractionSet || opts.fraction != 0, opts.pairsSet || len(opts.pairs) > 0,
		opts.pairsFromSet || opts.pairsFrom != "", opts.noPairs} {
		if set {
			chosen++
		}
	}
	if chosen > 1 {
		return cli.UsageError("run: give at most one of --fraction, --pairs, --pairs-from and --no-pairs")
	}
	if opts.pairsSet && strings.TrimSpace(strings.Join(opts.pairs, "")) == "" {
		return cli.UsageError("run: --pairs is empty; name the partners, or give --no-pairs for isolated rates only")
	}
	if opts.pairsFromSet && opts.pairsFrom == "" {
		return cli.UsageError("run: --pairs-from is empty; give a file, or - for stdin")
	}
	if opts.fraction < 0 || opts.fraction > 1 {
		return cli.UsageError("run: --fraction %g, want a probability in [0, 1]", opts.fraction)
	}
	if opts.cpuSlots < 1 {
		return cli.UsageError("run: --cpu-slots %d: want 1 or more", opts.cpuSlots)
	}
	// Flags give every setting, so a 0 is a value (rejected), not "the default".
	if err := opts.settings.ValidateGiven(); err != nil {
		return cli.UsageError("run: --%v", err)
	}
	return nil
}

// checkJobFlags checks what names the job measured: --name and --scale-factor, or
// --reference-block, which measures the references and takes no job or pair selection.
func checkJobFlags(opts runOptions) error {
	if opts.referenceBlock {
		switch {
		case opts.references == "":
			return cli.UsageError("run: --reference-block measures the jobs of --references; give it")
		case opts.name != "":
			return cli.UsageError("run: --reference-block measures the references only; leave out --name (profile a new job in a run of its own)")
		case opts.fractionSet || opts.pairsSet || opts.pairsFromSet || opts.noPairs:
			return cli.UsageError("run: --reference-block measures every pair of references; leave out --fraction, --pairs, --pairs-from and --no-pairs")
		case opts.shell || opts.progress != "":
			return cli.UsageError("run: --reference-block runs the references' own commands; --shell and --progress-regex belong to a command given after -- (a reference sets progress_regex in --references)")
		case opts.scaleFactor != 1 || opts.seed != 0:
			return cli.UsageError("run: --reference-block takes each reference's scale_factor from --references and draws no pairs; leave out --scale-factor and --seed")
		}
		return nil
	}
	if strings.TrimSpace(opts.name) == "" {
		return cli.UsageError("run: --name is required (or --reference-block, to measure the references)")
	}
	if opts.scaleFactor < 1 {
		return cli.UsageError("run: --scale-factor %d, want >= 1", opts.scaleFactor)
	}
	if err := (table.JobType{Model: opts.name, ScaleFactor: opts.scaleFactor}).Check(); err != nil {
		return cli.UsageError("run: --name: %v", err)
	}
	return nil
}

// loadCommands returns the command of the job being profiled and of every reference job.
func loadCommands(opts runOptions, model table.JobType) (map[table.JobType]profile.Command, []table.JobType, error) {
	progress, err := profile.ParseProgressFormat(opts.progress)
	if err != nil {
		return nil, nil, cli.UsageError("run: --progress-regex: %v", err)
	}
	commands := map[table.JobType]profile.Command{}
	if model.Model != "" {
		commands[model] = profile.Command{Argv: opts.command, Shell: opts.shell, Progress: progress}
	}
	if opts.references == "" {
		return commands, nil, nil
	}
	rf, err := profile.LoadReferences(opts.references)
	if err != nil {
		return nil, nil, cli.UsageError("%v", err)
	}
	var refs []table.JobType
	for _, r := range rf.References {
		j := table.JobType{Model: r.Name, ScaleFactor: r.ScaleFactor}
		refs = append(refs, j)
		commands[j] = r.ProfileCommand()
	}
	return commands, refs, nil
}

// loadSuggestions reads the pairs of `gavel-profile suggest --json` from path, or from stdin
// for "-" (so that suggest can be piped into run); none for "". Reading stdin stops when ctx
// is canceled: the run catches SIGINT, SIGTERM and SIGHUP, so a read blocked on a terminal or
// a pipe nobody writes would otherwise ignore them.
func loadSuggestions(ctx context.Context, path string, io *cli.IO) ([]profile.Suggestion, error) {
	var s []profile.Suggestion
	var err error
	switch path {
	case "":
		return nil, nil
	case "-":
		path = "stdin"
		type read struct {
			s   []profile.Suggestion
			err error
		}
		done := make(chan read, 1)
		go func() {
			s, err := profile.ReadSuggestions(io.In, path)
			done <- read{s, err}
		}()
		select {
		case r := <-done:
			s, err = r.s, r.err
		case <-ctx.Done():
			return nil, fmt.Errorf("interrupted while reading --pairs-from - (stdin); nothing was measured: %w", context.Cause(ctx))
		}
	default:
		s, err = profile.LoadSuggestions(path)
	}
	if err != nil {
		return nil, cli.UsageError("%v", err)
	}
	if len(s) == 0 {
		return nil, cli.UsageError("run: %s lists no measurements", path)
	}
	return s, nil
}

// openDevices opens NVML (or the CPU pseudo devices) and returns all its devices and the
// selected ones that can be profiled; the caller closes devs.
func openDevices(ctx context.Context, opts runOptions, io *cli.IO) (devs profile.Devices, all, usable []profile.GPU, err error) {
	overrides, err := profile.ParseWorkerTypeOverrides(opts.workerTypes)
	if err != nil {
		return nil, nil, nil, cli.UsageError("run: --worker-type: %v", err)
	}
	if opts.cpu {
		devs = profile.CPUDevices(opts.cpuSlots)
	} else if devs, err = opts.open(); err != nil {
		if errors.Is(err, profile.ErrNoDriver) {
			// Asking for GPUs on a machine without any is a usage problem, not a failed run.
			why := strings.TrimPrefix(err.Error(), profile.ErrNoDriver.Error()+": ")
			return nil, nil, nil, cli.UsageError("run: no NVIDIA GPU driver found (%s); add --cpu to profile on the CPU (worker type %s)", why, profile.CPUWorkerType)
		}
		return nil, nil, nil, fmt.Errorf("run: %w; GPU profiling is not available here: add --cpu to profile on the CPU (worker type %s)", err, profile.CPUWorkerType)
	}
	all, err = devs.List(ctx)
	if err != nil {
		devs.Close()
		return nil, nil, nil, err
	}
	if len(all) == 0 {
		devs.Close()
		return nil, nil, nil, cli.UsageError("run: the NVIDIA driver found no GPUs; add --cpu to profile on the CPU (worker type %s)", profile.CPUWorkerType)
	}
	if err := overrides.Apply(all); err != nil {
		devs.Close()
		return nil, nil, nil, cli.UsageError("run: --worker-type: %v", err)
	}
	gpus, err := profile.SelectGPUs(all, opts.gpu)
	if err != nil {
		devs.Close()
		return nil, nil, nil, cli.UsageError("run: %v", err)
	}
	for _, g := range gpus {
		if g.MIG == "enabled" {
			fmt.Fprintf(io.Err, "note: skipping GPU %d: MIG is enabled (profiling MIG instances is not supported)\n", g.Index)
			continue
		}
		usable = append(usable, g)
	}
	if len(usable) == 0 {
		devs.Close()
		return nil, nil, nil, fmt.Errorf("run: no usable device (selected %q); use --cpu to profile on the CPU", opts.gpu)
	}
	return devs, all, usable, nil
}

// checkScaleFactors rejects, before anything is measured, jobs that need more devices of a
// worker type than are selected: each would only be recorded failed. The error says how to
// get enough devices: --cpu-slots on the CPU, or the node's devices per worker type.
func checkScaleFactors(opts runOptions, tasks []profile.Task, all, usable []profile.GPU) error {
	count := map[string]int{}
	for _, g := range usable {
		count[g.WorkerType]++
	}
	var short []string
	seen := map[string]bool{}
	for _, t := range tasks {
		n := count[t.WorkerType]
		key := fmt.Sprintf("%s/%d", t.WorkerType, t.Job.ScaleFactor)
		if n >= t.Job.ScaleFactor || seen[key] {
			continue
		}
		seen[key] = true
		who := "--scale-factor"
		if t.Job.Model != opts.name {
			who = fmt.Sprintf("reference %q: scale_factor", t.Job.Model)
		}
		short = append(short, fmt.Sprintf("%s %d needs %d devices of worker type %s, %d selected",
			who, t.Job.ScaleFactor, t.Job.ScaleFactor, t.WorkerType, n))
	}
	if len(short) == 0 {
		return nil
	}
	msg := "run: " + strings.Join(short, "; ")
	most := 0
	for _, t := range tasks {
		most = max(most, t.Job.ScaleFactor)
	}
	if opts.cpu && opts.cpuSlots < most {
		return cli.UsageError("%s; give --cpu-slots %d (or more) for %d CPU devices", msg, most, most)
	}
	// Only devices a selection could use: MIG-enabled GPUs are skipped whatever --gpu says.
	var selectable []profile.GPU
	for _, g := range all {
		if g.MIG != "enabled" {
			selectable = append(selectable, g)
		}
	}
	return cli.UsageError("%s; the devices this run could use are %s: select enough of one worker type with --gpu (or merge types with --worker-type)",
		msg, describeDevices(selectable))
}

// describeDevices lists devices per worker type, in device order: "h200: GPUs 0,1; a100: GPU 2".
func describeDevices(gpus []profile.GPU) string {
	if len(gpus) == 0 {
		return "no devices"
	}
	idx := map[string][]string{}
	for _, g := range gpus {
		idx[g.WorkerType] = append(idx[g.WorkerType], strconv.Itoa(g.Index))
	}
	var parts []string
	for _, w := range workerTypes(gpus) {
		noun := "GPU"
		if len(idx[w]) > 1 {
			noun = "GPUs"
		}
		parts = append(parts, fmt.Sprintf("%s: %s %s", w, noun, strings.Join(idx[w], ",")))
	}
	return strings.Join(parts, "; ")
}

// workerTypes lists the worker types of gpus once each, in device order.
func workerTypes(gpus []profile.GPU) []string {
	var ws []string
	for _, g := range gpus {
		if !slices.Contains(ws, g.WorkerType) {
			ws = append(ws, g.WorkerType)
		}
	}
	return ws
}

func runRun(cmd *cobra.Command, opts runOptions, io *cli.IO) error {
	ctx, stop := interruptible(cmd)
	defer stop()
	setup, closeDevs, err := setupRun(ctx, opts, io)
	if err != nil {
		return err
	}
	defer closeDevs()
	for _, n := range setup.notes {
		fmt.Fprintln(io.Err, "note:", n)
	}
	r := setup.runner
	rep := &reporter{io: io, table: opts.tablePath}
	r.Logf, r.OnPlanned, r.OnRecord = rep.logf, rep.planned, rep.recorded
	recs, runErr := r.Run(ctx, setup.tasks)
	rep.finish()
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		if errors.Is(runErr, profile.ErrBadSidecar) {
			return cli.UsageError("%v", runErr) // bad input: exit 2
		}
		if errors.Is(runErr, profile.ErrCommand) {
			return cli.UsageError("run: %v", runErr)
		}
		if errors.Is(runErr, profile.ErrSharingMismatch) {
			return cli.UsageError("%v (--force-sharing)", runErr)
		}
		if errors.Is(runErr, profile.ErrMPSRunning) {
			return fmt.Errorf("%w (--sharing mps uses it)", runErr)
		}
		return runErr
	}
	if err := printRecords(io, opts, r, recs, rep.skipped, runErr != nil); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("interrupted: %d measurements written to %s; run the same command again to resume", len(recs), opts.tablePath)
	}
	failed := 0
	for _, rec := range recs {
		if rec.Status == profile.StatusFailed {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d measurements failed (reasons above and in %s); a rerun retries them", failed, len(recs), profile.SidecarPath(opts.tablePath))
	}
	return nil
}

// reporter tells on stderr how the run goes: one line per measurement and, on a terminal, a
// progress bar with the time left, which the lines are written above.
type reporter struct {
	io                   *cli.IO
	table                string
	bar                  *progressbar.ProgressBar
	todo, skipped, count int
	mu                   sync.Mutex // the runner logs from its measurements' goroutines
}

func (p *reporter) logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log(format, args...)
}

// log writes a line above the progress bar; p.mu is held.
func (p *reporter) log(format string, args ...any) {
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintf(p.io.Err, format+"\n", args...)
	if p.bar != nil {
		_ = p.bar.RenderBlank()
	}
}

func (p *reporter) planned(todo, skipped int) {
	p.todo, p.skipped = todo, skipped
	p.logf("%d measurements to make, %d already in %s", todo, skipped, p.table)
	if isTerminal(p.io.Err) && todo > 0 {
		p.bar = progressbar.NewOptions(todo, progressbar.OptionSetWriter(p.io.Err),
			progressbar.OptionSetDescription("measuring"), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionFullWidth())
	}
}

// recorded counts a planned measurement done; isolated re-measurements taken before pairs
// are extra and do not move the bar: they are logged as before the next one ("[before 2/4]"),
// where "[1/4]" twice read as a count gone wrong.
func (p *reporter) recorded(rec profile.Record) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rec.Kind == profile.KindRefresh {
		p.log("[before %d/%d] %s", p.count+1, p.todo, describe(rec))
		return
	}
	p.count++
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
	p.log("[%d/%d] %s", p.count, p.todo, describe(rec))
}

func (p *reporter) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.io.Err)
	}
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func describe(rec profile.Record) string {
	what := rec.WorkerType + ": " + rec.Job
	if rec.Partner != "" {
		what += " + " + rec.Partner
	}
	if rec.Kind == profile.KindRefresh {
		what += " (isolated, re-measured)"
	}
	switch rec.Status {
	case profile.StatusOK:
		s := fmt.Sprintf("%s: %.4g steps/s ±%.1f%%", what, rec.RawRate, 100*rel(rec.CIHalfWidth, rec.RawRate))
		if rec.Partner != "" {
			s += fmt.Sprintf(", partner %.4g steps/s ±%.1f%%", rec.RawPartnerRate, 100*rel(rec.PartnerCIHalfWidth, rec.RawPartnerRate))
		}
		s += fmt.Sprintf(" (measured %.0f s, %.0f s in all)", rec.Seconds, rec.TotalSeconds)
		switch {
		case rec.PrecisionReached:
		case rec.Reason != "":
			// An ok record has a reason only when a job exited by itself during the measurement.
			s += "; " + rec.Reason + ", short of --precision"
		default:
			// The rate is usable but noisier than asked; without this the log reads like a pass.
			s += "; stopped at --max-window short of --precision"
		}
		return s
	default:
		return fmt.Sprintf("%s: %s: %s", what, rec.Status, rec.Reason)
	}
}

func rel(hw, rate float64) float64 {
	if rate <= 0 {
		return 0
	}
	return hw / rate
}

// measurementJSON is one entry of --json's measurements.
type measurementJSON struct {
	WorkerType         string   `json:"worker_type"`
	Job                string   `json:"job"`
	ScaleFactor        int      `json:"scale_factor"`
	Partner            string   `json:"partner,omitempty"`
	Kind               string   `json:"kind"`
	Rate               float64  `json:"rate"`
	PartnerRate        *float64 `json:"partner_rate,omitempty"`
	RawRate            float64  `json:"raw_rate"`
	RawPartnerRate     *float64 `json:"raw_partner_rate,omitempty"`
	CIHalfWidth        float64  `json:"ci_half_width"`
	PartnerCIHalfWidth *float64 `json:"partner_ci_half_width,omitempty"`
	Samples            int      `json:"samples"`
	PrecisionReached   bool     `json:"precision_reached"`
	Seconds            float64  `json:"seconds"`
	TotalSeconds       float64  `json:"total_seconds"`
	PeakMemoryBytes    uint64   `json:"peak_memory_bytes,omitempty"`
	Sharing            string   `json:"sharing"`
	GPUs               []int    `json:"gpus"`
	Status             string   `json:"status"`
	Reason             string   `json:"reason"`
}

func printRecords(io *cli.IO, opts runOptions, r *profile.Runner, recs []profile.Record, skipped int, interrupted bool) error {
	if opts.json {
		ms := make([]measurementJSON, 0, len(recs))
		for _, rec := range recs {
			m := measurementJSON{WorkerType: rec.WorkerType, Job: rec.Job, ScaleFactor: rec.ScaleFactor, Partner: rec.Partner,
				Kind: string(rec.Kind), Rate: rec.Rate, RawRate: rec.RawRate, CIHalfWidth: rec.CIHalfWidth, Samples: rec.Samples,
				PrecisionReached: rec.PrecisionReached, Seconds: rec.Seconds, TotalSeconds: rec.TotalSeconds, PeakMemoryBytes: rec.PeakMemoryBytes,
				Sharing: string(rec.Sharing), GPUs: rec.GPUs, Status: string(rec.Status), Reason: rec.Reason}
			if rec.Partner != "" {
				m.PartnerRate, m.RawPartnerRate, m.PartnerCIHalfWidth = &rec.PartnerRate, &rec.RawPartnerRate, &rec.PartnerCIHalfWidth
			}
			ms = append(ms, m)
		}
		return cli.WriteJSON(io.Out, map[string]any{"table": opts.tablePath, "sidecar": profile.SidecarPath(opts.tablePath),
			"sharing": string(r.Sharing), "skipped": skipped, "measurements": ms})
	}
	switch {
	case len(recs) == 0 && interrupted:
		fmt.Fprintf(io.Out, "Interrupted before any measurement finished; nothing was written to %s.\n", opts.tablePath)
		return nil
	case len(recs) == 0:
		fmt.Fprintf(io.Out, "Nothing to measure: %s already holds every measurement (%d).\n", opts.tablePath, skipped)
		return nil
	}
	// "measured s" is --json's seconds (the measurement phase); "total s" its total_seconds,
	// warm-up and start-up included.
	tw := cli.NewTableWriter(io.Out, "worker type", "job", "partner", "rate", "partner rate", "±CI", "samples", "measured s", "total s", "status", "reason")
	for _, rec := range recs {
		job := rec.Job
		if rec.Kind == profile.KindRefresh {
			job += " (re-measured)"
		}
		rate, prate, ci := "-", "-", "-"
		if rec.Status == profile.StatusOK {
			rate = strconv.FormatFloat(rec.Rate, 'g', 5, 64)
			ci = fmt.Sprintf("%.1f%%", 100*rel(rec.CIHalfWidth, rec.RawRate))
			if rec.Partner != "" {
				prate = strconv.FormatFloat(rec.PartnerRate, 'g', 5, 64)
				ci += fmt.Sprintf(" / %.1f%%", 100*rel(rec.PartnerCIHalfWidth, rec.RawPartnerRate))
			}
			if !rec.PrecisionReached {
				ci += " (over --precision)"
			}
		} else if rec.Status == profile.StatusInfeasible {
			rate = "0"
		}
		if err := tw.Append(rec.WorkerType, job, rec.Partner, rate, prate, ci, strconv.Itoa(rec.Samples),
			fmt.Sprintf("%.1f", rec.Seconds), fmt.Sprintf("%.1f", rec.TotalSeconds), string(rec.Status), rec.Reason); err != nil {
			return err
		}
	}
	if err := tw.Render(); err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "Table: %s (details in %s); %d measurements were already there.\n", opts.tablePath, profile.SidecarPath(opts.tablePath), skipped)
	return nil
}
