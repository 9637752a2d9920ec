package jsonfile

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// unknownFieldOffset finds the key that DisallowUnknownFields refused, which encoding/json
// reports without a position: the first object key, in document order, that names no field of
// the struct its object is read into. It returns the offset of the key's opening quote, or −1.
// The walk only imitates encoding/json's field rules (it takes an invalid tag name at its word,
// for one), so a key other than name, the one encoding/json refused, gives −1: no position is
// better than one that points at a field that is fine.
func unknownFieldOffset(data []byte, v any, name string) int64 {
	dec := json.NewDecoder(bytes.NewReader(data))
	off, key, _ := walkValue(dec, data, reflect.TypeOf(v))
	if off < 0 || key != name {
		return -1
	}
	return off
}

// walkValue reads one value from dec, meant for type t (nil: anything goes), and returns the
// offset of the first unknown key in it, or −1, with the (unescaped) key.
func walkValue(dec *json.Decoder, data []byte, t reflect.Type) (int64, string, error) {
	t = structural(t)
	tok, err := dec.Token()
	if err != nil {
		return -1, "", err
	}
	switch tok {
	case json.Delim('['):
		return walkArray(dec, data, t)
	case json.Delim('{'):
		return walkObject(dec, data, t)
	}
	return -1, "", nil
}

// structural is t without pointers, or nil when the JSON inside a value of t is not checked
// field by field: a type that reads its own JSON, an interface.
func structural(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	unmarshaler := reflect.TypeFor[json.Unmarshaler]()
	if t == nil || t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) || t.Kind() == reflect.Interface {
		return nil
	}
	return t
}

func walkArray(dec *json.Decoder, data []byte, t reflect.Type) (int64, string, error) {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for dec.More() {
		if off, key, err := walkValue(dec, data, elem); off >= 0 || err != nil {
			return off, key, err
		}
	}
	_, err := dec.Token() // ]
	return -1, "", err
}

func walkObject(dec *json.Decoder, data []byte, t reflect.Type) (int64, string, error) {
	for dec.More() {
		// InputOffset is past the previous token; the key's quote follows a comma and spaces.
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return -1, "", err
		}
		key, _ := tok.(string)
		ft, ok := fieldType(t, key)
		if !ok {
			rest := data[before:]
			return before + int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n,"))), key, nil
		}
		if off, inner, err := walkValue(dec, data, ft); off >= 0 || err != nil {
			return off, inner, err
		}
	}
	_, err := dec.Token() // }
	return -1, "", err
}

// fieldType is the type of the value under key in an object read into t, and false when t is a
// struct without such a field. Like encoding/json it takes an exact match of the JSON name
// first, then one that differs in case only.
func fieldType(t reflect.Type, key string) (reflect.Type, bool) {
	switch {
	case t == nil:
		return nil, true
	case t.Kind() == reflect.Map:
		return t.Elem(), true
	case t.Kind() != reflect.Struct:
		return nil, true
	}
	var folded reflect.Type
	for _, f := range jsonFields(t) {
		name := jsonName(f)
		if name == key {
			return f.Type, true
		}
		if folded == nil && strings.EqualFold(name, key) {
			folded = f.Type
		}
	}
	return folded, folded != nil
}

// jsonFields lists the fields of struct t that encoding/json reads, with the fields of embedded
// structs without a JSON name promoted. A tag with options only (`json:",omitempty"`) names
// nothing, so its struct's fields are promoted too, as encoding/json does. Which of two equal
// names wins does not matter here.
func jsonFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if et := structural(f.Type); f.Anonymous && name == "" && et != nil && et.Kind() == reflect.Struct {
			out = append(out, jsonFields(et)...)
		} else if f.IsExported() {
			out = append(out, f)
		}
	}
	return out
}

// jsonName is the name of field f in JSON.
func jsonName(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" {
		return name
	}
	return f.Name
}
