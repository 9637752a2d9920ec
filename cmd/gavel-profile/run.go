package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// newRunCmd is a placeholder until profile lands; the command says so when run.
func newRunCmd(_ *cli.IO) *cobra.Command {
	return &cobra.Command{Use: "run", Short: "(not yet available)", RunE: func(*cobra.Command, []string) error {
		return errors.New("run: not implemented yet")
	}}
}
