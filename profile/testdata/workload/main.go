// Command workload is a stand-in for a training job, used by the profile tests on a CPU. It
// reports progress at a configured rate and can be told to misbehave.
//
// Sharing a device is simulated: every workload started with the same --share-dir and the same
// GAVEL_DEVICE registers itself there, and with k live workloads on the device each step takes
// (1 + (k-1)*slowdown) times as long, like plain time-slicing of one GPU.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	rate := flag.Float64("rate", 100, "steps per second when alone")
	shareDir := flag.String("share-dir", "", "directory shared by the workloads of a test (simulates device sharing)")
	slowdown := flag.Float64("slowdown", 1, "extra step time per co-located workload, relative")
	format := flag.String("format", "gavel", "progress format: gavel (GAVEL_STEPS n), iter (iter n/1000000 loss=0.1), tick (one 'step done' line per step)")
	every := flag.Int("report-every", 1, "report every n steps")
	toStderr := flag.Bool("stderr", false, "report progress on stderr")
	fault := flag.String("fault", "none", "none|crash|hang|silent|stall|garbage|oom|oom-shared|exit")
	after := flag.Int("fault-after", 0, "steps before the fault")
	_ = flag.Int("mem", 0, "simulated GPU memory in MiB (read by the tests' fake NVML from the command line)")
	spawnChild := flag.Bool("spawn-child", false, "start a child process that sleeps forever")
	spawnEscaped := flag.Bool("spawn-escaped", false, "start a child that sleeps forever in a session of its own, holding stdout and stderr")
	ignoreTerm := flag.Bool("ignore-term", false, "ignore SIGTERM")
	sleepForever := flag.Bool("sleep-forever", false, "sleep forever (child mode)")
	startup := flag.Duration("startup", 0, "delay before the first step")
	warmSteps := flag.Int("warmup-steps", 0, "number of slow steps at the start")
	warmFactor := flag.Float64("warmup-factor", 3, "step time factor during warm-up")
	noise := flag.Float64("noise", 0, "relative step-time noise, uniform in [-noise, +noise]")
	seed := flag.Uint64("seed", 1, "noise seed")
	flag.Parse()

	if *ignoreTerm || *fault == "hang" {
		signal.Ignore(syscall.SIGTERM)
	}
	if *sleepForever {
		for {
			time.Sleep(time.Hour)
		}
	}
	if *spawnChild {
		child := exec.Command(os.Args[0], "-sleep-forever", "-ignore-term")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "spawn child:", err)
			os.Exit(4)
		}
	}
	if *spawnEscaped {
		child := exec.Command(os.Args[0], "-sleep-forever", "-ignore-term")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "spawn escaped child:", err)
			os.Exit(4)
		}
	}
	out := os.Stdout
	if *toStderr {
		out = os.Stderr
	}
	dev := devicePath(*shareDir)
	if dev != "" {
		if err := os.MkdirAll(dev, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		me := filepath.Join(dev, strconv.Itoa(os.Getpid()))
		if err := os.WriteFile(me, nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		defer os.Remove(me)
	}
	fmt.Fprintln(os.Stderr, "workload: loading model")
	time.Sleep(*startup)

	rng := rand.New(rand.NewPCG(*seed, uint64(os.Getpid())))
	step := time.Duration(float64(time.Second) / *rate)
	next := time.Now()
	for i := 1; ; i++ {
		k := sharers(dev)
		if *fault == "oom-shared" && k >= 2 {
			oom()
		}
		if i > *after && *after >= 0 {
			switch *fault {
			case "crash":
				fmt.Fprintln(os.Stderr, "Traceback (most recent call last):\nRuntimeError: simulated crash")
				os.Exit(3)
			case "oom":
				oom()
			case "hang":
				for {
					time.Sleep(time.Hour)
				}
			case "stall":
				for {
					fmt.Fprintln(os.Stderr, "still working")
					time.Sleep(50 * time.Millisecond)
				}
			case "exit":
				os.Exit(0)
			case "garbage":
				garbage(out, rng)
			}
		}
		d := float64(step) * (1 + float64(k-1)**slowdown)
		if i <= *warmSteps {
			d *= *warmFactor
		}
		if *noise > 0 {
			d *= 1 + *noise*(2*rng.Float64()-1)
		}
		next = next.Add(time.Duration(d))
		time.Sleep(time.Until(next))
		if *fault == "silent" || i%*every != 0 {
			continue
		}
		switch *format {
		case "iter":
			fmt.Fprintf(out, "iter %d/1000000 loss=0.%03d\n", i, i%1000)
		case "tick":
			for j := 0; j < *every; j++ {
				fmt.Fprintln(out, "step done")
			}
		default:
			fmt.Fprintf(out, "GAVEL_STEPS %d\n", i)
		}
	}
}

func devicePath(shareDir string) string {
	if shareDir == "" {
		return ""
	}
	dev := os.Getenv("GAVEL_DEVICE")
	if dev == "" {
		dev = "default"
	}
	return filepath.Join(shareDir, "dev-"+dev)
}

// sharers counts the live workloads registered on the device, this one included.
func sharers(dev string) int {
	if dev == "" {
		return 1
	}
	entries, err := os.ReadDir(dev)
	if err != nil {
		return 1
	}
	k := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			k++
		} else {
			os.Remove(filepath.Join(dev, e.Name()))
		}
	}
	if k < 1 {
		k = 1
	}
	return k
}

func oom() {
	fmt.Fprintln(os.Stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.10 GiB total capacity; 77.50 GiB already allocated)")
	os.Exit(1)
}

func garbage(out *os.File, rng *rand.Rand) {
	junk := make([]byte, 64)
	for i := range junk {
		junk[i] = byte(rng.IntN(256))
	}
	out.Write(junk)
	fmt.Fprintln(out)
	fmt.Fprintln(out, "GAVEL_STEPS 12x!@#")
	for {
		time.Sleep(time.Hour)
	}
}
