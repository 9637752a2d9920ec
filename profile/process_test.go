package profile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRunLookPathSkipsWorkingDirectory: a bare command name is never taken from the working
// directory through an empty, relative or missing PATH entry.
func TestRunLookPathSkipsWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "trainer"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, env := range [][]string{nil, {"PATH="}, {"PATH=:/nonexistent"}, {"PATH=.:/nonexistent"}, {"PATH=sub/..:/nonexistent"}} {
		if got, err := lookPath("trainer", env); !errors.Is(err, exec.ErrNotFound) {
			t.Errorf("lookPath with %q = %q, %v; want not found", env, got, err)
		}
	}
	want := filepath.Join(dir, "trainer")
	if got, err := lookPath("trainer", []string{"PATH=/nonexistent:" + dir}); err != nil || got != want {
		t.Errorf("lookPath with an absolute entry = %q, %v; want %q", got, err, want)
	}
	if got, err := lookPath("./trainer", nil); err != nil || got != "./trainer" {
		t.Errorf("explicit ./trainer = %q, %v", got, err)
	}
}
