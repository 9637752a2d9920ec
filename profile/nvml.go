package profile

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// memoryNotAvailable is NVML_VALUE_NOT_AVAILABLE (nvml.VALUE_NOT_AVAILABLE, -1) in the unsigned
// field of a process's used memory: the driver cannot tell. Taken as bytes it would be 16 EiB.
const memoryNotAvailable = math.MaxUint64

// nvmlDevices reads devices through NVML. NVML calls are safe from several goroutines.
type nvmlDevices struct {
	lib nvml.Interface
}

// OpenNVML loads libnvidia-ml and initializes NVML. Without a driver the error wraps
// ErrNoDriver and says why. Close shuts NVML down.
func OpenNVML() (Devices, error) { return openNVML(nvml.New()) }

// openNVML initializes lib (tests pass a fake library).
func openNVML(lib nvml.Interface) (Devices, error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
		return &nvmlDevices{lib: lib}, nil
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("%w: NVML init: %s", ErrNoDriver, nvml.ErrorString(ret))
	case nvml.ERROR_NO_PERMISSION:
		// The driver is there; this user may not open the devices.
		return nil, fmt.Errorf("NVML init: %s (check the permissions of /dev/nvidia*)", nvml.ErrorString(ret))
	default:
		return nil, fmt.Errorf("NVML init: %s", nvml.ErrorString(ret))
	}
}

func (d *nvmlDevices) Close() error {
	if ret := d.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %s", nvml.ErrorString(ret))
	}
	return nil
}

func (d *nvmlDevices) List(ctx context.Context) ([]GPU, error) {
	n, ret := d.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %s", nvml.ErrorString(ret))
	}
	gpus := make([]GPU, 0, n)
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dev, ret := d.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d: %s", i, nvml.ErrorString(ret))
		}
		g := GPU{Index: i, MIG: "unsupported", ComputeMode: "unknown"}
		if g.Name, ret = dev.GetName(); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d name: %s", i, nvml.ErrorString(ret))
		}
		g.WorkerType = WorkerType(g.Name)
		g.UUID, _ = dev.GetUUID()
		if mem, ret := dev.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemoryTotal, g.MemoryFree = mem.Total, mem.Free
		}
		if cur, _, ret := dev.GetMigMode(); ret == nvml.SUCCESS {
			g.MIG = "disabled"
			if cur == nvml.DEVICE_MIG_ENABLE {
				g.MIG = "enabled"
			}
		}
		if mode, ret := dev.GetComputeMode(); ret == nvml.SUCCESS {
			g.ComputeMode = computeModeName(mode)
		}
		if procs, ret := dev.GetComputeRunningProcesses(); ret == nvml.SUCCESS {
			for _, p := range procs {
				name, _ := d.lib.SystemGetProcessName(int(p.Pid))
				proc := Process{PID: int(p.Pid), Name: name}
				if p.UsedGpuMemory != memoryNotAvailable {
					proc.UsedMemoryBytes = &p.UsedGpuMemory
				}
				g.Processes = append(g.Processes, proc)
			}
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

func (d *nvmlDevices) ProcessMemory(_ context.Context, index int) (map[int]uint64, error) {
	dev, ret := d.lib.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device %d: %s", index, nvml.ErrorString(ret))
	}
	procs, ret := dev.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device %d processes: %s", index, nvml.ErrorString(ret))
	}
	// A process whose memory is not available is left out, as one in another PID namespace
	// is: the sampler then falls back to the device's memory in use.
	m := make(map[int]uint64, len(procs))
	for _, p := range procs {
		if p.UsedGpuMemory != memoryNotAvailable {
			m[int(p.Pid)] += p.UsedGpuMemory
		}
	}
	return m, nil
}

func (d *nvmlDevices) MemoryUsed(_ context.Context, index int) (uint64, error) {
	dev, ret := d.lib.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return 0, fmt.Errorf("NVML device %d: %s", index, nvml.ErrorString(ret))
	}
	mem, ret := dev.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return 0, fmt.Errorf("NVML device %d memory: %s", index, nvml.ErrorString(ret))
	}
	return mem.Used, nil
}

func computeModeName(m nvml.ComputeMode) string {
	switch m {
	case nvml.COMPUTEMODE_DEFAULT:
		return "default"
	case nvml.COMPUTEMODE_EXCLUSIVE_THREAD:
		return "exclusive_thread"
	case nvml.COMPUTEMODE_PROHIBITED:
		return "prohibited"
	case nvml.COMPUTEMODE_EXCLUSIVE_PROCESS:
		return "exclusive_process"
	}
	return strings.ToLower(fmt.Sprintf("mode_%d", int(m)))
}
