// Package estimate is the library behind "gavel-profile estimate / suggest / evaluate": it fills
// in the co-location pairs a throughput table is missing, says which pairs are most worth
// measuring next, and scores estimators with Gavel's hold-out protocol.
//
// Vocabulary. A job type's normalized rate next to a partner on a worker type is its co-located
// rate divided by its isolated rate (1: the partner costs it nothing). An entry (w, i, k) is
// job i's normalized rate next to k on worker type w; a pair {i, k} on w is two entries,
// measured together. A reference is a job type measured next to every other reference (and
// itself) on every worker type; the estimators place every other job relative to them. A pair
// is worth packing when it is feasible and its two normalized rates sum to more than 1: the
// packing agreement the evaluation reports is how often an estimate makes the same call as the
// truth.
//
// A table is split into blocks ([Blocks]): the job types of one scale factor (only they can
// share a GPU) that a group of worker types all have an isolated rate for (0 for a job that
// cannot run alone there, whose pairs there are then infeasible), on those worker types, laid out as dense [w][i][k] arrays of normalized rates (co-located rate /
// isolated rate) with a [table.State] each. A [Method] estimates a block: [Pairwise] (ours, built on
// completion.FitPairs), [Gavel] (Gavel's estimator, gavel-reference §6) and [PartnerMean] (a
// baseline), [Neighbors] (k nearest references by fingerprint) and [ALS] (matrix completion of
// Gavel's layout). [Table] and [SuggestTable] work on whole tables; [Protocol], [Score], [Active] and
// [Evaluate] implement the evaluation, and [Downstream] scores an estimate by the allocation it
// leads to; [Uncertainties] (and Options.Uncertainty) say how far each estimate may be off.
//
// Determinism: the same table (or block) and seed give the same result, whatever GOMAXPROCS.
// Random starts are drawn per job index, and job types are ordered by name, so renaming job types
// can reorder them and move estimates within the spread of the fits (a reviewer: up to 0.03 for
// ours, more for Gavel's method, whose completion is seeded per job).
package estimate
