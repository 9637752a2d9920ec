package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// newRoundsCmd is a placeholder until rounds lands; the command says so when run.
func newRoundsCmd(_ *cli.IO) *cobra.Command {
	return &cobra.Command{Use: "rounds", Short: "(not yet available)", RunE: func(*cobra.Command, []string) error {
		return errors.New("rounds: not implemented yet")
	}}
}
