package profile

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Settings bound a measurement. Zero fields take the defaults listed.
type Settings struct {
	// Window is the length of one batch (sub-window) of the batch-means estimator. Default 2.5s.
	Window time.Duration
	// Precision is the target relative 95% confidence half-width of the rate. Default 0.02.
	Precision float64
	// MinBatches is the least number of batches a measurement takes. Default 5.
	MinBatches int
	// MaxWindow bounds the measurement phase; the rate is then recorded with the precision
	// reached. Default 150s (Gavel's measurement time).
	MaxWindow time.Duration
	// Settle is the relative tolerance that ends the warm-up: the mean rate of the last
	// SettleBatches batches is within Settle of the SettleBatches before them. Default 0.10.
	Settle        float64
	SettleBatches int // default 2
	// MaxWarmup bounds the warm-up. Default 60s.
	MaxWarmup time.Duration
	// StartupTimeout bounds the wait for a job's first progress report. Default 10m.
	StartupTimeout time.Duration
	// StallTimeout: a job that reported progress and then none for this long is killed as
	// hung. Default 2m.
	StallTimeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL. Default 10s.
	KillGrace time.Duration
}

// Validate reports settings that the defaults would silently replace: negative values, and a
// single batch (a confidence interval needs two); and a MaxWindow too short for MinBatches.
func (s Settings) Validate() error { return s.validate(false) }

// ValidateGiven is Validate for settings whose measurement fields were all given, as command-line
// flags give them: a zero there is an error too, not "the default". (SettleBatches, which has
// no flag, keeps its zero default.)
func (s Settings) ValidateGiven() error { return s.validate(true) }

func (s Settings) validate(given bool) error {
	def := DefaultSettings()
	durations := []struct {
		name   string
		d, def time.Duration
	}{{"window", s.Window, def.Window}, {"max-window", s.MaxWindow, def.MaxWindow}, {"max-warmup", s.MaxWarmup, def.MaxWarmup},
		{"startup-timeout", s.StartupTimeout, def.StartupTimeout}, {"stall-timeout", s.StallTimeout, def.StallTimeout},
		{"kill-grace", s.KillGrace, def.KillGrace}}
	for _, d := range durations {
		if d.d < 0 || given && d.d == 0 {
			return fmt.Errorf("%s %s: want a positive duration (default %s)", d.name, d.d, d.def)
		}
	}
	switch {
	case s.Precision < 0 || s.Precision >= 1 || given && s.Precision == 0:
		return fmt.Errorf("precision %g: want a relative half-width in (0, 1) (default %g)", s.Precision, def.Precision)
	case s.MinBatches < 0 || s.MinBatches == 1 || given && s.MinBatches == 0:
		return fmt.Errorf("min-batches %d: want 2 or more (a confidence interval needs two batches; default %d)", s.MinBatches, def.MinBatches)
	case s.Settle < 0 || given && s.Settle == 0:
		return fmt.Errorf("settle %g: want a positive relative tolerance (default %g)", s.Settle, def.Settle)
	case s.SettleBatches < 0:
		return fmt.Errorf("settle-batches %d: want 1 or more", s.SettleBatches)
	}
	// MaxWindow must cover MinBatches windows. A batch ends every Window and the stop rule is
	// checked at each end, so anything above (MinBatches−1) × Window could finish, but only
	// when the ticks come on time; the rule keeps a full window of slack.
	if e := s.withDefaults(); e.MaxWindow < time.Duration(e.MinBatches)*e.Window {
		return fmt.Errorf("max-window %s must cover min-batches %d windows of %s (%s or more), or a measurement may stop short of its batches",
			e.MaxWindow, e.MinBatches, e.Window, time.Duration(e.MinBatches)*e.Window)
	}
	return nil
}

// DefaultSettings returns the defaults used by the zero Settings.
func DefaultSettings() Settings { return Settings{}.withDefaults() }

func (s Settings) withDefaults() Settings {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&s.Window, 2500*time.Millisecond)
	def(&s.MaxWindow, 150*time.Second)
	def(&s.MaxWarmup, 60*time.Second)
	def(&s.StartupTimeout, 10*time.Minute)
	def(&s.StallTimeout, 2*time.Minute)
	def(&s.KillGrace, 10*time.Second)
	if s.Precision <= 0 {
		s.Precision = 0.02
	}
	if s.MinBatches < 2 {
		s.MinBatches = 5
	}
	if s.Settle <= 0 {
		s.Settle = 0.10
	}
	if s.SettleBatches < 1 {
		s.SettleBatches = 2
	}
	return s
}

// Status is the outcome of a measurement.
type Status string

const (
	StatusOK         Status = "ok"
	StatusInfeasible Status = "infeasible" // out of memory: the job or pair cannot run there
	StatusFailed     Status = "failed"     // crash, hang, no progress, garbage: nothing learned
)

// jobRate is what a measurement learned about one job.
type jobRate struct {
	Rate        float64 // steps/s over the measurement window
	HalfWidth   float64 // 95% confidence half-width, steps/s
	Batches     int
	Steps       int64
	Seconds     float64 // length of the measurement window
	PeakMemory  uint64  // bytes of GPU memory, at most; 0 when unknown
	PrecisionOK bool    // HalfWidth/Rate reached Settings.Precision
}

// outcome is the result of measuring one job alone or a pair together.
type outcome struct {
	Status        Status
	Reason        string
	Jobs          []jobRate // one per command, in order
	WarmupSeconds float64
	TotalSeconds  float64 // start to end, including start-up and warm-up
	// Interrupted is set when cancellation ended the measurement. A result reached before
	// (Interrupted false) is final even if cancellation came while its jobs were being stopped.
	Interrupted bool
}

// deviceSlot is where a measurement runs: one device (or a group of devices for a multi-GPU job) and
// the complete environment its jobs get.
type deviceSlot struct {
	GPUs []GPU
	Env  []string // full environment, K=V; the per-job Command.Env is appended
}

// measurer runs one measurement.
type measurer struct {
	settings Settings
	devices  Devices // for peak memory; nil = not measured
	// baseline is the memory in use on each device before the jobs started.
	baseline map[int]uint64
	// hint receives a note on a job's progress format (see hintDelay); nil discards it.
	hint func(job, note string)
}

type phase int

const (
	phaseStartup phase = iota
	phaseWarmup
	phaseMeasure
)

// jobState follows one job through a measurement.
type jobState struct {
	p    *proc
	last event // last progress event
	// progressAt is when the count last went up (or first arrived): a job that keeps printing
	// the same count is hung, not progressing.
	progressAt time.Time
	started    bool
	anchor     event // progress at the last batch boundary
	warm, meas batches
	exited     bool
	peak       uint64
	// hint is the job's evHint, held until hintDelay has passed without a progress report.
	hint *event
}

// session is one measurement in progress: the jobs started together on one slot, the phase
// they are in, and what has been learned so far.
type session struct {
	m      *measurer
	s      Settings
	slot   deviceSlot
	names  []string
	jobs   []*jobState
	events chan event
	start  time.Time
	ph     phase
	// warmStart and measStart are the window boundaries at which the phases began.
	warmStart, measStart time.Time
	tickAt               time.Time // end of the current window
	shifts               int       // restarts of the measuring phase (see anyShifted)
	out                  outcome
}

// maxShifts bounds how often a measurement starts again on a shift of a job's rate: a rate that
// keeps moving is then measured as it is, blend and wide interval included.
const maxShifts = 3

// verdict ends a measurement when done is set.
type verdict struct {
	done        bool
	status      Status
	reason      string
	interrupted bool
}

func stopWith(st Status, reason string) verdict {
	return verdict{done: true, status: st, reason: reason}
}

func interrupted(ctx context.Context) verdict {
	v := stopWith(StatusFailed, "interrupted: "+context.Cause(ctx).Error())
	v.interrupted = true
	return v
}

// measure runs cmds together on slot and measures their rates over common windows.
func (m *measurer) measure(ctx context.Context, slot deviceSlot, names []string, cmds []Command) outcome {
	ses := &session{m: m, s: m.settings.withDefaults(), slot: slot, names: names,
		jobs: make([]*jobState, len(cmds)), events: make(chan event, 256), start: time.Now()}
	if ctx.Err() != nil {
		return ses.finish(interrupted(ctx)) // nothing started: no job to stop
	}
	m.takeBaseline(ctx, slot)
	if v := ses.startJobs(cmds); v.done {
		return ses.finish(v)
	}
	ses.tickAt = time.Now().Add(ses.s.Window)
	al := newAlarm(ses.nextWake())
	defer al.t.Stop()
	for {
		var v verdict
		select {
		case <-ctx.Done():
			v = interrupted(ctx)
		case ev := <-ses.events:
			v = ses.handle(ev)
			// A first report replaces the start-up deadline by an often much earlier stall
			// deadline; a later report only moves deadlines later, and a wake-up before one
			// merely finds nothing due, so the alarm is only ever brought forward here.
			al.advanceTo(ses.nextWake())
		case now := <-al.t.C:
			v = ses.wake(ctx, now)
			al.set(ses.nextWake())
		}
		if v.done {
			return ses.finish(v)
		}
	}
}

// alarm is the measurement's timer with the moment it is armed for, which a timer does not
// tell, so that a deadline earlier than that moment can be seen and the timer re-armed.
type alarm struct {
	t  *time.Timer
	at time.Time
}

func newAlarm(at time.Time) *alarm {
	return &alarm{t: time.NewTimer(time.Until(at)), at: at}
}

// advanceTo re-arms the alarm for at when that is earlier than the moment it is armed for.
func (a *alarm) advanceTo(at time.Time) {
	if at.Before(a.at) {
		a.set(at)
	}
}

// set arms the alarm for at. A tick left unread in the channel would wake the loop at once
// instead of at at; Go 1.23 timers drop it on Stop, and the drain keeps that so under the older
// semantics (GODEBUG asynctimerchan=1).
func (a *alarm) set(at time.Time) {
	if !a.t.Stop() {
		select {
		case <-a.t.C:
		default:
		}
	}
	a.t.Reset(time.Until(at))
	a.at = at
}

// hintDelay is how long a job that prints but has not reported progress runs before the hint
// on its progress format: jobs often print many lines (logs, a redrawn bar) before their first
// report, and a hint is worth having only when the start-up timeout would be a long wait.
func hintDelay(s Settings) time.Duration { return min(s.StartupTimeout/2, time.Minute) }

// giveHints passes on the hint of every job that has printed many lines, reported no progress
// and run hintDelay.
func (ses *session) giveHints(now time.Time) {
	for i, j := range ses.jobs {
		if j.hint == nil || j.started || now.Sub(ses.start) < hintDelay(ses.s) {
			continue
		}
		if ses.m.hint != nil {
			ses.m.hint(ses.names[i], fmt.Sprintf("%d output lines and no progress report in %s (%v); one line was: %q",
				hintAfterLines, hintDelay(ses.s), j.hint.err, j.hint.text))
		}
		j.hint = nil
	}
}

// nextWake returns the end of the current window or, when earlier, the moment a job would time
// out: the start-up timeout of one that has not reported, the stall timeout of one that has. A
// timeout that waited for the window to end would stretch a 1 s --startup-timeout to --window.
func (ses *session) nextWake() time.Time {
	at := ses.tickAt
	for _, j := range ses.jobs {
		due := j.progressAt.Add(ses.s.StallTimeout)
		if !j.started {
			due = ses.start.Add(ses.s.StartupTimeout)
			if j.hint != nil {
				due = ses.start.Add(hintDelay(ses.s))
			}
		}
		if due.Before(at) {
			at = due
		}
	}
	return at
}

// wake handles the timer: at the end of a window it closes the window; before, it only checks
// the timeouts, after taking the lines already read so that a report in time is not missed.
func (ses *session) wake(ctx context.Context, now time.Time) verdict {
	if now.Before(ses.tickAt) {
		return ses.poll(now)
	}
	v := ses.tick(ctx, now)
	ses.tickAt = time.Now().Add(ses.s.Window)
	return v
}

func (ses *session) startJobs(cmds []Command) verdict {
	for i, c := range cmds {
		env := append(append([]string{}, ses.slot.Env...), c.Env...)
		p, err := startProc(c, env, i, ses.events)
		if err != nil {
			return stopWith(StatusFailed, fmt.Sprintf("%s: cannot start: %v", ses.names[i], err))
		}
		ses.jobs[i] = &jobState{p: p}
	}
	return verdict{}
}

// finish stops every job, waits for their exits so that no reader or process outlives the
// measurement, and returns the outcome (rates only when ok).
func (ses *session) finish(v verdict) outcome {
	if v.status == StatusOK {
		ses.m.collect(&ses.out, ses.jobs, ses.s)
		v = ses.refuseZeroRates(v)
	}
	var procs []*proc
	for _, j := range ses.jobs {
		if j != nil {
			procs = append(procs, j.p)
		}
	}
	// Output keeps being read while the jobs stop: a reader blocked on a full channel would
	// hold up the exit of its job.
	stopped := make(chan struct{})
	go func() {
		stopAll(procs, ses.s.KillGrace)
		close(stopped)
	}()
	drain(ses.events, ses.jobs)
	<-stopped
	for _, j := range ses.jobs {
		if j != nil {
			j.p.release()
		}
	}
	ses.out.Status, ses.out.Reason, ses.out.Interrupted = v.status, v.reason, v.interrupted
	ses.out.TotalSeconds = time.Since(ses.start).Seconds()
	if v.status != StatusOK {
		ses.out.Jobs = nil
	}
	return ses.out
}

// refuseZeroRates turns an ok verdict into a failure when a job made no progress over the
// measurement: a rate of 0 in the table means "cannot run there", which a job that merely
// stopped counting has not shown.
func (ses *session) refuseZeroRates(v verdict) verdict {
	for i, r := range ses.out.Jobs {
		if r.Rate <= 0 {
			return stopWith(StatusFailed, fmt.Sprintf("%s: no progress during the measurement (%d steps in %d batches); not recorded as a rate of 0",
				ses.names[i], r.Steps, r.Batches))
		}
	}
	return v
}

// handle takes one event of a job.
func (ses *session) handle(ev event) verdict {
	j, name := ses.jobs[ev.job], ses.names[ev.job]
	switch ev.kind {
	case evProgress:
		if !j.started || ev.steps > j.last.steps {
			j.progressAt = ev.at
		}
		j.last = ev
		if !j.started {
			j.started = true
			j.anchor = ev
		}
	case evMalformed:
		return stopWith(StatusFailed, fmt.Sprintf("%s: %v", name, ev.err))
	case evOOM:
		return stopWith(StatusInfeasible, fmt.Sprintf("%s: out of memory: %s", name, ev.text))
	case evHint:
		j.hint = &ev
	case evExit:
		j.exited = true
		return ses.jobExited(j, name, ev.err)
	}
	return verdict{}
}

// jobExited decides a measurement one of whose jobs ended by itself: a clean exit once every job
// has enough batches still gives rates; anything else fails with the job's last words.
func (ses *session) jobExited(j *jobState, name string, err error) verdict {
	if err == nil && ses.ph == phaseMeasure && enoughBatches(ses.jobs, ses.s) {
		return stopWith(StatusOK, fmt.Sprintf("%s exited during the measurement; rates are from %d batches", name, j.meas.n()))
	}
	why := exitReason(err)
	if tail := j.p.lastLines(); tail != "" {
		why += ": " + tail
	}
	if err == nil {
		return stopWith(StatusFailed, fmt.Sprintf("%s %s before the measurement finished", name, why))
	}
	return stopWith(StatusFailed, fmt.Sprintf("%s %s", name, why))
}

// tick closes a window: it takes the lines read before the boundary, checks for hung jobs,
// samples memory and moves the measurement on.
func (ses *session) tick(ctx context.Context, now time.Time) verdict {
	if v := ses.poll(now); v.done {
		return v
	}
	ses.m.sampleMemory(ctx, ses.slot, ses.jobs)
	return ses.advance(now)
}

// poll takes the events already queued and then checks the start-up and stall timeouts at now.
func (ses *session) poll(now time.Time) verdict {
	if v := ses.takeEvents(); v.done {
		return v
	}
	ses.giveHints(now)
	if reason := stalled(ses.jobs, ses.names, now, ses.start, ses.s); reason != "" {
		return stopWith(StatusFailed, reason)
	}
	return verdict{}
}

// takeEvents handles the events already queued, without waiting for more.
func (ses *session) takeEvents() verdict {
	for {
		select {
		case ev := <-ses.events:
			if v := ses.handle(ev); v.done {
				return v
			}
		default:
			return verdict{}
		}
	}
}

// advance closes the batches of the window that ends at now and moves from start-up to
// warm-up to measurement; the measurement ends at the requested precision or at MaxWindow.
func (ses *session) advance(now time.Time) verdict {
	s, jobs := ses.s, ses.jobs
	switch ses.ph {
	case phaseStartup:
		if allStarted(jobs) {
			ses.ph, ses.warmStart = phaseWarmup, now
			for _, j := range jobs {
				j.anchor = j.last
			}
		}
	case phaseWarmup:
		addBatches(jobs, false)
		if allSettled(jobs, s) || now.Sub(ses.warmStart) >= s.MaxWarmup {
			ses.ph, ses.measStart = phaseMeasure, now
			ses.out.WarmupSeconds = now.Sub(ses.warmStart).Seconds()
		}
	case phaseMeasure:
		addBatches(jobs, true)
		// Room for a whole measurement before --max-window, which bounds the measuring phase
		// from its first start whatever restarts it.
		room := now.Add(time.Duration(s.MinBatches)*s.Window).Sub(ses.measStart) <= s.MaxWindow
		if ses.shifts < maxShifts && room && anyShifted(jobs, s) {
			// The warm-up ended on a steady start-up phase (a slow data loader, a first epoch
			// being cached): the rate moved since, and keeping the batches before the move
			// would record a blend of the two. Measuring starts again from here; what was
			// measured before counts as warm-up.
			ses.shifts++
			ses.out.WarmupSeconds = now.Sub(ses.warmStart).Seconds()
			for _, j := range jobs {
				// The last batches, at the new level, are what a later shift is judged against.
				j.warm = batches{rates: slices.Clone(j.meas.tail(s.SettleBatches))}
				j.meas = batches{}
			}
			return verdict{}
		}
		over := now.Sub(ses.measStart) >= s.MaxWindow
		if enoughBatches(jobs, s) && (precise(jobs, s) || over) {
			return stopWith(StatusOK, "")
		}
		if over {
			return stopWith(StatusFailed, fmt.Sprintf("too few progress reports: %d batches in %s", minBatches(jobs), s.MaxWindow))
		}
	}
	return verdict{}
}

// drain consumes events until every started job has reported its exit.
func drain(events chan event, jobs []*jobState) {
	for _, j := range jobs {
		if j == nil || j.exited {
			continue
		}
		for ev := range events {
			if ev.kind == evExit {
				jobs[ev.job].exited = true
				if jobs[ev.job] == j {
					break
				}
			}
		}
	}
}

// addBatches closes the current batch of every job at its latest progress report. A job that
// reported nothing since the last boundary extends its batch into the next window.
func addBatches(jobs []*jobState, measuring bool) {
	for _, j := range jobs {
		if !j.last.at.After(j.anchor.at) {
			continue
		}
		steps := float64(j.last.steps - j.anchor.steps)
		secs := j.last.at.Sub(j.anchor.at).Seconds()
		if measuring {
			j.meas.add(steps, secs)
		} else {
			j.warm.add(steps, secs)
		}
		j.anchor = j.last
	}
}

func allStarted(jobs []*jobState) bool {
	for _, j := range jobs {
		if !j.started {
			return false
		}
	}
	return true
}

func allSettled(jobs []*jobState, s Settings) bool {
	for _, j := range jobs {
		if !j.warm.settled(s.SettleBatches, s.Settle) {
			return false
		}
	}
	return true
}

// anyShifted reports whether some job's measured rate moved to a new level (see
// batches.shifted): its last SettleBatches batches against the warm-up's last 2×SettleBatches
// (those the warm-up ended on) and the measured ones before, with the warm-up's Settle.
func anyShifted(jobs []*jobState, s Settings) bool {
	for _, j := range jobs {
		if j.meas.shifted(j.warm.tail(2*s.SettleBatches), s.SettleBatches, s.Settle) {
			return true
		}
	}
	return false
}

func enoughBatches(jobs []*jobState, s Settings) bool { return minBatches(jobs) >= s.MinBatches }

func minBatches(jobs []*jobState) int {
	n := math.MaxInt
	for _, j := range jobs {
		n = min(n, j.meas.n())
	}
	return n
}

func precise(jobs []*jobState, s Settings) bool {
	for _, j := range jobs {
		if j.meas.relHalfWidth() > s.Precision {
			return false
		}
	}
	return true
}

// stalled names a job that never reported within the start-up timeout, or stopped reporting
// for longer than the stall timeout.
func stalled(jobs []*jobState, names []string, now, start time.Time, s Settings) string {
	for i, j := range jobs {
		if !j.started {
			if now.Sub(start) >= s.StartupTimeout {
				return fmt.Sprintf("%s: no progress report within %s (expected lines like %q or --progress-regex)", names[i], s.StartupTimeout, DefaultProgressPrefix+" <steps>")
			}
			continue
		}
		if now.Sub(j.progressAt) >= s.StallTimeout {
			return fmt.Sprintf("%s: no progress for %s after %d steps; killed as hung", names[i], s.StallTimeout, j.last.steps)
		}
	}
	return ""
}

func (m *measurer) collect(out *outcome, jobs []*jobState, s Settings) {
	out.Jobs = make([]jobRate, len(jobs))
	for i, j := range jobs {
		hw := j.meas.halfWidth()
		if math.IsInf(hw, 0) {
			hw = 0
		}
		out.Jobs[i] = jobRate{Rate: j.meas.rate(), HalfWidth: hw, Batches: j.meas.n(), Steps: int64(j.meas.steps),
			Seconds: j.meas.seconds, PeakMemory: j.peak, PrecisionOK: j.meas.relHalfWidth() <= s.Precision}
	}
}

func (m *measurer) takeBaseline(ctx context.Context, slot deviceSlot) {
	m.baseline = map[int]uint64{}
	if m.devices == nil {
		return
	}
	for _, g := range slot.GPUs {
		if !g.CPU {
			if u, err := m.devices.MemoryUsed(ctx, g.Index); err == nil {
				m.baseline[g.Index] = u
			}
		}
	}
}

// sampleMemory adds up the GPU memory of each job's process group on the slot's devices and
// keeps the peak. When a job measured alone has no process that can be matched by id (a
// container with its own PID namespace), the growth of the devices' memory in use since the
// start stands in.
func (m *measurer) sampleMemory(ctx context.Context, slot deviceSlot, jobs []*jobState) {
	if m.devices == nil {
		return
	}
	used := make([]uint64, len(jobs))
	matched := false
	var growth uint64
	for _, g := range slot.GPUs {
		if g.CPU {
			continue
		}
		if u, err := m.devices.MemoryUsed(ctx, g.Index); err == nil && u > m.baseline[g.Index] {
			growth += u - m.baseline[g.Index]
		}
		mem, err := m.devices.ProcessMemory(ctx, g.Index)
		if err != nil {
			continue
		}
		for pid, b := range mem {
			pg, ok := pgidOf(pid)
			if !ok {
				continue
			}
			for i, j := range jobs {
				if j.p.pgid == pg {
					used[i] += b
					matched = true
				}
			}
		}
	}
	if !matched && len(jobs) == 1 {
		used[0] = growth
	}
	for i, j := range jobs {
		j.peak = max(j.peak, used[i])
	}
}
