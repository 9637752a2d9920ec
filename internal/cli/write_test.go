package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// TestReadOnlyOutput: an existing output file the user may not write (chmod 444) was replaced
// without a word, since the atomic write's rename needs only the directory's permission, where
// shell redirection fails. CheckOutput now refuses it before any work, as bad usage, and
// WriteFile refuses it without calling write; a writable file is still replaced.
func TestReadOnlyOutput(t *testing.T) {
	if os.Geteuid() == 0 {
		// Root may write any file (redirection too), so there is nothing to refuse.
		t.Skip("root writes read-only files; run as another user")
	}
	dir := t.TempDir()
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("old\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ro := file("ro.json", 0o444)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(ro, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		refused    bool
	}{
		{"read-only", ro, true},
		{"link to read-only", link, true},
		{"write-only", file("wo.json", 0o200), false},
		{"writable", file("rw.json", 0o644), false},
		{"absent", filepath.Join(dir, "new.json"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckOutput("estimate", "--out", tt.path)
			if !tt.refused {
				if err != nil {
					t.Errorf("CheckOutput: %v", err)
				}
			} else if want := "estimate: --out " + tt.path + ": the file exists and is not writable"; ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), want) {
				t.Errorf("CheckOutput: %v (exit %d), want exit 2 with %q", err, ExitCode(err), want)
			}
			called := false
			err = WriteFile(context.Background(), tt.path, func(w io.Writer) error {
				called = true
				_, err := io.WriteString(w, "new\n")
				return err
			})
			got, _ := os.ReadFile(tt.path)
			if !tt.refused {
				// A write-only file cannot be read back: called says it was written.
				if err != nil || !called || (tt.name != "write-only" && string(got) != "new\n") {
					t.Errorf("WriteFile: %v (write called %v), file %q", err, called, got)
				}
				return
			}
			if !errors.Is(err, fs.ErrPermission) || !strings.Contains(fmt.Sprint(err), "write "+tt.path+": the file exists and is not writable") {
				t.Errorf("WriteFile: %v, want a permission error naming %s", err, tt.path)
			}
			if called || string(got) != "old\n" {
				t.Errorf("write called %v, file %q: want neither", called, got)
			}
			if names, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*")); len(names) > 0 {
				t.Errorf("temporary files left: %v", names)
			}
		})
	}
}
