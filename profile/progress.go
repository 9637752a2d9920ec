package profile

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// DefaultProgressPrefix starts the progress lines of the default protocol:
// "GAVEL_STEPS <cumulative steps>".
const DefaultProgressPrefix = "GAVEL_STEPS"

// ErrMalformedProgress is returned for a line that claims to be progress but cannot be read, or
// whose cumulative count goes backwards.
var ErrMalformedProgress = errors.New("malformed progress line")

// ProgressFormat says which lines of a job's output report progress. The zero value is the
// default protocol: lines "GAVEL_STEPS <n>" where n is the cumulative step count.
type ProgressFormat struct {
	// Regexp, when set, replaces the default protocol. With one capture group the group is the
	// cumulative step count; with none, each matching line is one step.
	Regexp *regexp.Regexp
}

// ParseProgressFormat compiles a --progress-regex value; "" gives the default protocol.
func ParseProgressFormat(expr string) (ProgressFormat, error) {
	if expr == "" {
		return ProgressFormat{}, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return ProgressFormat{}, fmt.Errorf("progress regex %q: %w", expr, err)
	}
	if re.NumSubexp() > 1 {
		return ProgressFormat{}, fmt.Errorf("progress regex %q: has %d capture groups, want 0 (each line is a step) or 1 (cumulative count)", expr, re.NumSubexp())
	}
	return ProgressFormat{Regexp: re}, nil
}

// String gives the format in the form ParseProgressFormat reads ("" for the default).
func (f ProgressFormat) String() string {
	if f.Regexp == nil {
		return ""
	}
	return f.Regexp.String()
}

// progressReader turns output lines into cumulative step counts; one per process, shared by
// its stdout and stderr.
type progressReader struct {
	format ProgressFormat
	steps  int64 // the highest count seen on either stream
	// last holds the last count of each stream. The two streams are read concurrently, so a
	// count may arrive after a higher one from the other stream (a job that reports on both);
	// only a count that goes back on its own stream is malformed.
	last [2]int64
	seen [2]bool
	// unmatched counts the non-blank lines read before any progress report; hinted says the
	// hint that the format may be wrong was given.
	unmatched int
	hinted    bool
}

// hintAfterLines is how many output lines without a progress report make the profiler say
// that the job's progress format may not be the one expected.
const hintAfterLines = 20

// noProgressLine takes note of a non-blank line that was no progress report. It reports true
// once, when hintAfterLines such lines have come and no report has: the job prints, but maybe
// not in the expected format, and would otherwise only fail at the start-up timeout.
func (p *progressReader) noProgressLine() bool {
	if p.hinted || p.steps > 0 || p.seen[0] || p.seen[1] {
		return false
	}
	p.unmatched++
	if p.unmatched < hintAfterLines {
		return false
	}
	p.hinted = true
	return true
}

// formatHint says what progress lines p expects and how to say otherwise.
func (p *progressReader) formatHint() string {
	if p.format.Regexp == nil {
		return fmt.Sprintf("expected lines like %q; if the job reports its steps otherwise, give --progress-regex (progress_regex for a reference), e.g. 'iter (\\d+)/'",
			DefaultProgressPrefix+" <steps>")
	}
	return fmt.Sprintf("none matches the progress regex %q", p.format.String())
}

// line reads one output line of stream (0 stdout, 1 stderr). ok reports whether it was a
// progress line; steps is then the cumulative count.
func (p *progressReader) line(stream int, s string) (steps int64, ok bool, err error) {
	s = strings.TrimRight(s, "\r\n")
	var field string
	if re := p.format.Regexp; re != nil {
		m := re.FindStringSubmatch(s)
		if m == nil {
			return 0, false, nil
		}
		if len(m) == 1 {
			p.steps++
			return p.steps, true, nil
		}
		field = m[1]
	} else {
		rest, found := strings.CutPrefix(strings.TrimSpace(s), DefaultProgressPrefix)
		if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '=' && rest[0] != ':') {
			return 0, false, nil
		}
		field = strings.TrimLeft(rest, " \t=:")
	}
	n, err := strconv.ParseInt(strings.TrimSpace(field), 10, 64)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("%w: %q", ErrMalformedProgress, clip(s, 80))
	}
	if p.seen[stream] && n < p.last[stream] {
		return 0, false, fmt.Errorf("%w: count went backwards from %d to %d", ErrMalformedProgress, p.last[stream], n)
	}
	p.last[stream], p.seen[stream] = n, true
	p.steps = max(p.steps, n)
	return p.steps, true, nil
}

// clip shortens s for error messages and keeps it printable.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// oomPattern matches the messages CUDA, PyTorch, TensorFlow, JAX and NCCL print when an allocation on
// the device failed for good. A bare "out of memory" is not enough: TensorFlow's BFC allocator
// logs "ran out of memory trying to allocate ... this is not a failure" and retries, and one
// such line must not mark a job infeasible for ever.
var oomPattern = regexp.MustCompile(`(?i)(CUDA out of memory|CUDA error: out of memory|OutOfMemoryError|` +
	`CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED|` +
	`RESOURCE_EXHAUSTED: (OOM|Out of memory)|ResourceExhaustedError|Cuda failure '?out of memory)`)

// notFailure matches allocator warnings that say themselves they are harmless.
var notFailure = regexp.MustCompile(`(?i)not a failure`)

// isOOM reports whether an output line says the device ran out of memory.
func isOOM(line string) bool { return oomPattern.MatchString(line) && !notFailure.MatchString(line) }
