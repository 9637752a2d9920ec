package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/gavelkit/gavel/table"
)

// IO is where a command reads and writes: results (tables, JSON) go to Out,
// notes, warnings and progress to Err.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// StdIO returns the process's standard streams.
func StdIO() *IO { return &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr} }

// TestIO returns an IO reading nothing and writing into the two buffers.
func TestIO() (*IO, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &IO{In: &bytes.Buffer{}, Out: &out, Err: &errb}, &out, &errb
}

// ErrUsage marks bad usage or bad input: the command exits with status 2.
var ErrUsage = errors.New("usage")

type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

// UsageError returns an error that makes the command exit with status 2.
// Wrap it with %w to add context; the mark survives.
func UsageError(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// ExitCode maps an error to the process exit status: 0 for nil, 2 for bad
// usage or bad input (ErrUsage, or problems in a table), 1 for anything
// else, such as a solver or profiling failure.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var p *table.Problem
	var ps table.Problems
	if errors.Is(err, ErrUsage) || errors.As(err, &p) || errors.As(err, &ps) {
		return 2
	}
	return 1
}

// WriteJSON writes v as one indented JSON object followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// NewTableWriter returns a terminal table with the given header, written
// as given (tablewriter upper-cases headers by default).
func NewTableWriter(w io.Writer, header ...string) *tablewriter.Table {
	t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithRowAlignment(tw.AlignRight))
	if len(header) > 0 {
		args := make([]any, len(header))
		for i, h := range header {
			args[i] = h
		}
		t.Header(args...)
	}
	return t
}

// LoadTable loads the table at path, or the embedded default when path is
// empty. Any problem in the file is bad input (exit status 2).
func LoadTable(path string) (*table.Table, error) {
	if path == "" {
		return table.Default(), nil
	}
	t, err := table.Load(path)
	if err != nil {
		var ps table.Problems
		if errors.As(err, &ps) {
			return nil, err
		}
		return nil, fmt.Errorf("%w", &usageError{msg: err.Error()})
	}
	return t, nil
}

// Main runs a root command and returns the exit status, printing the error
// (if any) to Err. cmd/*/main.go are one line around it.
func Main(root interface{ Execute() error }, streams *IO) int {
	err := root.Execute()
	if err != nil {
		fmt.Fprintln(streams.Err, "Error:", err)
	}
	return ExitCode(err)
}
