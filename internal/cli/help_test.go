package cli

import (
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
