package table

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// A member is one key and value of a JSON object, in file order; at and valueAt are the byte
// offsets of the key and of the value in the whole file, for line numbers.
type member struct {
	key     string
	value   json.RawMessage
	at      int64
	valueAt int64
}

// members splits the JSON object data (which starts at byte base of the file) into its
// members, keeping repeated keys, which decoding into a map would silently merge. A value
// that is not an object is an error saying what it is.
func members(data []byte, base int64) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("found %s", kindOf(data))
	}
	var out []member
	for dec.More() {
		at := base + dec.InputOffset()
		for at < base+int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n,"), data[at-base]) >= 0 {
			at++
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // an object key is always a string
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		// The value ends at the decoder's offset; RawMessage holds it without surrounding space.
		out = append(out, member{key: key, value: v, at: at, valueAt: base + dec.InputOffset() - int64(len(v))})
	}
	return out, nil
}

// kindOf names the kind of a JSON value, for errors.
func kindOf(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "a list " + clipJSON(v)
	case '"':
		return "a string " + clipJSON(v)
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number " + clipJSON(v)
}

func clipJSON(v []byte) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}
