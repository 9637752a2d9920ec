package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExperimentInterrupted interrupts the real binary in the middle of a
// simulation, as Ctrl-C, kill and a closed terminal do: it stops, exits 1 and
// says "interrupted:" (the signal killed it without a word).
func TestExperimentInterrupted(t *testing.T) {
	bin := buildPlan(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, stdout, sc := startExperiment(t, bin)
			time.Sleep(300 * time.Millisecond)
			cmd.Process.Signal(sig)
			var rest strings.Builder
			for sc.Scan() {
				rest.WriteString(sc.Text() + "\n")
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(rest.String(), "Error: interrupted: ") {
				t.Fatalf("exit %v, want status 1 and 'Error: interrupted:'; stderr after the first line:\n%s", err, rest.String())
			}
			// The finished point is printed, the unfinished one marked.
			out := stdout.String()
			if !strings.Contains(out, "0.05 │") || !regexp.MustCompile(`30\.00 │\s+- │`).MatchString(out) ||
				!strings.Contains(out, "partial: interrupted") {
				t.Errorf("stdout, want the first rate's row, \"-\" for the second and a partial line:\n%s", out)
			}
		})
	}
}

// Interrupted with --json --parallel 2, the output is one JSON object marked partial, with
// the finished point and null for the unfinished one.
func TestExperimentInterruptedPartialJSON(t *testing.T) {
	cmd, stdout, sc := startExperiment(t, buildPlan(t), "--parallel", "2", "--json")
	cmd.Process.Signal(syscall.SIGINT)
	for sc.Scan() {
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1", err)
	}
	var got struct {
		Partial bool               `json:"partial"`
		Points  []*json.RawMessage `json:"points"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	if !got.Partial || len(got.Points) != 2 || got.Points[0] == nil || got.Points[1] != nil {
		t.Errorf("want partial: true and points [finished, null]:\n%s", stdout.String())
	}
}

// buildPlan builds gavel-plan for tests that signal the real process.
func buildPlan(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gavel-plan")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// startExperiment starts an experiment whose first rate finishes in about a second and whose
// second overloads the cluster and runs on (no --timeout) until a signal, with extra flags;
// it returns once the first rate's progress line is read, with the command, its stdout and
// the rest of its stderr.
func startExperiment(t *testing.T, bin string, extra ...string) (*exec.Cmd, *strings.Builder, *bufio.Scanner) {
	t.Helper()
	args := append([]string{"experiment", "continuous", "--cluster", "v100=2,p100=2,k80=2",
		"--policies", "max_min_fairness_perf", "--rates", "0.05,30", "--window", "0:5", "--timeout", "0"}, extra...)
	cmd := exec.Command(bin, args...)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() || !strings.Contains(sc.Text(), "rate  0.05/h") {
		t.Fatalf("first progress line %q (%v)", sc.Text(), sc.Err())
	}
	return cmd, &stdout, sc
}
