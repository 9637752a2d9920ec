// Package cli holds what the gavel-plan and gavel-profile commands share:
// their input and output streams, the mapping from errors to exit codes,
// JSON and table printing, and the `table` subcommands both offer.
//
// Commands follow one shape: a constructor that only declares flags, and a
// run function that takes an options struct and an *IO, so tests call the
// run function with buffers and inspect what was printed.
package cli
