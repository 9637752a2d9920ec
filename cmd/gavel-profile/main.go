// Command gavel-profile measures how fast training jobs run on each GPU
// type, alone and sharing a GPU, and estimates the pairs not measured.
package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

func main() {
	streams := cli.StdIO()
	os.Exit(cli.Main(newRootCmd(streams), streams))
}

func newRootCmd(streams *cli.IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "gavel-profile",
		Short: "Measure and estimate throughput tables for Gavel's planner",
		Long: `gavel-profile builds throughput tables: it lists the node's GPUs, runs a
training command alone and next to reference jobs to measure real rates,
estimates the co-location pairs not measured, suggests which to measure
next, and evaluates the estimator against held-out measurements.

Typical use:
  gavel-profile devices
  gavel-profile run --name my-model --table out.json -- python train.py
  gavel-profile estimate --table out.json --out full.json`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.AddCommand(
		cli.NewTableCmd(streams, "gavel-profile"),
		newDevicesCmd(streams),
		newRunCmd(streams),
		newEstimateCmd(streams),
		newSuggestCmd(streams),
		newEvaluateCmd(streams),
	)
	return root
}

// interruptible returns cmd's context, canceled on SIGINT, SIGTERM or SIGHUP (unless
// ignored; see cli.Interruptible), so a long estimate, suggestion or evaluation stops within an
// iteration of its fits and a profiling run stops its jobs cleanly.
func interruptible(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil { // RunE called without Execute, as tests may
		ctx = context.Background()
	}
	return cli.Interruptible(ctx)
}
