package table

import (
	"bytes"
	"encoding/json"
	"slices"
)

// maxDepth is encoding/json's limit on nesting, which the scanner keeps so that it accepts
// exactly the files the decoder does.
const maxDepth = 10000

// A scanner walks a JSON document once, checking its syntax as encoding/json does and handing
// the members of objects to its caller, with repeated keys kept (decoding into a map would
// merge them silently). On any syntax error it stops; the caller then asks encoding/json
// for its message and offset, so the scanner need only say whether the input is valid.
//
// NaN, Infinity and -Infinity, which Python's json module writes, are read wherever JSON
// allows a string, as the strings maskNonFinite turns them into: data is then a copy with
// the mask applied, so that values and messages hold the same bytes they always did.
type scanner struct {
	data   []byte
	pos    int
	depth  int
	copied bool              // data is a masked copy of the input
	names  map[string]string // keys read so far, so that each distinct key is allocated once
}

// space skips the whitespace JSON allows.
func (s *scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// end reports whether only whitespace is left.
func (s *scanner) end() bool {
	s.space()
	return s.pos == len(s.data)
}

// object reads the object at s.pos, calling each with every key (decoded), the offset of the
// key's first byte, and the scanner at the member's value, which each must read. It reports
// false on a syntax error, its own or one each found.
func (s *scanner) object(each func(key string, at int) bool) bool {
	return s.list('}', func() bool {
		at := s.pos
		key, ok := s.key()
		if !ok {
			return false
		}
		s.space()
		if s.peek() != ':' {
			return false
		}
		s.pos++
		s.space()
		return each(key, at)
	})
}

// list reads the object or array at s.pos, which ends at the byte end, calling elem at each
// member or element, which must read it.
func (s *scanner) list(end byte, elem func() bool) bool {
	if !s.push() {
		return false
	}
	s.pos++ // '{' or '['
	s.space()
	if s.peek() == end {
		s.pos++
		s.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		s.space()
		switch s.peek() {
		case ',':
			s.pos++
			s.space()
		case end:
			s.pos++
			s.depth--
			return true
		default:
			return false
		}
	}
}

func (s *scanner) push() bool {
	s.depth++
	return s.depth <= maxDepth
}

// value reads any JSON value and returns its bytes.
func (s *scanner) value() ([]byte, bool) {
	start := s.pos
	ok := s.skip()
	return s.data[start:s.pos], ok
}

func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func(string, int) bool { return s.skip() })
	case c == '[':
		return s.list(']', s.skip)
	case c == '"':
		_, ok := s.str()
		return ok
	case s.nonFinite():
		return true
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(lit)) {
		return false
	}
	s.pos += len(lit)
	return true
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, the grammar isJSONNumber checks.
func (s *scanner) number() bool {
	start := s.pos
	if s.peek() == '-' {
		s.pos++
	}
	switch c := s.peek(); {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.peek() == '.' {
		s.pos++
		if !s.digits() {
			return false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.pos++
		if c := s.peek(); c == '+' || c == '-' {
			s.pos++
		}
		if !s.digits() {
			return false
		}
	}
	return s.pos > start
}

// digits skips a run of digits and reports whether there was one.
func (s *scanner) digits() bool {
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos > start
}

// str reads the string at s.pos (its opening quote) and reports whether its bytes between
// the quotes are their own decoding: printable ASCII without escapes.
func (s *scanner) str() (plain, ok bool) {
	plain = true
	for s.pos++; s.pos < len(s.data); s.pos++ {
		switch c := s.data[s.pos]; {
		case c == '"':
			s.pos++
			return plain, true
		case c == '\\':
			plain = false
			if !s.escape() {
				return false, false
			}
		case c < 0x20:
			return false, false
		case c >= 0x80:
			plain = false // decoding checks the UTF-8
		}
	}
	return false, false
}

// escape checks the escape sequence at s.pos (its backslash), leaving s.pos on its last byte.
func (s *scanner) escape() bool {
	s.pos++
	switch s.peek() {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		for range 4 {
			s.pos++
			if !isHex(s.peek()) {
				return false
			}
		}
		return true
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// key reads an object key and returns it decoded as encoding/json decodes it.
func (s *scanner) key() (string, bool) {
	start := s.pos
	if s.peek() != '"' && !s.nonFinite() {
		return "", false
	}
	if s.pos > start { // a masked literal
		return s.name(s.data[start:s.pos])
	}
	plain, ok := s.str()
	if !ok {
		return "", false
	}
	if plain {
		return s.name(s.data[start:s.pos])
	}
	var key string
	err := json.Unmarshal(s.data[start:s.pos], &key) // escapes and UTF-8, rarely
	return key, err == nil
}

// name returns the key of the quoted plain string q, allocated once per distinct key: a table
// of n job types repeats each key about 4n times.
func (s *scanner) name(q []byte) (string, bool) {
	if k, ok := s.names[string(q[1:len(q)-1])]; ok {
		return k, true
	}
	if s.names == nil {
		s.names = map[string]string{}
	}
	k := string(q[1 : len(q)-1])
	s.names[k] = k
	return k, true
}

// nonFinite reads NaN, Infinity or -Infinity at s.pos, masking it as maskNonFinite does.
func (s *scanner) nonFinite() bool {
	c := s.peek()
	if c != 'N' && c != 'I' && c != '-' {
		return false
	}
	for lit, repl := range nonFinite {
		if bytes.HasPrefix(s.data[s.pos:], []byte(lit)) {
			if !s.copied {
				s.data, s.copied = slices.Clone(s.data), true
			}
			s.pos += copy(s.data[s.pos:], repl)
			return true
		}
	}
	return false
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
