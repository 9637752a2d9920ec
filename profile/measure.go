package profile

import (
	"context"
	"fmt"
	"math"
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
}

type phase int

const (
	phaseStartup phase = iota
	phaseWarmup
	phaseMeasure
)

// jobState follows one job through a measurement.
type jobState struct {
	p          *proc
	last       event // last progress event
	started    bool
	anchor     event // progress at the last batch boundary
	warm, meas batches
	exited     bool
	peak       uint64
}

// measure runs cmds together on slot and measures their rates over common windows.
func (m *measurer) measure(ctx context.Context, slot deviceSlot, names []string, cmds []Command) outcome {
	s := m.settings.withDefaults()
	start := time.Now()
	events := make(chan event, 256)
	jobs := make([]*jobState, len(cmds))
	out := outcome{}
	finish := func(st Status, reason string) outcome {
		for _, j := range jobs {
			if j != nil {
				j.p.stop(s.KillGrace)
			}
		}
		drain(events, jobs)
		for _, j := range jobs {
			if j != nil {
				close(j.p.abandon)
			}
		}
		out.Status, out.Reason = st, reason
		out.TotalSeconds = time.Since(start).Seconds()
		if st != StatusOK {
			out.Jobs = nil
		}
		return out
	}
	m.takeBaseline(ctx, slot)
	for i, c := range cmds {
		env := append(append([]string{}, slot.Env...), c.Env...)
		p, err := startProc(c, env, i, events)
		if err != nil {
			return finish(StatusFailed, fmt.Sprintf("%s: cannot start: %v", names[i], err))
		}
		jobs[i] = &jobState{p: p}
	}

	ph := phaseStartup
	var boundary, warmStart, measStart time.Time
	timer := time.NewTimer(s.Window)
	defer timer.Stop()
	handle := func(ev event) (done bool, st Status, reason string) {
		j := jobs[ev.job]
		name := names[ev.job]
		switch ev.kind {
		case evProgress:
			j.last = ev
			if !j.started {
				j.started = true
				j.anchor = ev
			}
		case evMalformed:
			return true, StatusFailed, fmt.Sprintf("%s: %v", name, ev.err)
		case evOOM:
			return true, StatusInfeasible, fmt.Sprintf("%s: out of memory: %s", name, ev.text)
		case evExit:
			j.exited = true
			if ev.err == nil && ph == phaseMeasure && enoughBatches(jobs, s) {
				return true, StatusOK, fmt.Sprintf("%s exited during the measurement; rates are from %d batches", name, j.meas.n())
			}
			why := exitReason(ev.err)
			if tail := j.p.lastLines(); tail != "" {
				why += ": " + tail
			}
			if ev.err == nil {
				return true, StatusFailed, fmt.Sprintf("%s %s before the measurement finished", name, why)
			}
			return true, StatusFailed, fmt.Sprintf("%s %s", name, why)
		}
		return false, "", ""
	}
	for {
		select {
		case <-ctx.Done():
			return finish(StatusFailed, "interrupted: "+context.Cause(ctx).Error())
		case ev := <-events:
			if done, st, reason := handle(ev); done {
				if st == StatusOK {
					m.collect(&out, jobs, s)
				}
				return finish(st, reason)
			}
		case now := <-timer.C:
			// Lines read before the boundary may still be queued: take them first.
			for drained := false; !drained; {
				select {
				case ev := <-events:
					if done, st, reason := handle(ev); done {
						if st == StatusOK {
							m.collect(&out, jobs, s)
						}
						return finish(st, reason)
					}
				default:
					drained = true
				}
			}
			m.sampleMemory(ctx, slot, jobs)
			if reason := stalled(jobs, names, now, start, s); reason != "" {
				return finish(StatusFailed, reason)
			}
			switch ph {
			case phaseStartup:
				if allStarted(jobs) {
					ph, warmStart, boundary = phaseWarmup, now, now
					for _, j := range jobs {
						j.anchor = j.last
					}
				}
			case phaseWarmup:
				boundary = now
				addBatches(jobs, false)
				if allSettled(jobs, s) || now.Sub(warmStart) >= s.MaxWarmup {
					ph, measStart = phaseMeasure, boundary
					out.WarmupSeconds = now.Sub(warmStart).Seconds()
				}
			case phaseMeasure:
				boundary = now
				addBatches(jobs, true)
				if enoughBatches(jobs, s) && (precise(jobs, s) || now.Sub(measStart) >= s.MaxWindow) {
					m.collect(&out, jobs, s)
					return finish(StatusOK, "")
				}
				if now.Sub(measStart) >= s.MaxWindow {
					return finish(StatusFailed, fmt.Sprintf("too few progress reports: %d batches in %s", minBatches(jobs), s.MaxWindow))
				}
			}
			timer.Reset(s.Window)
		}
	}
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
		if now.Sub(j.last.at) >= s.StallTimeout {
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
