package profile

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gavelkit/gavel/table"
)

func TestDevicesWorkerType(t *testing.T) {
	tests := map[string]string{
		"NVIDIA H200":             "h200",
		"NVIDIA H100 80GB HBM3":   "h100",
		"Tesla V100-SXM2-16GB":    "v100",
		"Tesla P100-PCIE-16GB":    "p100",
		"Tesla K80":               "k80",
		"NVIDIA A100-SXM4-80GB":   "a100",
		"NVIDIA GeForce RTX 4090": "rtx4090",
		"NVIDIA L40S":             "l40s",
		"NVIDIA":                  "unknown",
		// Variants are other products.
		"NVIDIA GeForce RTX 3080":        "rtx3080",
		"NVIDIA GeForce RTX 3080 Ti":     "rtx3080ti",
		"NVIDIA GeForce RTX 4070 SUPER":  "rtx4070super",
		"Quadro RTX 6000":                "rtx6000",
		"NVIDIA RTX 6000 Ada Generation": "rtx6000ada",
		"NVIDIA H100 80GB HBM3 SXM":      "h100",
		// The model number after a series word: every RTX PRO was "rtxpro", a 4090 D a 4090.
		"NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtxpro6000",
		"NVIDIA RTX PRO 4000 Blackwell":                "rtxpro4000",
		"NVIDIA RTX A6000":                             "rtxa6000",
		"NVIDIA GeForce RTX 4090 D":                    "rtx4090d",
		"NVIDIA TITAN RTX":                             "titanrtx",
	}
	for name, want := range tests {
		if got := WorkerType(name); got != want {
			t.Errorf("WorkerType(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestWorkerTypeOverrides(t *testing.T) {
	gpus := []GPU{{Index: 0, WorkerType: "h200"}, {Index: 1, WorkerType: "h200"}}
	o, err := ParseWorkerTypeOverrides("1=h200-slow")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Apply(gpus); err != nil || gpus[0].WorkerType != "h200" || gpus[1].WorkerType != "h200-slow" {
		t.Errorf("after override: %+v, %v", gpus, err)
	}
	o, _ = ParseWorkerTypeOverrides("v100")
	if err := o.Apply(gpus); err != nil || gpus[0].WorkerType != "v100" || gpus[1].WorkerType != "v100" {
		t.Errorf("after global override: %+v, %v", gpus, err)
	}
	o, _ = ParseWorkerTypeOverrides("0=a100,7=k80,3=p100")
	err = o.Apply(gpus)
	if want := "override 3=p100: no device 3 (the devices are 0,1)"; err == nil || err.Error() != want {
		t.Errorf("override of missing devices 3 and 7: %v, want %q", err, want)
	}
	if gpus[0].WorkerType != "v100" {
		t.Errorf("a failed override changed device 0 to %q", gpus[0].WorkerType)
	}
	// "h200,a100" labelled every GPU a100; a repeated index kept the last.
	for _, bad := range []string{"x=h200", "0=", "a b", "-1=k80", "h200,a100", "0=a,0=b"} {
		if _, err := ParseWorkerTypeOverrides(bad); err == nil {
			t.Errorf("ParseWorkerTypeOverrides(%q): no error", bad)
		}
	}
}

func TestSelectGPUs(t *testing.T) {
	gpus := []GPU{{Index: 0}, {Index: 1}, {Index: 2}}
	got, err := SelectGPUs(gpus, "2,0,2")
	if err != nil || len(got) != 2 || got[0].Index != 0 || got[1].Index != 2 {
		t.Errorf("SelectGPUs = %+v, %v", got, err)
	}
	if got, _ := SelectGPUs(gpus, "all"); len(got) != 3 {
		t.Errorf("all: %d devices", len(got))
	}
	for _, bad := range []string{"3", "x", "0,,1"} {
		if _, err := SelectGPUs(gpus, bad); err == nil {
			t.Errorf("SelectGPUs(%q): no error", bad)
		}
	}
}

func TestOpenNVMLWithoutDriver(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	d, err := OpenNVML()
	if err == nil {
		d.Close()
		t.Skip("NVML loaded without /dev/nvidiactl")
	}
	if !strings.Contains(err.Error(), "NVML") {
		t.Errorf("error %q does not say NVML failed", err)
	}
}

// fakeGPUs is a node of GPUs whose jobs are the test workload: the memory of a process is the
// workload's -mem flag (MiB), on the device named by its GAVEL_DEVICE. Each device also holds
// other 100 MiB in use. With hidePIDs, process ids cannot be matched, as in a container.
type fakeGPUs struct {
	gpus     []GPU
	hidePIDs bool
}

func (f fakeGPUs) List(context.Context) ([]GPU, error) { return append([]GPU{}, f.gpus...), nil }
func (f fakeGPUs) Close() error                        { return nil }

func (f fakeGPUs) ProcessMemory(_ context.Context, index int) (map[int]uint64, error) {
	if f.hidePIDs {
		return map[int]uint64{1 << 22: 100 << 20}, nil // a pid from another namespace
	}
	return workloadMemory(index), nil
}

func (f fakeGPUs) MemoryUsed(_ context.Context, index int) (uint64, error) {
	used := uint64(100 << 20)
	for _, b := range workloadMemory(index) {
		used += b
	}
	return used, nil
}

// workloadMemory returns the -mem of the live workload processes on device index, by pid.
func workloadMemory(index int) map[int]uint64 {
	m := map[int]uint64{}
	for pid, args := range workloadProcs() {
		environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err != nil || !onDevice(strings.Split(string(environ), "\x00"), index) {
			continue
		}
		if i := slices.Index(args, "-mem"); i >= 0 && i+1 < len(args) {
			mb, _ := strconv.Atoi(args[i+1])
			m[pid] = uint64(mb) << 20
		}
	}
	return m
}

// onDevice reports whether a job's environment pins it to device index (among others).
func onDevice(environ []string, index int) bool {
	for _, kv := range environ {
		if devs, ok := strings.CutPrefix(kv, "GAVEL_DEVICE="); ok {
			return slices.Contains(strings.Split(devs, ","), strconv.Itoa(index))
		}
	}
	return false
}

// TestRunMemoryInfeasibleMultiGPU: the peak memory of a job on two devices is the sum over both,
// so a pair fits when the two peaks fit the memory of both devices together.
func TestRunMemoryInfeasibleMultiGPU(t *testing.T) {
	share := t.TempDir()
	gpu := func(i int) GPU {
		return GPU{Index: i, UUID: "GPU-fake-" + strconv.Itoa(i), WorkerType: "fake", MemoryTotal: 1000 << 20, ComputeMode: "default"}
	}
	dev := fakeGPUs{gpus: []GPU{gpu(0), gpu(1)}}
	a, b := table.JobType{Model: "a", ScaleFactor: 2}, table.JobType{Model: "b", ScaleFactor: 2}
	r := newRunner(t, 1, map[table.JobType]Command{
		a: workload("-rate", "200", "-share-dir", share, "-mem", "400"), // 400 MiB on each device
		b: workload("-rate", "200", "-share-dir", share, "-mem", "700"),
	})
	r.GPUs, r.Devices = dev.gpus, dev
	recs, err := r.Run(context.Background(), []Task{
		{WorkerType: "fake", Job: a}, {WorkerType: "fake", Job: b},
		{WorkerType: "fake", Job: a, Partner: a}, {WorkerType: "fake", Job: a, Partner: b},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec := findRecord(recs, "isolated", "a", ""); rec == nil || rec.PeakMemoryBytes != 800<<20 {
		t.Fatalf("isolated record of a = %+v, want peak memory 800 MiB (400 on each device)", rec)
	}
	if rec := findRecord(recs, "pair", "a", "a"); rec == nil || rec.Status != StatusOK {
		t.Errorf("a+a (800 MiB on each device of 1000) = %+v, want measured", rec)
	}
	if rec := findRecord(recs, "pair", "a", "b"); rec == nil || rec.Status != StatusInfeasible || rec.TotalSeconds != 0 ||
		!strings.Contains(rec.Reason, "800 MiB + 1400 MiB = 2200 MiB exceed the 2000 MiB of devices 0,1") {
		t.Errorf("a+b (1100 MiB on each device of 1000) = %+v, want infeasible without running", rec)
	}
}

// TestRunMemoryInfeasible: peak memory is read per process group; a pair whose isolated peaks
// add up to more than the device has is recorded infeasible without being run.
func TestRunMemoryInfeasible(t *testing.T) {
	for _, hide := range []bool{false, true} {
		t.Run(map[bool]string{false: "by process", true: "by device growth"}[hide], func(t *testing.T) { testMemoryInfeasible(t, hide) })
	}
}

func testMemoryInfeasible(t *testing.T, hidePIDs bool) {
	share := t.TempDir()
	dev := fakeGPUs{hidePIDs: hidePIDs, gpus: []GPU{{Index: 0, UUID: "GPU-fake-0", Name: "Fake GPU", WorkerType: "fake", MemoryTotal: 1000 << 20, ComputeMode: "default"}}}
	big, small := jt("big"), jt("small")
	r := newRunner(t, 1, map[table.JobType]Command{
		big:   workload("-rate", "200", "-share-dir", share, "-mem", "600"),
		small: workload("-rate", "200", "-share-dir", share, "-mem", "300"),
	})
	r.GPUs, r.Devices = dev.gpus, dev
	recs, err := r.Run(context.Background(), []Task{
		{WorkerType: "fake", Job: big}, {WorkerType: "fake", Job: small},
		{WorkerType: "fake", Job: big, Partner: big},
		{WorkerType: "fake", Job: big, Partner: small},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec := findRecord(recs, "isolated", "big", ""); rec == nil || rec.PeakMemoryBytes != 600<<20 {
		t.Fatalf("isolated record of big = %+v, want peak memory 600 MiB", rec)
	}
	self := findRecord(recs, "pair", "big", "big")
	if self == nil || self.Status != StatusInfeasible || !strings.Contains(self.Reason, "600 MiB + 600 MiB = 1200 MiB exceed the 1000 MiB of device 0") || self.TotalSeconds != 0 {
		t.Fatalf("big+big = %+v, want infeasible by memory without running", self)
	}
	mixed := findRecord(recs, "pair", "big", "small")
	if mixed == nil || mixed.Status != StatusOK {
		t.Fatalf("big+small = %+v, want measured", mixed)
	}
	// Per-job peaks in a pair need process ids.
	if !hidePIDs && (mixed.PeakMemoryBytes != 600<<20 || mixed.PartnerPeakMemory != 300<<20) {
		t.Errorf("big+small peaks = %d, %d; want 600 and 300 MiB", mixed.PeakMemoryBytes>>20, mixed.PartnerPeakMemory>>20)
	}
	if hidePIDs && (mixed.PeakMemoryBytes != 0 || mixed.PartnerPeakMemory != 0) {
		t.Errorf("big+small peaks = %d, %d without process ids; want unknown (0)", mixed.PeakMemoryBytes>>20, mixed.PartnerPeakMemory>>20)
	}
	tbl, _ := table.Load(r.TablePath)
	if _, _, s := tbl.Pair("fake", big, big); s != table.Infeasible {
		t.Errorf("big+big state %v", s)
	}
	for _, rec := range recs {
		if !reflect.DeepEqual(rec.GPUs, []int{0}) {
			t.Errorf("record on devices %v, want [0]", rec.GPUs)
		}
	}
}

// TestRunParallelDevices: with two devices, two measurements run at the same time, each pinned
// to its own device.
func TestRunParallelDevices(t *testing.T) {
	gpus := []GPU{
		{Index: 0, UUID: "GPU-a", WorkerType: "fake", ComputeMode: "default"},
		{Index: 1, UUID: "GPU-b", WorkerType: "fake", ComputeMode: "default"},
	}
	a, b := jt("a"), jt("b")
	r := newRunner(t, 1, map[table.JobType]Command{a: workload("-rate", "200"), b: workload("-rate", "200")})
	r.GPUs = gpus
	start := time.Now()
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "fake", Job: a}, {WorkerType: "fake", Job: b}})
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start).Seconds()
	if sum := recs[0].TotalSeconds + recs[1].TotalSeconds; elapsed > 0.8*sum {
		t.Errorf("run took %.2fs for measurements of %.2fs in all: not in parallel", elapsed, sum)
	}
	used := map[int]bool{}
	for _, rec := range recs {
		used[rec.GPUs[0]] = true
	}
	if len(recs) != 2 || !used[0] || !used[1] {
		t.Errorf("records %+v: want one measurement on each device", recs)
	}
}

func TestRunComputeModeForbidsSharing(t *testing.T) {
	a := jt("a")
	r := newRunner(t, 1, map[table.JobType]Command{a: workload("-rate", "200")})
	r.GPUs = []GPU{{Index: 0, UUID: "GPU-x", WorkerType: "fake", ComputeMode: "exclusive_process"}}
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "fake", Job: a}, {WorkerType: "fake", Job: a, Partner: a}})
	if err != nil {
		t.Fatal(err)
	}
	p := findRecord(recs, "pair", "a", "a")
	if p == nil || p.Status != StatusFailed || !strings.Contains(p.Reason, "exclusive_process") {
		t.Errorf("pair record = %+v", p)
	}
}

// workloadNVML is an NVML driver whose devices hold the live test workload (see workloadMemory)
// plus 100 MiB of other use, and report every process's memory as not available.
type workloadNVML struct{ fakeNVML }

func (f *workloadNVML) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	d, ret := f.fakeNVML.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return nil, ret
	}
	return workloadNVMLDevice{fakeNVMLDevice: d.(fakeNVMLDevice), index: i}, nvml.SUCCESS
}

type workloadNVMLDevice struct {
	fakeNVMLDevice
	index int
}

func (d workloadNVMLDevice) GetComputeRunningProcesses() ([]nvml.ProcessInfo, nvml.Return) {
	var procs []nvml.ProcessInfo
	for pid := range workloadMemory(d.index) {
		procs = append(procs, nvml.ProcessInfo{Pid: uint32(pid), UsedGpuMemory: math.MaxUint64})
	}
	return procs, nvml.SUCCESS
}

func (d workloadNVMLDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	m := d.mem
	m.Used = 100 << 20
	for _, b := range workloadMemory(d.index) {
		m.Used += b
	}
	return m, nvml.SUCCESS
}

// TestRunMemoryNotAvailable: where NVML cannot tell a process's memory, an isolated peak falls
// back to the growth of the device's memory in use, and the pre-check goes by those peaks: a
// pair that fits is measured, one that does not is infeasible.
func TestRunMemoryNotAvailable(t *testing.T) {
	share := t.TempDir()
	devs, err := openNVML(&workloadNVML{fakeNVML{devs: []fakeNVMLDevice{{name: "Fake GPU",
		mem: nvml.Memory{Total: 1000 << 20}, mode: nvml.COMPUTEMODE_DEFAULT}}}})
	if err != nil {
		t.Fatal(err)
	}
	gpus, err := devs.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	big, small := jt("big"), jt("small")
	r := newRunner(t, 1, map[table.JobType]Command{
		big:   workload("-rate", "200", "-share-dir", share, "-mem", "600"),
		small: workload("-rate", "200", "-share-dir", share, "-mem", "300"),
	})
	r.GPUs, r.Devices = gpus, devs
	w := gpus[0].WorkerType
	recs, err := r.Run(context.Background(), []Task{{WorkerType: w, Job: big}, {WorkerType: w, Job: small},
		{WorkerType: w, Job: big, Partner: small}, {WorkerType: w, Job: big, Partner: big}})
	if err != nil {
		t.Fatal(err)
	}
	if rec := findRecord(recs, "isolated", "big", ""); rec == nil || rec.PeakMemoryBytes != 600<<20 {
		t.Fatalf("isolated record of big = %+v, want peak memory 600 MiB (growth of memory in use)", rec)
	}
	if rec := findRecord(recs, "pair", "big", "small"); rec == nil || rec.Status != StatusOK {
		t.Errorf("big+small (900 MiB of 1000) = %+v, want measured", rec)
	}
	if rec := findRecord(recs, "pair", "big", "big"); rec == nil || rec.Status != StatusInfeasible ||
		!strings.Contains(rec.Reason, "600 MiB + 600 MiB = 1200 MiB exceed the 1000 MiB of device 0") {
		t.Errorf("big+big (1200 MiB of 1000) = %+v, want infeasible without running", rec)
	}
}

// TestPrecheckPeaksDoNotOverflow: two peaks whose sum wraps around 64 bits still exceed the
// device, and the reason does not print the wrapped sum.
func TestPrecheckPeaksDoNotOverflow(t *testing.T) {
	p := (&Runner{}).newPass()
	a, b := jt("a"), jt("b")
	p.peak[isoKey{"fake", a}], p.peak[isoKey{"fake", b}] = 1<<63, 1<<63 // sum wraps to 0
	gpus := []GPU{{Index: 0, WorkerType: "fake", MemoryTotal: 1000 << 20, ComputeMode: "default"}}
	rec, run := p.precheck(Task{WorkerType: "fake", Job: a, Partner: b}, gpus)
	if run || rec.Status != StatusInfeasible || !strings.Contains(rec.Reason, fmt.Sprintf("= %d MiB exceed", uint64(math.MaxUint64)>>20)) {
		t.Errorf("precheck of 8 EiB + 8 EiB on 1000 MiB = %+v, run %v; want infeasible with the sum capped", rec, run)
	}
}
