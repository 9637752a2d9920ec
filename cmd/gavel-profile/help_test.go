package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

func TestEveryCommandHasHelpWithExample(t *testing.T) {
	streams, _, _ := cli.TestIO()
	for _, p := range cli.HelpProblems(newRootCmd(streams)) {
		t.Error(p)
	}
}

func TestRootHelpListsTable(t *testing.T) {
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

// Bad usage of any command exits 2: unknown flags and subcommands, bad flag
// values, stray arguments.
func TestEveryCommandBadUsageExits2(t *testing.T) {
	for _, p := range cli.UsageProblems(func() *cobra.Command {
		streams, _, _ := cli.TestIO()
		return newRootCmd(streams)
	}) {
		t.Error(p)
	}
}
