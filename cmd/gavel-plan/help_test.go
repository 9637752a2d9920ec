package main

import (
	"os"
	"path/filepath"
	"slices"
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

// exampleCommands splits help text into the gavel-plan command lines it
// shows: continuation lines ("\" at the end) joined, "# comments" dropped,
// arguments split on spaces outside double quotes.
func exampleCommands(text string) [][]string {
	var cmds [][]string
	line := ""
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if i := strings.Index(l, " #"); i >= 0 {
			l = strings.TrimSpace(l[:i])
		}
		if line == "" && !strings.HasPrefix(l, "gavel-plan ") {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			line += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		cmds = append(cmds, splitArgs(line+l))
		line = ""
	}
	return cmds
}

func splitArgs(s string) []string {
	var args []string
	var cur strings.Builder
	quoted, started := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, started = !quoted, true
		case r == ' ' && !quoted:
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args
}

// Every example in gavel-plan's help (each command's Example and the root's
// "Typical use") runs as written from the repository root and exits 0: the
// examples named files that do not exist (jobs.json, jobs.trace) and a
// cluster examples/jobs.json does not fit. The commands run in a scratch
// directory with the repository's examples/ linked in, so that the files
// they write (--jobs-out, --csv, --out, "> file") land there, in order (a
// later example may read what an earlier one wrote).
func TestEveryExampleRuns(t *testing.T) {
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(examples, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	streams, _, _ := cli.TestIO()
	root := newRootCmd(streams)
	_, typical, ok := strings.Cut(root.Long, "Typical use:")
	if !ok {
		t.Fatal(`root help lost its "Typical use:"`)
	}
	texts := []string{typical}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		texts = append(texts, c.Example)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	n := 0
	for _, text := range texts {
		for _, argv := range exampleCommands(text) {
			n++
			runExample(t, argv[1:])
		}
	}
	if n < 20 {
		t.Fatalf("found %d examples; the parser missed some", n)
	}
}

// runExample runs gavel-plan with args the way main does; "> file" sends
// stdout to file. experiment continuous runs minutes of simulations, so its
// examples are only parsed (TestExperimentContinuousSmall runs it small).
func runExample(t *testing.T, args []string) {
	t.Helper()
	streams, out, errb := cli.TestIO()
	redirect := ""
	if i := slices.Index(args, ">"); i >= 0 {
		redirect, args = args[i+1], args[:i]
	}
	root := newRootCmd(streams)
	if len(args) >= 2 && args[0] == "experiment" && args[1] == "continuous" {
		c, rest, err := root.Find(args)
		if err == nil {
			err = c.ParseFlags(rest)
		}
		if err != nil || len(c.Flags().Args()) != 0 {
			t.Errorf("gavel-plan %s: %v (args %q)", strings.Join(args, " "), err, c.Flags().Args())
		}
		return
	}
	root.SetArgs(args)
	if code := cli.Main(root, streams); code != 0 {
		t.Errorf("gavel-plan %s: exit %d\n%s", strings.Join(args, " "), code, errb)
		return
	}
	if redirect != "" {
		if err := os.WriteFile(redirect, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
