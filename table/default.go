package table

import (
	"bytes"
	_ "embed"
)

// Throughput measurements from the Gavel project,
// Copyright (c) 2020 Stanford Future Data Systems, MIT License.
// https://github.com/stanford-futuredata/gavel
//
//go:embed data/simulation_throughputs.json
var defaultJSON []byte

// DefaultName names the embedded table in messages.
const DefaultName = "embedded Gavel simulation table"

// Default returns a fresh copy of the throughput table published with Gavel
// for its simulator: K80, P100 and V100 (and their "_unconsolidated"
// variants), 26 single-GPU job types and 19 distributed types at scale
// factors 2, 4 and 8.
func Default() *Table {
	t, err := Read(bytes.NewReader(defaultJSON))
	if err != nil {
		panic("table: embedded default table is invalid: " + err.Error())
	}
	return t
}
