// Package values is Rukh's one typed model of command inputs: it types CLI
// strings and MCP JSON arguments into the same value map and projects
// declared inputs to JSON Schema.
//
// Both front doors end in the same typing and validation code: FromCLI
// receives the strings a flag or positional got, FromArguments receives the
// MCP arguments object, and for the same intent both return an Equal Map or
// an Error with the same Code and Path (invariant I3). The rules are
// documented in docs/inputs.md.
package values

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Type is the declared type of an input.
type Type string

// The input types. List holds items of one scalar type.
const (
	String  Type = "string"
	Integer Type = "integer"
	Number  Type = "number"
	Decimal Type = "decimal"
	Boolean Type = "boolean"
	List    Type = "list"
)

// Valid reports whether t is one of the declared input types.
func (t Type) Valid() bool {
	switch t {
	case String, Integer, Number, Decimal, Boolean, List:
		return true
	}
	return false
}

// Scalar reports whether t is a valid type other than List.
func (t Type) Scalar() bool { return t.Valid() && t != List }

// Hard limits that hold whatever an input declares.
const (
	// MaxStringLength is the most code points a string value may have.
	MaxStringLength = 16384
	// MaxListItems is the most items a list value may have.
	MaxListItems = 1024
	// MaxDecimalDigits is the most digits, integer and fraction part
	// together, that a decimal value may have.
	MaxDecimalDigits = 64
)

// Value is one typed value; the zero Value is invalid. Immutable.
type Value struct {
	t     Type
	item  Type    // List: the item type
	s     string  // String: the text; Decimal: the literal as written
	n     uint64  // Integer: the int64 bits; Number: the float64 bits; Boolean: 0 or 1
	items []Value // List, never modified after construction
}

// StringValue returns a String value. It does not validate s; a value that
// a front door could not produce (invalid UTF-8, NUL, over MaxStringLength)
// is reported by Spec.Check when used in a declaration.
func StringValue(s string) Value { return Value{t: String, s: s} }

// IntegerValue returns an Integer value.
func IntegerValue(i int64) Value { return Value{t: Integer, n: uint64(i)} }

// NumberValue returns a Number value. f must be finite; Spec.Check reports
// a declaration that uses a non-finite one.
func NumberValue(f float64) Value { return Value{t: Number, n: math.Float64bits(f)} }

// DecimalValue returns a Decimal value for s, which must match the decimal
// grammar -?(0|[1-9][0-9]*)(\.[0-9]+)? with at most MaxDecimalDigits
// digits. s is kept as written. The error is an *Error with code
// invalid_decimal.
func DecimalValue(s string) (Value, error) {
	if e := checkDecimal(s); e != nil {
		return Value{}, e
	}
	return Value{t: Decimal, s: s}, nil
}

// BooleanValue returns a Boolean value.
func BooleanValue(b bool) Value {
	v := Value{t: Boolean}
	if b {
		v.n = 1
	}
	return v
}

// ListValue returns a List value of items, all of which should have type
// item (a scalar type). items is copied.
func ListValue(item Type, items []Value) Value {
	return Value{t: List, item: item, items: slices.Clone(items)}
}

// Type returns the type of v, or "" for the zero Value.
func (v Value) Type() Type { return v.t }

// Str returns the text of a String value, or "" for other types.
func (v Value) Str() string {
	if v.t != String {
		return ""
	}
	return v.s
}

// Int returns the integer of an Integer value, or 0 for other types.
func (v Value) Int() int64 {
	if v.t != Integer {
		return 0
	}
	return int64(v.n)
}

// Float returns the number of a Number value, or 0 for other types.
func (v Value) Float() float64 {
	if v.t != Number {
		return 0
	}
	return math.Float64frombits(v.n)
}

// Decimal returns the literal of a Decimal value as written, or "" for
// other types.
func (v Value) Decimal() string {
	if v.t != Decimal {
		return ""
	}
	return v.s
}

// Bool returns the boolean of a Boolean value, or false for other types.
func (v Value) Bool() bool { return v.t == Boolean && v.n == 1 }

// Items returns a copy of the items of a List value, or nil for other
// types.
func (v Value) Items() []Value {
	if v.t != List {
		return nil
	}
	return slices.Clone(v.items)
}

// ItemType returns the item type of a List value, or "" for other types.
func (v Value) ItemType() Type {
	if v.t != List {
		return ""
	}
	return v.item
}

// Equal reports whether v and w are the same typed value: the same type,
// and then the same text for strings and decimals (a decimal is kept as
// written, so "1.5" and "1.50" differ), the same number for integers and
// numbers (so the numbers -0 and 0 are equal, as in JSON Schema), the same
// boolean, or the same item type and pairwise Equal items in order.
func (v Value) Equal(w Value) bool {
	if v.t != w.t {
		return false
	}
	switch v.t {
	case String, Decimal:
		return v.s == w.s
	case Number:
		return v.Float() == w.Float()
	case List:
		if v.item != w.item || len(v.items) != len(w.items) {
			return false
		}
		for i := range v.items {
			if !v.items[i].Equal(w.items[i]) {
				return false
			}
		}
		return true
	}
	return v.n == w.n
}

// AppendJSON appends the JSON encoding of v to buf: integers as exact JSON
// integers, numbers in the shortest form that reads back as the same
// binary64 (ECMAScript style, as encoding/json writes them), decimals as
// JSON strings holding the literal as written, lists as arrays. The zero
// Value is written as null.
func (v Value) AppendJSON(buf []byte) []byte {
	switch v.t {
	case String:
		return strictjson.AppendString(buf, v.s)
	case Integer:
		return strconv.AppendInt(buf, int64(v.n), 10)
	case Number:
		return appendFloat(buf, v.Float())
	case Decimal:
		return strictjson.AppendString(buf, v.s)
	case Boolean:
		return strconv.AppendBool(buf, v.n == 1)
	case List:
		buf = append(buf, '[')
		for i, it := range v.items {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = it.AppendJSON(buf)
		}
		return append(buf, ']')
	}
	return append(buf, "null"...)
}

// appendFloat writes f the way encoding/json does: plain notation for
// magnitudes in [1e-6, 1e21), exponent notation outside, shortest digits
// that round-trip. f must be finite.
func appendFloat(buf []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(buf, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 becomes 1e-7.
		n := len(buf)
		if n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
	}
	return buf
}

// Text returns v in the lexical form the CLI door reads: strings and
// decimals as they are, numbers and booleans as in JSON, list items
// joined by commas. It is what resource templates and completion show.
func (v Value) Text() string {
	switch v.t {
	case String, Decimal:
		return v.s
	case List:
		parts := make([]string, len(v.items))
		for i, it := range v.items {
			parts[i] = it.Text()
		}
		return strings.Join(parts, ",")
	}
	return string(v.AppendJSON(nil))
}

// String returns v for people: strings quoted Go-style, decimals as
// written, numbers as in JSON, lists as [a, b]. The zero Value is
// "<invalid>".
func (v Value) String() string {
	switch v.t {
	case String:
		return strconv.Quote(v.s)
	case Decimal:
		return v.s
	case Integer, Number, Boolean:
		return string(v.AppendJSON(nil))
	case List:
		var b strings.Builder
		b.WriteByte('[')
		for i, it := range v.items {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(it.String())
		}
		b.WriteByte(']')
		return b.String()
	}
	return "<invalid>"
}
