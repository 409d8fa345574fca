package values

import (
	"cmp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// source is one received value before typing: CLI text, or a JSON value
// from the MCP arguments (or a declaration literal). Everything after this
// point is shared by both front doors.
type source struct {
	j    *strictjson.Value // nil for CLI text
	text string
}

// jsonKind is the only JSON type accepted for t.
func jsonKind(t Type) strictjson.Kind {
	switch t {
	case Integer, Number:
		return strictjson.Number
	case String, Decimal:
		return strictjson.String
	case Boolean:
		return strictjson.Bool
	case List:
		return strictjson.Array
	}
	return 0
}

// describe names what a value of type t looks like in JSON, for messages.
func describe(t Type) string {
	switch t {
	case Integer:
		return "an integer (a JSON number such as 42)"
	case Number:
		return "a number (a JSON number such as 1.5)"
	case Decimal:
		return `a decimal as a JSON string (such as "12.50")`
	case Boolean:
		return "a boolean (true or false)"
	case String:
		return "a string"
	case List:
		return "a list (a JSON array)"
	}
	return "a value"
}

func nullError(t Type) *Error {
	return &Error{Code: CodeNullValue,
		Message: "is null, and null does not mean omitted; leave the input out or give " + describe(t)}
}

func wrongType(t Type, got strictjson.Kind) *Error {
	return &Error{Code: CodeWrongType, Message: "expected " + describe(t) + ", got a JSON " + got.String()}
}

// typeScalar types one received value as t, a scalar type. It checks the
// lexical form (CLI) or JSON type (MCP), the exact value and the hard
// limits, but not the declared constraints. The error has no Input or Path
// yet.
func typeScalar(t Type, src source) (Value, *Error) {
	if !t.Scalar() {
		return Value{}, &Error{Code: CodeInvalidType, Message: "the input declares no valid scalar type; fix the declaration"}
	}
	text := src.text
	if j := src.j; j != nil {
		if j.Kind == strictjson.Null {
			return Value{}, nullError(t)
		}
		if j.Kind != jsonKind(t) {
			return Value{}, wrongType(t, j.Kind)
		}
		if t == Boolean {
			return BooleanValue(j.Bool), nil
		}
		text = j.Text
	}
	switch t {
	case Integer:
		n, ok := splitNumber(text)
		if !ok {
			return Value{}, invalidNumber(text)
		}
		i, code := n.integer()
		switch code {
		case CodeNotInteger:
			return Value{}, &Error{Code: code, Message: short(text) + " is not a whole number; give an integer such as 42"}
		case CodeOutOfRange:
			return Value{}, &Error{Code: code, Message: short(text) + " is outside the integer range -9223372036854775808 to 9223372036854775807; give an integer within it"}
		}
		return IntegerValue(i), nil
	case Number:
		if src.j == nil {
			if _, ok := splitNumber(text); !ok {
				return Value{}, invalidNumber(text)
			}
		}
		f, code := float(text)
		if code != "" {
			return Value{}, &Error{Code: code, Message: short(text) + " is too large for a 64-bit floating-point number; give one within ±1.7976931348623157e308"}
		}
		return NumberValue(f), nil
	case Decimal:
		if e := checkDecimal(text); e != nil {
			return Value{}, e
		}
		return Value{t: Decimal, s: text}, nil
	case Boolean: // CLI text; JSON returned above
		switch text {
		case "true":
			return BooleanValue(true), nil
		case "false":
			return BooleanValue(false), nil
		}
		return Value{}, &Error{Code: CodeInvalidBoolean, Message: quoteShort(text) + " is not a boolean; give true or false"}
	case String:
		if e := checkString(text); e != nil {
			return Value{}, e
		}
		return StringValue(text), nil
	}
	panic("unreachable")
}

func invalidNumber(text string) *Error {
	return &Error{Code: CodeInvalidNumber,
		Message: quoteShort(text) + " is not a number; write it as JSON does, such as 42, -3, 0.5 or 1e6 (no '+', hex, '_', leading '.', Inf or NaN)"}
}

// checkString enforces what every string value must be: valid UTF-8, no
// NUL, at most MaxStringLength code points.
func checkString(s string) *Error {
	if !utf8.ValidString(s) {
		return &Error{Code: CodeInvalidString, Message: "is not valid UTF-8; give valid text"}
	}
	if strings.IndexByte(s, 0) >= 0 {
		return &Error{Code: CodeInvalidString, Message: "contains a NUL character, which no input may hold; remove it"}
	}
	if n := utf8.RuneCountInString(s); n > MaxStringLength {
		return &Error{Code: CodeTooLong,
			Message: "has " + strconv.Itoa(n) + " characters; no string may have more than " + strconv.Itoa(MaxStringLength)}
	}
	return nil
}

// short returns a literal for a message, cut to 40 bytes.
func short(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}

// checkConstraints checks a typed scalar against the declared enum and
// bounds of s, in that order.
func checkConstraints(s *Spec, v Value) *Error {
	if len(s.Enum) > 0 && !inEnum(s.Enum, v) {
		return &Error{Code: CodeNotInEnum, Message: shortValue(v) + " is not one of the allowed values " + listValues(s.Enum) + "; give one of them"}
	}
	switch v.t {
	case Integer, Number, Decimal:
		if s.Minimum != nil {
			if c, ok := compare(v, *s.Minimum); ok && c < 0 {
				return &Error{Code: CodeBelowMinimum, Message: shortValue(v) + " is less than the minimum " + s.Minimum.String() + "; give a value of at least " + s.Minimum.String()}
			}
		}
		if s.Maximum != nil {
			if c, ok := compare(v, *s.Maximum); ok && c > 0 {
				return &Error{Code: CodeAboveMaximum, Message: shortValue(v) + " is greater than the maximum " + s.Maximum.String() + "; give a value of at most " + s.Maximum.String()}
			}
		}
	case String:
		if s.MinLength == nil && s.MaxLength == nil {
			return nil
		}
		n := utf8.RuneCountInString(v.s)
		if s.MinLength != nil && n < *s.MinLength {
			return &Error{Code: CodeTooShort, Message: "has " + strconv.Itoa(n) + " characters; give at least " + strconv.Itoa(*s.MinLength)}
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			return &Error{Code: CodeTooLong, Message: "has " + strconv.Itoa(n) + " characters; give at most " + strconv.Itoa(*s.MaxLength)}
		}
	}
	return nil
}

// shortValue renders v for a message without echoing a long string.
func shortValue(v Value) string {
	if v.t == String {
		return quoteShort(v.s)
	}
	return short(v.String())
}

// listValues renders up to ten values for a message.
func listValues(vs []Value) string {
	var b strings.Builder
	for i, v := range vs {
		if i == 10 {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(shortValue(v))
	}
	return b.String()
}

func inEnum(enum []Value, v Value) bool {
	for _, m := range enum {
		if m.Equal(v) {
			return true
		}
	}
	return false
}

// compare compares two numeric values of the same type exactly; ok is
// false when they cannot be compared (different or non-numeric types).
func compare(a, b Value) (c int, ok bool) {
	if a.t != b.t {
		return 0, false
	}
	switch a.t {
	case Integer:
		return cmp.Compare(a.Int(), b.Int()), true
	case Number:
		return cmp.Compare(a.Float(), b.Float()), true // finite; -0 equals 0
	case Decimal:
		return compareDecimal(a.s, b.s), true
	}
	return 0, false
}

// sameValue reports whether a and b are the same exact value: Equal, except
// that decimals compare by number (1.5 and 1.50 are the same). Enum members
// must be unique by this rule.
func sameValue(a, b Value) bool {
	if a.t == Decimal && b.t == Decimal {
		return compareDecimal(a.s, b.s) == 0
	}
	return a.Equal(b)
}

// typeList types n received items as a list of item values. It checks the
// hard item limit first; when s is not nil (arguments, not a bare
// literal) also s's minItems and maxItems and then, per item in order, the
// item's type and constraints. Errors carry their Path (ptr or an item
// below it) but no Input.
func typeList(s, item *Spec, n int, at func(i int) source, ptr string) (Value, *Error) {
	if e := itemProblem(item); e != nil {
		e.Path = ptr
		return Value{}, e
	}
	if n > MaxListItems {
		return Value{}, &Error{Code: CodeTooManyItems, Path: ptr,
			Message: "has " + strconv.Itoa(n) + " items; no list may have more than " + strconv.Itoa(MaxListItems)}
	}
	if s != nil {
		if e := checkCount(s, n); e != nil {
			e.Path = ptr
			return Value{}, e
		}
	}
	items := make([]Value, n)
	for i := range n {
		v, e := typeScalar(item.Type, at(i))
		if e == nil && s != nil {
			e = checkConstraints(item, v)
		}
		if e != nil {
			e.Path = itemPointer(ptr, i)
			e.Message = "item " + strconv.Itoa(i) + ": " + e.Message
			return Value{}, e
		}
		items[i] = v
	}
	return Value{t: List, item: item.Type, items: items}, nil
}

// checkCount checks a list's item count against s's minItems and maxItems.
func checkCount(s *Spec, n int) *Error {
	if s.MinItems != nil && n < *s.MinItems {
		return &Error{Code: CodeTooFewItems, Message: "has " + strconv.Itoa(n) + " items; give at least " + strconv.Itoa(*s.MinItems)}
	}
	if s.MaxItems != nil && n > *s.MaxItems {
		return &Error{Code: CodeTooManyItems, Message: "has " + strconv.Itoa(n) + " items; give at most " + strconv.Itoa(*s.MaxItems)}
	}
	return nil
}

// itemProblem reports a list item spec that cannot type anything.
func itemProblem(item *Spec) *Error {
	switch {
	case item == nil:
		return &Error{Code: CodeItemsRequired, Message: "the list declares no item type; fix the declaration"}
	case item.Type == List:
		return &Error{Code: CodeNestedList, Message: "the list declares list items; fix the declaration"}
	case !item.Type.Scalar():
		return &Error{Code: CodeInvalidType, Message: "the list declares no valid item type; fix the declaration"}
	}
	return nil
}
