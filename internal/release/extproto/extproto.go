// Package extproto is the rukh.ipc/1 channel between the host and an
// extension process: strict, bounded, newline-delimited JSON frames.
//
// The format is pinned by docs/reference.md §2 and explained for
// extension authors in docs/extensions.md. The host starts the child with
// one end of a socketpair as descriptor FD and the environment variables
// EnvFD, EnvToken, EnvInvocationID and EnvCommand. It writes one invoke
// frame (Invoke.AppendFrame); the child answers with any number of
// progress frames and exactly one complete frame, which the host reads
// with a Reader. The child reads its invoke frame with ReadInvoke.
//
// Every frame is one line: a JSON object followed by "\n", at most
// MaxFrame bytes without the newline, parsed by internal/strictjson
// (valid UTF-8, no duplicate keys, no trailing data, bounded depth and
// members) and then checked member by member: unknown members, missing or
// mistyped members and out-of-range values are errors, never ignored.
// Whether a report is acceptable (the token, one report only, the result
// against its schema, the exit status) is the host's decision, not this
// package's.
package extproto

import (
	"fmt"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Protocol is the protocol name in the invoke frame.
const Protocol = "rukh.ipc/1"

// MaxFrame is the most bytes a frame may have, excluding its newline.
const MaxFrame = 256 << 10

// FD is the descriptor the child finds the channel on.
const FD = 3

// The environment variables the host sets for a managed child.
const (
	EnvFD           = "RUKH_IPC_FD"        // the channel descriptor, "3"
	EnvToken        = "RUKH_IPC_TOKEN"     // 64 hex digits, fresh per invocation; echoed in the complete frame
	EnvInvocationID = "RUKH_INVOCATION_ID" // the invocation ID, as in the invoke frame (envpolicy.InvocationID)
	EnvCommand      = "RUKH_COMMAND"       // the canonical command identity, <package>/<command id>
)

// Limits on a frame beyond MaxFrame.
const (
	// MaxDepth is the deepest nesting of a frame: a commandResult's data
	// may be 16 deep (resultschema.DefaultLimits) inside two wrappers;
	// the rest is slack so that the host, not the parser, reports a deep
	// result as invalid.
	MaxDepth = 40
	// MaxMembers is the most object members and array elements a frame
	// may have in all.
	MaxMembers = 10000
	// MaxMessage is the most bytes of a progress message.
	MaxMessage = 1024
	// MaxEffects is the most effects a complete frame may list.
	MaxEffects = 64
	// MaxEffectField is the most bytes of an effect's kind or ref.
	MaxEffectField = 256
)

var frameLimits = strictjson.Limits{MaxBytes: MaxFrame, MaxDepth: MaxDepth, MaxMembers: MaxMembers}

// The reasons of an Error.
const (
	// ReasonFrameTooLarge: a line is longer than MaxFrame bytes. The
	// Reader stops there, without reading the rest of the line.
	ReasonFrameTooLarge = "frame_too_large"
	// ReasonInvalidJSON: a line is not one strict JSON value (syntax,
	// invalid UTF-8, a duplicate key, trailing data such as a second
	// frame on the line, too deep, too many members).
	ReasonInvalidJSON = "invalid_json"
	// ReasonInvalidFrame: the JSON is not a frame: not an object, no or
	// a non-string type, an unknown, missing or mistyped member, a value
	// out of range.
	ReasonInvalidFrame = "invalid_frame"
	// ReasonUnknownType: type names no frame that this direction of the
	// channel carries.
	ReasonUnknownType = "unknown_type"
	// ReasonTruncated: the channel ended in the middle of a line (a
	// final line without its newline).
	ReasonTruncated = "truncated"
)

// Error is a frame the channel refused. Reason is one of the Reason
// constants; Message says what was wrong, in at most a few hundred bytes
// whatever the frame held.
type Error struct {
	Reason  string
	Message string
}

func (e *Error) Error() string { return Protocol + " " + e.Reason + ": " + e.Message }

// maxMessage bounds Error.Message, which may quote frame content.
const maxMessage = 512

func errorf(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Message: clip(fmt.Sprintf(format, args...), maxMessage)}
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// quote quotes frame text for a message, cut to a readable length.
func quote(s string) string { return fmt.Sprintf("%q", clip(s, 64)) }
