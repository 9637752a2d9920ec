package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// TestEveryCommandHasHelpWithExample walks the whole command tree: every
// runnable command explains itself and shows at least one example that
// invokes it.
func TestEveryCommandHasHelpWithExample(t *testing.T) {
	streams, _, _ := cli.TestIO()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.Name() == "help" || c.Name() == "completion" || c.Parent() == nil && !c.HasSubCommands() {
			return
		}
		if c.Short == "" || c.Long == "" {
			t.Errorf("%q: missing Short or Long help", c.CommandPath())
		}
		if !strings.Contains(c.Example, c.CommandPath()) {
			t.Errorf("%q: Example %q does not show the command", c.CommandPath(), c.Example)
		}
	}
	walk(newRootCmd(streams))
}

func TestHelpRuns(t *testing.T) {
	streams, out, _ := cli.TestIO()
	root := newRootCmd(streams)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "table") {
		t.Errorf("root help does not list the table command:\n%s", out)
	}
}
