package projection

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// maxCanonDepth bounds the nesting appendCanonical follows. The schemas it
// reads were bounded when their descriptors were decoded.
const maxCanonDepth = 128

var errCanonSyntax = errors.New("not a JSON document")

// appendCanonical appends the RFC 8785 canonical form of the JSON document
// doc. It gives the same bytes as jcs.Transform (a test compares them) in
// one pass without building a tree, which made the catalog hash the
// largest cost of Build.
func appendCanonical(b, doc []byte) ([]byte, error) {
	var c canonicalizer
	return c.append(b, doc)
}

// append is appendCanonical reusing c's scratch space.
func (c *canonicalizer) append(b, doc []byte) ([]byte, error) {
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
		return b, errCanonSyntax
	}
	return c.out, nil
}

type canonicalizer struct {
	in      []byte
	i       int
	out     []byte
	members []member // a stack: each object uses the part above its mark
	tmp     []byte   // scratch for reordering members
}

type member struct {
	name       []byte // decoded; aliases the input when it has no escapes
	start, end int    // the member's canonical text in out
}

func (c *canonicalizer) space() {
	for c.i < len(c.in) {
		switch c.in[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(depth int) error {
	c.space()
	if c.i >= len(c.in) {
		return errCanonSyntax
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
		c.out = appendCanonicalBytes(c.out, s)
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
	return errCanonSyntax
}

func (c *canonicalizer) array(depth int) error {
	if depth > maxCanonDepth {
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
			return errCanonSyntax
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
			return errCanonSyntax
		}
	}
}

// object writes each member's canonical text to out as it reads it, then
// reorders the members by name if they were not in order.
func (c *canonicalizer) object(depth int) error {
	if depth > maxCanonDepth {
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
			return errCanonSyntax
		}
		name, err := c.str()
		if err != nil {
			return err
		}
		c.space()
		if c.i >= len(c.in) || c.in[c.i] != ':' {
			return errCanonSyntax
		}
		c.i++
		start := len(c.out)
		c.out = appendCanonicalBytes(c.out, name)
		c.out = append(c.out, ':')
		if err := c.value(depth); err != nil {
			return err
		}
		c.members = append(c.members, member{name: name, start: start, end: len(c.out)})
		c.space()
		if c.i >= len(c.in) {
			return errCanonSyntax
		}
		if c.in[c.i] == '}' {
			c.i++
			break
		}
		if c.in[c.i] != ',' {
			return errCanonSyntax
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
func (c *canonicalizer) str() ([]byte, error) {
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
			return nil, errCanonSyntax
		case ch != '\\':
			name = append(name, ch)
			c.i++
			continue
		}
		if c.i+1 >= len(c.in) {
			return nil, errCanonSyntax
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
				return nil, errCanonSyntax
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
			return nil, errCanonSyntax
		}
	}
	return nil, errCanonSyntax
}

func (c *canonicalizer) hex4() (rune, bool) {
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
func (c *canonicalizer) number() error {
	start := c.i
	if c.in[c.i] == '-' {
		c.i++
	}
	intStart := c.i
	if c.i < len(c.in) && c.in[c.i] == '0' {
		c.i++
	} else if n := c.digits(); n == 0 {
		return errCanonSyntax
	}
	intLen := c.i - intStart
	simple := true
	if c.i < len(c.in) && c.in[c.i] == '.' {
		c.i++
		if c.digits() == 0 {
			return errCanonSyntax
		}
		simple = false
	}
	if c.i < len(c.in) && (c.in[c.i] == 'e' || c.in[c.i] == 'E') {
		c.i++
		if c.i < len(c.in) && (c.in[c.i] == '+' || c.in[c.i] == '-') {
			c.i++
		}
		if c.digits() == 0 {
			return errCanonSyntax
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
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return err
	}
	c.out = append(c.out, s...)
	return nil
}

func (c *canonicalizer) digits() int {
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
