package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// newExperimentCmd is a placeholder until rounds lands; the command says so when run.
func newExperimentCmd(_ *cli.IO) *cobra.Command {
	return &cobra.Command{Use: "experiment", Short: "(not yet available)", RunE: func(*cobra.Command, []string) error {
		return errors.New("experiment: not implemented yet")
	}}
}
