package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// newDevicesCmd is a placeholder until profile lands; the command says so when run.
func newDevicesCmd(_ *cli.IO) *cobra.Command {
	return &cobra.Command{Use: "devices", Short: "(not yet available)", RunE: func(*cobra.Command, []string) error {
		return errors.New("devices: not implemented yet")
	}}
}
