package descriptor

import (
	"fmt"
	"strings"
)

// Code is a stable error code. docs/descriptor.md lists every code; codes
// from the values and resultschema packages pass through unchanged.
type Code string

// Descriptor error codes. The JSON-level codes (json_syntax,
// json_duplicate_key, …) come from the strict parser.
const (
	CodeUnsupportedSchema Code = "unsupported_schema"  // "schema" names a format this build does not know
	CodeMissingField      Code = "missing_field"       // a required member is absent
	CodeUnknownField      Code = "unknown_field"       // a member the format does not define
	CodeNotInVersion      Code = "not_in_version"      // a member defined only by a later format
	CodeWrongType         Code = "wrong_type"          // a member has the wrong JSON type
	CodeInvalidPackage    Code = "invalid_package"     // package name grammar
	CodeInvalidVersion    Code = "invalid_version"     // not a semantic version
	CodeInvalidPublisher  Code = "invalid_publisher"   // publisher name grammar
	CodeInvalidCommandID  Code = "invalid_command_id"  // command id grammar
	CodeDuplicateCommand  Code = "duplicate_command"   // two commands with one id
	CodeInvalidPathWord   Code = "invalid_path_word"   // a route word's grammar
	CodeReservedWord      Code = "reserved_word"       // a route starts with a built-in word
	CodeRouteCollision    Code = "route_collision"     // two routes (paths or aliases) are equal
	CodeGroupCollision    Code = "group_collision"     // a route is a prefix of another, so it would be a group and a command
	CodeTooMany           Code = "too_many"            // more items than the format allows
	CodeEmpty             Code = "empty"               // a list that needs at least one item
	CodeInvalidText       Code = "invalid_text"        // summary/description: control characters, empty, or too long
	CodeInvalidInputID    Code = "invalid_input_id"    // input id grammar
	CodeDuplicateInput    Code = "duplicate_input"     // two inputs with one id
	CodeInvalidFlag       Code = "invalid_flag"        // flag or short-flag grammar, or a reserved flag
	CodeDuplicateFlag     Code = "duplicate_flag"      // two inputs with one flag or short flag
	CodeFlagAndPositional Code = "flag_and_positional" // an input declares both
	CodeInvalidPositional Code = "invalid_positional"  // positional indexes: gaps, duplicates, order
	CodeInvalidInputType  Code = "invalid_input_type"  // unknown input type
	CodeNotApplicable     Code = "not_applicable"      // a constraint that does not fit the input type
	CodeInvalidBound      Code = "invalid_bound"       // a length/count bound that is not a non-negative integer
	CodeInvalidMapping    Code = "invalid_mapping"     // execute.mapping is not managed or passthrough
	CodeInvalidProgram    Code = "invalid_program"     // execute.program would leave the release
	CodeInvalidArgs       Code = "invalid_args"        // execute.args member not a usable string
	CodeInvalidLifetime   Code = "invalid_lifetime"    // execute.lifetime is not foreground or background
	CodeInvalidResultKind Code = "invalid_result_kind" // execute.result.kind is not text or structured
	CodePassthroughInputs Code = "passthrough_inputs"  // a passthrough command declares inputs
	CodePassthroughResult Code = "passthrough_result"  // a passthrough command declares a result
	CodeInvalidFeature    Code = "invalid_feature"     // requiredFeatures names an unknown or repeated feature
	CodeInvalidValue      Code = "invalid_value"       // a member outside its closed set of values
	CodeNotEligible       Code = "not_eligible"        // machine.eligible is true but the command cannot be a tool
	CodeInvalidAccess     Code = "invalid_access"      // access action grammar or resource template
	CodeProgramMissing    Code = "program_missing"     // the release has no such program file
	CodeProgramInvalid    Code = "program_invalid"     // the program is not an executable regular file inside the release
	CodeDescriptorMissing Code = "descriptor_missing"  // the release has no readable rukh-extension.json
)

// Error is one problem in a descriptor: a stable code, the JSON pointer of
// the member at fault ("" for the whole document) and a message that says
// what to change.
type Error struct {
	Code    Code   `json:"code"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	path := e.Path
	if path == "" {
		path = "/"
	}
	return fmt.Sprintf("%s: %s: %s", path, e.Code, e.Message)
}

// Errors is every problem found in one descriptor, in document order.
type Errors []*Error

func (es Errors) Error() string {
	switch len(es) {
	case 0:
		return "no errors"
	case 1:
		return es[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems in the descriptor:", len(es))
	for _, e := range es {
		b.WriteString("\n\t")
		b.WriteString(e.Error())
	}
	return b.String()
}
