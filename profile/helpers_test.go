package profile

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gavelkit/gavel/table"
)

// workloadBin is the test workload (testdata/workload), built once by TestMain.
var workloadBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gavel-profile-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workloadBin = filepath.Join(dir, "workload")
	build := exec.Command("go", "build", "-o", workloadBin, "./testdata/workload")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the test workload:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fastSettings keeps measurements to a few seconds. The precision is loose on purpose: the
// tests check rates against the workload's configured rate with a wide tolerance, not the
// estimator's stopping rule.
func fastSettings() Settings {
	return Settings{
		Window:         100 * time.Millisecond,
		Precision:      0.05,
		MinBatches:     5,
		MaxWindow:      2 * time.Second,
		Settle:         0.15,
		SettleBatches:  2,
		MaxWarmup:      time.Second,
		StartupTimeout: 3 * time.Second,
		StallTimeout:   time.Second,
		KillGrace:      300 * time.Millisecond,
	}
}

// workload returns a command running the test workload with args.
func workload(args ...string) Command {
	return Command{Argv: append([]string{workloadBin}, args...)}
}

func jt(name string) table.JobType { return table.JobType{Model: name, ScaleFactor: 1} }

// newRunner returns a runner writing to a fresh table in a temporary directory, on n CPU
// devices.
func newRunner(t *testing.T, n int, cmds map[table.JobType]Command) *Runner {
	t.Helper()
	gpus, _ := CPUDevices(n).List(context.Background())
	env, err := BaseEnv(os.Environ(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Runner{
		TablePath: filepath.Join(t.TempDir(), "out.json"),
		Commands:  cmds,
		GPUs:      gpus,
		Settings:  fastSettings(),
		Env:       env,
		Logf:      t.Logf,
	}
}

// within checks got against want with a relative tolerance.
func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if got < want*(1-tol) || got > want*(1+tol) {
		t.Errorf("%s = %.2f, want %.2f ± %.0f%%", what, got, want, tol*100)
	}
}

// workloadProcs returns the live processes running the test workload: pid → argv.
func workloadProcs() map[int][]string {
	procs := map[int][]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if args[0] != workloadBin {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); strings.Contains(string(st), ") Z ") {
			continue // zombie, already dead
		}
		procs[pid] = args
	}
	return procs
}

// leftovers lists the live processes running the test workload.
func leftovers() []string {
	var out []string
	for pid, args := range workloadProcs() {
		out = append(out, fmt.Sprintf("%d %v", pid, args))
	}
	return out
}

// checkNoLeftovers fails when a workload process survived; killed processes may take a moment
// to disappear on a loaded machine.
func checkNoLeftovers(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		l := leftovers()
		if len(l) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("workload processes still running: %v", l)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func findRecord(recs []Record, kind Kind, job, partner string) *Record {
	for i := range recs {
		r := &recs[i]
		if r.Kind == kind && r.Job == job && r.Partner == partner {
			return r
		}
	}
	return nil
}
