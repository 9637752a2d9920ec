package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gavelkit/gavel/table"
)

// WriteFile writes an output file atomically (table.WriteFileAtomic). The write stops when
// ctx is done or the process is interrupted (SIGINT, SIGTERM, SIGHUP) while it runs, and then
// leaves the file as it was and no temporary file beside it: killed mid-write, a command left
// its ".NAME.tmp-N" behind, and a write already interrupted carried on for seconds on a large
// table. /dev/null, or a link to it, takes the output and discards it.
func WriteFile(ctx context.Context, path string, write func(io.Writer) error) error {
	if IsDevNull(path) {
		return write(io.Discard)
	}
	// A signal the process was told to ignore (nohup's SIGHUP, a background job's SIGINT) stays
	// ignored: Notify would turn it back on.
	var sigs []os.Signal
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) > 0 {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, sigs...)
		defer stop()
	}
	err := table.WriteFileAtomic(path, func(w io.Writer) error { return write(ctxWriter{ctx, w}) })
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("interrupted while writing %s, which is as it was: %w", path, ctx.Err())
	}
	return err
}

// ctxWriter fails every write once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// IsDevNull reports whether path is the null device, directly or through links.
func IsDevNull(path string) bool { return SameFile(path, os.DevNull) }

// SameFile reports whether paths a and b name one existing file (through links, or as two
// spellings of one path); "-" (standard input) is no file.
func SameFile(a, b string) bool {
	if a == "-" || b == "-" {
		return false
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
