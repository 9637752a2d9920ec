package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// newEvaluateCmd is a placeholder until estimator lands; the command says so when run.
func newEvaluateCmd(_ *cli.IO) *cobra.Command {
	return &cobra.Command{Use: "evaluate", Short: "(not yet available)", RunE: func(*cobra.Command, []string) error {
		return errors.New("evaluate: not implemented yet")
	}}
}
