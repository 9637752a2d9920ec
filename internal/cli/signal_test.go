package cli

import (
	"context"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// A signal the process ignores (nohup's SIGHUP) stays ignored: it neither cancels the context
// nor ends the process. One it does not ignore cancels the context.
func TestInterruptibleKeepsIgnoredSignalsIgnored(t *testing.T) {
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	ctx, stop := Interruptible(context.Background())
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
		t.Fatal("an ignored SIGHUP canceled the context")
	case <-time.After(200 * time.Millisecond):
	}
	if !signal.Ignored(syscall.SIGHUP) {
		t.Error("SIGHUP no longer ignored after Interruptible")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
}
