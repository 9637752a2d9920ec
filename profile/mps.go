package profile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// DefaultMPSControl is the MPS control program.
const DefaultMPSControl = "nvidia-cuda-mps-control"

// DefaultMPSPipeDir is where a system-wide MPS control daemon listens.
const DefaultMPSPipeDir = "/tmp/nvidia-mps"

// MPSDaemon is an NVIDIA MPS control daemon the jobs connect to: either one already running, or
// one started by StartMPS with private pipe and log directories.
type MPSDaemon struct {
	control string
	env     []string // environment of the control program
	pipeDir string
	logDir  string
	started bool // we started it, so we stop it
	tmp     string
}

// StartMPS uses the MPS control daemon listening in pipeDir (DefaultMPSPipeDir when empty) or,
// when none is, starts one with private CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY.
// control is the control program (DefaultMPSControl when empty); env is its base environment.
func StartMPS(ctx context.Context, control, pipeDir string, env []string) (*MPSDaemon, error) {
	if control == "" {
		control = DefaultMPSControl
	}
	if pipeDir == "" {
		pipeDir = DefaultMPSPipeDir
	}
	if running(pipeDir) {
		return &MPSDaemon{control: control, pipeDir: pipeDir, env: env}, nil
	}
	path, err := lookPath(control, env)
	if err != nil {
		return nil, fmt.Errorf("MPS: %w", err)
	}
	tmp, err := os.MkdirTemp("", "gavel-mps-")
	if err != nil {
		return nil, fmt.Errorf("MPS: %w", err)
	}
	d := &MPSDaemon{control: path, pipeDir: filepath.Join(tmp, "pipe"), logDir: filepath.Join(tmp, "log"), started: true, tmp: tmp}
	for _, dir := range []string{d.pipeDir, d.logDir} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("MPS: %w", err)
		}
	}
	d.env = append(append([]string{}, env...), d.Env()...)
	cmd := exec.CommandContext(ctx, path, "-d")
	cmd.Env = d.env
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("MPS: %s -d: %v: %s", path, err, strings.TrimSpace(string(out)))
	}
	// The daemon creates its control pipe shortly after forking.
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !running(d.pipeDir) {
		select {
		case <-ctx.Done():
			_ = d.Stop(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("MPS: waiting for the control daemon: %w", context.Cause(ctx))
		case <-timeout.C:
			_ = d.Stop(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("MPS: control daemon did not create %s/control within 10s (log in %s)", d.pipeDir, d.logDir)
		case <-tick.C:
		}
	}
	return d, nil
}

func running(pipeDir string) bool {
	_, err := os.Stat(filepath.Join(pipeDir, "control"))
	return err == nil
}

// Env returns the variables that make a CUDA process a client of this daemon.
func (d *MPSDaemon) Env() []string {
	env := []string{"CUDA_MPS_PIPE_DIRECTORY=" + d.pipeDir}
	if d.logDir != "" {
		env = append(env, "CUDA_MPS_LOG_DIRECTORY="+d.logDir)
	}
	return env
}

// Started reports whether StartMPS started the daemon (and Stop will stop it).
func (d *MPSDaemon) Started() bool { return d.started }

// Stop quits a daemon that StartMPS started (`echo quit | nvidia-cuda-mps-control`, without a
// shell) and removes its directories; a daemon that was already running is left alone.
func (d *MPSDaemon) Stop(ctx context.Context) error {
	if !d.started {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.control)
	cmd.Env = d.env
	cmd.Stdin = strings.NewReader("quit\n")
	out, err := cmd.CombinedOutput()
	d.started = false
	if err != nil {
		return errors.Join(fmt.Errorf("MPS: quit: %v: %s", err, strings.TrimSpace(string(out))), os.RemoveAll(d.tmp))
	}
	return os.RemoveAll(d.tmp)
}
