// Package jsoncanon writes the RFC 8785 canonical form of JSON (the JSON
// Canonicalization Scheme): the bytes Rukh hashes and signs. It gives the
// same bytes as github.com/gowebpki/jcs, which its tests compare it with
// on every input they make, in one pass without building a tree. It is
// Rukh's own because jcs compiles a regular expression when a program
// starts, 70 µs of every start of a core binary, even one that never
// canonicalizes (docs/adr/0022-own-json-canonicalization.md).
package jsoncanon

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting a document may have.
const MaxDepth = 128

var errSyntax = errors.New("not a JSON document")

// Transform returns the canonical form of the JSON document doc.
func Transform(doc []byte) ([]byte, error) { return Append(nil, doc) }

// Append appends the canonical form of the JSON document doc to b. On an
// error it returns b as it was.
func Append(b, doc []byte) ([]byte, error) {
	var c Canonicalizer
	return c.Append(b, doc)
}

// A Canonicalizer is Append with scratch space kept from one document to
// the next. Its zero value is ready; it is not safe for concurrent use.
type Canonicalizer struct {
	in      []byte
	i       int
	out     []byte
	members []member // a stack: each object uses the part above its mark
	tmp     []byte   // scratch for reordering members
}

// Append is the package's Append, reusing c's scratch space.
func (c *Canonicalizer) Append(b, doc []byte) ([]byte, error) {
	if !utf8.Valid(doc) {
		return b, errors.New("the document is not UTF-8")
	}
	c.in, c.i, c.out = doc, 0, b
	defer func() { c.in, c.out = nil, nil }()
	if err := c.value(0); err != nil {
		return b, err
	}
	c.space()
	if c.i != len(c.in) {
		return b, errSyntax
	}
	return c.out, nil
}

type member struct {
	name       []byte // decoded; aliases the input when it has no escapes
	start, end int    // the member's canonical text in out
}

func (c *Canonicalizer) space() {
	for c.i < len(c.in) {
		switch c.in[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *Canonicalizer) value(depth int) error {
	c.space()
	if c.i >= len(c.in) {
		return errSyntax
	}
	switch ch := c.in[c.i]; {
	case ch == '{':
		return c.object(depth + 1)
	case ch == '[':
		return c.array(depth + 1)
	case ch == '"':
		s, err := c.str()
		if err != nil {
			return err
		}
		c.out = AppendBytes(c.out, s)
		return nil
	case ch == '-' || ch >= '0' && ch <= '9':
		return c.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if len(c.in)-c.i >= len(lit) && string(c.in[c.i:c.i+len(lit)]) == lit {
			c.i += len(lit)
			c.out = append(c.out, lit...)
			return nil
		}
	}
	return errSyntax
}

func (c *Canonicalizer) array(depth int) error {
	if depth > MaxDepth {
		return errors.New("the document is nested too deeply")
	}
	c.i++ // [
	c.out = append(c.out, '[')
	c.space()
	if c.i < len(c.in) && c.in[c.i] == ']' {
		c.i++
		c.out = append(c.out, ']')
		return nil
	}
	for {
		if err := c.value(depth); err != nil {
			return err
		}
		c.space()
		if c.i >= len(c.in) {
			return errSyntax
		}
		switch c.in[c.i] {
		case ',':
			c.i++
			c.out = append(c.out, ',')
		case ']':
			c.i++
			c.out = append(c.out, ']')
			return nil
		default:
			return errSyntax
		}
	}
}

// object writes each member's canonical text to out as it reads it, then
// reorders the members by name if they were not in order.
func (c *Canonicalizer) object(depth int) error {
	if depth > MaxDepth {
		return errors.New("the document is nested too deeply")
	}
	c.i++ // {
	c.out = append(c.out, '{')
	base := len(c.out)
	c.space()
	if c.i < len(c.in) && c.in[c.i] == '}' {
		c.i++
		c.out = append(c.out, '}')
		return nil
	}
	mark := len(c.members)
	defer func() { c.members = c.members[:mark] }()
	for {
		c.space()
		if c.i >= len(c.in) || c.in[c.i] != '"' {
			return errSyntax
		}
		name, err := c.str()
		if err != nil {
			return err
		}
		c.space()
		if c.i >= len(c.in) || c.in[c.i] != ':' {
			return errSyntax
		}
		c.i++
		start := len(c.out)
		c.out = AppendBytes(c.out, name)
		c.out = append(c.out, ':')
		if err := c.value(depth); err != nil {
			return err
		}
		c.members = append(c.members, member{name: name, start: start, end: len(c.out)})
		c.space()
		if c.i >= len(c.in) {
			return errSyntax
		}
		if c.in[c.i] == '}' {
			c.i++
			break
		}
		if c.in[c.i] != ',' {
			return errSyntax
		}
		c.i++
		c.out = append(c.out, ',')
	}
	ms := c.members[mark:]
	cmpMember := func(x, y member) int { return compareUTF16(x.name, y.name) }
	if !slices.IsSortedFunc(ms, cmpMember) {
		c.tmp = append(c.tmp[:0], c.out[base:]...)
		slices.SortFunc(ms, cmpMember)
		c.out = c.out[:base]
		for k, m := range ms {
			if k > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, c.tmp[m.start-base:m.end-base]...)
		}
	}
	for k := 1; k < len(ms); k++ {
		if string(ms[k-1].name) == string(ms[k].name) {
			return fmt.Errorf("duplicate member %.32q", ms[k].name)
		}
	}
	c.out = append(c.out, '}')
	return nil
}

// str reads a string literal and returns its decoded text, which aliases
// the input when the literal has no escapes.
func (c *Canonicalizer) str() ([]byte, error) {
	c.i++ // "
	start := c.i
	for c.i < len(c.in) { // fast path: no escapes
		ch := c.in[c.i]
		if ch == '"' {
			c.i++
			return c.in[start : c.i-1 : c.i-1], nil
		}
		if ch == '\\' || ch < 0x20 {
			break
		}
		c.i++
	}
	name := append([]byte(nil), c.in[start:c.i]...)
	for c.i < len(c.in) {
		ch := c.in[c.i]
		switch {
		case ch == '"':
			c.i++
			return name, nil
		case ch < 0x20:
			return nil, errSyntax
		case ch != '\\':
			name = append(name, ch)
			c.i++
			continue
		}
		if c.i+1 >= len(c.in) {
			return nil, errSyntax
		}
		esc := c.in[c.i+1]
		c.i += 2
		switch esc {
		case '"', '\\', '/':
			name = append(name, esc)
		case 'b':
			name = append(name, '\b')
		case 'f':
			name = append(name, '\f')
		case 'n':
			name = append(name, '\n')
		case 'r':
			name = append(name, '\r')
		case 't':
			name = append(name, '\t')
		case 'u':
			r, ok := c.hex4()
			if !ok {
				return nil, errSyntax
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xdc00 || c.i+1 >= len(c.in) || c.in[c.i] != '\\' || c.in[c.i+1] != 'u' {
					return nil, errors.New("unpaired surrogate")
				}
				c.i += 2
				lo, ok := c.hex4()
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return nil, errors.New("unpaired surrogate")
				}
				r = utf16.DecodeRune(r, lo)
			}
			name = utf8.AppendRune(name, r)
		default:
			return nil, errSyntax
		}
	}
	return nil, errSyntax
}

func (c *Canonicalizer) hex4() (rune, bool) {
	if c.i+4 > len(c.in) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(c.in[c.i:c.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	c.i += 4
	return rune(v), true
}

// number reads a number literal (RFC 8259 grammar) and writes its RFC 8785
// form, the ECMAScript rendering of the IEEE 754 double it denotes. An
// integer literal of at most 15 digits is already in that form.
func (c *Canonicalizer) number() error {
	start := c.i
	if c.in[c.i] == '-' {
		c.i++
	}
	intStart := c.i
	if c.i < len(c.in) && c.in[c.i] == '0' {
		c.i++
	} else if n := c.digits(); n == 0 {
		return errSyntax
	}
	intLen := c.i - intStart
	simple := true
	if c.i < len(c.in) && c.in[c.i] == '.' {
		c.i++
		if c.digits() == 0 {
			return errSyntax
		}
		simple = false
	}
	if c.i < len(c.in) && (c.in[c.i] == 'e' || c.in[c.i] == 'E') {
		c.i++
		if c.i < len(c.in) && (c.in[c.i] == '+' || c.in[c.i] == '-') {
			c.i++
		}
		if c.digits() == 0 {
			return errSyntax
		}
		simple = false
	}
	lit := c.in[start:c.i]
	if simple && intLen <= 15 && string(lit) != "-0" {
		c.out = append(c.out, lit...)
		return nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return fmt.Errorf("number %.32q does not fit binary64", lit)
	}
	c.out = appendNumber(c.out, f)
	return nil
}

// appendNumber appends f as ECMAScript's Number.prototype.toString writes
// it (RFC 8785, section 3.2.2.3): the shortest digits that read back as f,
// in positional notation from 1e-6 up to 1e21 and in exponent notation
// outside, with an exponent of no leading zeros; zero is "0". f is finite:
// strconv.ParseFloat of a JSON number gives no NaN, and an infinity only
// with an error.
func appendNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // and -0 too
	}
	format := byte('e')
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		format = 'f'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	// Go writes at least two digits of exponent ("1e+07"); ECMAScript
	// writes as many as it needs ("1e+7").
	if n := len(b); format == 'e' && b[n-2] == '0' && (b[n-3] == '+' || b[n-3] == '-') {
		b = append(b[:n-2], b[n-1])
	}
	return b
}

func (c *Canonicalizer) digits() int {
	n := 0
	for c.i < len(c.in) && c.in[c.i] >= '0' && c.in[c.i] <= '9' {
		c.i++
		n++
	}
	return n
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// sorts member names. It differs from byte order only where a character
// above U+FFFF meets one in U+E000…U+FFFF.
func compareUTF16(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		if a[0] < utf8.RuneSelf && b[0] < utf8.RuneSelf {
			if a[0] != b[0] {
				return cmp.Compare(a[0], b[0])
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			a1, a2 := units(ra)
			b1, b2 := units(rb)
			return cmp.Or(cmp.Compare(a1, b1), cmp.Compare(a2, b2))
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

func units(r rune) (rune, rune) {
	if r >= 0x10000 {
		return utf16.EncodeRune(r)
	}
	return r, 0
}

// AppendString appends s as an RFC 8785 (section 3.2.2.2) JSON string:
// only '"', '\\' and the control characters below U+0020 are escaped (\b
// \t \n \f \r, else \u00hh in lowercase hex). Each run of invalid UTF-8
// is replaced by one U+FFFD first (strings.ToValidUTF8).
func AppendString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return appendText(b, s)
}

// AppendBytes is AppendString for bytes that are valid UTF-8.
func AppendBytes(b, s []byte) []byte { return appendText(b, s) }

func appendText[T string | []byte](b []byte, s T) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\f':
			b = append(b, '\\', 'f')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
