package profile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelkit/gavel/table"
)

// A start-up phase steady long enough to end the warm-up (here 0.7 s at a fifth of the rate,
// warm-up windows of 0.1 s) is not blended into the rate: the measurement starts again when the
// rate moves (a reviewer's job, slow for its first 3 s, was recorded at 78 for 100 steps/s).
func TestRunSlowStartNotBlended(t *testing.T) {
	model := jt("model")
	r := newRunner(t, 1, map[table.JobType]Command{
		model: workload("-rate", "1000", "-warmup-steps", "140", "-warmup-factor", "5"),
	})
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: model}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Status != StatusOK {
		t.Fatalf("records = %+v, want one ok", recs)
	}
	within(t, "rate", recs[0].Rate, 1000, 0.06)
	checkNoLeftovers(t)
}

func TestRunIsolated(t *testing.T) {
	model := jt("model")
	r := newRunner(t, 1, map[table.JobType]Command{
		model: workload("-rate", "200", "-noise", "0.25", "-warmup-steps", "30"),
	})
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: model}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Status != StatusOK {
		t.Fatalf("records = %+v, want one ok", recs)
	}
	rec := recs[0]
	within(t, "rate", rec.Rate, 200, 0.3)
	if rec.Samples < 5 || rec.CIHalfWidth <= 0 || rec.Seconds <= 0 || rec.Sharing != TimeSlicing {
		t.Errorf("record = %+v: want >= 5 samples, a positive CI half-width and seconds, time-slicing", rec)
	}
	tbl, err := table.Load(r.TablePath)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := tbl.Isolated("cpu", model); !ok || got != rec.Rate {
		t.Errorf("table isolated = %v, %v; want %v", got, ok, rec.Rate)
	}
	side, err := LoadSidecar(SidecarPath(r.TablePath))
	if err != nil {
		t.Fatal(err)
	}
	if len(side.Measurements) != 1 || side.Measurements[0].Rate != rec.Rate || side.Sharing != TimeSlicing {
		t.Errorf("sidecar = %+v", side)
	}
	checkNoLeftovers(t)
}

func TestRunProgressFormats(t *testing.T) {
	iter, _ := ParseProgressFormat(`^iter (\d+)/`)
	tick, _ := ParseProgressFormat(`^step done$`)
	cmds := map[table.JobType]Command{}
	c := workload("-rate", "150", "-format", "iter")
	c.Progress = iter
	cmds[jt("iter")] = c
	c = workload("-rate", "150", "-format", "tick", "-report-every", "5", "-stderr")
	c.Progress = tick
	cmds[jt("tick")] = c
	r := newRunner(t, 2, cmds)
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: jt("iter")}, {WorkerType: "cpu", Job: jt("tick")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"iter", "tick"} {
		rec := findRecord(recs, "isolated", name, "")
		if rec == nil || rec.Status != StatusOK {
			t.Fatalf("%s: record %+v", name, rec)
		}
		within(t, name+" rate", rec.Rate, 150, 0.3)
	}
}

// TestRunPairs co-locates jobs on simulated devices where k jobs share time equally: each
// keeps about half its isolated rate.
func TestRunPairs(t *testing.T) {
	share := t.TempDir()
	model, ref := jt("model"), jt("ref")
	r := newRunner(t, 2, map[table.JobType]Command{
		model: workload("-rate", "200", "-share-dir", share),
		ref:   workload("-rate", "100", "-share-dir", share),
	})
	tasks, _, err := Plan(PlanSpec{Model: model, References: []table.JobType{ref}, WorkerTypes: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 4 {
		t.Fatalf("plan = %v, want 2 isolated and 2 pairs", tasks)
	}
	var planned int
	r.OnPlanned = func(todo, skipped int) { planned = todo }
	recs, err := r.Run(context.Background(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	if planned != 4 {
		t.Errorf("planned = %d, want 4", planned)
	}
	tbl, err := table.Load(r.TablePath)
	if err != nil {
		t.Fatal(err)
	}
	iso, _ := tbl.Isolated("cpu", model)
	within(t, "model isolated", iso, 200, 0.3)
	isoRef, _ := tbl.Isolated("cpu", ref)
	within(t, "ref isolated", isoRef, 100, 0.3)
	for _, p := range [][2]table.JobType{{model, ref}, {model, model}} {
		na, nb, s := tbl.Normalized("cpu", p[0], p[1])
		if s != table.Measured {
			t.Fatalf("pair %v: state %v; records %+v", p, s, recs)
		}
		within(t, p[0].Model+" normalized", na, 0.5, 0.3)
		within(t, p[1].Model+" normalized", nb, 0.5, 0.3)
	}
	rec := findRecord(recs, "pair", "model", "ref")
	if rec == nil || rec.Samples < 5 || rec.PartnerSamples < 5 || rec.Sharing != TimeSlicing {
		t.Fatalf("pair record = %+v", rec)
	}
	within(t, "raw pair rate of model", rec.RawRate, 100, 0.3)
	within(t, "raw pair rate of ref", rec.RawPartnerRate, 50, 0.3)
	// The two copies of the model share one entry: their mean in both slots, as Gavel's
	// profiler stores a self-pair (one slot alone was the first copy's rate).
	self := findRecord(recs, "pair", "model", "model")
	ra, rb, _ := tbl.Pair("cpu", model, model)
	if self == nil || ra != rb || math.Abs(ra-(self.Rate+self.PartnerRate)/2) > 1e-9*ra {
		t.Errorf("self-pair stored as [%v, %v]; record %+v: want the mean of its two rates in both slots", ra, rb, self)
	}
	checkNoLeftovers(t)
}

// TestRunDriftNormalization: the table's isolated rate came from an earlier, faster session.
// The pair is normalized by the isolated rate measured now, so the slowdown in the table is
// the real one (0.5), not 0.25.
func TestRunDriftNormalization(t *testing.T) {
	share := t.TempDir()
	model := jt("model")
	r := newRunner(t, 1, map[table.JobType]Command{model: workload("-rate", "200", "-share-dir", share)})
	old := table.New()
	old.SetIsolated("cpu", model, 400)
	if err := old.Save(r.TablePath); err != nil {
		t.Fatal(err)
	}
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: model}, {WorkerType: "cpu", Job: model, Partner: model}})
	if err != nil {
		t.Fatal(err)
	}
	refresh := findRecord(recs, "refresh", "model", "")
	if refresh == nil || refresh.Status != StatusOK {
		t.Fatalf("no isolated re-measurement before the pair: %+v", recs)
	}
	within(t, "re-measured isolated", refresh.Rate, 200, 0.3)
	tbl, _ := table.Load(r.TablePath)
	if iso, _ := tbl.Isolated("cpu", model); iso != 400 {
		t.Errorf("table isolated = %v, want the original 400", iso)
	}
	ra, rb, _ := tbl.Pair("cpu", model, model)
	within(t, "stored pair rate", ra, 200, 0.3) // raw ~100 × 400/200
	within(t, "stored pair rate (partner)", rb, 200, 0.3)
	na, _, _ := tbl.Normalized("cpu", model, model)
	within(t, "normalized", na, 0.5, 0.3)
}

func TestRunFaults(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		status Status
		reason string
	}{
		{"crash", []string{"-fault", "crash", "-fault-after", "20"}, StatusFailed, "exited with status 3"},
		{"hang", []string{"-fault", "hang", "-fault-after", "20", "-spawn-child"}, StatusFailed, "killed as hung"},
		{"never reports", []string{"-fault", "silent"}, StatusFailed, "no progress report within"},
		{"stops reporting", []string{"-fault", "stall", "-fault-after", "20"}, StatusFailed, "killed as hung"},
		{"garbage", []string{"-fault", "garbage", "-fault-after", "5"}, StatusFailed, "malformed progress line"},
		{"out of memory", []string{"-fault", "oom", "-fault-after", "5"}, StatusInfeasible, "CUDA out of memory"},
		{"exits early", []string{"-fault", "exit", "-fault-after", "10"}, StatusFailed, "before the measurement finished"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad, good := jt("bad"), jt("good")
			r := newRunner(t, 2, map[table.JobType]Command{
				bad:  workload(append([]string{"-rate", "200"}, tc.args...)...),
				good: workload("-rate", "200"),
			})
			recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: bad}, {WorkerType: "cpu", Job: good}})
			if err != nil {
				t.Fatal(err)
			}
			rec := findRecord(recs, "isolated", "bad", "")
			if rec == nil || rec.Status != tc.status || !strings.Contains(rec.Reason, tc.reason) {
				t.Fatalf("bad job's record = %+v, want status %s with reason containing %q", rec, tc.status, tc.reason)
			}
			if g := findRecord(recs, "isolated", "good", ""); g == nil || g.Status != StatusOK {
				t.Errorf("the good job's measurement did not go on: %+v", g)
			}
			tbl, err := table.Load(r.TablePath)
			if err != nil {
				t.Fatal(err)
			}
			rate, ok := tbl.Isolated("cpu", bad)
			switch tc.status {
			case StatusInfeasible:
				if !ok || rate != 0 {
					t.Errorf("table isolated of an out-of-memory job = %v, %v; want 0 (cannot run)", rate, ok)
				}
			case StatusFailed:
				if ok {
					t.Errorf("a failed measurement reached the table: %v", rate)
				}
			}
			side, _ := LoadSidecar(SidecarPath(r.TablePath))
			if len(side.Measurements) != 2 {
				t.Errorf("sidecar has %d records, want 2", len(side.Measurements))
			}
			checkNoLeftovers(t)
		})
	}
}

// TestRunPairOutOfMemory: a pair whose job runs out of memory only when sharing is recorded
// infeasible, and the run goes on.
func TestRunPairOutOfMemory(t *testing.T) {
	share := t.TempDir()
	model, ref := jt("model"), jt("big")
	r := newRunner(t, 1, map[table.JobType]Command{
		model: workload("-rate", "200", "-share-dir", share),
		ref:   workload("-rate", "200", "-share-dir", share, "-fault", "oom-shared"),
	})
	recs, err := r.Run(context.Background(), []Task{
		{WorkerType: "cpu", Job: model}, {WorkerType: "cpu", Job: ref},
		{WorkerType: "cpu", Job: ref, Partner: model},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := findRecord(recs, "pair", "big", "model")
	if rec == nil || rec.Status != StatusInfeasible || !strings.Contains(rec.Reason, "out of memory") {
		t.Fatalf("pair record = %+v", rec)
	}
	tbl, _ := table.Load(r.TablePath)
	if _, _, s := tbl.Pair("cpu", model, ref); s != table.Infeasible {
		t.Errorf("table pair state = %v, want infeasible", s)
	}
	checkNoLeftovers(t)
}

func TestRunResume(t *testing.T) {
	model, ref := jt("model"), jt("crashy")
	r := newRunner(t, 2, map[table.JobType]Command{
		model: workload("-rate", "200"),
		ref:   workload("-rate", "200", "-fault", "crash", "-fault-after", "5"),
	})
	tasks := []Task{{WorkerType: "cpu", Job: model}, {WorkerType: "cpu", Job: ref}}
	first, err := r.Run(context.Background(), tasks)
	if err != nil || len(first) != 2 {
		t.Fatalf("first run: %v, %+v", err, first)
	}
	var todo, skipped int
	r.OnPlanned = func(t, s int) { todo, skipped = t, s }
	second, err := r.Run(context.Background(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	// The measured job is skipped; the failed one is tried again.
	if todo != 1 || skipped != 1 || len(second) != 1 || second[0].Job != "crashy" {
		t.Errorf("second run: todo %d skipped %d records %+v; want only the failed job again", todo, skipped, second)
	}
	side, _ := LoadSidecar(SidecarPath(r.TablePath))
	if len(side.Measurements) != 3 {
		t.Errorf("sidecar has %d records, want 3 (nothing lost)", len(side.Measurements))
	}
	tbl, _ := table.Load(r.TablePath)
	if rate, _ := tbl.Isolated("cpu", model); rate != findRecord(first, "isolated", "model", "").Rate {
		t.Errorf("table rate changed on resume: %v", rate)
	}
}

// TestRunInterrupt cancels the run after the first result: every job is killed, Run returns
// the cancellation, and the table holds exactly what was finished.
func TestRunInterrupt(t *testing.T) {
	short, long := jt("short"), jt("long")
	r := newRunner(t, 2, map[table.JobType]Command{
		// Exits by itself about three seconds in, during its measurement: an ok record.
		short: workload("-rate", "200", "-fault", "exit", "-fault-after", "600"),
		// Never reaches the precision and ignores SIGTERM: runs until killed.
		long: workload("-rate", "200", "-noise", "0.9", "-ignore-term", "-spawn-child"),
	})
	r.Settings.MaxWindow = time.Minute
	r.Settings.Precision = 1e-6
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.OnRecord = func(Record) { cancel() }
	recs, err := r.Run(ctx, []Task{{WorkerType: "cpu", Job: long}, {WorkerType: "cpu", Job: short}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
	if len(recs) != 1 || recs[0].Job != "short" || recs[0].Status != StatusOK {
		t.Fatalf("records = %+v, want the short job's only", recs)
	}
	checkNoLeftovers(t)
	tbl, err := table.Load(r.TablePath)
	if err != nil {
		t.Fatalf("table after interrupt: %v", err)
	}
	if _, ok := tbl.Isolated("cpu", long); ok {
		t.Error("the interrupted measurement reached the table")
	}
	if rate, ok := tbl.Isolated("cpu", short); !ok || rate != recs[0].Rate {
		t.Errorf("finished measurement lost: %v, %v", rate, ok)
	}
	side, err := LoadSidecar(SidecarPath(r.TablePath))
	if err != nil || len(side.Measurements) != 1 {
		t.Fatalf("sidecar after interrupt: %v, %+v", err, side)
	}
}

// TestRunPairsAfterFailedIsolated: when a job's isolated measurement fails, its pairs are
// recorded failed at once instead of measuring the job alone again before each of them.
func TestRunPairsAfterFailedIsolated(t *testing.T) {
	model, silent := jt("model"), jt("silent")
	r := newRunner(t, 1, map[table.JobType]Command{
		model:  workload("-rate", "200"),
		silent: workload("-rate", "200", "-fault", "silent"),
	})
	r.Settings.StartupTimeout = time.Second
	recs, err := r.Run(context.Background(), []Task{
		{WorkerType: "cpu", Job: model}, {WorkerType: "cpu", Job: silent},
		{WorkerType: "cpu", Job: model, Partner: silent}, {WorkerType: "cpu", Job: silent, Partner: silent},
	})
	if err != nil {
		t.Fatal(err)
	}
	if iso := findRecord(recs, "isolated", "silent", ""); iso == nil || iso.Status != StatusFailed {
		t.Fatalf("isolated record of the silent job = %+v, want failed", iso)
	}
	if n := len(recs); n != 4 {
		t.Errorf("%d records, want 4 (no re-measurement of the failed job): %+v", n, recs)
	}
	for _, p := range []string{"model", "silent"} {
		rec := findRecord(recs, "pair", p, "silent")
		if rec == nil || rec.Status != StatusFailed || rec.TotalSeconds != 0 ||
			!strings.Contains(rec.Reason, "isolated measurement of silent failed") {
			t.Errorf("pair %s+silent = %+v, want failed without running", p, rec)
		}
	}
	// A rerun retries the failed measurements.
	var todo int
	r.OnPlanned = func(n, _ int) { todo = n }
	r.Settings.StartupTimeout = 300 * time.Millisecond
	if _, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: silent}, {WorkerType: "cpu", Job: model, Partner: silent}}); err != nil {
		t.Fatal(err)
	}
	if todo != 2 {
		t.Errorf("rerun plans %d measurements, want the 2 failed ones", todo)
	}
}

// TestRunRecordsDefaultSharing: a Runner left at the zero sharing mode measures with
// time-slicing and says so in every record, including those decided without running.
func TestRunRecordsDefaultSharing(t *testing.T) {
	big := table.JobType{Model: "big", ScaleFactor: 2}
	r := newRunner(t, 1, map[table.JobType]Command{jt("a"): workload("-rate", "200"), big: workload("-rate", "200")})
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: big}, {WorkerType: "cpu", Job: jt("a")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("records %+v, want 2", recs)
	}
	for _, rec := range recs {
		if rec.Sharing != TimeSlicing {
			t.Errorf("record %s (%s) has sharing %q, want %q", rec.Job, rec.Status, rec.Sharing, TimeSlicing)
		}
	}
}

func TestRunRejectsInvalidSettings(t *testing.T) {
	r := newRunner(t, 1, map[table.JobType]Command{jt("a"): workload()})
	r.Settings.MinBatches = 1
	if _, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: jt("a")}}); err == nil || !strings.Contains(err.Error(), "min-batches 1") {
		t.Errorf("Run with one batch: %v, want an error", err)
	}
	if side, _ := LoadSidecar(SidecarPath(r.TablePath)); len(side.Measurements) != 0 {
		t.Errorf("measured with invalid settings: %+v", side.Measurements)
	}
}

// TestSettingsMaxWindowFitsMinBatches: a measurement window shorter than the batches it needs
// is invalid, with the defaults filled in for zero fields; one that fits exactly is valid.
func TestSettingsMaxWindowFitsMinBatches(t *testing.T) {
	tests := []struct {
		s    Settings
		want string // "" for valid
	}{
		{Settings{Window: 300 * time.Millisecond, MaxWindow: time.Second}, "max-window 1s must cover min-batches 5 windows of 300ms (1.5s or more)"},
		{Settings{Window: 300 * time.Millisecond, MaxWindow: time.Second, MinBatches: 4}, "windows of 300ms (1.2s or more)"},
		{Settings{Window: 300 * time.Millisecond, MaxWindow: 1500 * time.Millisecond}, ""},
		{Settings{Window: 200 * time.Millisecond, MaxWindow: time.Second}, ""},
		{Settings{MaxWindow: 12 * time.Second}, "(12.5s or more)"},
		{Settings{}, ""},
	}
	for _, tc := range tests {
		err := tc.s.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: Validate() = %v, want %q", tc.s, err, tc.want)
		}
	}
}

// TestRunRepeatedCountIsNotProgress: a job printing the same step count forever is hung; it is
// neither kept alive by its repeated lines nor recorded as a rate of 0 ("cannot run").
func TestRunRepeatedCountIsNotProgress(t *testing.T) {
	stuck := Command{Argv: []string{"sh", "-c", "while true; do echo 'GAVEL_STEPS 5'; sleep 0.05; done"}}
	tests := []struct {
		name   string
		stall  time.Duration
		reason string
	}{
		{"stall timeout first", time.Second, "killed as hung"},
		{"max window first", time.Minute, "no progress during the measurement"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := jt("stuck")
			r := newRunner(t, 1, map[table.JobType]Command{job: stuck})
			r.Settings.StallTimeout = tc.stall
			recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: job}})
			if err != nil {
				t.Fatal(err)
			}
			rec := findRecord(recs, "isolated", "stuck", "")
			if rec == nil || rec.Status != StatusFailed || !strings.Contains(rec.Reason, tc.reason) {
				t.Fatalf("record = %+v, want failed with reason containing %q", rec, tc.reason)
			}
			if tbl, err := table.Load(r.TablePath); err == nil {
				if rate, ok := tbl.Isolated("cpu", job); ok {
					t.Errorf("table holds isolated rate %v for a hung job", rate)
				}
			}
		})
	}
}

// TestRunInterruptWhileStopping: a measurement whose result was final when the jobs were told to
// stop is recorded even if the interrupt arrives while a job that ignores SIGTERM is still being
// waited for.
func TestRunInterruptWhileStopping(t *testing.T) {
	dir := t.TempDir()
	termed := filepath.Join(dir, "termed")
	// The trap runs after each sleep (which SIGTERM kills): the job lives on until SIGKILL.
	job := jt("stubborn")
	r := newRunner(t, 1, map[table.JobType]Command{job: {Argv: []string{"sh", "-c",
		`trap 'touch "$0"' TERM; i=0; while true; do i=$((i+1)); echo "GAVEL_STEPS $i"; sleep 0.01; done`, termed}}})
	r.Settings.KillGrace = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(termed); err == nil {
				cancel() // SIGTERM was sent, so the result is already decided
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	recs, err := r.Run(ctx, []Task{{WorkerType: "cpu", Job: job}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled (the interrupt must arrive while stopping)", err)
	}
	if len(recs) != 1 || recs[0].Status != StatusOK || recs[0].Rate <= 0 {
		t.Fatalf("records = %+v, want the finished measurement", recs)
	}
	tbl, err := table.Load(r.TablePath)
	if err != nil {
		t.Fatal(err)
	}
	if rate, ok := tbl.Isolated("cpu", job); !ok || rate != recs[0].Rate {
		t.Errorf("table isolated = %v, %v; want %v", rate, ok, recs[0].Rate)
	}
}

// A zero setting is "the default" to Validate and an error to ValidateGiven (flags give every
// value); both reject negatives.
func TestValidateGiven(t *testing.T) {
	if err := (Settings{}).Validate(); err != nil {
		t.Errorf("zero Settings: Validate() = %v", err)
	}
	if err := (Settings{}).ValidateGiven(); err == nil || !strings.Contains(err.Error(), "window 0s: want a positive duration (default 2.5s)") {
		t.Errorf("zero Settings: ValidateGiven() = %v, want the zero window named", err)
	}
	s := DefaultSettings()
	if err := s.ValidateGiven(); err != nil {
		t.Errorf("defaults: ValidateGiven() = %v", err)
	}
	s.Settle = 0
	if err := s.ValidateGiven(); err == nil || !strings.Contains(err.Error(), "settle 0") {
		t.Errorf("settle 0: ValidateGiven() = %v", err)
	}
	s = DefaultSettings()
	s.StallTimeout = -time.Second
	for _, err := range []error{s.Validate(), s.ValidateGiven()} {
		if err == nil || !strings.Contains(err.Error(), "stall-timeout -1s") {
			t.Errorf("negative stall-timeout: %v", err)
		}
	}
}

// TestRunTimeoutsBeforeWindowEnds: the start-up and stall timeouts end a measurement when they
// expire, not at the end of the window they expire in. The window is 30 s and the timeouts
// 0.5 s; the bound of 10 s leaves a loaded machine plenty of slack and still tells them apart.
//
// With a long start-up timeout (10 min) the first report moves a job's deadline earlier, to the
// stall timeout, than the timer was armed for, so the timer must be re-armed then; otherwise the
// stall after 20 steps (0.1 s at 200 steps/s) is noticed only when the window ends.
func TestRunTimeoutsBeforeWindowEnds(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		startup time.Duration
		reason  string
	}{
		{"never reports", []string{"-fault", "silent"}, 500 * time.Millisecond, "no progress report within 500ms"},
		{"stops reporting", []string{"-fault", "stall", "-fault-after", "20"}, 500 * time.Millisecond, "no progress for 500ms after 20 steps"},
		{"stops reporting, long start-up timeout", []string{"-fault", "stall", "-fault-after", "20"}, 10 * time.Minute, "no progress for 500ms after 20 steps"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := jt("bad")
			r := newRunner(t, 1, map[table.JobType]Command{job: workload(append([]string{"-rate", "200"}, tc.args...)...)})
			r.Settings.Window, r.Settings.MaxWindow = 30*time.Second, 5*time.Minute
			r.Settings.StartupTimeout, r.Settings.StallTimeout = tc.startup, 500*time.Millisecond
			recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: job}})
			if err != nil {
				t.Fatal(err)
			}
			rec := findRecord(recs, "isolated", "bad", "")
			if rec == nil || rec.Status != StatusFailed || !strings.Contains(rec.Reason, tc.reason) {
				t.Fatalf("record = %+v, want failed with reason containing %q", rec, tc.reason)
			}
			if rec.TotalSeconds >= 10 {
				t.Errorf("failed after %.1f s with a 0.5 s timeout: waited for the 30 s window", rec.TotalSeconds)
			}
			checkNoLeftovers(t)
		})
	}
}

// A job whose output never matched the progress format waited the whole --startup-timeout (10
// minutes by default) with nothing said. After 20 such lines the runner notes, once, that the
// format may be wrong, naming --progress-regex and one of the lines; a job whose lines match
// gets no note.
func TestRunHintsAtProgressFormat(t *testing.T) {
	iter, _ := ParseProgressFormat(`^iter (\d+)/`)
	tick, _ := ParseProgressFormat(`^step done$`)
	chatty := func(c Command) Command { // 25 log lines on stderr before the job
		c.Argv = append([]string{"sh", "-c", `for i in $(seq 25); do echo "I startup log $i" >&2; done; exec "$@"`, "sh"}, c.Argv...)
		return c
	}
	tests := []struct {
		name     string
		cmd      Command
		progress ProgressFormat
		status   Status
		want     []string // in the one note; none when empty
	}{
		{"default format, iter lines", workload("-rate", "150", "-format", "iter"), ProgressFormat{}, StatusFailed,
			[]string{"model: 20 output lines and no progress report in 500ms", `expected lines like "GAVEL_STEPS <steps>"`, "--progress-regex", `one line was: "iter `}},
		{"regex not matching", workload("-rate", "150", "-format", "iter"), tick, StatusFailed,
			[]string{`none matches the progress regex "^step done$"`, `one line was: "iter `}},
		{"regex matching", workload("-rate", "150", "-format", "iter"), iter, StatusOK, nil},
		// Many lines before a first report that comes soon: no note (it fired for every
		// measurement of such jobs when it counted lines alone).
		{"chatty start, then reports", chatty(workload("-rate", "150")), ProgressFormat{}, StatusOK, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cmd
			c.Progress = tt.progress
			r := newRunner(t, 1, map[table.JobType]Command{jt("model"): c})
			r.Settings.StartupTimeout = time.Second
			var mu sync.Mutex
			var notes []string
			r.Logf = func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				if s := fmt.Sprintf(format, args...); strings.Contains(s, "no progress report in") {
					notes = append(notes, s)
				}
			}
			recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: jt("model")}})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 1 || recs[0].Status != tt.status {
				t.Fatalf("records %+v, want one %s", recs, tt.status)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(tt.want) == 0 {
				if len(notes) != 0 {
					t.Errorf("notes %q, want none", notes)
				}
				return
			}
			if len(notes) != 1 {
				t.Fatalf("notes %q, want exactly one", notes)
			}
			for _, w := range tt.want {
				if !strings.Contains(notes[0], w) {
					t.Errorf("note %q lacks %q", notes[0], w)
				}
			}
		})
	}
}

// A table measurements are added to is read with its warnings noted (here a pair rate above
// the isolated rate), not silently.
func TestRunNotesTableWarnings(t *testing.T) {
	model, other := jt("model"), jt("other")
	r := newRunner(t, 1, map[table.JobType]Command{model: workload("-rate", "200")})
	tbl := table.New()
	tbl.SetIsolated("cpu", model, 100)
	tbl.SetIsolated("cpu", other, 100)
	tbl.SetPair("cpu", model, other, 150, 50)
	if err := tbl.Save(r.TablePath); err != nil {
		t.Fatal(err)
	}
	var logged []string
	r.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	if _, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: model}}); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(logged, func(s string) bool { return strings.Contains(s, "warning: pair rate above isolated rate: 150 > 100") }) {
		t.Errorf("logged %q: want the table's warning", logged)
	}
}

// TestRunChecksCommandsFirst: a job whose command cannot start is bad input found before
// anything runs (each of its tasks was recorded failed, minutes in), and names the job.
func TestRunChecksCommandsFirst(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.txt")
	os.WriteFile(plain, []byte("not a program"), 0o644)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	tests := []struct {
		name string
		cmd  Command
		want string // "" when the command can start
	}{
		{"no such program", Command{Argv: []string{"no-such-trainer"}}, "no-such-trainer: no such program in the job's PATH"},
		{"no such path", Command{Argv: []string{filepath.Join(dir, "missing")}}, "no such file or directory"},
		{"not executable", Command{Argv: []string{plain}}, "not an executable file"},
		{"a directory", Command{Argv: []string{dir}}, "not an executable file"},
		{"no dir", Command{Argv: []string{"true"}, Dir: filepath.Join(dir, "gone")}, "dir: stat"},
		{"dir a file", Command{Argv: []string{"true"}, Dir: plain}, "not a directory"},
		{"empty", Command{}, "empty command"},
		{"relative to dir", Command{Argv: []string{"./run.sh"}, Dir: dir}, ""},
		{"shell", Command{Argv: []string{"anything", "at", "all"}, Shell: true}, ""},
		{"PATH from the job's env", Command{Argv: []string{"run.sh"}, Env: []string{"PATH=" + dir}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := jt("m"), jt("ok")
			r := newRunner(t, 1, map[table.JobType]Command{m: tc.cmd, ok: workload("-rate", "100")})
			if tc.want == "" {
				if err := r.checkCommands([]Task{{WorkerType: "cpu", Job: m}}); err != nil {
					t.Errorf("checkCommands: %v, want none", err)
				}
				return
			}
			recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: ok}, {WorkerType: "cpu", Job: m}, {WorkerType: "cpu", Job: ok, Partner: m}})
			if !errors.Is(err, ErrCommand) || !strings.Contains(err.Error(), "job ('m', 1): ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v; want ErrCommand naming ('m', 1) and %q", err, tc.want)
			}
			if len(recs) > 0 {
				t.Errorf("measured %d before refusing", len(recs))
			}
			if _, err := os.Stat(r.TablePath); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("table written: %v", err)
			}
		})
	}
}
