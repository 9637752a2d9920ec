// Package table holds throughput tables: how fast each job type runs on each
// worker (GPU) type, alone and sharing the GPU with another job type.
//
// A table is keyed by worker type, then job type (model name and scale
// factor), then partner. Every entry is in one of three states:
//
//   - Measured: a rate in steps/s (for a pair, one rate per job);
//   - Infeasible: the pair was measured and could not share a GPU (Gavel
//     writes [0, 0]);
//   - Missing: never measured (the key is absent from the file).
//
// Read and Write speak Gavel's JSON format, so tables profiled for Gavel and
// tables written here are interchangeable:
//
//	{ "v100": { "('ResNet-18 (batch size 16)', 1)": {
//	      "null": 32.35,                                  // isolated rate
//	      "('ResNet-50 (batch size 32)', 1)": [20.1, 5.6] // [this job, partner]
//	} } }
//
// Worker types, job types and partners are whatever the data says; nothing in
// this package knows a GPU or model name. A pair is stored once per direction
// and kept symmetric: Pair(w, a, b) returns (rateA, rateB) and Pair(w, b, a)
// returns (rateB, rateA).
//
// The published Gavel simulation table is embedded and returned by Default.
// Throughput measurements from the Gavel project,
// Copyright (c) 2020 Stanford Future Data Systems, MIT License.
// https://github.com/stanford-futuredata/gavel
package table
