// Package resultschema checks publisher result schemas against Rukh's
// bounded JSON Schema 2020-12 subset and validates command results against
// them within fixed limits.
//
// A publisher declares the result of a command in its descriptor
// (execute.result). Check accepts a schema only when it stays inside the
// subset documented in docs/result-schema.md; Result.Validate then checks
// the commandResult member of a completion report against it. Every
// failure carries a stable Code and an RFC 6901 JSON pointer.
//
// Every schema of the subset is standard JSON Schema 2020-12: the tests
// compile each checked schema with a reference implementation
// (santhosh-tekuri/jsonschema/v6) and require the same verdicts, so what
// Rukh publishes as an MCP outputSchema is standard. Results are
// validated by this package's own walk of the subset instead: it is linear in the result, with enum membership by
// hash and exact decimal comparison, where the reference implementation
// searches enums linearly and reads every number with math/big, which is
// seconds for a large enum and a panic for a literal like 1e9999999.
package resultschema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Code is a stable, documented error code.
type Code string

// Schema error codes, returned by Check and Parse. Their Path is relative
// to the schema root.
const (
	// CodeSchemaMalformed: the schema is not strict JSON (Parse), or the
	// tree handed to Check is not a well-formed JSON value.
	CodeSchemaMalformed Code = "schema_malformed"
	// CodeSchemaTooLarge: the compact encoding exceeds Limits.SchemaBytes
	// (for Parse: the input does).
	CodeSchemaTooLarge Code = "schema_too_large"
	// CodeSchemaTooDeep: a subschema is nested deeper than Limits.Depth.
	CodeSchemaTooDeep Code = "schema_too_deep"
	// CodeSchemaTooManyMembers: the schema document has more than
	// Limits.Members object members and array elements.
	CodeSchemaTooManyMembers Code = "schema_too_many_members"
	// CodeSchemaNotObject: a schema or subschema is not a JSON object
	// (boolean schemas such as true are not accepted).
	CodeSchemaNotObject Code = "schema_not_object"
	// CodeSchemaMissingType: a subschema has no "type".
	CodeSchemaMissingType Code = "schema_missing_type"
	// CodeSchemaInvalidType: "type" is not one of the seven type names
	// (type arrays are not accepted).
	CodeSchemaInvalidType Code = "schema_invalid_type"
	// CodeSchemaForbiddenKeyword: a JSON Schema keyword the subset
	// excludes on purpose ($ref, pattern, allOf, default, …).
	CodeSchemaForbiddenKeyword Code = "schema_forbidden_keyword"
	// CodeSchemaUnknownKeyword: a member that is no keyword of the subset.
	CodeSchemaUnknownKeyword Code = "schema_unknown_keyword"
	// CodeSchemaNotApplicable: a keyword of the subset that does not fit
	// the subschema's type (minLength on an integer, enum on an object, …).
	CodeSchemaNotApplicable Code = "schema_not_applicable"
	// CodeSchemaMissingProperties: an object schema has no "properties".
	CodeSchemaMissingProperties Code = "schema_missing_properties"
	// CodeSchemaInvalidProperties: "properties" is not a JSON object.
	CodeSchemaInvalidProperties Code = "schema_invalid_properties"
	// CodeSchemaAdditionalProperties: an object schema lacks
	// "additionalProperties", or it is not exactly false.
	CodeSchemaAdditionalProperties Code = "schema_additional_properties"
	// CodeSchemaRequiredInvalid: "required" is not an array of unique
	// strings that each name a declared property.
	CodeSchemaRequiredInvalid Code = "schema_required_invalid"
	// CodeSchemaMissingItems: an array schema has no "items".
	CodeSchemaMissingItems Code = "schema_missing_items"
	// CodeSchemaMissingMaxItems: an array schema has no "maxItems".
	CodeSchemaMissingMaxItems Code = "schema_missing_max_items"
	// CodeSchemaInvalidBound: a counter (minLength, maxLength, minItems,
	// maxItems) is not a plain non-negative integer literal of at most
	// 2^53-1, or a bound (minimum, maximum) is not a number that fits
	// binary64, or not integral for an integer schema.
	CodeSchemaInvalidBound Code = "schema_invalid_bound"
	// CodeSchemaBoundsOrder: a lower bound exceeds its upper bound.
	CodeSchemaBoundsOrder Code = "schema_bounds_order"
	// CodeSchemaInvalidEnum: "enum" is not a non-empty array of unique
	// values of the schema's type that satisfy its other constraints.
	CodeSchemaInvalidEnum Code = "schema_invalid_enum"
	// CodeSchemaInvalidText: "title" or "description" is not a string.
	CodeSchemaInvalidText Code = "schema_invalid_text"
	// CodeSchemaUnsatisfiable: every instance of the schema needs more
	// members and elements (through required properties and minItems)
	// than a result may have (Limits.Members).
	CodeSchemaUnsatisfiable Code = "schema_unsatisfiable"
)

// Result error codes, returned by Result.Validate. Their Path is relative
// to the commandResult object, so the data of a structured result is under
// "/data".
const (
	// CodeResultTooLarge: commandResult exceeds Limits.ResultBytes.
	CodeResultTooLarge Code = "result_too_large"
	// CodeResultMalformed: commandResult is not strict JSON, or is not
	// exactly {"kind":"structured","data":…} or {"kind":"text","text":…}
	// with the declared kind.
	CodeResultMalformed Code = "result_malformed"
	// CodeResultTooDeep: the data is nested deeper than Limits.Depth.
	CodeResultTooDeep Code = "result_too_deep"
	// CodeResultTooManyMembers: the data has more than Limits.Members
	// object members and array elements.
	CodeResultTooManyMembers Code = "result_too_many_members"
	// CodeResultInvalidNumber: a number in the data does not fit binary64:
	// its magnitude overflows to infinity, or a non-zero value underflows
	// to zero.
	CodeResultInvalidNumber Code = "result_invalid_number"
	// CodeResultInvalid: the data does not match the declared schema.
	CodeResultInvalid Code = "result_invalid"
	// CodeResultTimeout: validating the result needs more work than
	// Limits.Steps allows. The budget is counted in steps, never measured
	// with a clock, so the verdict is the same on every machine and under
	// any load (the name is from when it was a wall-clock timeout).
	CodeResultTimeout Code = "result_timeout"
)

// Error is one problem with a schema or a result: a stable code, where it
// is (an RFC 6901 JSON pointer; "" is the root) and what to do about it.
type Error struct {
	Code    Code
	Path    string
	Message string
}

func (e *Error) Error() string {
	where := e.Path
	if where == "" {
		where = "the result root"
		if strings.HasPrefix(string(e.Code), "schema_") {
			where = "the schema root"
		}
	}
	return fmt.Sprintf("%s at %s: %s", e.Code, where, e.Message)
}

func errorf(code Code, path, format string, args ...any) *Error {
	return &Error{Code: code, Path: path, Message: fmt.Sprintf(format, args...)}
}

// Limits bounds what Check, Parse and Validate accept. Every field must be
// positive; the functions panic otherwise, as strictjson.Parse does.
// Owners may only tighten the defaults.
type Limits struct {
	SchemaBytes int // compact encoding of a schema
	ResultBytes int // commandResult as received, in bytes of UTF-8
	Depth       int // subschema nesting and data nesting
	Members     int // members plus elements: of a schema document, of result data
	// Steps is the work budget of validating one result's data, counted,
	// not timed: every value of the data the walk reaches costs one step
	// for its type and one for each constraining keyword of its subschema
	// (properties, additionalProperties, required, items, minItems,
	// maxItems, minLength, maxLength, minimum, maximum, enum), so at most
	// MaxValueSteps. StepBudget(Members) is enough for every result within
	// Members.
	Steps int
}

// MaxValueSteps is the most steps one value of result data costs: its
// type and at most three constraining keywords (an object's properties,
// additionalProperties and required; an array's items, minItems and
// maxItems; a string's minLength, maxLength and enum; a number's
// minimum, maximum and enum).
const MaxValueSteps = 4

// StepBudget is the step budget that every result of at most members
// members and elements fits: each of its members+1 values (the root
// included) at MaxValueSteps.
func StepBudget(members int) int { return (members + 1) * MaxValueSteps }

// DefaultLimits returns the limits of docs/limits.md: 64 KiB
// per schema, 128 KiB per result, depth 16, 2,048 members, and the step
// budget of 2,048 members (8,196 steps), so that no result within the
// other limits is refused for the work it needs.
func DefaultLimits() Limits {
	return Limits{
		SchemaBytes: 64 << 10,
		ResultBytes: 128 << 10,
		Depth:       16,
		Members:     2048,
		Steps:       StepBudget(2048),
	}
}

func (lim Limits) mustBeValid() {
	if lim.SchemaBytes <= 0 || lim.ResultBytes <= 0 || lim.Depth <= 0 || lim.Members <= 0 || lim.Steps <= 0 {
		panic("resultschema: every limit must be positive")
	}
}

// Kind is the kind of a command's result.
type Kind string

// The result kinds.
const (
	Text       Kind = "text"
	Structured Kind = "structured"
)

// Result is a command's declared result (descriptor execute.result).
// Schema is non-nil if and only if Kind is Structured.
type Result struct {
	Kind   Kind
	Schema *Schema
}

// CommandResult is a validated commandResult. Text is set for Text
// results; Data, the compact JSON of the validated data with member order
// and number literals as received, for Structured ones.
type CommandResult struct {
	Kind Kind
	Text string
	Data json.RawMessage
}

// quote returns s quoted for a message, cut to a readable length so that
// publisher or extension text never makes a message unbounded.
func quote(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}
