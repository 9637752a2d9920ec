package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// runWithStdin runs a command built by mk with args, its standard input
// (the cli.IO's In, not the process's) reading in.
func runWithStdin(t *testing.T, mk func(*cli.IO) *cobra.Command, in string, args ...string) (string, string, error) {
	t.Helper()
	streams, out, errb := cli.TestIO()
	streams.In = strings.NewReader(in)
	cmd := mk(streams)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// --jobs - (allocate, rounds) and --trace - (simulate) read the command's
// standard input: the same output as naming the file, errors naming stdin.
func TestJobsAndTraceFromStdin(t *testing.T) {
	jobs := readFile(t, "../../examples/jobs.json")
	trace := readFile(t, "../../examples/worked_example.trace")
	alloc := []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4,p100=4,k80=4", "--json"}
	rnds := []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4,p100=4,k80=4", "--rounds", "3", "--json"}
	sim := []string{"--policy", "max_min_fairness_perf", "--cluster", "v100=4,p100=4,k80=4", "--json"}
	withFlag := func(args []string, kv ...string) []string { return append(append([]string{}, args...), kv...) }
	cases := []struct {
		name      string
		mk        func(*cli.IO) *cobra.Command
		in        string
		stdinArgs []string
		fileArgs  []string // the same input named as a file; nil: an error is wanted
		wantErr   string
	}{
		{"allocate --jobs -", newAllocateCmd, jobs, withFlag(alloc, "--jobs", "-"), withFlag(alloc, "--jobs", "../../examples/jobs.json"), ""},
		{"rounds --jobs -", newRoundsCmd, jobs, withFlag(rnds, "--jobs", "-"), withFlag(rnds, "--jobs", "../../examples/jobs.json"), ""},
		{"simulate --trace - (TSV)", newSimulateCmd, trace, withFlag(sim, "--trace", "-"), withFlag(sim, "--trace", "../../examples/worked_example.trace"), ""},
		{"simulate --trace - (JSON)", newSimulateCmd, jobs, withFlag(sim, "--trace", "-"), withFlag(sim, "--trace", "../../examples/jobs.json"), ""},
		{"allocate bad JSON", newAllocateCmd, `{"jobs": [}`, withFlag(alloc, "--jobs", "-"), nil, "stdin:1:"},
		{"allocate bad entry", newAllocateCmd, `{"jobs": [{"id": "a", "type": "A3C", "total_steps": -1}]}`, withFlag(alloc, "--jobs", "-"), nil,
			`stdin: jobs[0] (id "a"): total_steps -1`},
		{"rounds bad entry", newRoundsCmd, `{"jobs": [{"id": "a", "type": "A3C"}]}`, withFlag(rnds, "--jobs", "-"), nil,
			`stdin: jobs[0] (id "a"): missing total_steps`},
		{"simulate bad trace line", newSimulateCmd, "A3C\t1\n", withFlag(sim, "--trace", "-"), nil, "stdin:1: bad trace"},
		{"simulate bad JSON", newSimulateCmd, `{"jobs": 3}`, withFlag(sim, "--trace", "-"), nil, "stdin:1:"},
		{"allocate --table - --jobs -", newAllocateCmd, jobs, withFlag(alloc, "--jobs", "-", "--table", "-"), nil,
			"--table - and --jobs -: both would read standard input"},
		{"rounds --table - --jobs -", newRoundsCmd, jobs, withFlag(rnds, "--jobs", "-", "--table", "-"), nil,
			"--table - and --jobs -: both would read standard input"},
		{"simulate --table - --trace -", newSimulateCmd, trace, withFlag(sim, "--trace", "-", "--table", "-"), nil,
			"--table - and --trace -: both would read standard input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := runWithStdin(t, c.mk, c.in, c.stdinArgs...)
			if c.fileArgs == nil {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || cli.ExitCode(err) != 2 {
					t.Fatalf("got error %v (exit %d), want one containing %q, exit 2", err, cli.ExitCode(err), c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("reading standard input: %v", err)
			}
			want, _, err := runWithStdin(t, c.mk, "", c.fileArgs...)
			if err != nil {
				t.Fatalf("naming the file: %v", err)
			}
			if stripTimes(out) != stripTimes(want) {
				t.Errorf("reading standard input printed\n%s\nnaming the file\n%s", out, want)
			}
		})
	}
}

// stripTimes blanks the solve times of --json output, which vary by run.
func stripTimes(s string) string {
	return regexp.MustCompile(`"solve_seconds": [-+.0-9e]+`).ReplaceAllString(s, `"solve_seconds": 0`)
}
