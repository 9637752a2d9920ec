package jsonfile

import (
	"reflect"
	"strings"
	"testing"
)

type sample struct {
	Name  string            `json:"name"`
	Count int               `json:"count"`
	Tags  []string          `json:"tags"`
	Env   map[string]string `json:"env"`
	On    bool              `json:"on"`
	Items []*item           `json:"items"`
	inner
}

type item struct {
	ID   string         `json:"id"`
	Meta map[string]any `json:"meta"`
}

type inner struct {
	Deep int `json:"deep"`
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"name": "a", "count": 2}`, ""},
		{"", "f: the file is empty"},
		{"{\n  \"name\": \"a\",", "f:2:15: invalid JSON: unexpected end of file"},
		{"{\n  \"name\": \"a\",, }", "f:2:15: invalid JSON: invalid character ','"},
		{`{"count": 1.5}`, "f:1:13: count: want a whole number, got number 1.5"},
		{`{"tags": "x"}`, "f:1:12: tags: want an array of strings, got a string"},
		{`{"env": []}`, "f:1:9: env: want an object of strings, got an array"},
		{`[1]`, "f:1:1: the file: want an object, got an array"},
		{`{"nme": "a"}`, `f:1:2: unknown field "nme"`},
		// The key refused is found by the types: keys of maps and fields matched regardless of
		// case or promoted from an embedded struct are not it.
		{"{\"env\": {\"id\": \"x\"}, \"NAME\": \"a\", \"deep\": 1,\n \"items\": [{\"id\": \"a\", \"meta\": {\"x\": {\"q\": 1}}},\n  {\"id\": \"b\",\t\"i\\u0064s\": 2}]}",
			`f:3:15: unknown field "ids"`},
		{"{}\n{}", "f:2:1: invalid JSON: unexpected text after the JSON value"},
	} {
		var v sample
		err := Decode([]byte(tc.in), &v)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.in, err)
			}
			continue
		}
		got := ""
		if err != nil {
			got = err.(*Error).In("f", []byte(tc.in)).Error()
		}
		if got != tc.want && !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// optionalInner embeds with a tag that has options but no name: encoding/json still promotes
// inner's fields, so "deep" is known and "zzz" (column 22) is the key refused.
type optionalInner struct {
	Name  string `json:"name"`
	inner `json:",omitempty"`
}

// badTag's tag name is one encoding/json rejects (a quote), so it reads the field as "X" and
// refuses "x'y"; the walk takes the tag at its word and would blame "X". A key other than the
// one encoding/json names is no position to give.
type badTag struct {
	X int `json:"x'y"`
}

func TestDecodeUnknownFieldPosition(t *testing.T) {
	for _, tc := range []struct {
		in   string
		v    any
		want string
	}{
		{`{"name":"a","deep":1,"zzz":2}`, &optionalInner{}, `f:1:22: unknown field "zzz"`},
		{`{"X":1,"x'y":2}`, &badTag{}, `f: unknown field "x'y"`},
	} {
		err := Decode([]byte(tc.in), tc.v)
		got := ""
		if err != nil {
			got = err.(*Error).In("f", []byte(tc.in)).Error()
		}
		if got != tc.want {
			t.Errorf("%q into %T: %q, want %q", tc.in, tc.v, got, tc.want)
		}
	}
}

func TestKind(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"", "a string"}, {0, "a whole number"}, {0.5, "a number"}, {true, "true or false"},
		{[]string{}, "an array of strings"}, {[][]int{}, "an array of arrays of whole numbers"},
		{map[string]bool{}, "an object of true or false values"}, {sample{}, "an object"},
		{[]sample{}, "an array of objects"},
	} {
		if got := Kind(reflect.TypeOf(tc.v)); got != tc.want {
			t.Errorf("Kind(%T) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
