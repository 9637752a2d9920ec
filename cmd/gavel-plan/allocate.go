package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// newAllocateCmd is a placeholder until policy lands; the command says so when run.
func newAllocateCmd(_ *cli.IO) *cobra.Command {
	return &cobra.Command{Use: "allocate", Short: "(not yet available)", RunE: func(*cobra.Command, []string) error {
		return errors.New("allocate: not implemented yet")
	}}
}
