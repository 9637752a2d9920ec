package profile

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// fakeNVML is a driver with the devices given; methods the profiler does not call panic
// through the nil embedded interface.
type fakeNVML struct {
	nvml.Interface
	initRet nvml.Return
	devs    []fakeNVMLDevice
	names   map[int]string // process names by pid
}

func (f *fakeNVML) Init() nvml.Return                  { return f.initRet }
func (f *fakeNVML) Shutdown() nvml.Return              { return nvml.SUCCESS }
func (f *fakeNVML) DeviceGetCount() (int, nvml.Return) { return len(f.devs), nvml.SUCCESS }
func (f *fakeNVML) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	if i < 0 || i >= len(f.devs) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return f.devs[i], nvml.SUCCESS
}
func (f *fakeNVML) SystemGetProcessName(pid int) (string, nvml.Return) {
	if n, ok := f.names[pid]; ok {
		return n, nvml.SUCCESS
	}
	return "", nvml.ERROR_NOT_FOUND
}

type fakeNVMLDevice struct {
	nvml.Device
	name, uuid string
	mem        nvml.Memory
	mig        int
	migRet     nvml.Return
	mode       nvml.ComputeMode
	procs      []nvml.ProcessInfo
}

func (d fakeNVMLDevice) GetName() (string, nvml.Return)            { return d.name, nvml.SUCCESS }
func (d fakeNVMLDevice) GetUUID() (string, nvml.Return)            { return d.uuid, nvml.SUCCESS }
func (d fakeNVMLDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) { return d.mem, nvml.SUCCESS }
func (d fakeNVMLDevice) GetMigMode() (int, int, nvml.Return)       { return d.mig, d.mig, d.migRet }
func (d fakeNVMLDevice) GetComputeMode() (nvml.ComputeMode, nvml.Return) {
	return d.mode, nvml.SUCCESS
}
func (d fakeNVMLDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	return d.procs, nvml.SUCCESS
}

// TestDevicesNVML reads two devices through the NVML binding: names, worker types, memory, MIG,
// compute mode, processes; and the memory the profiler samples.
func TestDevicesNVML(t *testing.T) {
	lib := &fakeNVML{names: map[int]string{4242: "python3"}, devs: []fakeNVMLDevice{
		{name: "NVIDIA H200", uuid: "GPU-aaaa", mem: nvml.Memory{Total: 141 << 30, Free: 100 << 30, Used: 41 << 30},
			mig: nvml.DEVICE_MIG_DISABLE, mode: nvml.COMPUTEMODE_DEFAULT,
			procs: []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 40 << 30}, {Pid: 4242, UsedGpuMemory: 1 << 30}}},
		{name: "Tesla V100-SXM2-16GB", uuid: "GPU-bbbb", mem: nvml.Memory{Total: 16 << 30, Free: 16 << 30},
			migRet: nvml.ERROR_NOT_SUPPORTED, mode: nvml.COMPUTEMODE_EXCLUSIVE_PROCESS},
	}}
	devs, err := openNVML(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer devs.Close()
	got, err := devs.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []GPU{
		{Index: 0, UUID: "GPU-aaaa", Name: "NVIDIA H200", WorkerType: "h200", MemoryTotal: 141 << 30, MemoryFree: 100 << 30,
			MIG: "disabled", ComputeMode: "default", Processes: []Process{
				{PID: 4242, Name: "python3", UsedMemoryBytes: new(uint64(40 << 30))}, {PID: 4242, Name: "python3", UsedMemoryBytes: new(uint64(1 << 30))}}},
		{Index: 1, UUID: "GPU-bbbb", Name: "Tesla V100-SXM2-16GB", WorkerType: "v100", MemoryTotal: 16 << 30, MemoryFree: 16 << 30,
			MIG: "unsupported", ComputeMode: "exclusive_process"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List =\n%+v\nwant\n%+v", got, want)
	}
	mem, err := devs.ProcessMemory(context.Background(), 0)
	if err != nil || !reflect.DeepEqual(mem, map[int]uint64{4242: 41 << 30}) {
		t.Errorf("ProcessMemory = %v, %v; want 41 GiB for pid 4242", mem, err)
	}
	if used, err := devs.MemoryUsed(context.Background(), 0); err != nil || used != 41<<30 {
		t.Errorf("MemoryUsed = %d, %v", used, err)
	}
	if _, err := devs.MemoryUsed(context.Background(), 7); err == nil {
		t.Error("MemoryUsed of a missing device: no error")
	}
}

// TestDevicesNVMLInitErrors: only a missing library or driver is "no driver"; a permission
// problem says so instead.
func TestDevicesNVMLInitErrors(t *testing.T) {
	for _, tc := range []struct {
		ret      nvml.Return
		noDriver bool
		text     string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, true, "NVML"},
		{nvml.ERROR_DRIVER_NOT_LOADED, true, "NVML"},
		{nvml.ERROR_NO_PERMISSION, false, "permissions"},
		{nvml.ERROR_UNKNOWN, false, "NVML init"},
	} {
		_, err := openNVML(&fakeNVML{initRet: tc.ret})
		if err == nil || errors.Is(err, ErrNoDriver) != tc.noDriver || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("init %v: error %v, want no-driver=%v mentioning %q", tc.ret, err, tc.noDriver, tc.text)
		}
	}
}

// TestDevicesNVMLMemoryNotAvailable: NVML reports a process's memory as VALUE_NOT_AVAILABLE
// (all bits set) where it cannot tell; that is unknown, not 16 EiB.
func TestDevicesNVMLMemoryNotAvailable(t *testing.T) {
	lib := &fakeNVML{devs: []fakeNVMLDevice{{name: "NVIDIA H200", mem: nvml.Memory{Total: 141 << 30},
		procs: []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: math.MaxUint64}, {Pid: 4243, UsedGpuMemory: 2 << 30},
			{Pid: 4243, UsedGpuMemory: math.MaxUint64}}}}}
	devs, err := openNVML(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer devs.Close()
	mem, err := devs.ProcessMemory(context.Background(), 0)
	if err != nil || !reflect.DeepEqual(mem, map[int]uint64{4243: 2 << 30}) {
		t.Errorf("ProcessMemory = %v, %v; want only pid 4243 with 2 GiB", mem, err)
	}
	gpus, err := devs.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(gpus[0].Processes)
	want := `[{"pid":4242,"used_memory_bytes":null},{"pid":4243,"used_memory_bytes":2147483648},{"pid":4243,"used_memory_bytes":null}]`
	if string(b) != want {
		t.Errorf("processes %s, want %s", b, want)
	}
}
