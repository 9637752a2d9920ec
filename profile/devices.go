package profile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// CPUWorkerType is the worker type of the pseudo devices used when no GPU driver is present.
const CPUWorkerType = "cpu"

// ErrNoDriver is wrapped by OpenNVML's error when the NVIDIA driver (libnvidia-ml) is missing.
var ErrNoDriver = errors.New("no NVIDIA driver")

// GPU describes one device the profiler can run jobs on.
type GPU struct {
	Index       int       `json:"index"`
	UUID        string    `json:"uuid"`
	Name        string    `json:"name"`
	WorkerType  string    `json:"worker_type"`
	MemoryTotal uint64    `json:"memory_total_bytes"`
	MemoryFree  uint64    `json:"memory_free_bytes"`
	MIG         string    `json:"mig"`          // "enabled", "disabled" or "unsupported"
	ComputeMode string    `json:"compute_mode"` // "default", "exclusive_process", "prohibited", ...
	Processes   []Process `json:"processes"`
	// CPU marks a pseudo device: jobs get no GPU (CUDA_VISIBLE_DEVICES is empty).
	CPU bool `json:"cpu,omitempty"`
}

// Process is a compute process running on a GPU.
type Process struct {
	PID  int    `json:"pid"`
	Name string `json:"name,omitempty"`
	// UsedMemoryBytes is nil (JSON null) where the driver cannot tell.
	UsedMemoryBytes *uint64 `json:"used_memory_bytes"`
}

// Devices lists the devices of the node and reports the GPU memory of the processes on them.
// NVML implements it; CPUDevices stands in when there is no driver; tests use fakes.
type Devices interface {
	List(ctx context.Context) ([]GPU, error)
	// ProcessMemory returns the GPU memory used on device index, by process id. Devices that
	// cannot tell return (nil, nil).
	ProcessMemory(ctx context.Context, index int) (map[int]uint64, error)
	// MemoryUsed returns the memory in use on device index, all processes together. It stands
	// in for ProcessMemory when process ids cannot be matched (a container with its own PID
	// namespace), for jobs measured alone.
	MemoryUsed(ctx context.Context, index int) (uint64, error)
	Close() error
}

// CPUDevices returns n pseudo devices of worker type "cpu" (at least one), for profiling
// without a GPU. Their jobs run side by side on the CPU; memory is not measured.
func CPUDevices(n int) Devices {
	if n < 1 {
		n = 1
	}
	return cpuDevices(n)
}

type cpuDevices int

func (c cpuDevices) List(context.Context) ([]GPU, error) {
	gpus := make([]GPU, int(c))
	for i := range gpus {
		gpus[i] = GPU{Index: i, UUID: fmt.Sprintf("CPU-%d", i), Name: "CPU", WorkerType: CPUWorkerType,
			MIG: "unsupported", ComputeMode: "default", CPU: true}
	}
	return gpus, nil
}

func (cpuDevices) ProcessMemory(context.Context, int) (map[int]uint64, error) { return nil, nil }
func (cpuDevices) MemoryUsed(context.Context, int) (uint64, error)            { return 0, nil }
func (cpuDevices) Close() error                                               { return nil }

// vendorWord reports words dropped from product names before the model is taken.
func vendorWord(w string) bool {
	switch w {
	case "nvidia", "tesla", "geforce", "quadro":
		return true
	}
	return false
}

// seriesWord reports words joined with the words after them up to the first with a digit, the
// model number ("RTX 4090" → "rtx4090", "RTX PRO 6000" → "rtxpro6000").
func seriesWord(w string) bool { return w == "rtx" || w == "gtx" || w == "titan" }

// variantWord reports words after the model that name another product, not a memory size or
// form factor: an RTX 3080 Ti is not an RTX 3080, an RTX 4090 D not an RTX 4090, nor an RTX
// 6000 Ada a Quadro RTX 6000.
func variantWord(w string) bool { return w == "ti" || w == "super" || w == "ada" || w == "d" }

func hasDigit(w string) bool { return strings.ContainsFunc(w, unicode.IsDigit) }

// WorkerType derives a worker type from a product name: the model without vendor words and
// without memory or form-factor suffixes, in lower case ("NVIDIA H200" → "h200",
// "Tesla V100-SXM2-16GB" → "v100", "NVIDIA GeForce RTX 4090" → "rtx4090"), keeping the
// words that make it another product ("NVIDIA GeForce RTX 3080 Ti" → "rtx3080ti"). It does not know
// any GPU by name; use an override where the derived name does not match the table.
func WorkerType(product string) string {
	fields := strings.FieldsFunc(strings.ToLower(product), func(r rune) bool {
		return unicode.IsSpace(r) || r == '-' || r == '_' || r == '/'
	})
	var words []string
	for _, f := range fields {
		if !vendorWord(f) {
			words = append(words, f)
		}
	}
	if len(words) == 0 {
		return "unknown"
	}
	w, rest := words[0], words[1:]
	if seriesWord(w) {
		// Up to the model number: "RTX PRO 6000" and "RTX PRO 4000" were both "rtxpro".
		for len(rest) > 0 && !hasDigit(w) {
			w, rest = w+rest[0], rest[1:]
		}
	}
	for _, v := range rest {
		if variantWord(v) {
			w += v
		}
	}
	return w
}

// WorkerTypeOverrides maps device indices to worker types; index -1 applies to every device.
type WorkerTypeOverrides map[int]string

// ParseWorkerTypeOverrides reads "h200" (every device) or "0=h200,1=a100".
func ParseWorkerTypeOverrides(s string) (WorkerTypeOverrides, error) {
	o := WorkerTypeOverrides{}
	if strings.TrimSpace(s) == "" {
		return o, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		k, v, found := strings.Cut(item, "=")
		if !found {
			if !validName(item) {
				return nil, fmt.Errorf("worker type %q: want a name of letters, digits, '-', '_' and '.'", item)
			}
			if prev, dup := o[-1]; dup {
				// "h200,a100" read as one per GPU labelled every GPU a100.
				return nil, fmt.Errorf("worker types %q and %q both name every device: give IDX=NAME for each device (0=%s,1=%s)", prev, item, prev, item)
			}
			o[-1] = item
			continue
		}
		i, err := strconv.Atoi(strings.TrimSpace(k))
		if err != nil || i < 0 {
			return nil, fmt.Errorf("worker type override %q: %q is not a device index", item, k)
		}
		if prev, dup := o[i]; dup {
			return nil, fmt.Errorf("worker type override %q: device %d is already %q", item, i, prev)
		}
		v = strings.TrimSpace(v)
		if !validName(v) {
			return nil, fmt.Errorf("worker type override %q: want a name of letters, digits, '-', '_' and '.'", item)
		}
		o[i] = v
	}
	return o, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Apply sets the worker types of gpus in place. An override for an index that none of gpus has
// is an error, and then nothing is changed: a mistyped index would otherwise leave a device
// under its derived name unnoticed.
func (o WorkerTypeOverrides) Apply(gpus []GPU) error {
	if err := o.checkIndices(gpus); err != nil {
		return err
	}
	for i := range gpus {
		if w, ok := o[gpus[i].Index]; ok {
			gpus[i].WorkerType = w
		} else if w, ok := o[-1]; ok {
			gpus[i].WorkerType = w
		}
	}
	return nil
}

func (o WorkerTypeOverrides) checkIndices(gpus []GPU) error {
	have := make([]string, len(gpus))
	for i, g := range gpus {
		have[i] = strconv.Itoa(g.Index)
	}
	missing := make([]int, 0, len(o))
	for idx := range o {
		if idx >= 0 && !slices.ContainsFunc(gpus, func(g GPU) bool { return g.Index == idx }) {
			missing = append(missing, idx)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	idx := slices.Min(missing)
	return fmt.Errorf("override %d=%s: no device %d (the devices are %s)", idx, o[idx], idx, strings.Join(have, ","))
}

// SelectGPUs keeps the devices named by spec: "all" (or "") or a comma-separated list of indices.
func SelectGPUs(gpus []GPU, spec string) ([]GPU, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "all" {
		return gpus, nil
	}
	byIndex := map[int]GPU{}
	for _, g := range gpus {
		byIndex[g.Index] = g
	}
	var out []GPU
	seen := map[int]bool{}
	for _, s := range strings.Split(spec, ",") {
		i, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("--gpu %q: %q is not a device index", spec, s)
		}
		g, ok := byIndex[i]
		if !ok {
			return nil, fmt.Errorf("--gpu %q: no device %d (the node has %d)", spec, i, len(gpus))
		}
		if !seen[i] {
			seen[i] = true
			out = append(out, g)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out, nil
}
