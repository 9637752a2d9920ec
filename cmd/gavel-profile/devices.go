package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/profile"
)

type devicesOptions struct {
	json        bool
	workerTypes string
	open        func() (profile.Devices, error) // profile.OpenNVML; tests use fakes
}

func newDevicesCmd(io *cli.IO) *cobra.Command {
	opts := devicesOptions{open: profile.OpenNVML}
	cmd := &cobra.Command{
		Use:   "devices",
		Short: "List the node's GPUs with their worker types",
		Long: `List the GPUs NVML sees: index, UUID, product name, the worker type derived from
the name (the key used in throughput tables; "NVIDIA H200" becomes h200), total and
free memory, MIG and compute mode, and the compute processes already running.

Without an NVIDIA driver (no libnvidia-ml) it says so and exits 0: profiling then
runs on the CPU with 'gavel-profile run --cpu' (worker type cpu).`,
		Example: `  gavel-profile devices
  gavel-profile devices --json
  gavel-profile devices --worker-type 0=h200-sxm,1=h200-sxm`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDevices(cmd.Context(), opts, io) },
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print one JSON object")
	cmd.Flags().StringVar(&opts.workerTypes, "worker-type", "", "override worker types: NAME for every GPU, or IDX=NAME,...")
	return cmd
}

func runDevices(ctx context.Context, opts devicesOptions, io *cli.IO) error {
	overrides, err := profile.ParseWorkerTypeOverrides(opts.workerTypes)
	if err != nil {
		return cli.UsageError("--worker-type: %v", err)
	}
	devs, err := opts.open()
	if err != nil {
		if opts.json {
			return cli.WriteJSON(io.Out, map[string]any{"devices": []profile.GPU{}, "nvml_error": err.Error(),
				"cpu_worker_type": profile.CPUWorkerType})
		}
		fmt.Fprintf(io.Out, "No NVIDIA GPUs available: %v.\n", err)
		if errors.Is(err, profile.ErrNoDriver) {
			fmt.Fprintln(io.Out, "The NVIDIA driver (libnvidia-ml.so.1) is not installed or not loaded on this machine.")
		}
		fmt.Fprintf(io.Out, "You can still profile on the CPU (worker type %q):\n  gavel-profile run --cpu --name MODEL --table out.json -- CMD ARGS...\n", profile.CPUWorkerType)
		return nil
	}
	defer devs.Close()
	gpus, err := devs.List(ctx)
	if err != nil {
		return err
	}
	if err := overrides.Apply(gpus); err != nil {
		return cli.UsageError("--worker-type: %v", err)
	}
	if opts.json {
		if gpus == nil {
			gpus = []profile.GPU{}
		}
		for i := range gpus {
			if gpus[i].Processes == nil {
				gpus[i].Processes = []profile.Process{} // an idle GPU lists no processes, not null
			}
		}
		return cli.WriteJSON(io.Out, map[string]any{"devices": gpus})
	}
	if len(gpus) == 0 {
		fmt.Fprintln(io.Out, "NVML found no GPUs; profile on the CPU with 'gavel-profile run --cpu'.")
		return nil
	}
	tw := cli.NewTableWriter(io.Out, "index", "name", "worker type", "memory total", "memory free", "MIG", "compute mode", "processes", "uuid")
	for _, g := range gpus {
		var procs []string
		for _, p := range g.Processes {
			name := p.Name
			if name == "" {
				name = "?"
			}
			mem := "memory unknown"
			if p.UsedMemoryBytes != nil {
				mem = gib(*p.UsedMemoryBytes)
			}
			procs = append(procs, fmt.Sprintf("%d %s (%s)", p.PID, name, mem))
		}
		if len(procs) == 0 {
			procs = []string{"none"}
		}
		if err := tw.Append(strconv.Itoa(g.Index), g.Name, g.WorkerType, gib(g.MemoryTotal), gib(g.MemoryFree),
			g.MIG, g.ComputeMode, strings.Join(procs, ", "), g.UUID); err != nil {
			return err
		}
	}
	return tw.Render()
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
