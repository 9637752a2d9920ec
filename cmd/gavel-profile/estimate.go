package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// newEstimateCmd is a placeholder until estimator lands; the command says so when run.
func newEstimateCmd(_ *cli.IO) *cobra.Command {
	return &cobra.Command{Use: "estimate", Short: "(not yet available)", RunE: func(*cobra.Command, []string) error {
		return errors.New("estimate: not implemented yet")
	}}
}
