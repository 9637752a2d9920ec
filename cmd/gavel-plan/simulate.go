package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// newSimulateCmd is a placeholder until rounds lands; the command says so when run.
func newSimulateCmd(_ *cli.IO) *cobra.Command {
	return &cobra.Command{Use: "simulate", Short: "(not yet available)", RunE: func(*cobra.Command, []string) error {
		return errors.New("simulate: not implemented yet")
	}}
}
