package table

import (
	"bytes"
	"os"
	"path/filepath"
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
