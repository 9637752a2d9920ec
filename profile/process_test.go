package profile

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gavelkit/gavel/table"
)

// TestRunLookPathSkipsWorkingDirectory: a bare command name is never taken from the working
// directory through an empty, relative or missing PATH entry.
func TestRunLookPathSkipsWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "trainer"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, env := range [][]string{nil, {"PATH="}, {"PATH=:/nonexistent"}, {"PATH=.:/nonexistent"}, {"PATH=sub/..:/nonexistent"}} {
		if got, err := lookPath("trainer", env); !errors.Is(err, exec.ErrNotFound) {
			t.Errorf("lookPath with %q = %q, %v; want not found", env, got, err)
		}
	}
	// The reason reads once, naming the job's PATH.
	_, err := lookPath("trainer", []string{"PATH=/nonexistent:/nowhere"})
	if err == nil || err.Error() != "trainer: no such program in the job's PATH" {
		t.Errorf("not found: %v", err)
	}
	want := filepath.Join(dir, "trainer")
	if got, err := lookPath("trainer", []string{"PATH=/nonexistent:" + dir}); err != nil || got != want {
		t.Errorf("lookPath with an absolute entry = %q, %v; want %q", got, err, want)
	}
	if got, err := lookPath("./trainer", nil); err != nil || got != "./trainer" {
		t.Errorf("explicit ./trainer = %q, %v", got, err)
	}
}

// TestRunStopPairSharesGrace: two jobs that ignore SIGTERM are killed one grace period after
// the measurement ends, not one grace period each.
func TestRunStopPairSharesGrace(t *testing.T) {
	const grace = 2 * time.Second
	s := fastSettings()
	s.KillGrace = grace
	m := measurer{settings: s}
	gpus, _ := CPUDevices(1).List(context.Background())
	env, _ := BaseEnv(os.Environ(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	time.AfterFunc(time.Second, func() { cancelled = time.Now(); cancel() })
	c := workload("-rate", "100", "-ignore-term")
	out := m.measure(ctx, deviceSlot{GPUs: gpus, Env: env}, []string{"a", "b"}, []Command{c, c})
	stopped := time.Since(cancelled)
	if !strings.Contains(out.Reason, "interrupted") {
		t.Fatalf("outcome %+v, want interrupted", out)
	}
	// Sequential stops take at least 2 × grace; together, grace and the kill itself.
	if stopped < grace || stopped >= 2*grace-200*time.Millisecond {
		t.Errorf("stopping took %v with a grace of %v", stopped, grace)
	}
	checkNoLeftovers(t)
}

// TestRunReleasesEscapedOutput: a job whose child escapes the process group and keeps the
// output pipes open leaves no reader goroutine behind once its measurement is over.
func TestRunReleasesEscapedOutput(t *testing.T) {
	model := jt("model")
	r := newRunner(t, 1, map[table.JobType]Command{model: workload("-rate", "200", "-spawn-escaped")})
	before := runtime.NumGoroutine()
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: model}})
	t.Cleanup(func() {
		for pid := range workloadProcs() {
			_ = syscall.Kill(pid, syscall.SIGKILL) // the escaped child: out of the profiler's reach
		}
	})
	if err != nil || len(recs) != 1 || recs[0].Status != StatusOK {
		t.Fatalf("Run = %+v, %v", recs, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after the run, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReadLineTerminators: '\r' ends a line as '\n' does (tqdm), "\r\n" is one terminator, and
// long lines are cut to maxLine.
func TestReadLineTerminators(t *testing.T) {
	long := strings.Repeat("x", maxLine+10)
	in := "GAVEL_STEPS 1\rGAVEL_STEPS 2\r\nGAVEL_STEPS 3\n\nlast" + "\n" + long + "\rend"
	br := bufio.NewReaderSize(strings.NewReader(in), 16) // small buffer: terminators across refills
	var got []string
	for {
		line, err := readLine(br)
		if line != "" || err == nil {
			got = append(got, line)
		}
		if err != nil {
			break
		}
	}
	want := []string{"GAVEL_STEPS 1", "GAVEL_STEPS 2", "GAVEL_STEPS 3", "", "last", long[:maxLine], "end"}
	if !slices.Equal(got, want) {
		t.Errorf("lines = %q, want %q", clipAll(got), clipAll(want))
	}
}

func clipAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = clip(s, 30)
	}
	return out
}

// TestRunCarriageReturnProgress: a job that reports progress tqdm-style, with '\r' and no
// newline, is measured.
func TestRunCarriageReturnProgress(t *testing.T) {
	job := jt("tqdm")
	r := newRunner(t, 1, map[table.JobType]Command{job: {Argv: []string{"sh", "-c",
		`i=0; while true; do i=$((i+1)); printf 'GAVEL_STEPS %d\r' $i; sleep 0.01; done`}}})
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: job}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Status != StatusOK || recs[0].Rate <= 0 {
		t.Fatalf("records = %+v, want one ok with a positive rate", recs)
	}
}
