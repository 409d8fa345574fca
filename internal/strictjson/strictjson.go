// Package strictjson parses JSON the way every Rukh boundary must: valid
// UTF-8 only, no duplicate object keys, no trailing data, and hard limits
// on size, nesting depth and the number of members, each failure reported
// with a stable code and the JSON pointer where it happened.
//
// The result is a small tree that keeps number literals exactly as written
// and object members in document order, so callers decide how a number is
// typed instead of inheriting a float64 round trip.
package strictjson

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is the JSON type of a Value.
type Kind uint8

// The JSON types.
const (
	Null Kind = iota + 1
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "invalid"
}

// Value is one parsed JSON value.
type Value struct {
	Kind    Kind
	Bool    bool     // for Bool
	Text    string   // for String: the decoded text; for Number: the literal as written
	Items   []*Value // for Array
	Members []Member // for Object, in document order, names unique
	// Start and End are the byte offsets of the value in the parsed input,
	// so a caller can measure or quote the exact text it came from.
	Start, End int
}

// Member is one name/value pair of an object.
type Member struct {
	Name  string
	Value *Value
}

// Get returns the member called name, or nil when v is not an object or
// has no such member.
func (v *Value) Get(name string) *Value {
	if v == nil || v.Kind != Object {
		return nil
	}
	for _, m := range v.Members {
		if m.Name == name {
			return m.Value
		}
	}
	return nil
}

// Limits bounds what Parse accepts. Every field must be positive.
type Limits struct {
	MaxBytes   int // the whole input, in bytes
	MaxDepth   int // nested arrays and objects; a top-level container is depth 1
	MaxMembers int // object members plus array elements, summed over the document
}

// Code is a stable, documented error code.
type Code string

// Error codes returned by Parse.
const (
	CodeSyntax         Code = "json_syntax"
	CodeInvalidUTF8    Code = "json_invalid_utf8"
	CodeInvalidUnicode Code = "json_invalid_unicode"
	CodeDuplicateKey   Code = "json_duplicate_key"
	CodeTrailingData   Code = "json_trailing_data"
	CodeTooLarge       Code = "json_too_large"
	CodeTooDeep        Code = "json_too_deep"
	CodeTooManyMembers Code = "json_too_many_members"
)

// Error is a parse failure: what went wrong, where in the document (a JSON
// pointer, RFC 6901) and at which byte offset, and the line and column of
// that offset for a person to find it in a file.
type Error struct {
	Code    Code
	Pointer string
	Offset  int
	// Line and Column are 1-based; the column counts characters (not
	// bytes) from the start of the line. Both are 0 for a document too
	// large to read.
	Line, Column int
	Message      string
}

func (e *Error) Error() string {
	where := e.Pointer
	if where == "" {
		where = "document root"
	}
	return fmt.Sprintf("%s at %s (byte %d): %s", e.Code, where, e.Offset, e.Message)
}

// Parse parses data as exactly one JSON value within lim.
func Parse(data []byte, lim Limits) (*Value, error) {
	if lim.MaxBytes <= 0 || lim.MaxDepth <= 0 || lim.MaxMembers <= 0 {
		panic("strictjson: every limit must be positive")
	}
	if len(data) > lim.MaxBytes {
		return nil, &Error{Code: CodeTooLarge, Offset: lim.MaxBytes,
			Message: fmt.Sprintf("document is %d bytes; the limit is %d", len(data), lim.MaxBytes)}
	}
	if !utf8.Valid(data) {
		off := firstInvalidUTF8(data)
		line, col := Position(data, off)
		return nil, &Error{Code: CodeInvalidUTF8, Offset: off, Line: line, Column: col, Message: "document is not valid UTF-8"}
	}
	p := &parser{data: data, lim: lim}
	p.skipSpace()
	v, err := p.value(nil, 0)
	if err == nil {
		p.skipSpace()
		if p.pos != len(data) {
			err = &Error{Code: CodeTrailingData, Offset: p.pos, Message: "unexpected data after the JSON value"}
		}
	}
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Line, e.Column = Position(data, e.Offset)
		}
		return nil, err
	}
	return v, nil
}

// Position is the 1-based line and column (in characters) of byte offset
// off in data, as an editor shows them.
func Position(data []byte, off int) (line, column int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	if i := bytes.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	return line, 1 + utf8.RuneCount(before)
}

// unexpected says what was found at the parser's position.
func (p *parser) unexpected() string {
	if p.pos >= len(p.data) {
		return "unexpected end of input"
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return fmt.Sprintf("unexpected character %q", r)
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// path is the location of the value being parsed, kept as a chain of
// tokens so that the JSON pointer is only built when an error needs it.
type path struct {
	parent *path
	name   string // member name, or "" when index is used
	index  int    // array index, or -1
}

func (p *path) pointer() string {
	if p == nil {
		return ""
	}
	tok := p.name
	if p.index >= 0 {
		tok = strconv.Itoa(p.index)
	}
	return AppendPointer(p.parent.pointer(), tok)
}

type parser struct {
	data    []byte
	pos     int
	lim     Limits
	members int
}

func (p *parser) errorf(code Code, at *path, format string, args ...any) *Error {
	return &Error{Code: code, Pointer: at.pointer(), Offset: p.pos, Message: fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(at *path, depth int) (*Value, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf(CodeSyntax, at, "unexpected end of input; expected a value")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(at, depth+1)
	case c == '[':
		return p.array(at, depth+1)
	case c == '"':
		s, err := p.str(at)
		if err != nil {
			return nil, err
		}
		return &Value{Kind: String, Text: s, Start: start, End: p.pos}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err := p.number(at)
		if err != nil {
			return nil, err
		}
		return &Value{Kind: Number, Text: lit, Start: start, End: p.pos}, nil
	case p.literal("true"):
		return &Value{Kind: Bool, Bool: true, Start: start, End: p.pos}, nil
	case p.literal("false"):
		return &Value{Kind: Bool, Start: start, End: p.pos}, nil
	case p.literal("null"):
		return &Value{Kind: Null, Start: start, End: p.pos}, nil
	default:
		return nil, p.errorf(CodeSyntax, at, "unexpected character %q; expected a value", rune(c))
	}
}

func (p *parser) literal(word string) bool {
	if strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(word))]), word) {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *parser) enter(at *path, depth int) error {
	if depth > p.lim.MaxDepth {
		return p.errorf(CodeTooDeep, at, "nesting is deeper than %d", p.lim.MaxDepth)
	}
	return nil
}

func (p *parser) count(at *path) error {
	p.members++
	if p.members > p.lim.MaxMembers {
		return p.errorf(CodeTooManyMembers, at, "document has more than %d members and elements", p.lim.MaxMembers)
	}
	return nil
}

func (p *parser) object(at *path, depth int) (*Value, error) {
	if err := p.enter(at, depth); err != nil {
		return nil, err
	}
	v := &Value{Kind: Object, Start: p.pos}
	p.pos++ // '{'
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		v.End = p.pos
		return v, nil
	}
	seen := make(map[string]bool)
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf(CodeSyntax, at, "%s; expected a member name in double quotes", p.unexpected())
		}
		keyAt := p.pos
		name, err := p.str(at)
		if err != nil {
			return nil, err
		}
		child := &path{parent: at, name: name, index: -1}
		if seen[name] {
			return nil, &Error{Code: CodeDuplicateKey, Pointer: child.pointer(), Offset: keyAt,
				Message: fmt.Sprintf("member %q appears more than once", name)}
		}
		seen[name] = true
		if err := p.count(child); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf(CodeSyntax, child, "%s; expected ':' after the member name", p.unexpected())
		}
		p.pos++
		p.skipSpace()
		mv, err := p.value(child, depth)
		if err != nil {
			return nil, err
		}
		v.Members = append(v.Members, Member{Name: name, Value: mv})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf(CodeSyntax, at, "unexpected end of input in object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			v.End = p.pos
			return v, nil
		default:
			return nil, p.errorf(CodeSyntax, at, "%s; expected ',' or '}' in object", p.unexpected())
		}
	}
}

func (p *parser) array(at *path, depth int) (*Value, error) {
	if err := p.enter(at, depth); err != nil {
		return nil, err
	}
	v := &Value{Kind: Array, Start: p.pos}
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		v.End = p.pos
		return v, nil
	}
	for {
		p.skipSpace()
		child := &path{parent: at, index: len(v.Items)}
		if err := p.count(child); err != nil {
			return nil, err
		}
		item, err := p.value(child, depth)
		if err != nil {
			return nil, err
		}
		v.Items = append(v.Items, item)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf(CodeSyntax, at, "unexpected end of input in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			v.End = p.pos
			return v, nil
		default:
			return nil, p.errorf(CodeSyntax, at, "%s; expected ',' or ']' in array", p.unexpected())
		}
	}
}

// number scans a number literal by the JSON grammar and returns it as written.
func (p *parser) number(at *path) (string, error) {
	start := p.pos
	d := p.data
	if d[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(d) && d[p.pos] == '0':
		p.pos++
	case p.pos < len(d) && d[p.pos] >= '1' && d[p.pos] <= '9':
		p.digits()
	default:
		return "", p.errorf(CodeSyntax, at, "invalid number: expected a digit")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return "", p.errorf(CodeSyntax, at, "invalid number: expected a digit after '.'")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return "", p.errorf(CodeSyntax, at, "invalid number: expected a digit in the exponent")
		}
	}
	return string(d[start:p.pos]), nil
}

func (p *parser) digits() int {
	n := 0
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}

// str scans a string starting at the opening quote and returns its text.
func (p *parser) str(at *path) (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	var b strings.Builder
	b.Write(p.data[start:p.pos])
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.errorf(CodeSyntax, at, "control character %U in string must be escaped", rune(c))
		case c == '\\':
			if err := p.escape(at, &b); err != nil {
				return "", err
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.errorf(CodeSyntax, at, "unterminated string")
}

func (p *parser) escape(at *path, b *strings.Builder) error {
	p.pos++ // backslash
	if p.pos >= len(p.data) {
		return p.errorf(CodeSyntax, at, "unterminated escape")
	}
	c := p.data[p.pos]
	p.pos++
	switch c {
	case '"', '\\', '/':
		b.WriteByte(c)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r, err := p.hex4(at)
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(r) {
			if r >= 0xDC00 || !p.hasPrefix(`\u`) {
				return p.errorf(CodeInvalidUnicode, at, "unpaired UTF-16 surrogate \\u%04X", r)
			}
			p.pos += 2
			r2, err := p.hex4(at)
			if err != nil {
				return err
			}
			r = utf16.DecodeRune(r, r2)
			if r == utf8.RuneError {
				return p.errorf(CodeInvalidUnicode, at, "invalid UTF-16 surrogate pair")
			}
		}
		b.WriteRune(r)
	default:
		return p.errorf(CodeSyntax, at, "invalid escape \\%c", c)
	}
	return nil
}

func (p *parser) hasPrefix(s string) bool {
	return strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(s))]), s)
}

func (p *parser) hex4(at *path) (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.errorf(CodeSyntax, at, "truncated \\u escape")
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, p.errorf(CodeSyntax, at, "invalid \\u escape")
	}
	p.pos += 4
	return rune(n), nil
}

// AppendPointer returns the JSON pointer ptr extended by one reference
// token, escaped as RFC 6901 requires.
func AppendPointer(ptr, token string) string {
	token = strings.ReplaceAll(token, "~", "~0")
	token = strings.ReplaceAll(token, "/", "~1")
	return ptr + "/" + token
}

// Pointer builds a JSON pointer from reference tokens.
func Pointer(tokens ...string) string {
	ptr := ""
	for _, t := range tokens {
		ptr = AppendPointer(ptr, t)
	}
	return ptr
}
