package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzDecode checks that Decode never panics, that it accepts what encoding/json reads strictly
// (one value, no unknown field), that an error's offset lies within the data, and that an
// unknown field placed in the file is placed at the opening quote of that key.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"name": "a", "count": 2}`, `{"nme": "a"}`, `{"items": [{"id": "x", "meta": {"k": 1}}, {"idd": 1}]}`,
		`{"deep": 1, "Deep": 2, "DEEP": 3}`, `{"env": {"a": "b"}, "x": 1}`, "{\"n\\u0061me\": 1}", `{"count": 1.5}`,
		`{"tags": ["a"]} {}`, `[1]`, "", "{\n  \"name\": \"a\",",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v sample
		err := Decode(data, &v)
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var w sample
		strictErr := dec.Decode(&w)
		if strictErr == nil {
			if _, terr := dec.Token(); terr != nil && !errors.Is(terr, io.EOF) {
				strictErr = terr
			} else if terr == nil {
				strictErr = errors.New("more after the value")
			}
		}
		if (err == nil) != (strictErr == nil) {
			t.Fatalf("Decode: %v; encoding/json: %v", err, strictErr)
		}
		if err == nil {
			return
		}
		e, ok := err.(*Error)
		if !ok {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if e.Offset < -1 || e.Offset > int64(len(data)) {
			t.Fatalf("offset %d of %d bytes: %v", e.Offset, len(data), err)
		}
		if e.UnknownField != "" && e.Offset >= 0 {
			dec := json.NewDecoder(bytes.NewReader(data[e.Offset:]))
			tok, terr := dec.Token()
			if key, ok := tok.(string); terr != nil || !ok || key != e.UnknownField {
				t.Fatalf("unknown field %q placed at %d, where %q starts (%v)", e.UnknownField, e.Offset, data[e.Offset:], terr)
			}
		}
		_ = e.In("f", data)
		_, _ = Position(data, e.Offset)
	})
}
