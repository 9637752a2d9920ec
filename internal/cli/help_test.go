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
