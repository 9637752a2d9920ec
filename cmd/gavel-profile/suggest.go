package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// newSuggestCmd is a placeholder until estimator lands; the command says so when run.
func newSuggestCmd(_ *cli.IO) *cobra.Command {
	return &cobra.Command{Use: "suggest", Short: "(not yet available)", RunE: func(*cobra.Command, []string) error {
		return errors.New("suggest: not implemented yet")
	}}
}
