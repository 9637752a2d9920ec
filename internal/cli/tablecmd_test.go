package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if err := TableConvert(streams, "-", "csv", csvPath); err != nil {
		t.Fatal(err)
	}
	if err := TableConvert(streams, csvPath, "json", jsonPath); err != nil {
		t.Fatal(err)
	}
	back, err := table.Load(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(table.Default()) {
		t.Error("default -> csv -> json changed the table")
	}
	if err := TableConvert(streams, "-", "xml", ""); ExitCode(err) != 2 {
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
	err = TableConvert(streams, bad, "json", "")
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
