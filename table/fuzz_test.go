package table

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRead checks that Check never panics, that it reads every input as the reader before
// the single pass did (oldCheck), and that whatever Read accepts survives a write and a
// second read unchanged.
func FuzzRead(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"v100": {"('A', 1)": {"null": 1, "('B', 1)": [0.5, 0.25]}, "('B', 1)": {"null": NaN, "('A', 1)": [0.25, 0.5]}}}`))
	f.Add([]byte(`{"k80": {"('A', 2)": {"null": -Infinity, "('A', 1)": [1, 2]}}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte("{\"w\": {\"('A', 1)\": {\"null\": 1, \"('A', 1)\": [1, 1], \"n\\u0075ll\": 2}}, \"\\u0077\": 1e999}"))
	f.Add([]byte(`{"x": {"('A', 1)": {"null": "1"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsOld(t, data)
		tb, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := tb.Write(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := Read(&buf)
		if err != nil {
			t.Fatalf("re-reading written table: %v\n%s", err, buf.String())
		}
		if !back.Equal(tb) {
			t.Fatalf("round trip changed the table:\n%s", buf.String())
		}
	})
}

// FuzzReadCSV checks that CheckAny never panics on CSV, that ReadCSVFile's errors name the
// file, and that whatever it accepts survives WriteCSV and a second read unchanged, and the
// JSON format too.
func FuzzReadCSV(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, s := range seeds {
		tb, err := Load(s)
		if err != nil {
			f.Fatal(err)
		}
		var buf bytes.Buffer
		if err := tb.WriteCSV(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	h := "worker_type,model,scale_factor,partner_model,partner_scale_factor,state,rate,partner_rate,isolated_rate,partner_isolated_rate,normalized,partner_normalized\n"
	f.Add([]byte(h + "v100,A,1,,,measured,1.5,,1.5,,,\nv100,A,1,A,1,,0.5,0.5,,,,\n"))
	f.Add([]byte(h + "v100,A,1,B,1,infeasible,0,0,,,,\nv100,B,1,A,1,infeasible,0,0,,,,\nv100,A,1,,,,1,,,,,\nv100,B,1,,,,2,,,,,\n"))
	f.Add([]byte(h + "v100,\"A, (b)\",2,,,measured,NaN,,,,,\n"))
	f.Add([]byte("\ufeff" + h + "k80,A,01,,,measured,1e999,,,,,\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		CheckAny(bytes.NewReader(data), "t.csv")
		tb, err := ReadCSVFile(bytes.NewReader(data), "t.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "table t.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := tb.WriteCSV(&buf); err != nil {
			t.Fatalf("writing an accepted table: %v", err)
		}
		back, err := ReadCSV(&buf)
		if err != nil {
			t.Fatalf("re-reading written CSV: %v\n%s", err, buf.String())
		}
		if !back.Equal(tb) {
			t.Fatalf("CSV round trip changed the table:\n%s", buf.String())
		}
		buf.Reset()
		if err := tb.Write(&buf); err != nil {
			t.Fatalf("writing an accepted table as JSON: %v", err)
		}
		if back, err = Read(&buf); err != nil || !back.Equal(tb) {
			t.Fatalf("JSON round trip changed the table (%v):\n%s", err, buf.String())
		}
	})
}
