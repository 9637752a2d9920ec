package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gavelkit/gavel/profile"
	"github.com/gavelkit/gavel/table"
)

// TestRunInterruptSignals interrupts the real binary in the middle of a run, as Ctrl-C, kill and
// a closed terminal do: it kills every job, exits 1, and leaves a valid table holding the
// measurement that finished.
func TestRunInterruptSignals(t *testing.T) {
	wl := buildWorkload(t)
	bin := filepath.Join(t.TempDir(), "gavel-profile")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// A failed run may leave jobs behind; they must not outlive the test.
	t.Cleanup(func() {
		for pid := range liveWorkloads(wl) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) { testRunInterrupt(t, bin, wl, sig) })
	}
}

func testRunInterrupt(t *testing.T, bin, wl string, sig syscall.Signal) {
	dir := t.TempDir()
	refs := filepath.Join(dir, "refs.json")
	// The reference never reaches the precision and ignores SIGTERM; it runs until killed.
	os.WriteFile(refs, []byte(`{"references":[{"name":"long","command":["`+wl+`","-rate","200","-noise","0.9","-ignore-term","-spawn-child"]}]}`), 0o644)
	out := filepath.Join(dir, "out.json")
	args := append([]string{"run", "--cpu", "--cpu-slots", "2", "--name", "short", "--references", refs, "--pairs", "long", "--table", out}, fastFlags()...)
	args = append(args, "--max-window", "1m", "--precision", "1e-6", "--", wl, "-rate", "200", "-fault", "exit", "-fault-after", "600")
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the first measurement is in the sidecar and the second one is running.
	deadline := time.Now().Add(30 * time.Second)
	for {
		side, err := profile.LoadSidecar(profile.SidecarPath(out))
		if err == nil && len(side.Measurements) == 1 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no first measurement after 30s:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("exit %v, want status 1 and 'interrupted':\n%s", err, stderr.String())
	}
	tbl, err := table.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.Isolated("cpu", table.JobType{Model: "short", ScaleFactor: 1}); !ok {
		t.Error("the finished measurement is not in the table")
	}
	if _, ok := tbl.Isolated("cpu", table.JobType{Model: "long", ScaleFactor: 1}); ok {
		t.Error("the interrupted measurement is in the table")
	}
	// Every process of the workload binary is gone (the profiler kills whole groups).
	time.Sleep(300 * time.Millisecond)
	for pid, cmdline := range liveWorkloads(wl) {
		t.Errorf("workload process %d survived: %q", pid, cmdline)
	}
}

// liveWorkloads returns the processes running the workload binary wl that are not zombies:
// pid → command line.
func liveWorkloads(wl string) map[int]string {
	live := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(b), wl+"\x00") {
			st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if !strings.Contains(string(st), ") Z ") {
				live[pid] = string(b)
			}
		}
	}
	return live
}
