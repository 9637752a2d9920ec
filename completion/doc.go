// Package completion fills in the missing entries of partially observed matrices and pairwise
// tensors by alternating least squares (ALS), and predicts which pairs cannot share a worker
// type at all by penalized logistic regression.
//
// Three models live here:
//
//   - [Fit] fits a biased low-rank matrix model A ≈ μ + b_i + c_j + u_i·v_j to the observed
//     entries of A (mask nonzero), with L2 regularization, a deterministic seed, a tolerance and an
//     iteration cap. [CrossValidate] picks the rank and regularization from a grid by K-fold
//     cross-validation over the observed entries. [Complete] adds a second class of entries,
//     infeasible ones: they are never averaged in as values; a separate model predicts them.
//   - [FitPairs] fits a pairwise model for co-location tensors, where entry (w, i, k) is how job i
//     fares next to job k on worker type w. Each job has one embedding used in both roles (as the
//     job that suffers and the job that slows its partner), so what is learned about a job from
//     its own slowdowns transfers to the slowdowns it causes. [FitPairsWithPrior] adds a pull of
//     chosen jobs' embeddings towards given targets (a job measured little borrows the pattern
//     of the jobs it resembles), and PairSettings.LambdaWorker a penalized per-worker-type
//     deviation of each embedding.
//   - [FitFootprints] fits which pairs cannot share a worker type at all: a logistic model in
//     which each job has a size and each worker type a capacity, and a pair is infeasible when
//     the two sizes exceed the capacity. Sizes are shared across worker types (a job needs
//     about the same memory everywhere), with a penalized per-type deviation.
//
// Vocabulary: an observed entry is one whose value is known (mask nonzero, or listed as a
// [PairObs]); rank and Dim are the length of the latent factors or embeddings; Lambda is the
// weight of an L2 penalty. In a pair entry (w, i, k), i is the victim (the job whose rate it is)
// and k the aggressor (the partner slowing it). Settings structs ([Settings], [PairSettings],
// [CVGrid]) select a default for every zero field, and each fit reports how it ended as a
// [Status].
//
// Every fit takes a context.Context first and checks it once per iteration (per fold in
// [CrossValidate]; [FitFootprints] also within each Newton step's conjugate-gradient solve). Once
// the context is done the fit returns no model and an error wrapping ctx.Err(), so
// errors.Is(err, context.Canceled) holds for a cancelled one. The checks read the context only;
// the result of a fit that runs to the end does not depend on them.
//
// Shape mistakes (mask and matrix of different sizes) panic; data problems (nothing observed)
// are returned as errors. Nothing here keeps package-level state; the same inputs and seed give
// the same result.
package completion
