package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestHelpProblems(t *testing.T) {
	streams, _, _ := TestIO()
	root := &cobra.Command{Use: "prog"}
	root.AddCommand(NewTableCmd(streams, "prog"))
	if got := HelpProblems(root); len(got) != 0 {
		t.Errorf("table commands: %v", got)
	}
	run := func(*cobra.Command, []string) error { return nil }
	root.AddCommand(&cobra.Command{Use: "bare", Short: "s", RunE: run})
	root.AddCommand(&cobra.Command{Use: "wrongexample", Short: "s", Long: "l", Example: "other x", RunE: run})
	got := strings.Join(HelpProblems(root), "\n")
	for _, want := range []string{`"prog bare": missing Short or Long`, `"prog bare": no example`, `"prog wrongexample": no example`} {
		if !strings.Contains(got, want) {
			t.Errorf("HelpProblems = %s; want it to report %s", got, want)
		}
	}
}

// With MarkUsageErrors (applied by Main) bad usage exits 2 everywhere in a
// tree, and UsageProblems reports a command that escapes it: one with its
// own flag error function, which cobra prefers to root's.
func TestUsageProblems(t *testing.T) {
	newRoot := func(own bool) func() *cobra.Command {
		return func() *cobra.Command {
			streams, _, _ := TestIO()
			root := &cobra.Command{Use: "prog", SilenceUsage: true, SilenceErrors: true}
			var n int
			leaf := &cobra.Command{Use: "leaf", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return nil }}
			leaf.Flags().IntVar(&n, "n", 0, "a number")
			if own {
				leaf.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
			}
			root.AddCommand(NewTableCmd(streams, "prog"), leaf)
			return root
		}
	}
	if got := UsageProblems(newRoot(false)); len(got) != 0 {
		t.Errorf("UsageProblems = %q, want none", got)
	}
	got := strings.Join(UsageProblems(newRoot(true)), "\n")
	for _, want := range []string{"prog leaf --no-such-flag: exit 1", "prog leaf --n=bogus: exit 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("UsageProblems = %s; want it to report %s", got, want)
		}
	}
	for _, args := range [][]string{{"leaf", "--n=x"}, {"leaf", "extra"}, {"nope"}, {"leaf", "--nope"}, {"table", "nope"}, {"table", "validate", "a", "b"}} {
		root := newRoot(false)()
		root.SetArgs(args)
		streams, _, errb := TestIO()
		if code := Main(root, streams); code != 2 || !strings.HasPrefix(errb.String(), "Error: ") {
			t.Errorf("%v: Main exit %d (%q), want 2", args, code, errb)
		}
	}
}

// A bad numeric flag value printed pflag's message, which quotes strconv ("strconv.ParseUint:
// parsing "-1": invalid syntax"); it is a plain one naming the flag and what it takes, still
// exit status 2.
func TestFlagValueErrorsPlain(t *testing.T) {
	newRoot := func() *cobra.Command {
		root := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true}
		sub := &cobra.Command{Use: "sub", RunE: func(*cobra.Command, []string) error { return nil }}
		f := sub.Flags()
		f.Uint64("seed", 0, "")
		f.Int("rounds", 10, "")
		f.Float64("fraction", 0, "")
		f.Duration("timeout", 0, "")
		f.Bool("json", false, "")
		f.String("name", "", "")
		root.AddCommand(sub)
		return root
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--seed", "-1"}, "--seed: -1 is not a non-negative integer"},
		{[]string{"--seed=x y"}, `--seed: "x y" is not a non-negative integer`},
		{[]string{"--rounds", "x"}, "--rounds: x is not an integer"},
		{[]string{"--rounds", "99999999999999999999"}, "--rounds: 99999999999999999999 is out of range (want an integer)"},
		{[]string{"--fraction", "half"}, "--fraction: half is not a number"},
		{[]string{"--timeout", "5"}, "--timeout: 5 is not a duration such as 90s, 10m or 1h30m"},
		{[]string{"--json=maybe"}, "--json: maybe is not true or false"},
		{[]string{"--seed="}, `--seed: "" is not a non-negative integer`},
		{[]string{"--name"}, "flag needs an argument: --name"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root := newRoot()
			root.SetArgs(append([]string{"sub"}, tt.args...))
			streams, _, errb := TestIO()
			if code := Main(root, streams); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if got := strings.TrimSpace(errb.String()); got != "Error: "+tt.want {
				t.Errorf("stderr %q, want %q", got, "Error: "+tt.want)
			}
		})
	}
}

// An error from a cancelled context (Ctrl-C) says "interrupted": the estimator's read
// "seed 0: als: ...: context canceled"; one that says so already is left as it is.
func TestMainSaysInterrupted(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("seed 0: als: fit stopped: %w", context.Canceled), "Error: interrupted: seed 0: als: fit stopped: context canceled\n"},
		{errors.New("interrupted: 2 measurements written"), "Error: interrupted: 2 measurements written\n"},
		{errors.New("lp: infeasible"), "Error: lp: infeasible\n"},
	} {
		root := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true, RunE: func(*cobra.Command, []string) error { return tc.err }}
		root.SetArgs(nil)
		streams, _, errb := TestIO()
		if code := Main(root, streams); code != 1 || errb.String() != tc.want {
			t.Errorf("%v: exit %d, %q; want 1, %q", tc.err, code, errb, tc.want)
		}
	}
}
