// Package jsonfile decodes the small JSON files users write by hand (jobs files, reference
// lists, suggestions, sidecars) strictly, and says what is wrong with one in the file's terms:
// where (line and column) and what was wanted, in JSON's words rather than Go's.
//
// Both the planner (policy) and the profiler (profile) read such files, and their users should
// get the same kind of message for the same mistake.
package jsonfile
