package table

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var (
	resnet = JobType{"ResNet-18 (batch size 16)", 1}
	lm     = JobType{"LM (batch size 20)", 1}
	lm2    = JobType{"LM (batch size 20)", 2}
)

func TestRoundTripPublishedTables(t *testing.T) {
	for _, name := range []string{"simulation_throughputs.json", "physical_cluster_throughputs.json"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "..", "shared", "data", "gavel", name)
			if _, err := os.Stat(path); err != nil {
				path = filepath.Join("data", name) // only the simulation table is embedded
				if _, err := os.Stat(path); err != nil {
					t.Skipf("%s not available", name)
				}
			}
			first, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := first.Write(&buf); err != nil {
				t.Fatal(err)
			}
			second, err := Read(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if !first.Equal(second) {
				t.Fatal("read, write, read gave a different table")
			}
			var again bytes.Buffer
			second.Write(&again)
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Error("writing the same table twice gave different bytes")
			}
		})
	}
}

func TestDefaultTable(t *testing.T) {
	d := Default()
	if got := len(d.JobTypesWithScaleFactor(1)); got != 26 {
		t.Errorf("single-GPU job types = %d, want 26", got)
	}
	for _, sf := range []int{2, 4, 8} {
		if got := len(d.JobTypesWithScaleFactor(sf)); got != 19 {
			t.Errorf("scale factor %d job types = %d, want 19", sf, got)
		}
	}
	// Values from gavel-reference.md §1.1 (simulation file).
	tests := []struct {
		w    string
		j    JobType
		want float64
	}{
		{"v100", JobType{"ResNet-18 (batch size 64)", 1}, 24.093},
		{"k80", JobType{"ResNet-50 (batch size 128)", 1}, 0.347},
		{"p100", JobType{"Recommendation (batch size 1024)", 1}, 30.744},
		{"v100", lm2, 132.174},
	}
	for _, tt := range tests {
		got, ok := d.Isolated(tt.w, tt.j)
		if !ok || got < tt.want-0.001 || got > tt.want+0.001 {
			t.Errorf("Isolated(%s, %s) = %v, %v; want %v", tt.w, tt.j, got, ok, tt.want)
		}
	}
	// Counts of infeasible sf=1 pairs per type (§1.1): 40 v100, 20 p100, 87 k80.
	for w, want := range map[string]int{"v100": 40, "p100": 20, "k80": 87} {
		n := 0
		for _, a := range d.JobTypesWithScaleFactor(1) {
			for _, b := range d.JobTypesWithScaleFactor(1) {
				if _, _, s := d.Pair(w, a, b); s == Infeasible {
					n++
				}
			}
		}
		if n != want {
			t.Errorf("%s: %d infeasible ordered pairs, want %d", w, n, want)
		}
	}
	if ps := d.Validate(); len(ps.Errors()) > 0 {
		t.Errorf("default table has errors: %v", ps)
	}
}

func TestPairAccessors(t *testing.T) {
	tb := New()
	tb.SetIsolated("a100", resnet, 10)
	tb.SetIsolated("a100", lm, 4)
	tb.SetPair("a100", resnet, lm, 6, 3)
	if ra, rb, s := tb.Pair("a100", lm, resnet); ra != 3 || rb != 6 || s != Measured {
		t.Errorf("reverse Pair = %v %v %v, want 3 6 measured", ra, rb, s)
	}
	if na, nb, s := tb.Normalized("a100", resnet, lm); na != 0.6 || nb != 0.75 || s != Measured {
		t.Errorf("Normalized = %v %v %v, want 0.6 0.75 measured", na, nb, s)
	}
	tb.SetInfeasible("a100", resnet, resnet)
	if _, _, s := tb.Pair("a100", resnet, resnet); s != Infeasible {
		t.Errorf("self pair state = %v, want infeasible", s)
	}
	if _, _, s := tb.Normalized("h100", resnet, lm); s != Missing {
		t.Errorf("unknown worker state = %v, want missing", s)
	}
	tb.DeletePair("a100", lm, resnet)
	if _, _, s := tb.Pair("a100", resnet, lm); s != Missing {
		t.Errorf("after DeletePair state = %v, want missing", s)
	}
	sel := Default().Select([]JobType{resnet, lm}, []string{"v100"})
	if got := sel.WorkerTypes(); len(got) != 1 || got[0] != "v100" {
		t.Errorf("Select worker types = %v", got)
	}
	if got := sel.JobTypes(); len(got) != 2 {
		t.Errorf("Select job types = %v, want 2", got)
	}
	if got := sel.Partners("v100", resnet); len(got) != 2 {
		t.Errorf("Select partners of %s = %v, want 2", resnet, got)
	}
}

func TestMerge(t *testing.T) {
	old := New()
	old.SetIsolated("x", resnet, 10)
	old.SetPair("x", resnet, lm, 5, 2)
	newer := New()
	newer.SetIsolated("x", resnet, 11)
	newer.SetIsolated("x", lm, 4)
	newer.SetPair("x", resnet, lm, 5, 2) // same value: no conflict
	newer.SetInfeasible("y", lm, lm)
	m, conflicts := Merge(old, newer)
	if r, _ := m.Isolated("x", resnet); r != 11 {
		t.Errorf("merged isolated = %v, want the newer 11", r)
	}
	if r, _ := m.Isolated("x", lm); r != 4 {
		t.Errorf("merged isolated lm = %v, want 4", r)
	}
	if _, _, s := m.Pair("y", lm, lm); s != Infeasible {
		t.Errorf("merged y pair = %v", s)
	}
	if len(conflicts) != 1 || !conflicts[0].Isolated || conflicts[0].Old[0] != 10 || conflicts[0].New[0] != 11 {
		t.Errorf("conflicts = %+v, want the one isolated change 10 -> 11", conflicts)
	}
	newer.SetPair("x", lm, resnet, 3, 6)
	if _, conflicts = Merge(old, newer); len(conflicts) != 2 {
		t.Errorf("changed pair: %d conflicts, want 2 (isolated and pair, reported once)", len(conflicts))
	}
}

// Merge merged a worker type's isolated rates before its pairs, so a conflict on job Z's
// isolated rate came before one on job A's pair, though conflicts are documented as sorted by
// job.
func TestMergeConflictOrder(t *testing.T) {
	a, b, z := JobType{"A", 1}, JobType{"B", 1}, JobType{"Z", 1}
	old, newer := New(), New()
	old.SetIsolated("w", z, 1)
	old.SetPair("w", a, b, 1, 2)
	newer.SetIsolated("w", z, 2)
	newer.SetPair("w", a, b, 3, 4)
	_, cs := Merge(old, newer)
	if len(cs) != 2 || cs[0].Job != a || cs[0].Partner != b || cs[0].Old != [2]float64{1, 2} || cs[0].New != [2]float64{3, 4} || cs[1].Job != z || !cs[1].Isolated {
		t.Errorf("conflicts = %+v, want A's pair (1, 2 -> 3, 4), then Z's isolated rate", cs)
	}
}

// A worker type the newer table names with no entries (a file's "l4": {}) is kept, as the
// older table's are (WorkerTypes keeps every type a file names).
func TestMergeKeepsEmptyWorkerTypes(t *testing.T) {
	older, newer := New(), New()
	older.SetIsolated("a100", JobType{"A", 1}, 1)
	newer.SetIsolated("l4", JobType{"A", 1}, 1)
	newer.DeleteIsolated("l4", JobType{"A", 1})
	merged, _ := Merge(older, newer)
	if got := merged.WorkerTypes(); !slices.Equal(got, []string{"a100", "l4"}) {
		t.Errorf("worker types %v, want [a100 l4]", got)
	}
}

// TestReadProblems has one case per class of problem Check reports.
func TestReadProblems(t *testing.T) {
	const r16 = `"('ResNet-18 (batch size 16)', 1)"`
	const lm1 = `"('LM (batch size 20)', 1)"`
	const lm2 = `"('LM (batch size 20)', 2)"`
	tests := []struct {
		name    string
		in      string
		want    error
		warning bool
		line    int
		partner string
	}{
		{"syntax", "{\n  \"v100\": {\n    " + r16 + ": {\"null\": 1,}\n}}", ErrSyntax, false, 3, ""},
		{"bad key", `{"v100": {"ResNet": {"null": 1}}}`, ErrBadKey, false, 1, ""},
		{"bad partner key", `{"v100": {` + r16 + `: {"null": 1, "('x', 0)": [1, 1]}}}`, ErrBadKey, false, 1, "('x', 0)"},
		{"bad value", `{"v100": {` + r16 + `: {"null": [1, 2]}}}`, ErrBadValue, false, 1, "null"},
		{"pair not a list of two", `{"v100": {` + r16 + `: {` + lm1 + `: [1]}, ` + lm1 + `: {` + r16 + `: [1]}}}`, ErrBadValue, false, 1, ""},
		{"negative", `{"v100": {` + r16 + `: {"null": -1}}}`, ErrNegativeRate, false, 1, "null"},
		{"NaN", `{"v100": {` + r16 + `: {"null": NaN}}}`, ErrNotFinite, false, 1, "null"},
		{"Infinity", `{"v100": {` + r16 + `: {"null": 1, ` + r16 + `: [Infinity, -Infinity]}}}`, ErrNotFinite, false, 1, ""},
		{"overflow", `{"v100": {` + r16 + `: {"null": 1e999}}}`, ErrNotFinite, false, 1, "null"},
		{"one-sided", `{"v100": {` + r16 + `: {"null": 2, ` + lm1 + `: [1, 1]}, ` + lm1 + `: {"null": 2}}}`, ErrOneSided, false, 1, ""},
		{"inconsistent", `{"v100": {` + r16 + `: {"null": 2, ` + lm1 + `: [1, 1.5]}, ` + lm1 + `: {"null": 2, ` + r16 + `: [1, 1]}}}`, ErrInconsistent, false, 1, ""},
		{"scale factor mismatch", `{"v100": {` + r16 + `: {"null": 2, ` + lm2 + `: [1, 1]}, ` + lm2 + `: {"null": 2, ` + r16 + `: [1, 1]}}}`, ErrScaleFactorMismatch, false, 1, ""},
		{"above isolated", `{"v100": {` + r16 + `: {"null": 2, ` + r16 + `: [3, 3]}}}`, ErrAboveIsolated, true, 1, ""},
		{"self-pair uneven", `{"v100": {` + r16 + `: {"null": 2, ` + r16 + `: [1, 1.5]}}}`, ErrSelfPairUneven, true, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := Check(strings.NewReader(tt.in), "in.json")
			var found *Problem
			for _, p := range ps {
				if errors.Is(p, tt.want) {
					found = p
				}
			}
			if found == nil {
				t.Fatalf("Check problems = %v, want one wrapping %v", ps, tt.want)
			}
			if found.File != "in.json" || found.Warning != tt.warning || found.Line != tt.line {
				t.Errorf("problem %+v: want file in.json, warning %v, line %d", found, tt.warning, tt.line)
			}
			if col := keyColumn(tt.in, found); tt.want != ErrSyntax && found.Column != col {
				t.Errorf("problem %v: column %d, want %d (its key's)", found, found.Column, col)
			}
			if tt.partner != "" && found.Partner != tt.partner {
				t.Errorf("problem partner = %q, want %q", found.Partner, tt.partner)
			}
			if tt.want != ErrSyntax && tt.want != ErrBadKey && found.Worker != "v100" {
				t.Errorf("problem worker = %q, want v100", found.Worker)
			}
			if !strings.Contains(found.Error(), "in.json") {
				t.Errorf("message %q does not name the file", found.Error())
			}
			_, err := Read(strings.NewReader(tt.in))
			if tt.warning != (err == nil) {
				t.Errorf("Read error = %v; want an error only for non-warnings", err)
			}
		})
	}
}

// keyColumn finds, by searching the text, the column of the key problem p of a one-line input is
// about: the partner's key inside the job's object, or the job's key.
func keyColumn(in string, p *Problem) int {
	job := `"` + p.Job + `": `
	i := strings.Index(in, job)
	if p.Partner == "" || i < 0 {
		return i + 1
	}
	i += len(job) // past the job's key: a self-pair's partner key is the same text
	return i + strings.Index(in[i:], `"`+p.Partner+`": `) + 1
}

func TestSyntaxColumn(t *testing.T) {
	_, ps := Check(strings.NewReader("{\n  \"v100\": x\n}"), "f.json")
	if len(ps) != 1 || ps[0].Line != 2 || ps[0].Column != 11 {
		t.Fatalf("problems = %v, want one at 2:11", ps)
	}
}

func TestSaveIsAtomicAndLoadNamesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.json")
	tb := New()
	tb.SetIsolated("cpu", resnet, 1.5)
	if err := tb.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil || !got.Equal(tb) {
		t.Fatalf("Load after Save = %v, %v", got, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("Save left %d files, want 1", len(entries))
	}
	os.WriteFile(path, []byte(`{"cpu": {"bad": {}}}`), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load of bad file: %v, want an error naming %s", err, path)
	}
}

func TestCSVRoundTrip(t *testing.T) {
	d := Default().Select(nil, []string{"k80", "v100"})
	var buf bytes.Buffer
	if err := d.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(buf.String(), "\n")
	// Each worker type: 83 isolated rows + 26*26 + 3*19*19 pair rows, plus the header.
	if want := 2*(83+26*26+3*19*19) + 1; lines != want {
		t.Errorf("CSV has %d lines, want %d", lines, want)
	}
	back, err := ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(d) {
		t.Error("CSV round trip changed the table")
	}
	if _, err := ReadCSVFile(strings.NewReader(strings.Join(csvHeader, ",")+"\nv100,m,x,,,measured,1,,1,,,\n"), "t.csv"); err == nil || !strings.Contains(err.Error(), "t.csv:2:") {
		t.Errorf("bad CSV row: %v, want an error naming t.csv line 2", err)
	}
}

func TestPairStates(t *testing.T) {
	tb := New()
	tb.SetPair("x", resnet, lm, 1, 2)
	tb.SetInfeasible("x", lm, lm)
	got := tb.PairStates("x", []JobType{resnet, lm})
	want := [][]State{{Missing, Measured}, {Measured, Infeasible}}
	for i := range want {
		for k := range want[i] {
			if got[i][k] != want[i][k] {
				t.Errorf("PairStates[%d][%d] = %v, want %v", i, k, got[i][k], want[i][k])
			}
		}
	}
}

// TestReadRepeatedKeys: a key repeated at any level, or two keys naming the same job type, is
// an error naming the file, worker type, job and key; decoding into maps kept the last one
// silently, and a later Save dropped the other.
func TestReadRepeatedKeys(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		worker   string
		job      string
		partner  string
		line     int
		contains []string
	}{
		{"worker type", "{\"p100\": {\"('A', 1)\": {\"null\": 1}},\n \"p100\": {\"('A', 1)\": {\"null\": 2}}}",
			"p100", "", "", 2, []string{`worker type "p100"`, "first at line 1"}},
		{"job", "{\"p100\": {\"('A', 1)\": {\"null\": 1},\n \"('A', 1)\": {\"null\": 2}}}",
			"p100", "('A', 1)", "", 2, []string{"job ('A', 1)"}},
		{"isolated rate", "{\"p100\": {\"('A', 1)\": {\"null\": 1,\n\n \"null\": 2}}}",
			"p100", "('A', 1)", "null", 3, []string{"job ('A', 1): isolated rate: ", `"null" appears again`}},
		{"partner", `{"p100": {"('A', 1)": {"null": 1, "('A', 1)": [1, 1], "('A', 1)": [0.5, 0.5]}}}`,
			"p100", "('A', 1)", "('A', 1)", 1, []string{"partner ('A', 1)"}},
		// The repeat is left out: B's pair with A, which only the repeat held, is not reported
		// again as one-sided (a reviewer's table gave one such error per partner).
		{"job with pairs in the repeat", "{\"p100\": {\"('A', 1)\": {\"null\": 1},\n \"('B', 1)\": {\"null\": 1, \"('A', 1)\": [0.5, 0.5]},\n \"('A', 1)\": {\"null\": 1, \"('B', 1)\": [0.5, 0.5]}}}",
			"p100", "('A', 1)", "", 3, []string{"job ('A', 1)", "first at line 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := Check(strings.NewReader(tt.in), "dup.json")
			errs := ps.Errors()
			if len(errs) != 1 || !errors.Is(errs[0], ErrDuplicateKey) {
				t.Fatalf("problems = %v, want one repeated key", ps)
			}
			p := errs[0]
			if p.File != "dup.json" || p.Worker != tt.worker || p.Job != tt.job || p.Partner != tt.partner || p.Line != tt.line {
				t.Errorf("problem %+v: want worker %q job %q partner %q line %d", p, tt.worker, tt.job, tt.partner, tt.line)
			}
			for _, c := range append(tt.contains, "dup.json") {
				if !strings.Contains(p.Error(), c) {
					t.Errorf("message %q does not contain %q", p.Error(), c)
				}
			}
		})
	}
}

// TestReadSameJobTypeTwice: keys that differ only in how the scale factor is written are
// rejected: a leading zero is not Gavel's form, and no two keys may name one job type.
func TestReadSameJobTypeTwice(t *testing.T) {
	in := `{"p100": {"('A', 01)": {"null": 1}, "('A', 1)": {"null": 2}}}`
	_, ps := Check(strings.NewReader(in), "f.json")
	var bad *Problem
	for _, p := range ps.Errors() {
		if errors.Is(p, ErrBadKey) && p.Job == "('A', 01)" {
			bad = p
		}
	}
	if bad == nil || !strings.Contains(bad.Error(), "leading zero") {
		t.Fatalf("problems = %v, want ('A', 01) rejected for its leading zero", ps)
	}
	if _, err := ParseJobType("('A', 10)"); err != nil {
		t.Errorf("ParseJobType(('A', 10)): %v", err)
	}
	for _, k := range []string{"('A', 01)", "('A', 007)", "('A', 00)"} {
		if _, err := ParseJobType(k); err == nil {
			t.Errorf("ParseJobType(%s) accepted", k)
		}
	}
}

// TestReadWrongValueType: a value of the wrong JSON type is one problem on its entry, naming
// worker type and job, and the rest of the file is still read.
func TestReadWrongValueType(t *testing.T) {
	tests := []struct {
		name, in, worker, job, partner string
		say                            string // in the message, when not ""
	}{
		{"job is a number", `{"p100": {"('A', 1)": 5, "('B', 1)": {"null": 2}}}`, "p100", "('A', 1)", "", ""},
		// Read as a float64, 1e999 once failed with "cannot unmarshal number 1e999 into Go value".
		{"job is a number out of range", `{"p100": {"('A', 1)": 1e999, "('B', 1)": {"null": 2}}}`, "p100", "('A', 1)", "", ""},
		{"worker is a number out of range", `{"p100": -1e999, "v100": {"('B', 1)": {"null": 2}}}`, "p100", "", "", ""},
		{"worker is a list", `{"p100": [1], "v100": {"('B', 1)": {"null": 2}}}`, "p100", "", "", ""},
		{"isolated is a list", `{"p100": {"('A', 1)": {"null": [1]}, "('B', 1)": {"null": 2}}}`, "p100", "('A', 1)", "null", ""},
		// null was called "null is a string".
		{"isolated is null", `{"p100": {"('A', 1)": {"null": null}, "('B', 1)": {"null": 2}}}`, "p100", "('A', 1)", "null",
			`w.json:1:24: worker type "p100": job ('A', 1): isolated rate: bad value: null, want a number`},
		{"pair rate is null", `{"p100": {"('A', 1)": {"null": 2, "('A', 1)": [1, null]}, "('B', 1)": {"null": 2}}}`, "p100", "('A', 1)", "('A', 1)",
			"bad value: null, want a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, ps := Check(strings.NewReader(tt.in), "w.json")
			errs := ps.Errors()
			if len(errs) != 1 || !errors.Is(errs[0], ErrBadValue) {
				t.Fatalf("problems = %v, want one bad value", ps)
			}
			p := errs[0]
			if p.Worker != tt.worker || p.Job != tt.job || p.Partner != tt.partner || strings.Contains(p.Error(), "map[") || strings.Contains(p.Error(), "Go value") {
				t.Errorf("problem %q: want worker %q job %q partner %q in plain words", p.Error(), tt.worker, tt.job, tt.partner)
			}
			if !strings.Contains(p.Error(), tt.say) || strings.Contains(p.Error(), "null is a string") {
				t.Errorf("problem %q: want it to say %q", p.Error(), tt.say)
			}
			if tb == nil || !tb.HasJobType(JobType{"B", 1}) {
				t.Errorf("the good entry was not read: %v", tb)
			}
		})
	}
}

// TestReadUnknownPartner: a partner key naming a job type that has no entry of its own on the
// worker type (a typo, most likely) was reported as "pair present on one side only: ('Bogus', 1)
// has no entry for ('A3C', 1)"; it is now said to be no job type of that worker type. A partner
// that has an entry, even a bad one, without the pair is still one-sided.
func TestReadUnknownPartner(t *testing.T) {
	header := strings.Join(csvHeader, ",") + "\n"
	csvRow := func(w, a, b string) string {
		if b == "" {
			return w + "," + a + ",1,,,measured,2,,,,,\n"
		}
		return w + "," + a + ",1," + b + ",1,measured,1,1,,,,\n"
	}
	const unknown = `partner ('Bogus', 1): unknown partner: ('Bogus', 1) is not a job type of worker type "k80" (it has no entry of its own)`
	tests := []struct {
		name, in string
		csv      bool
		want     error  // among the errors
		not      error  // not among them
		say      string // in that error's message
	}{
		{"json no entry", `{"k80": {"('A3C', 1)": {"null": 2, "('Bogus', 1)": [1, 1]}}}`, false,
			ErrUnknownPartner, ErrOneSided, `t.json:1:36: worker type "k80": job ('A3C', 1): ` + unknown},
		{"json entry on another worker type only", `{"k80": {"('A3C', 1)": {"null": 2, "('Bogus', 1)": [1, 1]}},
			"v100": {"('Bogus', 1)": {"null": 2}}}`, false, ErrUnknownPartner, ErrOneSided, unknown},
		{"json entry without the pair", `{"k80": {"('A3C', 1)": {"null": 2, "('Bogus', 1)": [1, 1]}, "('Bogus', 1)": {"null": 2}}}`, false,
			ErrOneSided, ErrUnknownPartner, "('Bogus', 1) has no entry for ('A3C', 1)"},
		{"json bad entry without the pair", `{"k80": {"('A3C', 1)": {"null": 2, "('Bogus', 1)": [1, 1]}, "('Bogus', 1)": 5}}`, false,
			ErrOneSided, ErrUnknownPartner, "('Bogus', 1) has no entry for ('A3C', 1)"},
		{"csv no row", header + csvRow("k80", "A3C", "") + csvRow("k80", "A3C", "Bogus"), true,
			ErrUnknownPartner, ErrOneSided, unknown},
		{"csv row without the pair", header + csvRow("k80", "A3C", "") + csvRow("k80", "Bogus", "") + csvRow("k80", "A3C", "Bogus"), true,
			ErrOneSided, ErrUnknownPartner, "('Bogus', 1) has no entry for ('A3C', 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := checkAs(tt.csv, tt.in, "t")
			errs := ps.Errors()
			if errors.Is(errs, tt.not) {
				t.Errorf("errors %v: want none wrapping %v", errs, tt.not)
			}
			for _, p := range errs {
				if errors.Is(p, tt.want) {
					if !strings.Contains(p.Error(), tt.say) {
						t.Errorf("error %q does not say %q", p, tt.say)
					}
					return
				}
			}
			t.Errorf("errors %v: want one wrapping %v", errs, tt.want)
		})
	}
}

// TestWriteRefusesUnreadableKeys: Write and Save refuse a table holding a key that would not
// read back as the same job type, naming it, and leave the old file alone.
func TestWriteRefusesUnreadableKeys(t *testing.T) {
	for _, j := range []JobType{{"a\nb", 1}, {"", 1}, {"A", 0}} {
		if err := j.Check(); err == nil {
			t.Errorf("Check(%+v) accepted", j)
		}
	}
	if err := (JobType{"ResNet-18 (batch size 16)", 2}).Check(); err != nil {
		t.Errorf("Check of an ordinary job type: %v", err)
	}
	path := filepath.Join(t.TempDir(), "t.json")
	good := New()
	good.SetIsolated("cpu", resnet, 1)
	if err := good.Save(path); err != nil {
		t.Fatal(err)
	}
	bad := good.Clone()
	bad.SetPair("cpu", resnet, JobType{"line\nbreak", 1}, 1, 1)
	err := bad.Save(path)
	if err == nil || !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), `"line\nbreak"`) {
		t.Fatalf("Save of an unreadable key: %v, want ErrBadKey naming the model", err)
	}
	if back, err := Load(path); err != nil || !back.Equal(good) {
		t.Errorf("the old file changed: %v, %v", back, err)
	}
}

// TestWriteRefusesUnreadableValues: Save replaced a good file with one Load refuses ("+Inf",
// "NaN", a negative rate, a pair of two scale factors); now nothing is written, JSON or CSV.
func TestWriteRefusesUnreadableValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	good := New()
	good.SetIsolated("cpu", resnet, 1)
	if err := good.Save(path); err != nil {
		t.Fatal(err)
	}
	other := JobType{"B", 1}
	for _, tc := range []struct {
		name string
		set  func(*Table)
		want error
	}{
		{"infinite isolated", func(b *Table) { b.SetIsolated("cpu", other, math.Inf(1)) }, ErrNotFinite},
		{"NaN pair", func(b *Table) { b.SetIsolated("cpu", other, 1); b.SetPair("cpu", resnet, other, math.NaN(), 1) }, ErrNotFinite},
		{"negative pair", func(b *Table) { b.SetIsolated("cpu", other, 1); b.SetPair("cpu", resnet, other, 1, -1) }, ErrNegativeRate},
		{"two scale factors", func(b *Table) { b.SetPair("cpu", resnet, JobType{"B", 2}, 1, 1) }, ErrScaleFactorMismatch},
	} {
		bad := good.Clone()
		tc.set(bad)
		if err := bad.Save(path); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), `worker type "cpu"`) {
			t.Errorf("%s: Save: %v, want %v naming the entry", tc.name, err, tc.want)
		}
		if err := bad.WriteCSV(io.Discard); !errors.Is(err, tc.want) {
			t.Errorf("%s: WriteCSV: %v, want %v", tc.name, err, tc.want)
		}
		if back, err := Load(path); err != nil || !back.Equal(good) {
			t.Errorf("%s: the old file changed: %v, %v", tc.name, back, err)
		}
	}
}

// TestReadCSVChecks: CSV rows get the JSON reader's checks: a repeated row, pairs whose two
// directions disagree or are one-sided, a wrong header; every error names the file and line.
func TestReadCSVChecks(t *testing.T) {
	header := strings.Join(csvHeader, ",") + "\n"
	iso := func(m string, r string) string { return "v100," + m + ",1,,,measured," + r + ",,,,,\n" }
	pair := func(a, b, ra, rb string) string {
		return "v100," + a + ",1," + b + ",1,measured," + ra + "," + rb + ",,,,\n"
	}
	tests := []struct {
		name, in string
		want     error
		contains []string
	}{
		{"isolated twice", header + iso("A", "1") + iso("A", "2"), ErrDuplicateKey, []string{"c.csv:3", "first at line 2", `job ('A', 1)`}},
		{"pair twice", header + iso("A", "2") + iso("B", "2") + pair("A", "B", "1", "1") + pair("B", "A", "1", "1") + pair("A", "B", "1", "1"),
			ErrDuplicateKey, []string{"c.csv:6"}},
		{"directions disagree", header + iso("A", "2") + iso("B", "2") + pair("A", "B", "1", "1.5") + pair("B", "A", "1", "1"),
			ErrInconsistent, []string{"c.csv", `worker type "v100"`}},
		{"one direction", header + iso("A", "2") + iso("B", "2") + pair("A", "B", "1", "1"), ErrOneSided, []string{"c.csv"}},
		{"wrong header", strings.Replace(header, "partner_rate", "rate2", 1) + iso("A", "1"), ErrBadCSV, []string{"c.csv:1", "want"}},
		// A spreadsheet that dropped columns got "wrong number of fields", not what was wanted.
		{"narrow header", strings.Replace(header, ",normalized,partner_normalized", "", 1) + iso("A", "1"), ErrBadCSV, []string{"c.csv:1", "header", "want"}},
		{"leading zero", header + "v100,A,01,,,measured,1,,,,,\n", ErrBadKey, []string{"c.csv:2"}},
		{"unreadable name", header + "v100,\"A\nB\",1,,,measured,1,,,,,\n", ErrBadKey, []string{"c.csv:2"}},
		// Latin-1 bytes became U+FFFD in JSON: another name, and two such names one.
		{"model not UTF-8", header + "v100,a\xff,1,,,measured,10,,,,,\n", ErrBadKey, []string{"c.csv:2", "not valid UTF-8"}},
		{"worker type not UTF-8", header + "v\xe9,a,1,,,measured,10,,,,,\n", ErrBadKey, []string{"c.csv:2", "worker type name", "not valid UTF-8"}},
		// A spreadsheet's NaN or Inf was "bad value: NaN is not a number", not ErrNotFinite as in JSON.
		{"NaN", header + iso("A", "NaN"), ErrNotFinite, []string{"c.csv:2", "isolated rate"}},
		{"Inf", header + iso("A", "2") + iso("B", "2") + pair("A", "B", "1", "-inf") + pair("B", "A", "-inf", "1"), ErrNotFinite, []string{"c.csv:4", "partner rate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCSVFile(strings.NewReader(tt.in), "c.csv")
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			for _, c := range tt.contains {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("error %q does not contain %q", err, c)
				}
			}
		})
	}
	// Without a file name the error is no Problems, so that a caller names the file.
	_, err := ReadCSV(strings.NewReader(header + iso("A", "1") + iso("A", "2")))
	var ps Problems
	if !errors.Is(err, ErrDuplicateKey) || errors.As(err, &ps) {
		t.Errorf("ReadCSV error %v (%T): want ErrDuplicateKey, not as a Problems", err, err)
	}
	good := header + iso("A", "2") + iso("B", "2") + pair("A", "B", "1", "1.5") + pair("B", "A", "1.5", "1")
	tb, err := ReadCSVFile(strings.NewReader(good), "c.csv")
	if err != nil {
		t.Fatal(err)
	}
	if ra, rb, s := tb.Pair("v100", JobType{"A", 1}, JobType{"B", 1}); s != Measured || ra != 1 || rb != 1.5 {
		t.Errorf("pair = %v, %v, %v", ra, rb, s)
	}
}

// TestReadCSVState: the state column was never read, so a pair row edited to say infeasible
// while keeping its rates, or a typo such as "measurd", read back as a measured pair with no
// error. A state must now be one WriteCSV writes and agree with the rates (infeasible exactly
// when a pair's two rates are 0); an empty one is left to the rates.
func TestReadCSVState(t *testing.T) {
	header := strings.Join(csvHeader, ",") + "\n"
	iso := func(m, state string) string { return "v100," + m + ",1,,," + state + ",2,,,,,\n" }
	pair := func(a, b, state, ra, rb string) string {
		return "v100," + a + ",1," + b + ",1," + state + "," + ra + "," + rb + ",,,,\n"
	}
	isos := iso("A", "measured") + iso("B", "measured")
	tests := []struct {
		name, in string
		say      []string // in the first error; none: the table reads as want
		errs     int      // errors, one per wrong row
		want     State    // the state of pair (A, B)
	}{
		{"typo in a pair row", header + isos + pair("A", "B", "measurd", "1", "1.5") + pair("B", "A", "measured", "1.5", "1"),
			[]string{"c.csv:4", `job ('A', 1): partner ('B', 1)`, `state "measurd" is not measured or infeasible`}, 1, 0},
		{"typo in an isolated row", header + iso("A", "Measured") + iso("B", "measured") + pair("A", "B", "measured", "1", "1.5") + pair("B", "A", "measured", "1.5", "1"),
			[]string{"c.csv:2", `job ('A', 1): isolated rate`, `state "Measured" is not`}, 1, 0},
		{"infeasible with rates", header + isos + pair("A", "B", "infeasible", "1", "1.5") + pair("B", "A", "infeasible", "1.5", "1"),
			[]string{"c.csv:4", `state "infeasible" but rate 1 and partner_rate 1.5 are not both 0`}, 2, 0},
		{"infeasible with rates in one row", header + isos + pair("A", "B", "measured", "1", "1.5") + pair("B", "A", "infeasible", "1.5", "1"),
			[]string{"c.csv:5", `job ('B', 1): partner ('A', 1)`, `state "infeasible"`}, 1, 0},
		{"measured with zero rates", header + isos + pair("A", "B", "measured", "0", "0") + pair("B", "A", "infeasible", "0", "0"),
			[]string{"c.csv:4", `state "measured" but rate and partner_rate are both 0`}, 1, 0},
		{"missing", header + isos + pair("A", "B", "missing", "1", "1.5") + pair("B", "A", "measured", "1.5", "1"),
			[]string{"c.csv:4", `state "missing"`, "delete the row"}, 1, 0},
		{"infeasible isolated rate", header + iso("A", "infeasible") + iso("B", "measured"),
			[]string{"c.csv:2", `state "infeasible" for an isolated rate`}, 1, 0},
		{"infeasible", header + isos + pair("A", "B", "infeasible", "0", "0") + pair("B", "A", "infeasible", "0", "0"), nil, 0, Infeasible},
		{"measured with one rate 0", header + isos + pair("A", "B", "measured", "0", "1.5") + pair("B", "A", "measured", "1.5", "0"), nil, 0, Measured},
		{"empty state measured", header + iso("A", "") + iso("B", "") + pair("A", "B", "", "1", "1.5") + pair("B", "A", "", "1.5", "1"), nil, 0, Measured},
		{"empty state infeasible", header + isos + pair("A", "B", "", "0", "0") + pair("B", "A", "", "0", "0"), nil, 0, Infeasible},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, ps := CheckCSV(strings.NewReader(tt.in), "c.csv")
			errs := ps.Errors()
			if tt.say == nil {
				if len(errs) > 0 {
					t.Fatalf("errors %v, want none", errs)
				}
				if _, _, s := tb.Pair("v100", JobType{"A", 1}, JobType{"B", 1}); s != tt.want {
					t.Errorf("pair state %v, want %v", s, tt.want)
				}
				return
			}
			// One mistake, one error: a pair's good row is not also called one-sided.
			if len(errs) != tt.errs {
				t.Fatalf("%d errors, want %d:\n%v", len(errs), tt.errs, errs)
			}
			for _, e := range errs {
				if !errors.Is(e, ErrBadValue) {
					t.Errorf("error %v, want %v", e, ErrBadValue)
				}
			}
			for _, s := range tt.say {
				if !strings.Contains(errs[0].Error(), s) {
					t.Errorf("error %q does not say %q", errs[0], s)
				}
			}
		})
	}
}

// TestSaveKeepsModeAndSymlink: saving over an existing file keeps its permissions, and saving
// through a symlink replaces the target and keeps the link.
func TestSaveKeepsModeAndSymlink(t *testing.T) {
	dir := t.TempDir()
	tb := New()
	tb.SetIsolated("cpu", resnet, 2)
	private := filepath.Join(dir, "private.json")
	if err := os.WriteFile(private, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tb.Save(private); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(private); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after Save = %v, want 0600", fi.Mode().Perm())
	}
	fresh := filepath.Join(dir, "new.json")
	if err := tb.Save(fresh); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode of a new file = %v, want 0644", fi.Mode().Perm())
	}
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	target := filepath.Join(dir, "real", "t.json")
	os.WriteFile(target, []byte("{}"), 0o640)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(filepath.Join("real", "t.json"), link); err != nil {
		t.Fatal(err)
	}
	if err := tb.Save(link); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v, %v", fi.Mode(), err)
	}
	got, err := Load(target)
	if err != nil || !got.Equal(tb) {
		t.Errorf("target after Save through the link: %v, %v", got, err)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
		t.Errorf("target mode = %v, want 0640", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 4 { // private, new, real, link
		t.Errorf("Save left %d entries in the directory, want 4", len(entries))
	}

	// A link whose target does not exist yet: the target is created and the link kept.
	dangling := filepath.Join(dir, "real", "dangling.json")
	if err := os.Symlink(filepath.Join("..", "later", "t.json"), dangling); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "later"), 0o755)
	if err := tb.Save(dangling); err != nil {
		t.Fatalf("Save through a dangling link: %v", err)
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the dangling link was replaced: %v", err)
	}
	if got, err := Load(filepath.Join(dir, "later", "t.json")); err != nil || !got.Equal(tb) {
		t.Errorf("the dangling link's target after Save: %v, %v", got, err)
	}
}

// denseTable is a table of n job types on 4 worker types with every pair measured, the shape
// estimate --out writes.
func denseTable(n int) *Table {
	t := New()
	jobs := make([]JobType, n)
	for i := range jobs {
		jobs[i] = JobType{Model: fmt.Sprintf("model-%03d (batch size %d)", i, 16<<(i%4)), ScaleFactor: 1}
	}
	for w := 0; w < 4; w++ {
		wt := fmt.Sprintf("gpu%d", w)
		for i, a := range jobs {
			t.SetIsolated(wt, a, 10+float64(i)/7)
			for k := i; k < n; k++ {
				t.SetPair(wt, a, jobs[k], 0.3+float64(i%17)/41, 0.4+float64(k%13)/37)
			}
		}
	}
	return t
}

// BenchmarkWrite writes a dense table of 300 job types (360,000 pair entries).
func BenchmarkWrite(b *testing.B) {
	t := denseTable(300)
	b.ResetTimer()
	for range b.N {
		if err := t.Write(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead reads the table BenchmarkWrite writes.
func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	if err := denseTable(300).Write(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for range b.N {
		if _, err := Read(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// The fast paths of reading must agree with the slow ones they skip.
func TestReadFastPathsAgree(t *testing.T) {
	for _, raw := range []string{
		"[1, 2]", "[0.5,1.5]", " [ 1e-3 , 2E+2 ] ", "[0, -0]", "[1e-400, 1]", "[1e400, 1]",
		"[-1, 2]", "[+1, 2]", "[01, 2]", "[.5, 2]", "[1., 2]", "[1e, 2]", "[0x1p3, 2]",
		"[Inf, 1]", "[NaN, 1]", "[1, 2, 3]", "[1]", `["1", 2]`, "[1 2]", "[1, 2]]",
	} {
		fast, ok := plainPair([]byte(raw))
		// The reference is Go's decoder alone (parseRate itself now starts with the fast
		// path): two JSON numbers that are finite, non-negative rates.
		var vals []float64
		refErr := json.Unmarshal([]byte(raw), &vals)
		if refErr == nil && (len(vals) != 2 || vals[0] < 0 || vals[1] < 0 || math.IsInf(vals[0], 0) || math.IsInf(vals[1], 0)) {
			refErr = errors.New("not two rates")
		}
		var ref [2]float64
		if refErr == nil {
			ref = [2]float64{vals[0], vals[1]}
		}
		switch {
		case ok && refErr != nil:
			t.Errorf("%s: fast path reads %v, the decoder rejects it: %v", raw, fast, refErr)
		case ok && fast != ref:
			t.Errorf("%s: fast path reads %v, the decoder %v", raw, fast, ref)
		}
		if got, err := parsePair(json.RawMessage(raw)); refErr == nil && (err != nil || got != ref) {
			t.Errorf("%s: parsePair %v, %v; the decoder %v", raw, got, err, ref)
		}
	}
	// A key's position is that of its own first byte: "b" opens line 4 at column 3.
	data := []byte("{\n\"a\": 1,\n\n  \"b\": [1,\n2]\n}\n")
	b := &builder{s: scanner{data: data}}
	line, col := 1, 1
	for off := range len(data) {
		if l, c := b.position(off); l != line || c != col {
			t.Errorf("offset %d (%q): builder says %d:%d, want %d:%d", off, data[off], l, c, line, col)
		}
		col++
		if data[off] == '\n' {
			line, col = line+1, 1
		}
	}
	if l, c := b.position(bytes.Index(data, []byte(`"b"`))); l != 4 || c != 3 {
		t.Errorf(`"b" at %d:%d, want 4:3`, l, c)
	}
}

// BenchmarkReadCSV reads the table of BenchmarkWrite as CSV.
func BenchmarkReadCSV(b *testing.B) {
	var buf bytes.Buffer
	if err := denseTable(300).WriteCSV(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for range b.N {
		if _, err := ReadCSVFile(bytes.NewReader(buf.Bytes()), "t.csv"); err != nil {
			b.Fatal(err)
		}
	}
}

// CheckWritable agrees with what Save then does: the cases it passes save, the ones it refuses
// fail, links followed to the end.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	tb := New()
	tb.SetIsolated("cpu", resnet, 2)
	chain1, chain2 := filepath.Join(dir, "l1"), filepath.Join(dir, "l2")
	os.Symlink(chain2, chain1)
	os.Symlink(filepath.Join(dir, "gone", "x.json"), chain2)
	okChain1, okChain2 := filepath.Join(dir, "k1"), filepath.Join(dir, "k2")
	os.Symlink(okChain2, okChain1)
	os.Symlink(filepath.Join(dir, "new.json"), okChain2)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "t.json"), ""},
		{okChain1, ""},
		{chain1, "directory " + filepath.Join(dir, "gone") + " does not exist"},
		{"/dev/null", "not a regular file"},
		{dir, "is a directory"},
		{filepath.Join(file, "x.json"), file + " is not a directory"},
	} {
		err := CheckWritable(tc.path)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckWritable(%s) = %v, want %q", tc.path, err, tc.want)
		}
		if saveErr := tb.Save(tc.path); (saveErr == nil) != (err == nil) {
			t.Errorf("%s: CheckWritable says %v but Save says %v", tc.path, err, saveErr)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".gavel-write-check-*")); len(left) > 0 {
		t.Errorf("check files left: %v", left)
	}
}

// A pair with a bad value on one side was counted twice: the bad value, and "present on one
// side only" for its good other side. It is one mistake, reported once; a pair truly missing
// its other side is still reported.
func TestBadPairValueReportedOnce(t *testing.T) {
	header := strings.Join(csvHeader, ",") + "\n"
	iso := func(m string) string { return "v100," + m + ",1,,,measured,2,,,,,\n" }
	pair := func(a, b, ra, rb string) string {
		return "v100," + a + ",1," + b + ",1,measured," + ra + "," + rb + ",,,,\n"
	}
	jsonTable := func(abValue string) string {
		return `{"v100": {"('A', 1)": {"null": 2, "('B', 1)": ` + abValue + `},
			"('B', 1)": {"null": 2, "('A', 1)": [1, 1]}, "('C', 1)": {"null": 2, "('A', 1)": [1, 1]}}}`
	}
	tests := []struct {
		name, in  string
		csv       bool
		wantErrs  []error // in order
		wantFirst string
	}{
		{"json one-element pair", jsonTable("[1.0]"), false, []error{ErrBadValue, ErrOneSided}, "partner ('B', 1): bad value"},
		{"json string pair", jsonTable(`"x"`), false, []error{ErrBadValue, ErrOneSided}, "partner ('B', 1): bad value"},
		{"json good", jsonTable("[1, 1]"), false, []error{ErrOneSided}, "job ('C', 1)"},
		{"csv bad partner rate", header + iso("A") + iso("B") + pair("A", "B", "1", "x") + pair("B", "A", "1", "1"), true,
			[]error{ErrBadValue}, "c.csv:4"},
		{"csv bad rate", header + iso("A") + iso("B") + pair("A", "B", "-1", "1") + pair("B", "A", "1", "1"), true,
			[]error{ErrNegativeRate}, "c.csv:4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := checkAs(tt.csv, tt.in, "c")
			errs := ps.Errors()
			if len(errs) != len(tt.wantErrs) {
				t.Fatalf("%d errors, want %d:\n%v", len(errs), len(tt.wantErrs), errs)
			}
			for i, want := range tt.wantErrs {
				if !errors.Is(errs[i], want) {
					t.Errorf("error %d: %v, want %v", i, errs[i], want)
				}
			}
			if !strings.Contains(errs[0].Error(), tt.wantFirst) {
				t.Errorf("first error %q does not name %s", errs[0], tt.wantFirst)
			}
		})
	}
}

// Tables are told apart by content: CSV by its header (quoted or not) or a
// first line with commas and no colon; everything else goes to the JSON
// reader, whose messages are the useful ones for broken JSON.
func TestLooksLikeCSV(t *testing.T) {
	for _, c := range []struct {
		name, data string
		csv        bool
	}{
		{"header", "worker_type,model,scale_factor\n", true},
		{"quoted header", `"worker_type","model"` + "\n", true},
		{"header after blank lines", "\n  worker_type,model\n", true},
		{"other header", "wrong,header,fields\n", true},
		{"one-line JSON", `{"k80": {"('A', 1)": {"null": 1}}, "v100": {}}`, false},
		{"JSON after whitespace", "\n\t {\"k80\": {}}", false},
		{"JSON array", "[1, 2]", false},
		{"JSON without its brace", `"k80": {"('A', 1)": {"null": 1}}}`, false},
		{"empty", "", false},
	} {
		if got := looksLikeCSV([]byte(c.data)); got != c.csv {
			t.Errorf("%s: looksLikeCSV %v, want %v", c.name, got, c.csv)
		}
	}
}

// A byte-order mark (spreadsheets write one) does not hide the format.
func TestCheckAnyByteOrderMark(t *testing.T) {
	var js, cs bytes.Buffer
	tb := New()
	a := JobType{Model: "A", ScaleFactor: 1}
	tb.SetIsolated("k80", a, 2)
	if err := tb.Write(&js); err != nil {
		t.Fatal(err)
	}
	if err := tb.WriteCSV(&cs); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"json": js.Bytes(), "csv": cs.Bytes()} {
		got, ps := CheckAny(bytes.NewReader(append([]byte("\ufeff"), data...)), name)
		if len(ps.Errors()) > 0 {
			t.Fatalf("%s with a BOM: %v", name, ps.Errors())
		}
		if r, ok := got.Isolated("k80", a); !ok || r != 2 {
			t.Errorf("%s with a BOM: isolated rate %v, %v; want 2", name, r, ok)
		}
	}
}

// checkAs reads in as CSV (file base.csv) or as Gavel JSON (base.json) and returns its problems.
func checkAs(csv bool, in, base string) Problems {
	if csv {
		_, ps := CheckCSV(strings.NewReader(in), base+".csv")
		return ps
	}
	_, ps := Check(strings.NewReader(in), base+".json")
	return ps
}

// Names are written as given: <, > and & are not escaped (\u003e reads back the same, but a
// user reading the file, or diffing it against one Gavel's Python wrote, sees the escape).
func TestWriteLeavesNamesReadable(t *testing.T) {
	a := JobType{Model: "MemGrow (10 -> 75 GiB)", ScaleFactor: 1}
	b := JobType{Model: `R&D <"net">`, ScaleFactor: 2}
	tab := New()
	tab.SetIsolated("h200", a, 12.5)
	tab.SetIsolated("h200", b, 3)
	tab.SetPair("h200", a, a, 6, 6)
	var buf bytes.Buffer
	if err := tab.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"('MemGrow (10 -> 75 GiB)', 1)"`, `"('R&D <\"net\">', 2)"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("written table lacks %s:\n%s", want, buf.String())
		}
	}
	back, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !tab.Equal(back) {
		t.Errorf("read back a different table:\n%s", buf.String())
	}
}

// A job entry given twice hides only the one-sided reports of the pairs its repeat held: a
// partner's pair with it that neither copy holds is still reported.
func TestRepeatedJobKeepsOtherOneSided(t *testing.T) {
	in := "{\"p100\": {\"('A', 1)\": {\"null\": 1, \"('B', 1)\": [0.5, 0.5]},\n \"('B', 1)\": {\"null\": 1},\n \"('B', 1)\": {\"null\": 1}}}"
	_, ps := Check(strings.NewReader(in), "rep.json")
	var dup, oneSided int
	for _, p := range ps.Errors() {
		switch {
		case errors.Is(p, ErrDuplicateKey):
			dup++
		case errors.Is(p, ErrOneSided):
			oneSided++
		}
	}
	if dup != 1 || oneSided != 1 || len(ps.Errors()) != 2 {
		t.Errorf("problems %v: want the repeat and A's one-sided pair with B", ps)
	}
}

// TestProblemsFoundAfterReadingHaveLines: the problems found once the table is built (one-sided
// and inconsistent pairs, scale factors, Validate's warnings) name the line of their entry, in
// JSON and CSV; a pair the file gives only under its partner is placed at the partner's entry.
func TestProblemsFoundAfterReadingHaveLines(t *testing.T) {
	header := strings.Join(csvHeader, ",") + "\n"
	tests := []struct {
		name, in string
		csv      bool
		want     map[string]int // the problem's "job / partner" → its line
	}{
		{"json", `{
    "k80": {
        "('A', 1)": {
            "null": 1.0,
            "('B', 1)": [0.5, 3.0]
        },
        "('B', 1)": {
            "null": 2.0
        }
    },
    "v100": {
        "('A', 1)": {"null": 1.0, "('C', 2)": [0.5, 0.5]},
        "('C', 2)": {"null": 1.0,
            "('A', 1)": [0.5, 0.5]}
    }
}`, false, map[string]int{
			"k80 ('A', 1) / ('B', 1)":  5, // one-sided
			"k80 ('B', 1) / ('A', 1)":  5, // above isolated, given only under A
			"v100 ('A', 1) / ('C', 2)": 12,
			"v100 ('C', 2) / ('A', 1)": 14,
		}},
		{"csv", header +
			"k80,A,1,,,measured,1,,,,,\n" +
			"k80,B,2,,,measured,2,,,,,\n" +
			"k80,A,1,B,2,measured,0.5,0.5,,,,\n", true, map[string]int{
			"k80 ('A', 1) / ('B', 2)": 4,
			"k80 ('B', 2) / ('A', 1)": 4, // given only under A
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]int{}
			for _, p := range checkAs(tt.csv, tt.in, "t") {
				got[fmt.Sprintf("%s %s / %s", p.Worker, p.Job, p.Partner)] = p.Line
				if tt.csv || p.Line == 0 {
					continue
				}
				if line := strings.Split(tt.in, "\n")[p.Line-1]; !strings.Contains(line, `"`+p.Partner+`"`) && !strings.Contains(line, `"`+p.Job+`"`) {
					t.Errorf("%v: line %d is %q, which names neither job", p, p.Line, line)
				}
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("problems at lines %v, want %v", got, tt.want)
			}
		})
	}
}
