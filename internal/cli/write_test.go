package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An interrupted write (ctx done, or SIGINT while it runs) leaves the old file and no
// temporary file; /dev/null takes the output.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := WriteFile(context.Background(), path, func(w io.Writer) error {
		_, err := io.WriteString(w, "old\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, signal := range []bool{false, true} {
		t.Run(map[bool]string{false: "context", true: "SIGINT"}[signal], func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			interrupt := cancel
			if signal {
				interrupt = func() { syscall.Kill(os.Getpid(), syscall.SIGINT) }
			}
			err := WriteFile(ctx, path, func(w io.Writer) error {
				if _, err := io.WriteString(w, "new, partly\n"); err != nil {
					return err
				}
				interrupt()
				// A signal arrives on its own time.
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
					if _, err := io.WriteString(w, "more\n"); err != nil {
						return err
					}
				}
				return nil
			})
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted while writing "+path) {
				t.Errorf("error %v, want an interruption naming %s", err, path)
			}
			if got, _ := os.ReadFile(path); string(got) != "old\n" {
				t.Errorf("file holds %.40q after the interrupted write", got)
			}
			if names, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*")); len(names) > 0 {
				t.Errorf("temporary files left: %v", names)
			}
		})
	}

	// A signal the process ignores (nohup's SIGHUP) stays ignored during the write.
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	err := WriteFile(context.Background(), path, func(w io.Writer) error {
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		time.Sleep(50 * time.Millisecond)
		_, err := io.WriteString(w, "after the hangup\n")
		return err
	})
	if got, _ := os.ReadFile(path); err != nil || string(got) != "after the hangup\n" {
		t.Errorf("ignored SIGHUP during the write: %v, file %.40q", err, got)
	}

	link := filepath.Join(dir, "null.json")
	if err := os.Symlink(os.DevNull, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{os.DevNull, link} {
		if err := CheckOutput("estimate", "--out", p); err != nil {
			t.Errorf("CheckOutput(%s): %v", p, err)
		}
		called := false
		err := WriteFile(context.Background(), p, func(w io.Writer) error {
			called = true
			_, err := io.WriteString(w, "discarded\n")
			return err
		})
		if err != nil || !called {
			t.Errorf("WriteFile(%s): %v (write called %v)", p, err, called)
		}
	}
	if IsDevNull(path) || IsDevNull("/dev/zero") || IsDevNull(filepath.Join(dir, "missing")) {
		t.Error("IsDevNull holds for a file, /dev/zero or a missing path")
	}
}
