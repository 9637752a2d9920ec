// Package profile measures the throughput of training jobs on real GPUs (or on the CPU when no
// driver is present) and merges the measurements into a Gavel-format throughput table.
//
// The profiler runs the user's own training command, reads its progress from stdout and stderr
// (lines "GAVEL_STEPS <cumulative steps>" by default, or any regular expression), and measures
// its rate alone (isolated) and sharing a device with reference jobs (pairs):
//
//	start → first progress report → warm-up (until the rate settles, bounded)
//	      → measurement (batch means over fixed sub-windows, until the t-based confidence
//	        half-width is within the requested precision, bounded) → kill the process group
//
// A pair starts both commands on the same device at once and measures them over the same
// windows. Pairs are stored normalized by isolated rates measured close in time, so that a slow
// drift of the machine does not end up in the table as interference.
//
// Devices come through the Devices interface (NVML in production, CPUDevices without a driver,
// a fake in tests). Everything the Gavel format cannot hold (sharing mode, confidence interval,
// samples, seconds, peak memory, failures) goes into a sidecar file next to the table; resuming
// reads both. Both files are written atomically after every measurement by a single writer.
package profile
