package profile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gavelkit/gavel/table"
)

// ErrSharingMismatch is returned when a table already holds pairs measured under another
// sharing mode and the runner is not forced.
var ErrSharingMismatch = errors.New("sharing mode differs from the table's")

// Runner measures tasks on the node's devices and merges the results into a table.
type Runner struct {
	// TablePath is the Gavel-format table to merge into (created when missing); its sidecar
	// is SidecarPath(TablePath).
	TablePath string
	// Commands holds the command of every job a task may run.
	Commands map[table.JobType]Command
	// GPUs are the devices to use, all at once. A job with scale factor n uses n devices of
	// its worker type.
	GPUs []GPU
	// Devices measures the jobs' peak GPU memory; nil skips it.
	Devices  Devices
	Settings Settings
	Sharing  Sharing
	// ForceSharing allows pairs of another sharing mode in the same table.
	ForceSharing bool
	// MPSControl and MPSPipeDir locate the MPS control program and an already running daemon
	// (defaults DefaultMPSControl, DefaultMPSPipeDir).
	MPSControl, MPSPipeDir string
	// Env is the base environment of every job, usually BaseEnv(os.Environ(), extra). Nil
	// gives jobs only their Command.Env and the per-device variables: no PATH, so a program
	// must be named by its path (Run fails with ErrCommand otherwise).
	Env []string
	// Refresh is how old an isolated rate measured in this run may be for a pair to be
	// normalized by it; older ones are re-measured on the pair's device first. Zero means 30
	// minutes; RefreshAlways re-measures before every pair; negative never re-measures (pairs
	// are normalized by the table's rates).
	Refresh time.Duration
	// OnPlanned is told how many tasks will run and how many are already in the table.
	OnPlanned func(todo, skipped int)
	// OnRecord is called (from one goroutine) after each record has been written.
	OnRecord func(Record)
	// Logf receives notes; nil discards them. It may be called from several goroutines at
	// once (the measurements run in parallel).
	Logf func(format string, args ...any)
}

// recentIso is an isolated rate measured in this run.
type recentIso struct {
	rate float64
	at   time.Time
}

type isoKey struct {
	w string
	j table.JobType
}

// pass is one call of Run: its settings and the state its task goroutines share.
type pass struct {
	r       *Runner
	sharing Sharing
	byType  map[string][]GPU // selected devices by worker type
	mpsEnv  []string         // makes jobs clients of the MPS daemon; nil without MPS
	recs    chan<- Record    // to the single writer

	mu     sync.Mutex
	table  map[isoKey]float64 // isolated rates in the table (0 = cannot run)
	recent map[isoKey]recentIso
	peak   map[isoKey]uint64
	// failed holds why a job's isolated measurement failed in this run: its pairs are not run,
	// since they would start by measuring it alone again (a job that never reports would
	// waste the start-up timeout once per pair). A rerun retries them.
	failed map[isoKey]string
	// hinted holds the jobs whose progress format was hinted at in this run: once is enough.
	hinted map[string]bool
}

func (r *Runner) newPass() *pass {
	p := &pass{r: r, sharing: r.Sharing, byType: map[string][]GPU{},
		table: map[isoKey]float64{}, recent: map[isoKey]recentIso{}, peak: map[isoKey]uint64{}, failed: map[isoKey]string{},
		hinted: map[string]bool{}}
	if p.sharing == "" {
		p.sharing = TimeSlicing
	}
	for _, g := range r.GPUs {
		p.byType[g.WorkerType] = append(p.byType[g.WorkerType], g)
	}
	return p
}

// Run measures tasks, skipping those the table already holds, and returns the records written.
// Each record is merged into the table and the sidecar as soon as it is made; both files are
// valid at every moment. On cancellation every job is killed and Run returns the context's
// error after writing what was finished.
func (r *Runner) Run(ctx context.Context, tasks []Task) ([]Record, error) {
	if err := r.Settings.Validate(); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	if err := CheckTableName(r.TablePath); err != nil {
		return nil, err
	}
	unlock, err := lockTable(r.TablePath)
	if err != nil {
		return nil, err
	}
	defer unlock()
	tbl, err := r.loadOrNew()
	if err != nil {
		return nil, err
	}
	side, err := LoadSidecar(SidecarPath(r.TablePath))
	if err != nil {
		return nil, err
	}
	p := r.newPass()
	if err := r.checkSharing(side, p.sharing); err != nil {
		return nil, err
	}
	todo, early, err := p.prepare(tbl, side, tasks)
	if err != nil {
		return nil, err
	}
	if err := r.checkCommands(todo); err != nil {
		return nil, err
	}
	if err := r.checkNoStrayMPS(p.sharing, todo, p.byType); err != nil {
		return nil, err
	}
	if r.OnPlanned != nil {
		r.OnPlanned(len(todo)+len(early), len(tasks)-len(todo)-len(early))
	}
	if p.sharing == MPS && len(todo) > 0 {
		stop, err := p.startMPS(ctx)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	return p.measureAll(ctx, tbl, side, early, todo)
}

// ErrCommand is returned, before anything is measured, for jobs whose command cannot start:
// there is none, its program is not found or not executable, or its directory is missing.
// Measuring on would only record each of their tasks failed.
var ErrCommand = errors.New("command cannot start")

// checkCommands checks the command of every job in todo.
func (r *Runner) checkCommands(todo []Task) error {
	seen := map[table.JobType]bool{}
	var errs []error
	for _, t := range todo {
		for _, j := range []table.JobType{t.Job, t.Partner} {
			if j.Model == "" || seen[j] {
				continue
			}
			seen[j] = true
			if err := r.Commands[j].check(r.Env); err != nil {
				errs = append(errs, fmt.Errorf("%w: job %s: %v", ErrCommand, j, err))
			}
		}
	}
	return errors.Join(errs...)
}

// checkSharing refuses a table whose pairs were measured under another sharing mode, unless
// forced: the two kinds of interference must not be mixed silently.
func (r *Runner) checkSharing(side *Sidecar, sharing Sharing) error {
	modes := side.modes()
	for _, mode := range sortedKeys(modes) {
		if mode != sharing && !r.ForceSharing {
			return fmt.Errorf("table %s: %w: %d pairs were measured with %s, this run uses %s (use a new table, or force)",
				r.TablePath, ErrSharingMismatch, modes[mode], mode, sharing)
		}
	}
	if side.Sharing == "" || len(modes) == 0 {
		side.Sharing = sharing
	}
	return nil
}

// prepare drops the tasks the table holds, checks that every job has a command, loads what the
// table and sidecar know about the jobs, and decides at once the tasks that cannot run here.
func (p *pass) prepare(tbl *table.Table, side *Sidecar, tasks []Task) (todo []Task, early []Record, err error) {
	var unrecorded []Task
	for _, t := range tasks {
		if done(tbl, t) {
			if !side.recorded(t) {
				unrecorded = append(unrecorded, t)
			}
			continue
		}
		for _, j := range []table.JobType{t.Job, t.Partner} {
			if j.Model == "" {
				continue
			}
			if _, ok := p.r.Commands[j]; !ok {
				return nil, nil, fmt.Errorf("task %s: no command for %s", t, j)
			}
			k := isoKey{t.WorkerType, j}
			if rate, ok := tbl.Isolated(t.WorkerType, j); ok {
				p.table[k] = rate
			}
			p.peak[k] = side.peakMemory(t.WorkerType, j)
		}
		if n := len(p.byType[t.WorkerType]); n < t.Job.ScaleFactor {
			early = append(early, p.record(t, Record{Status: StatusFailed, Kind: kindOf(t),
				Reason: fmt.Sprintf("needs %d devices of type %s, %d selected", t.Job.ScaleFactor, t.WorkerType, n)}, nil))
			continue
		}
		todo = append(todo, t)
	}
	if n := len(unrecorded); n > 0 {
		// An estimate written over the table looks like this, and would never be measured.
		first := unrecorded[0].String()
		if n > 1 {
			first += ", ..."
		}
		p.r.logf("note: %d planned measurements (%s) are in the table without a record in %s: made elsewhere (a merged or estimated table?), they are not measured again; remove them from the table to measure them",
			n, first, SidecarPath(p.r.TablePath))
	}
	return todo, early, nil
}

// startMPS connects the jobs to an MPS control daemon; stop quits it if it was started here.
func (p *pass) startMPS(ctx context.Context) (stop func(), err error) {
	d, err := StartMPS(ctx, p.r.MPSControl, p.r.MPSPipeDir, p.r.Env)
	if err != nil {
		return nil, err
	}
	p.r.logf("MPS: using control daemon in %s (started here: %v)", d.pipeDir, d.Started())
	p.mpsEnv = d.Env()
	return func() {
		if err := d.Stop(context.WithoutCancel(ctx)); err != nil {
			p.r.logf("%v", err)
		}
	}, nil
}

// measureAll sends the early records and measures the rest, with one writer: table and sidecar
// are only touched by it, in the order the records come.
func (p *pass) measureAll(ctx context.Context, tbl *table.Table, side *Sidecar, early []Record, todo []Task) ([]Record, error) {
	recs := make(chan Record)
	p.recs = recs
	var written []Record
	writeErr := make(chan error, 1)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		var err error
		for rec := range recs {
			if err != nil {
				continue
			}
			if err = p.r.write(tbl, side, &rec); err != nil {
				cancel(err)
				continue
			}
			written = append(written, rec)
			if p.r.OnRecord != nil {
				p.r.OnRecord(rec)
			}
		}
		writeErr <- err
	}()
	for _, rec := range early {
		recs <- rec
	}
	p.dispatch(ctx, todo)
	close(recs)
	if err := <-writeErr; err != nil {
		return written, err
	}
	return written, context.Cause(ctx)
}

// ErrMPSRunning is returned when pairs are to share a GPU by time-slicing while an MPS control
// daemon listens where CUDA looks by default.
var ErrMPSRunning = errors.New("an MPS control daemon is running")

// checkNoStrayMPS refuses to measure GPU pairs under time-slicing while an MPS control daemon
// listens in the default pipe directory: CUDA jobs connect to it on their own, so the pairs
// would share the GPU through MPS and be recorded as time-slicing.
func (r *Runner) checkNoStrayMPS(sharing Sharing, todo []Task, byType map[string][]GPU) error {
	if sharing != TimeSlicing {
		return nil
	}
	pipeDir := r.MPSPipeDir
	if pipeDir == "" {
		pipeDir = DefaultMPSPipeDir
	}
	for _, t := range todo {
		if gpus := byType[t.WorkerType]; t.IsPair() && len(gpus) > 0 && !gpus[0].CPU && running(pipeDir) {
			return fmt.Errorf("%w in %s: pairs would share the GPU through MPS, not by time-slicing; measure with MPS sharing, or quit the daemon", ErrMPSRunning, pipeDir)
		}
	}
	return nil
}

func kindOf(t Task) Kind {
	if t.IsPair() {
		return KindPair
	}
	return KindIsolated
}

// ErrTableBusy is returned when another run holds the table's lock.
var ErrTableBusy = errors.New("table is being written by another gavel-profile run")

// ErrTableName is returned for a table path whose name, or the name of the file it links to,
// does not end in ".json".
var ErrTableName = errors.New(`a table's name must end in ".json" (its sidecar is named from it)`)

// CheckTableName fails with ErrTableName unless path, and the file it names through any
// symlinks, end in ".json": the sidecar and lock are named from that file, and out's sidecar
// would be out.json's too.
func CheckTableName(path string) error {
	if !strings.HasSuffix(path, ".json") {
		return fmt.Errorf("table %s: %w", path, ErrTableName)
	}
	if f := tableFile(path); !strings.HasSuffix(f, ".json") {
		return fmt.Errorf("table %s (a link to %s): %w", path, f, ErrTableName)
	}
	return nil
}

// lockTable takes an exclusive lock on the table's file + ".lock", so that two runs cannot
// interleave their writes to one table, even when one names it through a symlink. The lock
// goes away with the process.
func lockTable(path string) (func(), error) {
	lock := tableFile(path) + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o644)
	if errors.Is(err, os.ErrPermission) {
		// A lock file a teammate's run created (0644, theirs): flock needs only a descriptor.
		f, err = os.Open(lock)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("table %s: %w", path, ErrTableBusy)
		}
		return nil, fmt.Errorf("table %s: lock: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// loadOrNew reads the table measurements are added to, or starts one; its warnings (a pair
// rate above the isolated rate) are noted, since new measurements join them.
func (r *Runner) loadOrNew() (*table.Table, error) {
	path := r.TablePath
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return table.New(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	defer f.Close()
	t, ps := table.Check(f, path)
	if errs := ps.Errors(); len(errs) > 0 {
		if isCSVTable(path) {
			return nil, table.Problems{{File: path, Err: fmt.Errorf("%w: a CSV table; measurements are merged into Gavel's JSON format: convert it first (gavel-plan table convert %s --to json --out NEW.json)", table.ErrSyntax, path)}}
		}
		return nil, errs
	}
	for _, w := range ps.Warnings() {
		r.logf("%v", w)
	}
	return t, nil
}

// isCSVTable reports whether the file at path is a table in CSV (its header is the CSV's).
func isCSVTable(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	t, _ := table.CheckCSV(f, path)
	return t != nil
}

// done reports whether the table already holds the task's result.
func done(tbl *table.Table, t Task) bool {
	if t.IsPair() {
		_, _, s := tbl.Pair(t.WorkerType, t.Job, t.Partner)
		return s != table.Missing
	}
	_, ok := tbl.Isolated(t.WorkerType, t.Job)
	return ok
}

// hint logs a note on job's progress format, once a run.
func (p *pass) hint(job, note string) {
	p.mu.Lock()
	first := !p.hinted[job]
	p.hinted[job] = true
	p.mu.Unlock()
	if first {
		p.r.logf("note: %s: %s", job, note)
	}
}

func (r *Runner) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

// dispatch runs the tasks on free devices, in order, one measurement per device at a time.
// Pairs of a worker type wait until its isolated rates are measured, so they can be normalized
// by fresh values instead of re-measuring them.
func (p *pass) dispatch(ctx context.Context, todo []Task) {
	free := map[string][]GPU{}
	for w, gs := range p.byType {
		free[w] = append([]GPU{}, gs...)
	}
	isoLeft := map[string]int{}
	for _, t := range todo {
		if !t.IsPair() {
			isoLeft[t.WorkerType]++
		}
	}
	type finished struct {
		t    Task
		gpus []GPU
	}
	doneCh := make(chan finished)
	running := 0
	pending := todo
	for len(pending) > 0 || running > 0 {
		if ctx.Err() == nil {
			var rest []Task
			for _, t := range pending {
				n := t.Job.ScaleFactor
				if (t.IsPair() && isoLeft[t.WorkerType] > 0) || len(free[t.WorkerType]) < n {
					rest = append(rest, t)
					continue
				}
				gpus := free[t.WorkerType][:n:n]
				free[t.WorkerType] = free[t.WorkerType][n:]
				running++
				go func() {
					p.runTask(ctx, t, gpus)
					doneCh <- finished{t, gpus}
				}()
			}
			pending = rest
		} else {
			pending = nil
		}
		if running == 0 {
			break
		}
		f := <-doneCh
		running--
		free[f.t.WorkerType] = append(free[f.t.WorkerType], f.gpus...)
		if !f.t.IsPair() {
			isoLeft[f.t.WorkerType]--
		}
	}
}

// slot builds the environment of a measurement on gpus.
func (p *pass) slot(gpus []GPU) deviceSlot {
	env := append(append([]string{}, p.r.Env...), p.mpsEnv...)
	return deviceSlot{GPUs: gpus, Env: env}
}

// runTask measures one task and sends its records (a pair may first re-measure isolated rates).
func (p *pass) runTask(ctx context.Context, t Task, gpus []GPU) {
	// A measurement cut short by cancellation is not a result; one that was final before
	// (cancellation came while its jobs were being stopped) is kept. After it nothing new starts.
	send := func(rec Record) bool {
		if rec.interrupted {
			return false
		}
		p.recs <- rec
		return ctx.Err() == nil
	}
	if !t.IsPair() {
		send(p.measureIsolated(ctx, t.WorkerType, t.Job, gpus, KindIsolated))
		return
	}
	if rec, ok := p.precheck(t, gpus); !ok {
		send(rec)
		return
	}
	if iso, ok := p.isolatedNearby(ctx, t, gpus, send); ok {
		send(p.measurePair(ctx, t, gpus, iso))
	}
}

// isolatedNearby returns the isolated rates of the pair's jobs measured close in time,
// re-measuring on gpus those that are older than the refresh age, so that the pair can be
// normalized without drift. When a re-measurement fails, the pair fails with it (a job that
// runs out of memory alone cannot share either) and ok is false.
func (p *pass) isolatedNearby(ctx context.Context, t Task, gpus []GPU, send func(Record) bool) (iso [2]float64, ok bool) {
	for i, j := range []table.JobType{t.Job, t.Partner} {
		if i == 1 && j == t.Job {
			iso[1] = iso[0]
			continue
		}
		rate, fresh := p.fresh(isoKey{t.WorkerType, j}, p.r.refresh())
		if !fresh {
			rec := p.measureIsolated(ctx, t.WorkerType, j, gpus, KindRefresh)
			if !send(rec) {
				return iso, false
			}
			if rec.Status != StatusOK {
				send(p.record(t, Record{Status: rec.Status, Kind: KindPair,
					Reason: fmt.Sprintf("isolated re-measurement of %s: %s", j.Model, rec.Reason)}, gpus))
				return iso, false
			}
			rate = rec.RawRate
		}
		iso[i] = rate
	}
	return iso, true
}

// measurePair runs the pair's jobs together on gpus; iso are their recent isolated rates.
func (p *pass) measurePair(ctx context.Context, t Task, gpus []GPU, iso [2]float64) Record {
	m := measurer{settings: p.r.Settings, devices: p.r.Devices, hint: p.hint}
	out := m.measure(ctx, p.slot(gpus), []string{t.Job.Model, t.Partner.Model}, []Command{
		p.r.command(t.Job, gpus), p.r.command(t.Partner, gpus)})
	rec := Record{Kind: KindPair, Status: out.Status, Reason: out.Reason,
		WarmupSeconds: out.WarmupSeconds, TotalSeconds: out.TotalSeconds, interrupted: out.Interrupted}
	if out.Status == StatusOK {
		a, b := out.Jobs[0], out.Jobs[1]
		rec.RawRate, rec.RawPartnerRate = a.Rate, b.Rate
		rec.Rate, rec.PartnerRate = a.Rate, b.Rate // normalized by the writer
		rec.IsolatedRate, rec.PartnerIsolatedRate = iso[0], iso[1]
		rec.CIHalfWidth, rec.PartnerCIHalfWidth = a.HalfWidth, b.HalfWidth
		rec.Samples, rec.PartnerSamples = a.Batches, b.Batches
		rec.Seconds = max(a.Seconds, b.Seconds)
		rec.PeakMemoryBytes, rec.PartnerPeakMemory = a.PeakMemory, b.PeakMemory
		rec.PrecisionReached = a.PrecisionOK && b.PrecisionOK
	}
	return p.record(t, rec, gpus)
}

// RefreshAlways as Runner.Refresh re-measures the isolated rates before every pair: no rate
// is that recent. (A zero Refresh means the default, so "always" needs a value of its own.)
const RefreshAlways time.Duration = 1

func (r *Runner) refresh() time.Duration {
	if r.Refresh == 0 {
		return 30 * time.Minute
	}
	return r.Refresh
}

// fresh returns an isolated rate measured in this run within maxAge; with a negative maxAge,
// the table's rate always counts as fresh.
func (p *pass) fresh(k isoKey, maxAge time.Duration) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if maxAge < 0 {
		rate, ok := p.table[k]
		return rate, ok
	}
	if r, ok := p.recent[k]; ok && time.Since(r.at) <= maxAge {
		return r.rate, true
	}
	return 0, false
}

// precheck decides pairs that need not run: a job that cannot run alone, peak memories that
// do not fit the device, a compute mode that forbids sharing.
func (p *pass) precheck(t Task, gpus []GPU) (Record, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range []table.JobType{t.Job, t.Partner} {
		if rate, ok := p.table[isoKey{t.WorkerType, j}]; ok && rate == 0 {
			return p.record(t, Record{Status: StatusInfeasible, Kind: KindPair,
				Reason: fmt.Sprintf("%s cannot run alone on %s (isolated rate 0)", j.Model, t.WorkerType)}, gpus), false
		}
	}
	for _, j := range []table.JobType{t.Job, t.Partner} {
		if why, ok := p.failed[isoKey{t.WorkerType, j}]; ok {
			return p.record(t, Record{Status: StatusFailed, Kind: KindPair,
				Reason: fmt.Sprintf("not run: the isolated measurement of %s failed in this run (%s)", j.Model, why)}, gpus), false
		}
	}
	// Peaks are summed over a job's devices, so they are compared with the memory of all of
	// them: a pair is only declared infeasible when it cannot fit however it spreads. A peak
	// of 0 is unknown and decides nothing.
	pa, pb := p.peak[isoKey{t.WorkerType, t.Job}], p.peak[isoKey{t.WorkerType, t.Partner}]
	total := uint64(0)
	for _, g := range gpus {
		total = addCapped(total, g.MemoryTotal)
	}
	if pa > 0 && pb > 0 && total > 0 && addCapped(pa, pb) > total {
		return p.record(t, Record{Status: StatusInfeasible, Kind: KindPair,
			Reason: fmt.Sprintf("isolated peak memories %s + %s = %s exceed the %s of %s",
				mib(pa), mib(pb), mib(addCapped(pa, pb)), mib(total), devicesName(gpus))}, gpus), false
	}
	for _, g := range gpus {
		if p.sharing != MPS && (g.ComputeMode == "exclusive_process" || g.ComputeMode == "exclusive_thread" || g.ComputeMode == "prohibited") {
			return p.record(t, Record{Status: StatusFailed, Kind: KindPair,
				Reason: fmt.Sprintf("device %d is in compute mode %s, which forbids sharing without MPS", g.Index, g.ComputeMode)}, gpus), false
		}
	}
	return Record{}, true
}

// addCapped adds byte counts, stopping at the largest uint64 rather than wrapping around to a
// small sum that would fit any device.
func addCapped(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

func mib(b uint64) string { return fmt.Sprintf("%d MiB", b>>20) }

func devicesName(gpus []GPU) string {
	if len(gpus) == 1 {
		return fmt.Sprintf("device %d", gpus[0].Index)
	}
	idx := make([]string, len(gpus))
	for i, g := range gpus {
		idx[i] = strconv.Itoa(g.Index)
	}
	return "devices " + strings.Join(idx, ",")
}

// measureIsolated measures j alone on gpus and remembers the rate for drift normalization.
func (p *pass) measureIsolated(ctx context.Context, w string, j table.JobType, gpus []GPU, kind Kind) Record {
	m := measurer{settings: p.r.Settings, devices: p.r.Devices, hint: p.hint}
	out := m.measure(ctx, p.slot(gpus), []string{j.Model}, []Command{p.r.command(j, gpus)})
	rec := Record{Kind: kind, Status: out.Status, Reason: out.Reason,
		WarmupSeconds: out.WarmupSeconds, TotalSeconds: out.TotalSeconds, interrupted: out.Interrupted}
	if out.Status == StatusOK {
		a := out.Jobs[0]
		rec.Rate, rec.RawRate, rec.CIHalfWidth, rec.Samples, rec.Seconds = a.Rate, a.Rate, a.HalfWidth, a.Batches, a.Seconds
		rec.PeakMemoryBytes, rec.PrecisionReached = a.PeakMemory, a.PrecisionOK
		p.mu.Lock()
		k := isoKey{w, j}
		p.recent[k] = recentIso{rate: a.Rate, at: time.Now()}
		p.peak[k] = max(p.peak[k], a.PeakMemory)
		if _, ok := p.table[k]; !ok {
			p.table[k] = a.Rate
		}
		p.mu.Unlock()
	} else if out.Status == StatusInfeasible {
		p.mu.Lock()
		p.table[isoKey{w, j}] = 0
		p.mu.Unlock()
	} else if !out.Interrupted {
		p.mu.Lock()
		p.failed[isoKey{w, j}] = out.Reason
		p.mu.Unlock()
	}
	return p.record(Task{WorkerType: w, Job: j}, rec, gpus)
}

// record fills in the task's identity, the devices and the sharing mode.
func (p *pass) record(t Task, rec Record, gpus []GPU) Record {
	rec.WorkerType = t.WorkerType
	rec.Job, rec.ScaleFactor = t.Job.Model, t.Job.ScaleFactor
	if t.IsPair() {
		rec.Partner, rec.PartnerScaleFactor = t.Partner.Model, t.Partner.ScaleFactor
	}
	rec.Sharing = p.sharing
	for _, g := range gpus {
		rec.GPUs = append(rec.GPUs, g.Index)
	}
	rec.Finished = now()
	return rec
}

// command returns j's command; the device variables are added by the slot.
func (r *Runner) command(j table.JobType, gpus []GPU) Command {
	c := r.Commands[j]
	c.Env = append(append([]string{}, c.Env...), deviceEnv(gpus)...)
	return c
}

// write merges rec into the table and the sidecar and saves both, sidecar first: a crash in
// between leaves a record whose table entry is missing, which a rerun measures again.
func (r *Runner) write(tbl *table.Table, side *Sidecar, rec *Record) error {
	w, a, b := rec.WorkerType, rec.JobType(), rec.PartnerType()
	switch {
	case rec.Partner == "" && rec.Status == StatusOK:
		if _, ok := tbl.Isolated(w, a); !ok {
			tbl.SetIsolated(w, a, rec.Rate)
		}
	case rec.Partner == "" && rec.Status == StatusInfeasible:
		if _, ok := tbl.Isolated(w, a); !ok || rec.Kind == KindIsolated {
			tbl.SetIsolated(w, a, 0)
		}
	case rec.Status == StatusOK:
		rec.Rate = normalize(tbl, w, a, rec.RawRate, rec.IsolatedRate)
		rec.PartnerRate = normalize(tbl, w, b, rec.RawPartnerRate, rec.PartnerIsolatedRate)
		ra, rb := rec.Rate, rec.PartnerRate
		if a == b {
			// Two copies of one job type: the table has one entry for both, and
			// Gavel's profiler puts their mean in both slots. The sidecar keeps each.
			ra = (ra + rb) / 2
			rb = ra
		}
		tbl.SetPair(w, a, b, ra, rb)
	case rec.Status == StatusInfeasible:
		tbl.SetInfeasible(w, a, b)
	}
	side.add(*rec)
	if err := side.Save(SidecarPath(r.TablePath)); err != nil {
		return err
	}
	return tbl.Save(r.TablePath)
}

// normalize scales a pair rate so that, divided by the table's isolated rate, it gives the
// slowdown measured against the isolated rate taken close in time.
func normalize(tbl *table.Table, w string, j table.JobType, raw, recentIso float64) float64 {
	iso, ok := tbl.Isolated(w, j)
	if !ok || iso <= 0 || recentIso <= 0 {
		return raw
	}
	return raw * iso / recentIso
}
