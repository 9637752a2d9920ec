package main

import (
	"bufio"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExperimentInterrupted interrupts the real binary in the middle of a
// simulation, as Ctrl-C, kill and a closed terminal do: it stops, exits 1 and
// says "interrupted:" (the signal killed it without a word).
func TestExperimentInterrupted(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gavel-plan")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			// The first rate finishes in about a second; the second overloads the cluster and runs
			// on (no --timeout) until the signal.
			cmd := exec.Command(bin, "experiment", "continuous", "--cluster", "v100=2,p100=2,k80=2",
				"--policies", "max_min_fairness_perf", "--rates", "0.05,30", "--window", "0:5", "--timeout", "0")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			sc := bufio.NewScanner(stderr)
			if !sc.Scan() || !strings.Contains(sc.Text(), "rate  0.05/h") {
				t.Fatalf("first progress line %q (%v)", sc.Text(), sc.Err())
			}
			time.Sleep(300 * time.Millisecond)
			cmd.Process.Signal(sig)
			var rest strings.Builder
			for sc.Scan() {
				rest.WriteString(sc.Text() + "\n")
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(rest.String(), "Error: interrupted: ") {
				t.Fatalf("exit %v, want status 1 and 'Error: interrupted:'; stderr after the first line:\n%s", err, rest.String())
			}
		})
	}
}
