package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// HelpProblems walks a command tree and lists every runnable command whose
// help does not explain it (Short and Long) or has no example invoking it.
// Both CLIs test that the list is empty.
func HelpProblems(root *cobra.Command) []string {
	var problems []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.Name() == "help" || c.Name() == "completion" || c == root {
			return
		}
		if c.Short == "" || c.Long == "" {
			problems = append(problems, fmt.Sprintf("%q: missing Short or Long help", c.CommandPath()))
		}
		if !strings.Contains(c.Example, c.CommandPath()) {
			problems = append(problems, fmt.Sprintf("%q: no example invoking it", c.CommandPath()))
		}
	}
	walk(root)
	return problems
}

// UsageProblems runs bad invocations of every command in the tree newRoot
// builds, each on a fresh tree through Main, and lists those that do not
// exit with status 2: an unknown subcommand of each command group, an
// unknown flag, an unparsable value for each numeric or duration flag, and
// stray arguments to each command that validates its arguments. Both CLIs
// test that the list is empty. No command runs: cobra rejects each
// invocation before calling it.
func UsageProblems(newRoot func() *cobra.Command) []string {
	var problems []string
	try := func(args ...string) {
		root := newRoot()
		root.SetArgs(args)
		streams, _, _ := TestIO()
		root.SetOut(streams.Out)
		root.SetErr(streams.Err)
		if code := Main(root, streams); code != 2 {
			problems = append(problems, fmt.Sprintf("%s %s: exit %d, want 2", root.Name(), strings.Join(args, " "), code))
		}
	}
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		at := func(more ...string) []string { return append(append([]string(nil), path...), more...) }
		try(at("--no-such-flag")...)
		if c.HasSubCommands() {
			try(at("no-such-command")...)
		} else if c.Args != nil {
			try(at("stray1", "stray2", "stray3")...)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			switch f.Value.Type() {
			case "int", "int64", "uint", "uint64", "float64", "duration":
				try(at("--" + f.Name + "=bogus")...)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub, at(sub.Name()))
		}
	}
	walk(newRoot(), nil)
	return problems
}
