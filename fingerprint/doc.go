// Package fingerprint matches a partially profiled job type to the reference job types it
// behaves most like, from the entries measured so far (its "fingerprint").
//
// [NearestCosine] is Gavel's rule: the reference row with the smallest cosine distance to a
// (completed) row. [Match] compares only the entries that were actually observed, under a
// chosen [Distance] (cosine, mean absolute difference, or mean absolute log ratio), and returns
// the k nearest references with inverse-distance weights and a confidence; [ColdStart] matches
// from isolated rates alone, before any co-location has been measured.
package fingerprint
