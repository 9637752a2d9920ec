// Command gavel-plan allocates GPU time with Gavel's policies and turns
// allocations into round plans and simulated schedules.
package main

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
)

// gcPercent is the GC target the command runs with unless GOGC is set.
// Packed simulations build and drop an LP model (tens of thousands of
// columns) per allocation, so with Go's default of 100 the collector and
// the scavenger took about a sixth of the CPU time; 400 keeps the heap of
// such a run under 50 MB (33 MB at 100) and changes no output.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	streams := cli.StdIO()
	root := newRootCmd(streams)
	ctx, stop := cli.Interruptible(context.Background())
	root.SetContext(ctx)
	code := cli.Main(root, streams)
	stop()
	os.Exit(code)
}

func newRootCmd(streams *cli.IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "gavel-plan",
		Short: "Plan GPU time on a heterogeneous cluster with Gavel's policies",
		Long: `gavel-plan turns a throughput table (steps/s of each job type on each GPU
type, alone and sharing a GPU) and a policy into time fractions per job and
GPU type, then into concrete rounds: which job or pair runs on which GPU.

Typical use:
  gavel-plan table show                                   # the embedded Gavel table
  gavel-plan allocate --policy max_min_fairness_perf --cluster v100=4,p100=4,k80=4 --jobs examples/jobs.json
  gavel-plan rounds --policy max_min_fairness_perf --cluster v100=4,p100=4,k80=4 --jobs examples/jobs.json --rounds 10 \
      --gpus-per-server v100=4,p100=4,k80=4`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.AddCommand(
		cli.NewTableCmd(streams, "gavel-plan"),
		newAllocateCmd(streams),
		newRoundsCmd(streams),
		newSimulateCmd(streams),
		newExperimentCmd(streams),
	)
	return root
}
