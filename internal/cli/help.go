package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
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
