package values

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Code is a stable error code. Codes are part of Rukh's public contract:
// they reach CLI users, agents and tests, and never change meaning.
type Code string

// Codes for arguments, returned by FromCLI, FromArguments, FromObject and
// ParseLiteral. The codes of internal/strictjson (json_syntax,
// json_duplicate_key, json_too_large, …) are passed through unchanged by
// FromArguments.
const (
	// CodeUnknownInput: a flag or property names no declared input.
	CodeUnknownInput Code = "unknown_input"
	// CodeMissingRequired: a required input was not supplied.
	CodeMissingRequired Code = "missing_required"
	// CodeRepeatedValue: a scalar input got more than one CLI value.
	CodeRepeatedValue Code = "repeated_value"
	// CodeNullValue: a JSON null was given; null never means "omitted".
	CodeNullValue Code = "null_value"
	// CodeWrongType: the JSON type does not fit the input (a string for an
	// integer, a number for a decimal, a non-object root, …).
	CodeWrongType Code = "wrong_type"
	// CodeInvalidNumber: CLI text for an integer or number is not a JSON
	// number literal (0x10, +1, .5, Inf, NaN, 1_000, …).
	CodeInvalidNumber Code = "invalid_number"
	// CodeNotInteger: the number's exact value has a fractional part.
	CodeNotInteger Code = "not_integer"
	// CodeOutOfRange: an integer outside int64, or a number that
	// overflows binary64.
	CodeOutOfRange Code = "out_of_range"
	// CodeInvalidDecimal: the text is not a decimal literal or has more
	// than 64 digits.
	CodeInvalidDecimal Code = "invalid_decimal"
	// CodeInvalidBoolean: CLI text for a boolean is not "true" or "false".
	CodeInvalidBoolean Code = "invalid_boolean"
	// CodeInvalidString: a string is not valid UTF-8 or contains NUL.
	CodeInvalidString Code = "invalid_string"
	// CodeNotInEnum: the value is not one of the declared enum members.
	CodeNotInEnum Code = "not_in_enum"
	// CodeBelowMinimum: the value is less than the declared minimum.
	CodeBelowMinimum Code = "below_minimum"
	// CodeAboveMaximum: the value is greater than the declared maximum.
	CodeAboveMaximum Code = "above_maximum"
	// CodeTooShort: a string has fewer code points than minLength.
	CodeTooShort Code = "too_short"
	// CodeTooLong: a string has more code points than maxLength or 16,384.
	CodeTooLong Code = "too_long"
	// CodeTooFewItems: a list has fewer items than minItems.
	CodeTooFewItems Code = "too_few_items"
	// CodeTooManyItems: a list has more items than maxItems or 1,024.
	CodeTooManyItems Code = "too_many_items"
)

// Codes for declarations, returned by Spec.Check (and by ParseLiteral for
// a list without a usable item spec).
const (
	// CodeInvalidID: an input's ID is empty, or an item spec has an ID.
	CodeInvalidID Code = "invalid_id"
	// CodeInvalidType: the type is not one of the six input types.
	CodeInvalidType Code = "invalid_type"
	// CodeItemsRequired: a list declares no item spec.
	CodeItemsRequired Code = "items_required"
	// CodeNestedList: a list's items are lists.
	CodeNestedList Code = "nested_list"
	// CodeNotApplicable: a constraint or field does not apply to the type
	// (minLength on an integer, minimum on a list, default on an item, …).
	CodeNotApplicable Code = "not_applicable"
	// CodeNullLiteral: a bound, enum member or default is the zero
	// (null) Value.
	CodeNullLiteral Code = "null_literal"
	// CodeTypeMismatch: a bound, enum member or default has another type
	// than the input (or item) it belongs to.
	CodeTypeMismatch Code = "type_mismatch"
	// CodeInvalidLiteral: a literal of the right type that no front door
	// could produce (a non-finite number, a string with NUL, …).
	CodeInvalidLiteral Code = "invalid_literal"
	// CodeNegativeCount: minLength, maxLength, minItems or maxItems < 0.
	CodeNegativeCount Code = "negative_count"
	// CodeBeyondLimit: a length or item count above the hard limits
	// (16,384 code points, 1,024 items).
	CodeBeyondLimit Code = "beyond_limit"
	// CodeBoundsInverted: a lower bound is greater than its upper bound.
	CodeBoundsInverted Code = "bounds_inverted"
	// CodeEmptyEnum: an enum with no members.
	CodeEmptyEnum Code = "empty_enum"
	// CodeDuplicateEnum: an enum member equal in exact value to an
	// earlier one.
	CodeDuplicateEnum Code = "duplicate_enum"
	// CodeEnumMemberInvalid: an enum member violates the other
	// constraints.
	CodeEnumMemberInvalid Code = "enum_member_invalid"
	// CodeRequiredWithDefault: an input is both required and defaulted.
	CodeRequiredWithDefault Code = "required_with_default"
	// CodeDefaultInvalid: the default violates the input's constraints or
	// enum.
	CodeDefaultInvalid Code = "default_invalid"
)

// Error is one problem with arguments or a declaration.
type Error struct {
	Code Code
	// Input is the ID of the input concerned, or the unknown name for
	// unknown_input; "" when the problem is the arguments as a whole.
	Input string
	// Path is a JSON pointer (RFC 6901). For arguments it points into the
	// arguments object ("/limit", "/tags/2") and is the same for CLI and
	// MCP; for Spec.Check it is relative to the input's declaration object
	// ("/maximum", "/items/maxLength"); for ParseLiteral it is relative to
	// the literal ("", "/2").
	Path string
	// Message says what was wrong and what to do, in lowercase.
	Message string
}

// Error returns `input "ID": message`, naming the path too when it points
// below the input (a list item, a declaration field).
func (e *Error) Error() string {
	if e.Input == "" {
		if e.Path == "" {
			return "arguments: " + e.Message
		}
		return "arguments at " + e.Path + ": " + e.Message
	}
	s := "input " + strconv.Quote(e.Input)
	if e.Path != "" && e.Path != pointer(e.Input) {
		s += " at " + e.Path
	}
	return s + ": " + e.Message
}

// pointer returns the JSON pointer of the member id of the root object.
func pointer(id string) string {
	if !strings.ContainsAny(id, "~/") {
		return "/" + id
	}
	return "/" + strings.ReplaceAll(strings.ReplaceAll(id, "~", "~0"), "/", "~1")
}

// itemPointer returns the pointer of item i below ptr.
func itemPointer(ptr string, i int) string { return ptr + "/" + strconv.Itoa(i) }

// firstToken returns the first reference token of ptr, unescaped.
func firstToken(ptr string) string {
	if ptr == "" {
		return ""
	}
	tok := ptr[1:]
	if i := strings.IndexByte(tok, '/'); i >= 0 {
		tok = tok[:i]
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// quoteShort quotes s for a message, cut to 40 code points so that a
// 16,384-character argument does not become a 16 KiB message.
func quoteShort(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) <= max {
		return strconv.Quote(s)
	}
	i, n := 0, 0
	for i < len(s) && n < max {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return strconv.Quote(s[:i]) + "…"
}
