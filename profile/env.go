package profile

import (
	"fmt"
	"strconv"
	"strings"
)

// AllowedEnv returns the variables of the profiler's environment that jobs inherit. Anything
// else must be passed explicitly (BaseEnv's extra, or a reference's env).
func AllowedEnv() []string {
	return []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR", "LD_LIBRARY_PATH"}
}

// BaseEnv builds the environment jobs start from: the allowlisted variables of parent, then
// extra, each "K=V" or "K" (copied from parent when set there).
func BaseEnv(parent, extra []string) ([]string, error) {
	get := func(k string) (string, bool) {
		for i := len(parent) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(parent[i], k+"="); ok {
				return v, true
			}
		}
		return "", false
	}
	var env []string
	for _, k := range AllowedEnv() {
		if v, ok := get(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, e := range extra {
		k, v, hasValue := strings.Cut(e, "=")
		if k == "" || strings.ContainsAny(k, " \t\x00") {
			return nil, fmt.Errorf("--env %q: want K=V or K", e)
		}
		if reservedEnv(k) {
			return nil, fmt.Errorf("--env %q: %s is set by the profiler for each device", e, k)
		}
		if !hasValue {
			var ok bool
			if v, ok = get(k); !ok {
				return nil, fmt.Errorf("--env %q: %s is not set in the profiler's environment", e, k)
			}
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

func reservedEnv(k string) bool {
	switch k {
	case "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "GAVEL_DEVICE", "GAVEL_WORKER_TYPE",
		"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY":
		return true
	}
	return false
}

// deviceEnv pins a job to gpus. It comes last in the job's environment so nothing overrides
// it. GPUs are named by UUID, which does not depend on CUDA's device order.
func deviceEnv(gpus []GPU) []string {
	var vis, idx []string
	cpu := false
	for _, g := range gpus {
		cpu = cpu || g.CPU
		if g.UUID != "" {
			vis = append(vis, g.UUID)
		} else {
			vis = append(vis, strconv.Itoa(g.Index))
		}
		idx = append(idx, strconv.Itoa(g.Index))
	}
	dev := strings.Join(idx, ",")
	if cpu {
		// Hide every GPU from a CPU measurement.
		return []string{"CUDA_VISIBLE_DEVICES=", "GAVEL_DEVICE=cpu" + dev, "GAVEL_WORKER_TYPE=" + gpus[0].WorkerType}
	}
	return []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=" + strings.Join(vis, ","),
		"GAVEL_DEVICE=" + dev, "GAVEL_WORKER_TYPE=" + gpus[0].WorkerType}
}
