package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gavelkit/gavel/table"
	"golang.org/x/sys/unix"
)

// WriteFile writes an output file atomically (table.WriteFileAtomic). The write stops when
// ctx is done or the process is interrupted (SIGINT, SIGTERM, SIGHUP) while it runs, and then
// leaves the file as it was and no temporary file beside it: killed mid-write, a command left
// its ".NAME.tmp-N" behind, and a write already interrupted carried on for seconds on a large
// table. /dev/null, or a link to it, takes the output and discards it. An existing file the
// user may not write is refused (see checkReplaceable), as shell redirection refuses it.
func WriteFile(ctx context.Context, path string, write func(io.Writer) error) error {
	if IsDevNull(path) {
		return write(io.Discard)
	}
	if err := checkReplaceable(path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ctx, stop := Interruptible(ctx)
	defer stop()
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

// checkReplaceable fails when path (through links) names an existing file the user may not
// write. The atomic write renames a new file over the old one, which needs only the
// directory's permission, so a file made read-only (chmod a-w) to keep it was replaced without
// a word where "> file" fails with "Permission denied". access(2) asks the kernel, which knows
// ACLs, read-only mounts and root's rights as permission bits do not. A missing file (a
// dangling link's target too) is created, and any other failure is left to the write to report.
func checkReplaceable(path string) error {
	err := unix.Access(path, unix.W_OK)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
		return fmt.Errorf("the file exists and is not writable (%w); make it writable or give another name", err)
	}
	return nil
}
