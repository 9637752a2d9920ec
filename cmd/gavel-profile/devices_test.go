package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/profile"
)

type fakeDevices []profile.GPU

func (f fakeDevices) List(context.Context) ([]profile.GPU, error) {
	return append([]profile.GPU{}, f...), nil
}
func (fakeDevices) ProcessMemory(context.Context, int) (map[int]uint64, error) { return nil, nil }
func (fakeDevices) MemoryUsed(context.Context, int) (uint64, error)            { return 0, nil }
func (fakeDevices) Close() error                                               { return nil }

func twoH200() fakeDevices {
	return fakeDevices{
		{Index: 0, UUID: "GPU-0000", Name: "NVIDIA H200", WorkerType: profile.WorkerType("NVIDIA H200"), MemoryTotal: 141 << 30, MemoryFree: 140 << 30,
			MIG: "disabled", ComputeMode: "default", Processes: []profile.Process{
				{PID: 42, Name: "python3", UsedMemoryBytes: new(uint64(1 << 30))}, {PID: 43, Name: "python3"}}},
		{Index: 1, UUID: "GPU-0001", Name: "NVIDIA H200", WorkerType: profile.WorkerType("NVIDIA H200"), MemoryTotal: 141 << 30, MemoryFree: 141 << 30,
			MIG: "disabled", ComputeMode: "exclusive_process"},
	}
}

func TestDevicesWithoutDriver(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	streams, out, _ := cli.TestIO()
	cmd := newDevicesCmd(streams)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("devices without a driver: %v (exit %d), want exit 0", err, cli.ExitCode(err))
	}
	if s := out.String(); !strings.Contains(s, "No NVIDIA GPUs available") || !strings.Contains(s, "--cpu") {
		t.Errorf("output does not say plainly that there is no GPU and offer --cpu:\n%s", s)
	}
	streams, out, _ = cli.TestIO()
	cmd = newDevicesCmd(streams)
	cmd.SetArgs([]string{"--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Devices   []any  `json:"devices"`
		NVMLError string `json:"nvml_error"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Devices == nil || len(got.Devices) != 0 || !strings.Contains(got.NVMLError, "NVML") {
		t.Errorf("JSON = %s, want devices: [] and nvml_error", out)
	}
}

func TestDevicesListed(t *testing.T) {
	open := func() (profile.Devices, error) { return twoH200(), nil }
	streams, out, _ := cli.TestIO()
	if err := runDevices(context.Background(), devicesOptions{open: open, workerTypes: "1=h200-b"}, streams); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"NVIDIA H200", "h200", "h200-b", "141.0 GiB", "42 python3 (1.0 GiB)", "43 python3 (memory unknown)", "exclusive_process", "GPU-0001"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
	streams, out, _ = cli.TestIO()
	if err := runDevices(context.Background(), devicesOptions{open: open, json: true}, streams); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Devices []map[string]any `json:"devices"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Devices) != 2 {
		t.Fatalf("JSON = %s", out)
	}
	for _, k := range []string{"index", "uuid", "name", "worker_type", "memory_total_bytes", "memory_free_bytes", "mig", "compute_mode"} {
		if _, ok := got.Devices[0][k]; !ok {
			t.Errorf("device JSON lacks %q", k)
		}
	}
	if got.Devices[0]["worker_type"] != "h200" || got.Devices[0]["memory_total_bytes"].(float64) != 141<<30 {
		t.Errorf("device 0 = %v", got.Devices[0])
	}
	if procs, ok := got.Devices[1]["processes"].([]any); !ok || len(procs) != 0 {
		t.Errorf("processes of an idle GPU = %#v, want []", got.Devices[1]["processes"])
	}
	fail := func() (profile.Devices, error) { return nil, errors.New("NVML init: ERROR_UNKNOWN") }
	streams, out, _ = cli.TestIO()
	if err := runDevices(context.Background(), devicesOptions{open: fail}, streams); err != nil || !strings.Contains(out.String(), "ERROR_UNKNOWN") {
		t.Errorf("NVML failure: %v, %s", err, out)
	}
	if err := runDevices(context.Background(), devicesOptions{open: open, workerTypes: "x=y"}, streams); cli.ExitCode(err) != 2 {
		t.Errorf("bad --worker-type: %v", err)
	}
	err := runDevices(context.Background(), devicesOptions{open: open, workerTypes: "0=a,5=h200-b"}, streams)
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "5=h200-b") || !strings.Contains(err.Error(), "0,1") {
		t.Errorf("--worker-type for device 5 of 0,1: %v (exit %d), want a usage error naming 5 and the devices", err, cli.ExitCode(err))
	}
}

func TestHelpHasExamples(t *testing.T) {
	streams, _, _ := cli.TestIO()
	for _, c := range []struct {
		name, example string
	}{{"devices", newDevicesCmd(streams).Example}, {"run", newRunCmd(streams).Example}} {
		if !strings.Contains(c.example, "gavel-profile "+c.name) {
			t.Errorf("%s --help has no example", c.name)
		}
	}
}
