package profile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Command is a job's command line and how to read its progress.
type Command struct {
	Argv []string
	// Shell runs Argv joined by spaces through /bin/sh -c. Off by default: commands are
	// executed directly.
	Shell bool
	// Env holds extra K=V pairs for this job, on top of the runner's base environment.
	Env []string
	// Dir is the working directory ("" = the profiler's).
	Dir      string
	Progress ProgressFormat
}

func (c Command) String() string { return strings.Join(c.Argv, " ") }

// maxLine bounds the length of an output line; longer lines are cut (garbage does not grow
// memory).
const maxLine = 64 << 10

type eventKind int

const (
	evProgress eventKind = iota
	evOOM
	evMalformed
	evExit
	evHint // many lines and no progress report yet: text is one of them, err the hint
)

// event is something a job process did, stamped with the time it was read.
type event struct {
	job   int
	kind  eventKind
	at    time.Time
	steps int64
	text  string
	err   error
}

// proc is one running job in its own process group.
type proc struct {
	job    int
	cmd    *exec.Cmd
	pgid   int
	mu     sync.Mutex
	tail   []string // last non-progress lines, for failure reasons
	exited chan struct{}
	// abandon is closed once nobody reads the events any more, so that readers of pipes held
	// open by escaped grandchildren do not block forever.
	abandon chan struct{}
	pipes   []*os.File // read ends of stdout and stderr
}

// release stops reading the job's output once the measurement is over. A process that escaped
// the group (setsid) may still hold the pipes open: closing the read ends ends the readers'
// blocked reads, so no goroutine or descriptor outlives the measurement.
func (p *proc) release() {
	close(p.abandon)
	for _, f := range p.pipes {
		_ = f.Close()
	}
}

// startProc starts c with environment env in a new process group. Its output lines and its exit
// are sent to events (which must be drained until the exit event arrives).
func startProc(c Command, env []string, job int, events chan<- event) (*proc, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("empty command")
	}
	argv := c.Argv
	if c.Shell {
		argv = []string{"/bin/sh", "-c", strings.Join(c.Argv, " ")}
	}
	path, err := lookPath(argv[0], env)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: c.Dir}
	// Setpgid: the job and everything it starts form one group that is killed as a whole.
	// Pdeathsig: the job dies with the profiler even if the profiler is killed hard.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, err
	}
	outW.Close()
	errW.Close()
	p := &proc{job: job, cmd: cmd, pgid: cmd.Process.Pid, exited: make(chan struct{}), abandon: make(chan struct{}),
		pipes: []*os.File{outR, errR}}
	var readers sync.WaitGroup
	readers.Add(2)
	// One goroutine per stream, one progress count for both: a job may report on either.
	reader := &progressReader{format: c.Progress}
	var rmu sync.Mutex
	for stream, r := range []*os.File{outR, errR} {
		go func() {
			defer readers.Done()
			defer r.Close()
			p.read(r, stream, reader, &rmu, events)
		}()
	}
	go func() {
		err := cmd.Wait()
		// Leftover children of the group would keep the pipes open: the job is over.
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		done := make(chan struct{})
		go func() { readers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
		close(p.exited)
		events <- event{job: job, kind: evExit, at: time.Now(), err: err}
	}()
	return p, nil
}

// lookPath resolves argv0 with the job's PATH, not the profiler's. Like os/exec (ErrDot), it
// never finds a bare name in the working directory through an empty or relative PATH entry
// (or a missing PATH): a "python3" dropped into the directory must not run instead of the
// real one. Write ./name to run a program from there.
func lookPath(argv0 string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if !filepath.IsAbs(dir) {
			continue
		}
		f := filepath.Join(dir, argv0)
		if st, err := os.Stat(f); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", notFoundError{argv0, path}
}

// check reports, before anything runs, what would stop c from starting with base (the
// runner's environment) under it: no command, a working directory that is not one, or a
// program that is not found or not executable.
func (c Command) check(base []string) error {
	if len(c.Argv) == 0 {
		return errors.New("empty command")
	}
	if c.Dir != "" {
		if st, err := os.Stat(c.Dir); err != nil {
			return fmt.Errorf("dir: %w", err)
		} else if !st.IsDir() {
			return fmt.Errorf("dir %s: not a directory", c.Dir)
		}
	}
	argv0 := c.Argv[0]
	if c.Shell {
		argv0 = "/bin/sh"
	}
	path, err := lookPath(argv0, append(append([]string{}, base...), c.Env...))
	if err != nil {
		return err
	}
	if !filepath.IsAbs(path) && c.Dir != "" {
		path = filepath.Join(c.Dir, path) // as exec resolves a relative path: from Dir
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case st.IsDir() || st.Mode()&0o111 == 0:
		return fmt.Errorf("%s: not an executable file", path)
	}
	return nil
}

// notFoundError is lookPath's failure; it is exec.ErrNotFound, whose own text ("executable
// file not found in $PATH") would name the profiler's PATH, not the job's.
type notFoundError struct{ name, path string }

func (e notFoundError) Error() string {
	if e.path == "" {
		return fmt.Sprintf("%s: no such program (the job's PATH is empty; give a path such as ./%s)", e.name, e.name)
	}
	return fmt.Sprintf("%s: no such program in the job's PATH", e.name) // PATH itself is too long for a reason column
}

func (notFoundError) Unwrap() error { return exec.ErrNotFound }

func (p *proc) read(r io.Reader, stream int, pr *progressReader, mu *sync.Mutex, events chan<- event) {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := readLine(br)
		if line != "" || err == nil {
			now := time.Now()
			mu.Lock()
			steps, ok, perr := pr.line(stream, line)
			mu.Unlock()
			var ev *event
			switch {
			case perr != nil:
				ev = &event{job: p.job, kind: evMalformed, at: now, err: perr}
			case ok:
				ev = &event{job: p.job, kind: evProgress, at: now, steps: steps}
			default:
				text := strings.TrimSpace(line)
				if isOOM(line) {
					ev = &event{job: p.job, kind: evOOM, at: now, text: clip(text, 200)}
				} else if text != "" {
					mu.Lock()
					if pr.noProgressLine() {
						ev = &event{job: p.job, kind: evHint, at: now, text: clip(text, 200), err: errors.New(pr.formatHint())}
					}
					mu.Unlock()
				}
				p.remember(line)
			}
			if ev != nil {
				select {
				case events <- *ev:
				case <-p.abandon:
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// readLine returns the next line without its terminator, cut to maxLine. A line ends at '\n',
// at '\r' (progress bars such as tqdm redraw themselves with '\r' only) or at "\r\n". A '\r'
// ends its line at once, without waiting for a possible '\n', so that a bar's update is
// timed when it is written; a '\n' that arrives later makes an empty line, which is ignored.
func readLine(br *bufio.Reader) (string, error) {
	var b strings.Builder
	keep := func(p []byte) { b.Write(p[:min(len(p), max(maxLine-b.Len(), 0))]) }
	for {
		if _, err := br.Peek(1); err != nil {
			return b.String(), err
		}
		data, _ := br.Peek(br.Buffered())
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			keep(data)
			br.Discard(len(data))
			continue
		}
		keep(data[:i])
		br.Discard(i + 1)
		if data[i] == '\r' && br.Buffered() > 0 {
			if next, _ := br.Peek(1); next[0] == '\n' {
				br.Discard(1)
			}
		}
		return b.String(), nil
	}
}

func (p *proc) remember(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tail = append(p.tail, clip(line, 200))
	if len(p.tail) > 3 {
		p.tail = p.tail[len(p.tail)-3:]
	}
}

func (p *proc) lastLines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, " | ")
}

// stopAll sends SIGTERM to the process group of every job and SIGKILL to those still running
// after grace, and returns once every job has exited. The jobs of a pair share one grace
// period: stopping them one after the other would double the wait for jobs that ignore SIGTERM.
func stopAll(procs []*proc, grace time.Duration) {
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	timeout := time.NewTimer(grace)
	defer timeout.Stop()
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-timeout.C:
			for _, q := range procs {
				q.signal(syscall.SIGKILL)
			}
			<-p.exited
		}
	}
	// A group may have members that outlived its leader.
	for _, p := range procs {
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	}
}

// signal sends sig to the job's process group unless the job has exited.
func (p *proc) signal(sig syscall.Signal) {
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(-p.pgid, sig)
	}
}

// exitReason describes how a job ended.
func exitReason(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return "exited with status " + strconv.Itoa(ee.ExitCode())
	}
	if err != nil {
		return err.Error()
	}
	return "exited with status 0"
}

// pgidOf returns the process group of pid, from /proc.
func pgidOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name may contain spaces and parentheses: fields start after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0, false
	}
	g, err := strconv.Atoi(f[2])
	return g, err == nil
}
