package jsonfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// Error is a problem with a file's JSON.
type Error struct {
	// Offset is the byte offset the problem is at, −1 when unknown.
	Offset int64
	// Msg says what is wrong, without the position.
	Msg string
	// Type is set when a value has the wrong kind, so that a caller can describe the shape it
	// wants in its own terms.
	Type *json.UnmarshalTypeError
	// UnknownField is the key refused when the file has a field v does not: a caller may add
	// what the file should hold.
	UnknownField string
}

func (e *Error) Error() string { return e.Msg }

// In is e placed in file: "file:line:col: msg", or "file: msg" when the offset is unknown.
func (e *Error) In(file string, data []byte) error {
	if e.Offset < 0 {
		return fmt.Errorf("%s: %s", file, e.Msg)
	}
	line, col := Position(data, e.Offset)
	return fmt.Errorf("%s:%d:%d: %s", file, line, col, e.Msg)
}

// Decode reads exactly one JSON value of data into v. Unknown fields and anything after the
// value are errors: a misspelt option or two files pasted together must not be half read. The
// error is an *Error, with the position of the problem where it can be found.
func Decode(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &Error{Offset: -1, Msg: "the file is empty"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &Error{Offset: int64(len(data)), Msg: "invalid JSON: unexpected end of file (truncated? a bracket, brace or quote is not closed)"}
	case errors.As(err, &syn):
		return &Error{Offset: syn.Offset - 1, Msg: "invalid JSON: " + syn.Error()} // Offset counts the offending byte
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the file"
		}
		// Offset is just past the value, or past its first byte for an object or array.
		return &Error{Offset: typ.Offset - 1, Type: typ, Msg: fmt.Sprintf("%s: want %s, got %s", field, Kind(typ.Type), Got(typ.Value))}
	default:
		return otherError(err, data, v)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		rest := data[end:]
		return &Error{Offset: end + int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n"))), Msg: "invalid JSON: unexpected text after the JSON value"}
	}
	return nil
}

// otherError wraps an error of encoding/json without a position of its own. The unknown field
// one is placed at its key, so that a refused key among many entries can be found.
func otherError(err error, data []byte, v any) *Error {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	quoted, ok := strings.CutPrefix(msg, "unknown field ")
	if !ok {
		return &Error{Offset: -1, Msg: msg}
	}
	name, uerr := strconv.Unquote(quoted)
	if uerr != nil {
		name = quoted
	}
	return &Error{Offset: unknownFieldOffset(data, v, name), Msg: msg, UnknownField: name}
}

// Position is the 1-based line and column of byte offset off of data.
func Position(data []byte, off int64) (line, col int) {
	before := data[:min(max(off, 0), int64(len(data)))]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// Kind names the JSON a value of Go type t is read from: "a string", "a whole number", "an
// array of strings", ...
func Kind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array of " + plural(Kind(t.Elem()))
	case reflect.Map:
		return "an object of " + plural(Kind(t.Elem()))
	case reflect.Pointer:
		return Kind(t.Elem())
	case reflect.Interface:
		return "a value"
	}
	return "an object"
}

// plural turns "a whole number" into "whole numbers", "true or false" into "true or false
// values".
func plural(k string) string {
	switch k {
	case "true or false":
		return "true or false values"
	case "a value":
		return "values"
	}
	k = strings.TrimPrefix(strings.TrimPrefix(k, "a "), "an ")
	if strings.HasPrefix(k, "array") || strings.HasPrefix(k, "object of") {
		head, tail, _ := strings.Cut(k, " ")
		return head + "s " + tail
	}
	return k + "s"
}

// Got names the value json.UnmarshalTypeError reports ("string", "number 1.5"): "a string",
// "number 1.5".
func Got(v string) string {
	switch kind, _, _ := strings.Cut(v, " "); kind {
	case "array":
		return "an array"
	case "object":
		return "an object"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return v
}
