package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

type usageError struct {
	msg string
	err error // what cobra or a validator returned, when wrapping one
}

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }
func (e *usageError) Unwrap() error        { return e.err }

// asUsage marks err as bad usage, keeping its message and chain.
func asUsage(err error) error {
	if err == nil || errors.Is(err, ErrUsage) {
		return err
	}
	return &usageError{msg: err.Error(), err: err}
}

// UsageError returns an error that makes the command exit with status 2.
// Wrap it with %w to add context; the mark survives.
func UsageError(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// ExitCode maps an error to the process exit status: 0 for nil, 2 for bad
// usage or bad input (ErrUsage, problems in a table, or cobra's unknown
// command), 1 for anything else, such as a solver or profiling failure.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var p *table.Problem
	var ps table.Problems
	if errors.Is(err, ErrUsage) || errors.As(err, &p) || errors.As(err, &ps) || unknownCommand(err) {
		return 2
	}
	return 1
}

// unknownCommand reports whether err is cobra's "unknown command" error for
// a root command given a subcommand it lacks (cobra returns it untyped,
// from its command lookup, before any validator runs).
func unknownCommand(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command ")
}

// WriteJSON writes v as one indented JSON object followed by a newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // names such as "A (10 -> 75 GiB)" read as written
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

// StdinName is what problems in a table read from standard input ("-") call the file.
const StdinName = "stdin"

// TableName is how messages name the table at path: the path, StdinName for "-", and the
// embedded table for "".
func TableName(path string) string {
	switch path {
	case "":
		return table.DefaultName
	case "-":
		return StdinName
	}
	return path
}

// LoadTableFrom loads the table at path, from in when path is "-", or the embedded default
// when path is empty. Gavel JSON and the CSV of `table convert` are both read, told apart by
// their content. Any problem in the table, or a file that cannot be opened, is bad input
// (exit status 2). Warnings (a pair rate above the job's isolated rate, which a measurement
// can give but which usually means a bad one) are written to warn, when not nil: the first,
// and how many more `table validate` would list.
func LoadTableFrom(in io.Reader, warn io.Writer, path string) (*table.Table, error) {
	if path == "" {
		return table.Default(), nil
	}
	t, ps, err := CheckTable(in, path)
	if err != nil {
		return nil, err
	}
	if errs := ps.Errors(); len(errs) > 0 {
		return nil, errs
	}
	if ws := ps.Warnings(); len(ws) > 0 && warn != nil {
		more := ""
		if len(ws) > 1 {
			more = fmt.Sprintf(" (and %d more; 'table validate' lists them)", len(ws)-1)
		}
		fmt.Fprintf(warn, "%v%s\n", ws[0], more)
	}
	return t, nil
}

// SaveTable writes t to path as WriteFile does: as CSV (table convert's) when the name ends in
// ".csv", in Gavel's JSON format otherwise, so that an output named for a spreadsheet is one.
func SaveTable(ctx context.Context, t *table.Table, path string) error {
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return WriteFile(ctx, path, t.WriteCSV)
	}
	return WriteFile(ctx, path, t.Write)
}

// CheckTable reads the table at path (from in when path is "-"), JSON or CSV, and returns
// every problem found in it, warnings included. err is set, as a usage error, only when the
// file cannot be opened.
func CheckTable(in io.Reader, path string) (*table.Table, table.Problems, error) {
	if path == "-" {
		t, ps := table.CheckAny(in, StdinName)
		return t, ps, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, UsageError("table: %v", err)
	}
	defer f.Close()
	t, ps := table.CheckAny(f, path)
	return t, ps, nil
}

// CheckOutput fails, as bad usage (exit status 2), when the file that flag of command names
// cannot be written (see table.CheckWritable): commands call it before their work, which can
// take minutes or hours, so that a mistyped output path, or an existing file the user may not
// write (which WriteFile refuses), loses nothing. An empty path (no output asked for) and
// /dev/null (WriteFile discards the output) pass.
func CheckOutput(command, flag, path string) error {
	if path == "" || IsDevNull(path) {
		return nil
	}
	if path == "-" { // "-" reads standard input elsewhere; as a file name it would surprise
		return UsageError("%s: %s -: give a file name (standard output is not supported here)", command, flag)
	}
	if isDescriptorPath(path) {
		// Written as a file, /dev/stdout redirected to a file was replaced by a new file (what
		// the file held before was lost), and a pipe could not be written at all.
		return UsageError("%s: %s %s: a device or descriptor, not a file: give a file name", command, flag, path)
	}
	if err := table.CheckWritable(path); err != nil {
		return UsageError("%s: %s %s: %v", command, flag, path, err)
	}
	if err := checkReplaceable(path); err != nil {
		return UsageError("%s: %s %s: %v", command, flag, path, err)
	}
	return nil
}

// isDescriptorPath reports whether path, or a link on the way from it, is under /dev or /proc
// (/dev/stdout, /proc/self/fd/1; the last link of such a chain may name a pipe, no path).
func isDescriptorPath(path string) bool {
	p := path
	for range 40 { // the kernel's own limit on a chain of links
		abs, err := filepath.Abs(p)
		if err != nil {
			return false
		}
		if (strings.HasPrefix(abs, "/dev/") && !strings.HasPrefix(abs, "/dev/shm/")) || strings.HasPrefix(abs, "/proc/") {
			return true // /dev/shm is a file system of files
		}
		next, err := os.Readlink(abs)
		if err != nil {
			return false // not a link: a plain path
		}
		if !filepath.IsAbs(next) {
			next = filepath.Join(filepath.Dir(abs), next)
		}
		p = next
	}
	return false
}

// flagError is err, an error of pflag's parsing, as bad usage; a value a numeric, duration or
// boolean flag cannot take gets a plain message ("--seed: -1 is not a non-negative integer")
// rather than pflag's, which quotes strconv ("strconv.ParseUint: parsing "-1": invalid
// syntax"). The original stays in the chain.
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return asUsage(err)
	}
	want, ok := flagValueKind(iv.GetFlag().Value.Type())
	if !ok {
		return asUsage(err)
	}
	v := iv.GetValue()
	if v == "" || strings.ContainsAny(v, " \t\n") || strconv.Quote(v) != `"`+v+`"` {
		v = strconv.Quote(v)
	}
	msg := fmt.Sprintf("--%s: %s is not %s", iv.GetFlag().Name, v, want)
	if errors.Is(err, strconv.ErrRange) {
		msg = fmt.Sprintf("--%s: %s is out of range (want %s)", iv.GetFlag().Name, v, want)
	}
	return &usageError{msg: msg, err: err}
}

// flagValueKind says what a flag of pflag value type typ takes; false for types whose own
// messages are kept.
func flagValueKind(typ string) (string, bool) {
	switch typ {
	case "int", "int8", "int16", "int32", "int64":
		return "an integer", true
	case "uint", "uint8", "uint16", "uint32", "uint64":
		return "a non-negative integer", true
	case "float32", "float64":
		return "a number", true
	case "duration":
		return "a duration such as 90s, 10m or 1h30m", true
	case "bool":
		return "true or false", true
	}
	return "", false
}

// Main runs a root command and returns the exit status, printing the error
// (if any) to Err. cmd/*/main.go wrap it with Interruptible's context. A *cobra.Command
// root first gets MarkUsageErrors.
func Main(root interface{ Execute() error }, streams *IO) int {
	if c, ok := root.(*cobra.Command); ok {
		MarkUsageErrors(c)
	}
	err := root.Execute()
	if err != nil {
		msg := err.Error()
		if errors.Is(err, context.Canceled) && !strings.HasPrefix(msg, "interrupted") {
			// "seed 0: als: completion: fit stopped before iteration 28: context canceled"
			// did not say that the user's Ctrl-C stopped it.
			msg = "interrupted: " + msg
		}
		fmt.Fprintln(streams.Err, "Error:", msg)
	}
	return ExitCode(err)
}

// MarkUsageErrors makes the errors cobra finds before a command runs bad
// usage (exit status 2) in the whole tree under root: unknown flags and
// unparsable flag values (root's flag error function, which every command
// inherits), and wrong arguments (each command's Args validator, wrapped).
// An unknown subcommand of root is reported by cobra's command lookup
// itself, as an untyped error; Main's ExitCode recognizes it by its text.
// Calling it twice changes nothing more.
func MarkUsageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := emptyFileFlag(cmd); err != nil {
					return err
				}
				return asUsage(args(cmd, a))
			}
		} else if c.Runnable() && !c.HasSubCommands() {
			c.Args = func(cmd *cobra.Command, _ []string) error { return emptyFileFlag(cmd) }
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// emptyFileFlag refuses a flag naming a file given as "": an unset variable in --table "$T"
// silently meant the flag's default (the embedded Gavel table for --table), and one in
// --jobs-out "$F" or --csv "$F" silently wrote nothing (convert --out "$F" wrote to stdout).
func emptyFileFlag(cmd *cobra.Command) error {
	for _, name := range []string{"table", "jobs", "trace", "references", "pairs-from", "out", "jobs-out", "csv"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed && f.Value.Type() == "string" && f.Value.String() == "" {
			return UsageError("--%s is empty (an unset variable?): give a file name", name)
		}
	}
	return nil
}

// Listed joins names for a message with ", ", or says "none" (a bare "(it has )" read as a
// glitch).
func Listed(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
