package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/table"
)

func TestTableShowDefault(t *testing.T) {
	streams, out, _ := TestIO()
	if err := TableShow(streams, TableShowOptions{ScaleFactor: 1, WorkerTypes: []string{"k80", "p100", "v100"}, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		JobTypes []isolatedRow `json:"job_types"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.JobTypes) != 26 {
		t.Fatalf("%d job types, want 26", len(got.JobTypes))
	}
	def := table.Default()
	for _, r := range got.JobTypes {
		for w, v := range r.Rates {
			want, _ := def.Isolated(w, table.JobType{Model: r.Model, ScaleFactor: 1})
			if v != want {
				t.Errorf("%s on %s = %v, want the published %v", r.Model, w, v, want)
			}
		}
	}

	streams, out, _ = TestIO()
	if err := TableShow(streams, TableShowOptions{ScaleFactor: 1, WorkerTypes: []string{"v100"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "24.093") || !strings.Contains(out.String(), "ResNet-18 (batch size 64)") {
		t.Errorf("table output lacks ResNet-18 bs64's v100 rate 24.093:\n%s", out)
	}
}

func TestTableShowPairs(t *testing.T) {
	streams, out, _ := TestIO()
	err := TableShow(streams, TableShowOptions{Pairs: "ResNet-50 (batch size 32)", WorkerTypes: []string{"v100"}, ScaleFactor: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A3C with ResNet-50 bs32 on v100 keeps 0.20 and 0.48 of their solo speeds.
	if !strings.Contains(out.String(), "0.48 + 0.20 = 0.67") {
		t.Errorf("pairs output lacks the A3C cell:\n%s", out)
	}
	err = TableShow(streams, TableShowOptions{Pairs: "NoSuchModel", ScaleFactor: 1})
	if ExitCode(err) != 2 || !strings.Contains(err.Error(), "NoSuchModel") {
		t.Errorf("unknown job: %v (exit %d), want exit 2 naming it", err, ExitCode(err))
	}
	err = TableShow(streams, TableShowOptions{WorkerTypes: []string{"h100"}})
	if ExitCode(err) != 2 {
		t.Errorf("unknown worker type: exit %d, want 2", ExitCode(err))
	}
}

func TestTableValidate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"a100": {"('M', 1)": {"null": -2}, "oops": {}}}`), 0o644)
	streams, out, _ := TestIO()
	err := TableValidate(streams, bad, false)
	if ExitCode(err) != 2 {
		t.Fatalf("validate bad file: exit %d, want 2", ExitCode(err))
	}
	for _, want := range []string{"bad.json", "negative rate", "bad job type key", "2 errors"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	good := filepath.Join(dir, "good.json")
	if err := table.Default().Select(nil, []string{"k80"}).Save(good); err != nil {
		t.Fatal(err)
	}
	streams, _, _ = TestIO()
	if err := TableValidate(streams, good, true); err != nil {
		t.Errorf("validate good file: %v", err)
	}
}

func TestTableConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	csvPath, jsonPath := filepath.Join(dir, "t.csv"), filepath.Join(dir, "t.json")
	streams, _, _ := TestIO()
	if err := TableConvert(context.Background(), streams, "", "csv", csvPath); err != nil {
		t.Fatal(err)
	}
	if err := TableConvert(context.Background(), streams, csvPath, "json", jsonPath); err != nil {
		t.Fatal(err)
	}
	back, err := table.Load(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(table.Default()) {
		t.Error("default -> csv -> json changed the table")
	}
	if err := TableConvert(context.Background(), streams, "", "xml", ""); ExitCode(err) != 2 {
		t.Errorf("--to xml: exit %d, want 2", ExitCode(err))
	}

	// A repeated row is bad input named by file and line.
	data, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte(string(data)+lines[4]), 0o644)
	err = TableConvert(context.Background(), streams, bad, "json", "")
	want := fmt.Sprintf("%s:%d:", bad, len(lines)) // the last line, after the final newline's empty piece
	if ExitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("repeated CSV row: exit %d, %v; want exit 2 naming %s", ExitCode(err), err, want)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{UsageError("x"), 2},
		{table.Problems{{Err: table.ErrBadKey}}, 2},
		{os.ErrClosed, 1},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// A scale factor no job type has printed an empty table and exited 0, as if
// nothing were measured; it is bad usage that lists the ones there are.
func TestTableShowUnknownScaleFactor(t *testing.T) {
	for _, tc := range []struct {
		sf   int
		want string
	}{
		{3, "--scale-factor 3: no job type of the table has it (it has 1, 2, 4, 8; 0 shows all)"},
		{-1, "--scale-factor -1: want 0 (all) or a scale factor of the table (1, 2, 4, 8)"},
	} {
		streams, out, _ := TestIO()
		err := TableShow(streams, TableShowOptions{ScaleFactor: tc.sf})
		if ExitCode(err) != 2 || err.Error() != tc.want || out.Len() != 0 {
			t.Errorf("--scale-factor %d: %v (exit %d), output %q; want exit 2 with %q", tc.sf, err, ExitCode(err), out, tc.want)
		}
	}
	for _, sf := range []int{0, 2, 8} {
		streams, out, _ := TestIO()
		if err := TableShow(streams, TableShowOptions{ScaleFactor: sf}); err != nil || !strings.Contains(out.String(), "ResNet-50") {
			t.Errorf("--scale-factor %d: %v", sf, err)
		}
	}
}

// runTableCmd runs the table command group with args, stdin holding in.
func runTableCmd(args []string, in []byte) (out, errOut string, err error) {
	streams, o, e := TestIO()
	streams.In = bytes.NewReader(in)
	root := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(NewTableCmd(streams, "x"))
	root.SetArgs(append([]string{"table"}, args...))
	root.SetOut(o)
	root.SetErr(e)
	MarkUsageErrors(root)
	err = root.Execute()
	return o.String(), e.String(), err
}

// "-" reads the table from stdin for convert, validate and show --table, in JSON or CSV;
// convert without FILE is the embedded table. "-" was the embedded table for convert (so
// piping a table in converted the wrong one) and "open -" failed for the others.
func TestTableFromStdin(t *testing.T) {
	dir := t.TempDir()
	// A table of two job types on k80 only: 2 isolated rows and 4 pair rows in CSV.
	a, b := table.JobType{Model: "A", ScaleFactor: 1}, table.JobType{Model: "B", ScaleFactor: 1}
	small := table.New()
	small.SetIsolated("k80", a, 2)
	small.SetIsolated("k80", b, 4)
	small.SetPair("k80", a, a, 1, 1)
	small.SetPair("k80", a, b, 1.5, 3)
	small.SetPair("k80", b, b, 2, 2)
	jsonPath, csvPath := filepath.Join(dir, "small.json"), filepath.Join(dir, "small.csv")
	if err := small.Save(jsonPath); err != nil {
		t.Fatal(err)
	}
	var csvBuf bytes.Buffer
	if err := small.WriteCSV(&csvBuf); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(csvPath, csvBuf.Bytes(), 0o644)
	jsonData, _ := os.ReadFile(jsonPath)

	const smallCSVLines = 1 + 2 + 4 // header, isolated rows, ordered pairs (A+A, A+B, B+A, B+B)
	lines := func(s string) int { return strings.Count(s, "\n") }
	tests := []struct {
		name  string
		args  []string
		stdin []byte
		check func(t *testing.T, out string)
	}{
		{"convert - json", []string{"convert", "-", "--to", "csv"}, jsonData, func(t *testing.T, out string) {
			if lines(out) != smallCSVLines || !strings.Contains(out, "k80,B,1,A,1,") {
				t.Errorf("%d lines, want %d with B+A:\n%s", lines(out), smallCSVLines, out)
			}
		}},
		{"convert - csv", []string{"convert", "-", "--to", "csv"}, csvBuf.Bytes(), func(t *testing.T, out string) {
			if out != csvBuf.String() {
				t.Errorf("CSV round trip through stdin changed it:\n%s", out)
			}
		}},
		{"convert default", []string{"convert", "--to", "csv"}, jsonData, func(t *testing.T, out string) {
			var want bytes.Buffer
			table.Default().WriteCSV(&want)
			if out != want.String() {
				t.Errorf("convert without FILE is not the embedded table (%d lines)", lines(out))
			}
		}},
		{"validate - json", []string{"validate", "-"}, jsonData, func(t *testing.T, out string) {
			if !strings.Contains(out, "stdin: 0 errors, 0 warnings") {
				t.Errorf("output %q, want stdin named with no problems", out)
			}
		}},
		{"validate csv file", []string{"validate", csvPath}, nil, func(t *testing.T, out string) {
			if !strings.Contains(out, "small.csv: 0 errors, 0 warnings") {
				t.Errorf("output %q, want no problems", out)
			}
		}},
		{"show --table - csv", []string{"show", "--table", "-", "--json"}, csvBuf.Bytes(), func(t *testing.T, out string) {
			var got struct {
				Workers []string      `json:"worker_types"`
				Jobs    []isolatedRow `json:"job_types"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Workers) != 1 || len(got.Jobs) != 2 || got.Jobs[1].Rates["k80"] != 4 {
				t.Errorf("got %+v, want k80 only, A and B, B at 4 steps/s", got)
			}
		}},
		{"show --table csv file", []string{"show", "--table", csvPath, "--pairs", "A"}, nil, func(t *testing.T, out string) {
			// A with B on k80: 1.5/2 and 3/4 of their isolated rates.
			if !strings.Contains(out, "0.75 + 0.75 = 1.50") {
				t.Errorf("pair row lacks A+B's 0.75 + 0.75:\n%s", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := runTableCmd(tt.args, tt.stdin)
			if err != nil {
				t.Fatalf("%v (stderr %q)", err, errOut)
			}
			tt.check(t, out)
		})
	}
}

// LoadTableFrom reads CSV tables too (allocate --table p.csv reported malformed JSON), names
// stdin in problems, and reports a CSV with a wrong header as bad CSV, not bad JSON.
func TestLoadTableFromFormats(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "t.csv")
	var buf bytes.Buffer
	if err := table.Default().Select(nil, []string{"v100"}).WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(csvPath, buf.Bytes(), 0o644)
	got, err := LoadTableFrom(nil, nil, csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if w := got.WorkerTypes(); len(w) != 1 || w[0] != "v100" {
		t.Errorf("worker types %v, want [v100]", w)
	}
	if r, _ := got.Isolated("v100", table.JobType{Model: "ResNet-18 (batch size 64)", ScaleFactor: 1}); math.Abs(r-24.093) > 5e-4 {
		t.Errorf("ResNet-18 bs64 on v100 = %v, want the published 24.093", r)
	}
	for _, tc := range []struct {
		name, path, stdin, want string
	}{
		{"csv wrong header", "-", "worker,model\nv100,A\n", "stdin:1: malformed CSV"},
		{"bad json on stdin", "-", `{"v100": [}`, "stdin"},
		{"missing file", filepath.Join(dir, "none.json"), "", "none.json: no such file"},
	} {
		_, err := LoadTableFrom(strings.NewReader(tc.stdin), nil, tc.path)
		if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%s: %v (exit %d), want exit 2 with %q", tc.name, err, ExitCode(err), tc.want)
		}
	}
}

// validate printed "1 errors"; a bad pair value was counted twice (the value, and its other
// side as "present on one side only").
func TestTableValidateCounts(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, want string
	}{
		{"one bad pair value", `{"v100": {"('A', 1)": {"null": 2, "('B', 1)": [1.0]}, "('B', 1)": {"null": 2, "('A', 1)": [1, 1]}}}`,
			"t.json: 1 error, 0 warnings"},
		{"one warning", `{"v100": {"('A', 1)": {"null": 2, "('A', 1)": [3, 3]}}}`, "t.json: 0 errors, 1 warning"},
		{"two errors", `{"v100": {"('A', 1)": {"null": -2}, "oops": {}}}`, "t.json: 2 errors, 0 warnings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "t.json")
			os.WriteFile(path, []byte(tt.content), 0o644)
			streams, out, _ := TestIO()
			err := TableValidate(streams, path, false)
			if !strings.HasSuffix(out.String(), tt.want+"\n") {
				t.Errorf("output ends %q, want %q", out, tt.want)
			}
			if strings.HasPrefix(tt.want, "t.json: 0 errors") != (err == nil) {
				t.Errorf("error %v for %q", err, tt.want)
			}
			if err != nil && !strings.HasSuffix(err.Error(), strings.SplitN(tt.want, ",", 2)[0][len("t.json: "):]) {
				t.Errorf("error %q does not end with the count of %q", err, tt.want)
			}
		})
	}
}

// An output path is checked before any work: "-" (standard input where a
// table is read) is refused as a file name, an empty path passes, a
// missing directory is named.
func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		path, want string
	}{
		{"", ""},
		{filepath.Join(dir, "ok.json"), ""},
		{"-", "estimate: --out -: give a file name"},
		{filepath.Join(dir, "none", "x.json"), "does not exist"},
		// Written as a file, /dev/stdout redirected to a file replaced that file.
		{"/dev/stdout", "estimate: --out /dev/stdout: a device or descriptor, not a file"},
		{"/proc/self/fd/1", "a device or descriptor, not a file"},
		{symlinkTo(t, "/dev/stderr"), "a device or descriptor, not a file"},
	} {
		err := CheckOutput("estimate", "--out", c.path)
		if c.want == "" && err != nil || c.want != "" && (ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), c.want)) {
			t.Errorf("%q: %v (exit %d), want %q", c.path, err, ExitCode(err), c.want)
		}
	}
	// /dev/shm holds files: allowed where the machine has it.
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if err := CheckOutput("estimate", "--out", "/dev/shm/gavel-check-output.json"); err != nil {
			t.Errorf("/dev/shm: %v", err)
		}
	}
}

// A table that loads with warnings (pair rates above the isolated rate) is used, and the first
// warning and the count of the others go to the warning writer.
func TestLoadTableFromWarns(t *testing.T) {
	tb := table.Default().Select(nil, []string{"v100"})
	jobs := tb.JobTypesWithScaleFactor(1)
	for _, k := range jobs[1:3] {
		_, rb, _ := tb.Pair("v100", jobs[0], k)
		iso, _ := tb.Isolated("v100", jobs[0])
		tb.SetPair("v100", jobs[0], k, 2*iso, rb)
	}
	path := filepath.Join(t.TempDir(), "warn.json")
	if err := tb.Save(path); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	if _, err := LoadTableFrom(nil, &warn, path); err != nil {
		t.Fatal(err)
	}
	got := warn.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, path) || !strings.Contains(got, "above isolated rate") || !strings.Contains(got, "(and 1 more; 'table validate' lists them)") {
		// Both CLIs load tables here: naming one of them sent gavel-profile's users to the other.
		t.Errorf("warnings %q: want one line naming the file, the first warning and 1 more that 'table validate' lists", got)
	}
	if _, err := LoadTableFrom(nil, nil, path); err != nil {
		t.Errorf("no warning writer: %v", err)
	}
}

func TestListed(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{{nil, "none"}, {[]string{"k80"}, "k80"}, {[]string{"k80", "v100"}, "k80, v100"}} {
		if got := Listed(tt.in); got != tt.want {
			t.Errorf("Listed(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// --json output names jobs as written: "->" and "&" stay, not "-\u003e" and "\u0026".
func TestWriteJSONLeavesNamesReadable(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, map[string]string{"job": "MemGrow (10 -> 75 GiB) & <x>"}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"job\": \"MemGrow (10 -> 75 GiB) & <x>\"\n}\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

// show --pairs --json: a starved job's normalized 0 was left out (omitempty), and a rate over a
// tiny isolated one (+Inf) made the command fail with exit 1 on a table validate accepts.
// --scale-factor 0 ("all") looked the model up at scale factor 1 only.
func TestTableShowPairsEdges(t *testing.T) {
	tb := `{"v100":{"('A', 1)":{"null":10,"('B', 1)":[0,5],"('C', 1)":[1e10,1]},"('B', 1)":{"null":8,"('A', 1)":[5,0]},` +
		`"('C', 1)":{"null":1e-320,"('A', 1)":[1,1e10]},"('G', 2)":{"null":3},"('D', 1)":{"null":1},"('D', 2)":{"null":1}}}`
	var got struct {
		Partners map[string]map[string]map[string]any `json:"partners"`
	}
	out, _, err := runTableCmd([]string{"show", "--table", "-", "--pairs", "A", "--json"}, []byte(tb))
	if err != nil || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("show --pairs A --json: %v\n%s", err, out)
	}
	if b := got.Partners["B"]["v100"]; b["normalized"] != 0.0 || b["partner_normalized"] != 0.625 {
		t.Errorf("A with B: %v, want normalized 0 and partner 0.625", b)
	}
	if c := got.Partners["C"]["v100"]; c["state"] != "measured" || c["normalized"] != 1e9 || c["partner_normalized"] != nil {
		t.Errorf("A with C: %v, want normalized 1e9 and no partner_normalized (it overflows)", c)
	}
	if out, _, err := runTableCmd([]string{"show", "--table", "-", "--pairs", "G", "--scale-factor", "0"}, []byte(tb)); err != nil || !strings.Contains(out, "('G', 2) sharing a GPU") {
		t.Errorf("--pairs G --scale-factor 0: %v\n%s", err, out)
	}
	if _, _, err := runTableCmd([]string{"show", "--table", "-", "--pairs", "D", "--scale-factor", "0"}, []byte(tb)); ExitCode(err) != 2 ||
		!strings.Contains(err.Error(), `model "D" has scale factors 1, 2: give --scale-factor`) {
		t.Errorf("--pairs D --scale-factor 0: %v", err)
	}
}

// --table "" (an unset variable in --table "$T") showed the embedded table as if asked for.
func TestEmptyFileFlagIsUsageError(t *testing.T) {
	out, _, err := runTableCmd([]string{"show", "--table", ""}, nil)
	if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "--table is empty (an unset variable?): give a file name") || out != "" {
		t.Errorf("show --table \"\": %v (exit %d), output %q", err, ExitCode(err), out)
	}
	if _, _, err := runTableCmd([]string{"show"}, nil); err != nil {
		t.Errorf("show without --table: %v", err)
	}
	// validate "" said "table: open : no such file or directory".
	if _, _, err := runTableCmd([]string{"validate", ""}, nil); ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "FILE is empty") {
		t.Errorf("validate \"\": %v (exit %d)", err, ExitCode(err))
	}
}

// validate without FILE said cobra's "accepts 1 arg(s), received 0", which named neither the
// argument nor what it is.
func TestValidateWithoutFileSaysWhat(t *testing.T) {
	for _, args := range [][]string{{"validate"}, {"validate", "a.json", "b.json"}} {
		_, _, err := runTableCmd(args, nil)
		if ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "give one table FILE to check (- for stdin)") {
			t.Errorf("%q: %v (exit %d), want exit 2 saying what FILE is", args, err, ExitCode(err))
		}
	}
}

// symlinkTo returns a new symbolic link to target in a temporary directory.
func symlinkTo(t *testing.T, target string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// show --pairs: a measured pair whose job has no isolated rate was shown as "missing", as if
// the pair had never been measured.
func TestTableShowPairsWithoutIsolated(t *testing.T) {
	tb := `{"v100":{"('A', 1)":{"('B', 1)":[2,3]},"('B', 1)":{"null":6,"('A', 1)":[3,2]}}}`
	out, _, err := runTableCmd([]string{"show", "--table", "-", "--pairs", "A"}, []byte(tb))
	if err != nil || !strings.Contains(out, "measured, isolated rate missing or 0") {
		t.Errorf("show --pairs A: %v\n%s", err, out)
	}
	var got struct {
		Partners map[string]map[string]map[string]any `json:"partners"`
	}
	out, _, err = runTableCmd([]string{"show", "--table", "-", "--pairs", "A", "--json"}, []byte(tb))
	if err != nil || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("show --pairs A --json: %v\n%s", err, out)
	}
	if b := got.Partners["B"]["v100"]; b["state"] != "measured" || b["normalized"] != nil {
		t.Errorf("A with B: %v, want state measured and no normalized rates", b)
	}
}

// show --worker-type l4 --worker-type l4 printed the l4 column twice.
func TestTableShowRepeatedWorkerType(t *testing.T) {
	out, _, err := runTableCmd([]string{"show", "--worker-type", "v100,k80", "--worker-type", "v100", "--json"}, nil)
	var got struct {
		Workers []string `json:"worker_types"`
	}
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || !slices.Equal(got.Workers, []string{"v100", "k80"}) {
		t.Errorf("show --worker-type v100,k80 --worker-type v100: %v, worker types %q", err, got.Workers)
	}
}

// A rate too small for three decimals is printed with significant digits: as 0.000 it read as
// 0, a job that cannot run there (which still prints 0.000).
func TestTableShowSmallRates(t *testing.T) {
	in := []byte(`{"l4": {"('slow', 1)": {"null": 0.00012}, "('oom', 1)": {"null": 0}, "('fast', 1)": {"null": 12.5}}}`)
	out, _, err := runTableCmd([]string{"show", "--table", "-"}, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0.00012 ", "0.000 ", "12.500 "} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}
