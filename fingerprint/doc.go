// Package fingerprint matches a partially profiled job type to the reference job types it
// behaves most like, from the entries measured so far (its "fingerprint").
//
// Vocabulary: a reference is a job type measured next to every other reference; a fingerprint
// is a vector of a job's measured entries (normalized co-located rates, say) in a fixed order,
// with NaN where an entry has not been measured yet. Matching finds the references whose
// fingerprints are closest, so an unmeasured entry of the job can be read off theirs.
//
// [NearestCosine] is Gavel's rule: the reference row with the smallest cosine distance to a
// (completed) row. [Match] compares only the entries that were actually observed, under a
// chosen [Distance] (cosine, mean absolute difference, or mean absolute log ratio; see
// [Settings], whose zero value means Gavel's cosine and k = 3), and returns the k nearest
// references with inverse-distance weights and a confidence; [ColdStart] matches
// from isolated rates alone, before any co-location has been measured.
//
// Which measure: on Gavel's table (26 job types, 16 references, each pair with a reference
// revealed with probability 0.2, hold-out seeds 10-15), estimating a job's rates as those of its
// matched references (estimate.Neighbors), the MAPE of normalized rates was, for k = 1 / k = 3:
// cosine on observed entries 23.6% / 13.5%, mean absolute difference 20.9% / 13.0%, mean
// absolute log ratio 20.5% / 12.9%. Cosine distance between all-positive vectors with few
// entries says little, which is why Gavel completes the row before matching; the log measure
// with k = 3 is what the estimator uses.
package fingerprint
