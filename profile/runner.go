package profile

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	// Env is the base environment of every job (see BaseEnv).
	Env []string
	// Refresh is how old an isolated rate measured in this run may be for a pair to be
	// normalized by it; older ones are re-measured on the pair's device first. Zero means 30
	// minutes; negative never re-measures (pairs are normalized by the table's rates).
	Refresh time.Duration
	// OnPlanned is told how many tasks will run and how many are already in the table.
	OnPlanned func(todo, skipped int)
	// OnRecord is called (from one goroutine) after each record has been written.
	OnRecord func(Record)
	// Logf receives notes; nil discards them.
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

// runState is shared by the task goroutines.
type runState struct {
	mu     sync.Mutex
	table  map[isoKey]float64 // isolated rates in the table (0 = cannot run)
	recent map[isoKey]recentIso
	peak   map[isoKey]uint64
	// failed holds why a job's isolated measurement failed in this run: its pairs are not run,
	// since they would start by measuring it alone again (a job that never reports would
	// waste the start-up timeout once per pair). A rerun retries them.
	failed map[isoKey]string
}

// Run measures tasks, skipping those the table already holds, and returns the records written.
// Each record is merged into the table and the sidecar as soon as it is made; both files are
// valid at every moment. On cancellation every job is killed and Run returns the context's
// error after writing what was finished.
func (r *Runner) Run(ctx context.Context, tasks []Task) ([]Record, error) {
	unlock, err := lockTable(r.TablePath)
	if err != nil {
		return nil, err
	}
	defer unlock()
	tbl, err := loadOrNew(r.TablePath)
	if err != nil {
		return nil, err
	}
	sidePath := SidecarPath(r.TablePath)
	side, err := LoadSidecar(sidePath)
	if err != nil {
		return nil, err
	}
	sharing := r.Sharing
	if sharing == "" {
		sharing = TimeSlicing
	}
	for mode, n := range side.modes() {
		if mode != sharing && !r.ForceSharing {
			return nil, fmt.Errorf("table %s: %w: %d pairs were measured with %s, this run uses %s (use a new table, or force)", r.TablePath, ErrSharingMismatch, n, mode, sharing)
		}
	}
	if side.Sharing == "" || len(side.modes()) == 0 {
		side.Sharing = sharing
	}

	byType := map[string][]GPU{}
	for _, g := range r.GPUs {
		byType[g.WorkerType] = append(byType[g.WorkerType], g)
	}
	st := &runState{table: map[isoKey]float64{}, recent: map[isoKey]recentIso{}, peak: map[isoKey]uint64{},
		failed: map[isoKey]string{}}
	var todo []Task
	var early []Record // decided without running
	for _, t := range tasks {
		if done(tbl, t) {
			continue
		}
		for _, j := range []table.JobType{t.Job, t.Partner} {
			if j.Model == "" {
				continue
			}
			if _, ok := r.Commands[j]; !ok {
				return nil, fmt.Errorf("task %s: no command for %s", t, j)
			}
			k := isoKey{t.WorkerType, j}
			if rate, ok := tbl.Isolated(t.WorkerType, j); ok {
				st.table[k] = rate
			}
			st.peak[k] = side.peakMemory(t.WorkerType, j)
		}
		if n := len(byType[t.WorkerType]); n < t.Job.ScaleFactor {
			early = append(early, r.record(t, Record{Status: StatusFailed, Kind: kindOf(t),
				Reason: fmt.Sprintf("needs %d devices of type %s, %d selected", t.Job.ScaleFactor, t.WorkerType, n)}, nil))
			continue
		}
		todo = append(todo, t)
	}
	if err := r.checkNoStrayMPS(sharing, todo, byType); err != nil {
		return nil, err
	}
	if r.OnPlanned != nil {
		r.OnPlanned(len(todo)+len(early), len(tasks)-len(todo)-len(early))
	}

	var mpsEnv []string
	if sharing == MPS && len(todo) > 0 {
		d, err := StartMPS(ctx, r.MPSControl, r.MPSPipeDir, r.Env)
		if err != nil {
			return nil, err
		}
		r.logf("MPS: using control daemon in %s (started here: %v)", d.pipeDir, d.Started())
		defer func() {
			if err := d.Stop(context.WithoutCancel(ctx)); err != nil {
				r.logf("%v", err)
			}
		}()
		mpsEnv = d.Env()
	}

	// One writer: table and sidecar are only touched here.
	recs := make(chan Record)
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
			if err = r.write(tbl, side, sidePath, &rec); err != nil {
				cancel(err)
				continue
			}
			written = append(written, rec)
			if r.OnRecord != nil {
				r.OnRecord(rec)
			}
		}
		writeErr <- err
	}()
	for _, rec := range early {
		recs <- rec
	}
	r.dispatch(ctx, todo, byType, st, mpsEnv, sharing, recs)
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

func kindOf(t Task) string {
	if t.IsPair() {
		return "pair"
	}
	return "isolated"
}

// ErrTableBusy is returned when another run holds the table's lock.
var ErrTableBusy = errors.New("table is being written by another gavel-profile run")

// lockTable takes an exclusive lock on path + ".lock", so that two runs cannot interleave their
// writes to one table. The lock goes away with the process.
func lockTable(path string) (func(), error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
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

func loadOrNew(path string) (*table.Table, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return table.New(), nil
	}
	return table.Load(path)
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

func (r *Runner) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

// dispatch runs the tasks on free devices, in order, one measurement per device at a time.
// Pairs of a worker type wait until its isolated rates are measured, so they can be normalized
// by fresh values instead of re-measuring them.
func (r *Runner) dispatch(ctx context.Context, todo []Task, byType map[string][]GPU, st *runState, mpsEnv []string, sharing Sharing, recs chan<- Record) {
	free := map[string][]GPU{}
	for w, gs := range byType {
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
					r.runTask(ctx, t, gpus, st, mpsEnv, sharing, recs)
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
func (r *Runner) slot(gpus []GPU, mpsEnv []string) deviceSlot {
	env := append(append([]string{}, r.Env...), mpsEnv...)
	return deviceSlot{GPUs: gpus, Env: env}
}

// runTask measures one task and sends its records (a pair may first re-measure isolated rates).
func (r *Runner) runTask(ctx context.Context, t Task, gpus []GPU, st *runState, mpsEnv []string, sharing Sharing, recs chan<- Record) {
	send := func(rec Record) bool {
		if ctx.Err() != nil {
			return false // an interrupted measurement is not a result
		}
		recs <- rec
		return true
	}
	if !t.IsPair() {
		rec := r.measureIsolated(ctx, t.WorkerType, t.Job, gpus, st, mpsEnv, sharing, "isolated")
		send(rec)
		return
	}
	if rec, ok := r.precheck(t, gpus, st, sharing); !ok {
		send(rec)
		return
	}
	// Isolated rates close in time, on this device, for drift-free normalization.
	isoRates := [2]float64{}
	for i, j := range []table.JobType{t.Job, t.Partner} {
		if i == 1 && j == t.Job {
			isoRates[1] = isoRates[0]
			continue
		}
		rate, fresh := st.fresh(isoKey{t.WorkerType, j}, r.refresh())
		if !fresh {
			rec := r.measureIsolated(ctx, t.WorkerType, j, gpus, st, mpsEnv, sharing, "refresh")
			if !send(rec) {
				return
			}
			if rec.Status != StatusOK {
				// A job that runs out of memory alone cannot share either.
				send(r.record(t, Record{Status: rec.Status, Kind: "pair", Sharing: sharing,
					Reason: fmt.Sprintf("isolated re-measurement of %s: %s", j.Model, rec.Reason)}, gpus))
				return
			}
			rate = rec.RawRate
		}
		isoRates[i] = rate
	}
	m := measurer{settings: r.Settings, devices: r.Devices}
	out := m.measure(ctx, r.slot(gpus, mpsEnv), []string{t.Job.Model, t.Partner.Model}, []Command{
		r.command(t.Job, gpus), r.command(t.Partner, gpus)})
	rec := Record{Kind: "pair", Status: out.Status, Reason: out.Reason, Sharing: sharing,
		WarmupSeconds: out.WarmupSeconds, TotalSeconds: out.TotalSeconds}
	if out.Status == StatusOK {
		a, b := out.Jobs[0], out.Jobs[1]
		rec.RawRate, rec.RawPartnerRate = a.Rate, b.Rate
		rec.Rate, rec.PartnerRate = a.Rate, b.Rate
		rec.IsolatedRate, rec.PartnerIsolatedRate = isoRates[0], isoRates[1]
		rec.CIHalfWidth, rec.PartnerCIHalfWidth = a.HalfWidth, b.HalfWidth
		rec.Samples, rec.PartnerSamples = a.Batches, b.Batches
		rec.Seconds = max(a.Seconds, b.Seconds)
		rec.PeakMemoryBytes, rec.PartnerPeakMemory = a.PeakMemory, b.PeakMemory
		rec.PrecisionReached = a.PrecisionOK && b.PrecisionOK
	}
	send(r.record(t, rec, gpus))
}

func (r *Runner) refresh() time.Duration {
	if r.Refresh == 0 {
		return 30 * time.Minute
	}
	return r.Refresh
}

// fresh returns an isolated rate measured in this run within maxAge; with a negative maxAge,
// the table's rate always counts as fresh.
func (st *runState) fresh(k isoKey, maxAge time.Duration) (float64, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if maxAge < 0 {
		rate, ok := st.table[k]
		return rate, ok
	}
	if r, ok := st.recent[k]; ok && time.Since(r.at) <= maxAge {
		return r.rate, true
	}
	return 0, false
}

// precheck decides pairs that need not run: a job that cannot run alone, peak memories that
// do not fit the device, a compute mode that forbids sharing.
func (r *Runner) precheck(t Task, gpus []GPU, st *runState, sharing Sharing) (Record, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, j := range []table.JobType{t.Job, t.Partner} {
		if rate, ok := st.table[isoKey{t.WorkerType, j}]; ok && rate == 0 {
			return r.record(t, Record{Status: StatusInfeasible, Kind: "pair", Sharing: sharing,
				Reason: fmt.Sprintf("%s cannot run alone on %s (isolated rate 0)", j.Model, t.WorkerType)}, gpus), false
		}
	}
	for _, j := range []table.JobType{t.Job, t.Partner} {
		if why, ok := st.failed[isoKey{t.WorkerType, j}]; ok {
			return r.record(t, Record{Status: StatusFailed, Kind: "pair", Sharing: sharing,
				Reason: fmt.Sprintf("not run: the isolated measurement of %s failed in this run (%s)", j.Model, why)}, gpus), false
		}
	}
	pa, pb := st.peak[isoKey{t.WorkerType, t.Job}], st.peak[isoKey{t.WorkerType, t.Partner}]
	total := uint64(0)
	for _, g := range gpus {
		if g.MemoryTotal > 0 && (total == 0 || g.MemoryTotal < total) {
			total = g.MemoryTotal
		}
	}
	if pa > 0 && pb > 0 && total > 0 && pa+pb > total {
		return r.record(t, Record{Status: StatusInfeasible, Kind: "pair", Sharing: sharing,
			Reason: fmt.Sprintf("isolated peak memories %s + %s = %s exceed the device's %s",
				mib(pa), mib(pb), mib(pa+pb), mib(total))}, gpus), false
	}
	for _, g := range gpus {
		if sharing != MPS && (g.ComputeMode == "exclusive_process" || g.ComputeMode == "exclusive_thread" || g.ComputeMode == "prohibited") {
			return r.record(t, Record{Status: StatusFailed, Kind: "pair", Sharing: sharing,
				Reason: fmt.Sprintf("device %d is in compute mode %s, which forbids sharing without MPS", g.Index, g.ComputeMode)}, gpus), false
		}
	}
	return Record{}, true
}

func mib(b uint64) string { return fmt.Sprintf("%d MiB", b>>20) }

// measureIsolated measures j alone on gpus and remembers the rate for drift normalization.
func (r *Runner) measureIsolated(ctx context.Context, w string, j table.JobType, gpus []GPU, st *runState, mpsEnv []string, sharing Sharing, kind string) Record {
	m := measurer{settings: r.Settings, devices: r.Devices}
	out := m.measure(ctx, r.slot(gpus, mpsEnv), []string{j.Model}, []Command{r.command(j, gpus)})
	rec := Record{Kind: kind, Status: out.Status, Reason: out.Reason, Sharing: sharing,
		WarmupSeconds: out.WarmupSeconds, TotalSeconds: out.TotalSeconds}
	if out.Status == StatusOK {
		a := out.Jobs[0]
		rec.Rate, rec.RawRate, rec.CIHalfWidth, rec.Samples, rec.Seconds = a.Rate, a.Rate, a.HalfWidth, a.Batches, a.Seconds
		rec.PeakMemoryBytes, rec.PrecisionReached = a.PeakMemory, a.PrecisionOK
		st.mu.Lock()
		k := isoKey{w, j}
		st.recent[k] = recentIso{rate: a.Rate, at: time.Now()}
		st.peak[k] = max(st.peak[k], a.PeakMemory)
		if _, ok := st.table[k]; !ok {
			st.table[k] = a.Rate
		}
		st.mu.Unlock()
	} else if out.Status == StatusInfeasible {
		st.mu.Lock()
		st.table[isoKey{w, j}] = 0
		st.mu.Unlock()
	} else if ctx.Err() == nil {
		st.mu.Lock()
		st.failed[isoKey{w, j}] = out.Reason
		st.mu.Unlock()
	}
	return r.record(Task{WorkerType: w, Job: j}, rec, gpus)
}

// command returns j's command; the device variables are added by the slot.
func (r *Runner) command(j table.JobType, gpus []GPU) Command {
	c := r.Commands[j]
	c.Env = append(append([]string{}, c.Env...), deviceEnv(gpus)...)
	return c
}

// record fills in the task's identity.
func (r *Runner) record(t Task, rec Record, gpus []GPU) Record {
	rec.WorkerType = t.WorkerType
	rec.Job, rec.ScaleFactor = t.Job.Model, t.Job.ScaleFactor
	if t.IsPair() {
		rec.Partner, rec.PartnerScaleFactor = t.Partner.Model, t.Partner.ScaleFactor
	}
	if rec.Sharing == "" {
		rec.Sharing = r.Sharing
	}
	for _, g := range gpus {
		rec.GPUs = append(rec.GPUs, g.Index)
	}
	rec.Finished = now()
	return rec
}

// write merges rec into the table and the sidecar and saves both, sidecar first: a crash in
// between leaves a record whose table entry is missing, which a rerun measures again.
func (r *Runner) write(tbl *table.Table, side *Sidecar, sidePath string, rec *Record) error {
	w, a, b := rec.WorkerType, rec.JobType(), rec.PartnerType()
	switch {
	case rec.Partner == "" && rec.Status == StatusOK:
		if _, ok := tbl.Isolated(w, a); !ok {
			tbl.SetIsolated(w, a, rec.Rate)
		}
	case rec.Partner == "" && rec.Status == StatusInfeasible:
		if _, ok := tbl.Isolated(w, a); !ok || rec.Kind == "isolated" {
			tbl.SetIsolated(w, a, 0)
		}
	case rec.Status == StatusOK:
		rec.Rate = normalize(tbl, w, a, rec.RawRate, rec.IsolatedRate)
		rec.PartnerRate = normalize(tbl, w, b, rec.RawPartnerRate, rec.PartnerIsolatedRate)
		tbl.SetPair(w, a, b, rec.Rate, rec.PartnerRate)
	case rec.Status == StatusInfeasible:
		tbl.SetInfeasible(w, a, b)
	}
	side.Measurements = append(side.Measurements, *rec)
	if err := side.Save(sidePath); err != nil {
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
