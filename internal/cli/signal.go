package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Interruptible returns ctx, canceled on SIGINT, SIGTERM or SIGHUP, so that long work stops
// where it can and the command says "interrupted:" (the signal would otherwise end the process
// without a word, and a profiling run would leave its jobs running: each is in a process group
// of its own, which a hangup does not reach). A signal the process was told to ignore (nohup's
// SIGHUP, a background job's SIGINT) stays ignored: signal.Notify would turn it back on, and a
// run started under nohup would end when the user logged out.
func Interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	var sigs []os.Signal
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) == 0 {
		return context.WithCancel(ctx)
	}
	return signal.NotifyContext(ctx, sigs...)
}
