package extproto

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rukh-cli/rukh/internal/strictjson"
)

// Invoke is the host's first and only unsolicited frame.
type Invoke struct {
	InvocationID string
	Command      string // the canonical command identity, <package>/<command id>
	Transport    string // "cli" or "mcp"
	Interactive  bool
	// DeadlineMs is the time the command has left, in milliseconds, when
	// the host writes the frame (a duration, not a point in time; ≥ 0).
	// The child counts it from when it reads the frame.
	DeadlineMs int64
	// Inputs is the JSON object {"<id>":{"value":…,"explicit":bool},…}
	// written by values.Map.AppendJSON.
	Inputs json.RawMessage
}

// Transports, the values of Invoke.Transport.
const (
	TransportCLI = "cli"
	TransportMCP = "mcp"
)

// Statuses, the values of Complete.Status.
const (
	StatusSucceeded     = "succeeded"
	StatusCommandFailed = "command_failed"
)

// Progress is an optional progress report from the child. Done and Total
// are nil when the frame leaves them out.
type Progress struct {
	Message string
	Done    *int64
	Total   *int64
}

// Effect is one effect the child reports having had.
type Effect struct {
	Kind string
	Ref  string
}

// Complete is the child's completion report.
type Complete struct {
	Token  string // must equal the RUKH_IPC_TOKEN the host gave; the host checks
	Status string // StatusSucceeded or StatusCommandFailed
	// CommandResult is the exact bytes of the commandResult member, an
	// object whose content the host validates with resultschema; nil when
	// the member is absent (allowed only with StatusCommandFailed).
	CommandResult json.RawMessage
	Effects       []Effect // nil when there are none
}

// Frame is one frame from the child. Exactly one field is set.
type Frame struct {
	Progress *Progress
	Complete *Complete
}

// AppendFrame appends the invoke frame for in to buf, newline included.
// A nil Inputs is written as {}. Inputs is copied as given, except that
// a newline (which can only be whitespace in valid JSON) becomes a space,
// so the frame stays one line; the caller checks that the frame fits in
// MaxFrame, or the child refuses it.
func (in *Invoke) AppendFrame(buf []byte) []byte {
	buf = append(buf, `{"type":"invoke","protocol":`...)
	buf = appendString(buf, Protocol)
	buf = append(buf, `,"invocationId":`...)
	buf = appendString(buf, in.InvocationID)
	buf = append(buf, `,"command":`...)
	buf = appendString(buf, in.Command)
	buf = append(buf, `,"transport":`...)
	buf = appendString(buf, in.Transport)
	buf = append(buf, `,"interactive":`...)
	buf = strconv.AppendBool(buf, in.Interactive)
	buf = append(buf, `,"deadlineMs":`...)
	buf = strconv.AppendInt(buf, in.DeadlineMs, 10)
	buf = append(buf, `,"inputs":`...)
	if len(in.Inputs) == 0 {
		buf = append(buf, "{}"...)
	} else {
		buf = appendRaw(buf, in.Inputs)
	}
	return append(buf, "}\n"...)
}

// AppendProgress appends the progress frame for p to buf, newline
// included. It does not check p: a message over MaxMessage bytes or a
// negative count is written as given, and refused by the Reader.
func AppendProgress(buf []byte, p Progress) []byte {
	buf = append(buf, `{"type":"progress","message":`...)
	buf = appendString(buf, p.Message)
	if p.Done != nil {
		buf = append(buf, `,"done":`...)
		buf = strconv.AppendInt(buf, *p.Done, 10)
	}
	if p.Total != nil {
		buf = append(buf, `,"total":`...)
		buf = strconv.AppendInt(buf, *p.Total, 10)
	}
	return append(buf, "}\n"...)
}

// AppendComplete appends the complete frame for c to buf, newline
// included. commandResult is left out when c.CommandResult is nil, and
// effects when there are none. It does not check c, so tests can write
// frames the Reader refuses; CommandResult is copied as given, except
// that a newline becomes a space.
func AppendComplete(buf []byte, c Complete) []byte {
	buf = append(buf, `{"type":"complete","token":`...)
	buf = appendString(buf, c.Token)
	buf = append(buf, `,"status":`...)
	buf = appendString(buf, c.Status)
	if c.CommandResult != nil {
		buf = append(buf, `,"commandResult":`...)
		buf = appendRaw(buf, c.CommandResult)
	}
	if len(c.Effects) > 0 {
		buf = append(buf, `,"effects":[`...)
		for i, e := range c.Effects {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, `{"kind":`...)
			buf = appendString(buf, e.Kind)
			buf = append(buf, `,"ref":`...)
			buf = appendString(buf, e.Ref)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	return append(buf, "}\n"...)
}

// appendString writes s as a JSON string; invalid UTF-8 becomes U+FFFD,
// as encoding/json does, so the frame is always valid UTF-8.
func appendString(buf []byte, s string) []byte {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strictjson.AppendString(buf, s)
}

// appendRaw copies raw JSON with newlines turned into spaces.
func appendRaw(buf []byte, raw []byte) []byte {
	n := len(buf)
	buf = append(buf, raw...)
	for i := n; i < len(buf); i++ {
		if buf[i] == '\n' {
			buf[i] = ' '
		}
	}
	return buf
}

// ParseInvoke parses an invoke frame: line is one line as read from the
// channel, with or without its final newline. It is as strict as the
// Reader: every member is required, none may be unknown, protocol must be
// Protocol, transport "cli" or "mcp", deadlineMs a non-negative integer,
// and inputs an object of {"value":…,"explicit":bool} entries.
func ParseInvoke(line []byte) (*Invoke, error) {
	in, err := parseInvoke(line)
	if err != nil {
		return nil, err
	}
	return in, nil
}

func parseInvoke(line []byte) (*Invoke, *Error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	v, e := parseObject(line)
	if e != nil {
		return nil, e
	}
	if t := v.Get("type"); t.Text != "invoke" {
		return nil, errorf(ReasonUnknownType, "frame type %s is not invoke, the host's only frame", quote(t.Text))
	}
	if e := onlyMembers(v, "the invoke frame", "type", "protocol", "invocationId", "command", "transport", "interactive", "deadlineMs", "inputs"); e != nil {
		return nil, e
	}
	in := &Invoke{}
	var protocol string
	for _, f := range []struct {
		name string
		dst  *string
	}{{"protocol", &protocol}, {"invocationId", &in.InvocationID}, {"command", &in.Command}, {"transport", &in.Transport}} {
		s, e := stringMember(v, f.name, true)
		if e != nil {
			return nil, e
		}
		*f.dst = s
	}
	if protocol != Protocol {
		return nil, errorf(ReasonInvalidFrame, "protocol %s is not %s", quote(protocol), Protocol)
	}
	if in.Transport != TransportCLI && in.Transport != TransportMCP {
		return nil, errorf(ReasonInvalidFrame, "transport %s is not %q or %q", quote(in.Transport), TransportCLI, TransportMCP)
	}
	switch iv := v.Get("interactive"); {
	case iv == nil:
		return nil, errorf(ReasonInvalidFrame, "the invoke frame has no interactive member")
	case iv.Kind != strictjson.Bool:
		return nil, errorf(ReasonInvalidFrame, "interactive is a %s; it must be a boolean", iv.Kind)
	default:
		in.Interactive = iv.Bool
	}
	d, e := countMember(v, "deadlineMs")
	if e != nil {
		return nil, e
	}
	if d == nil {
		return nil, errorf(ReasonInvalidFrame, "the invoke frame has no deadlineMs member")
	}
	in.DeadlineMs = *d
	inputs := v.Get("inputs")
	if inputs == nil {
		return nil, errorf(ReasonInvalidFrame, "the invoke frame has no inputs member")
	}
	if e := checkInputs(inputs); e != nil {
		return nil, e
	}
	in.Inputs = bytes.Clone(line[inputs.Start:inputs.End])
	return in, nil
}

func checkInputs(inputs *strictjson.Value) *Error {
	if inputs.Kind != strictjson.Object {
		return errorf(ReasonInvalidFrame, "inputs is a %s; it must be an object", inputs.Kind)
	}
	for _, m := range inputs.Members {
		what := "input " + quote(m.Name)
		e := m.Value
		if e.Kind != strictjson.Object {
			return errorf(ReasonInvalidFrame, "%s is a %s; it must be an object {\"value\":…,\"explicit\":…}", what, e.Kind)
		}
		if err := onlyMembers(e, what, "value", "explicit"); err != nil {
			return err
		}
		switch val := e.Get("value"); {
		case val == nil:
			return errorf(ReasonInvalidFrame, "%s has no value", what)
		case val.Kind == strictjson.Null || val.Kind == strictjson.Object:
			return errorf(ReasonInvalidFrame, "the value of %s is a %s; it must be a string, number, boolean or array", what, val.Kind)
		}
		if x := e.Get("explicit"); x == nil || x.Kind != strictjson.Bool {
			return errorf(ReasonInvalidFrame, "%s needs explicit, a boolean", what)
		}
	}
	return nil
}

// parseFrame parses one child→host line, without its newline.
func parseFrame(line []byte) (*Frame, *Error) {
	v, e := parseObject(line)
	if e != nil {
		return nil, e
	}
	switch t := v.Get("type").Text; t {
	case "progress":
		p, e := parseProgress(v)
		if e != nil {
			return nil, e
		}
		return &Frame{Progress: p}, nil
	case "complete":
		c, e := parseComplete(v, line)
		if e != nil {
			return nil, e
		}
		return &Frame{Complete: c}, nil
	default:
		return nil, errorf(ReasonUnknownType, "frame type %s is not progress or complete", quote(t))
	}
}

// parseObject parses line as strict JSON and checks that it is an object
// with a string type.
func parseObject(line []byte) (*strictjson.Value, *Error) {
	if len(line) > MaxFrame {
		return nil, errorf(ReasonFrameTooLarge, "the frame is %d bytes; the limit is %d", len(line), MaxFrame)
	}
	if bytes.IndexByte(line, '\n') >= 0 {
		return nil, errorf(ReasonInvalidFrame, "a frame is one line; this one has a newline inside")
	}
	v, err := strictjson.Parse(line, frameLimits)
	if err != nil {
		return nil, errorf(ReasonInvalidJSON, "%v", err)
	}
	if v.Kind != strictjson.Object {
		return nil, errorf(ReasonInvalidFrame, "a frame is a JSON object, not a %s", v.Kind)
	}
	switch t := v.Get("type"); {
	case t == nil:
		return nil, errorf(ReasonInvalidFrame, "the frame has no type member")
	case t.Kind != strictjson.String:
		return nil, errorf(ReasonInvalidFrame, "type is a %s; it must be a string", t.Kind)
	}
	return v, nil
}

func parseProgress(v *strictjson.Value) (*Progress, *Error) {
	if e := onlyMembers(v, "a progress frame", "type", "message", "done", "total"); e != nil {
		return nil, e
	}
	msg, e := stringMember(v, "message", false)
	if e != nil {
		return nil, e
	}
	if len(msg) > MaxMessage {
		return nil, errorf(ReasonInvalidFrame, "the progress message is %d bytes; the limit is %d", len(msg), MaxMessage)
	}
	p := &Progress{Message: msg}
	if p.Done, e = countMember(v, "done"); e != nil {
		return nil, e
	}
	if p.Total, e = countMember(v, "total"); e != nil {
		return nil, e
	}
	return p, nil
}

func parseComplete(v *strictjson.Value, line []byte) (*Complete, *Error) {
	if e := onlyMembers(v, "a complete frame", "type", "token", "status", "commandResult", "effects"); e != nil {
		return nil, e
	}
	c := &Complete{}
	var e *Error
	if c.Token, e = stringMember(v, "token", true); e != nil {
		return nil, e
	}
	if c.Status, e = stringMember(v, "status", true); e != nil {
		return nil, e
	}
	if c.Status != StatusSucceeded && c.Status != StatusCommandFailed {
		return nil, errorf(ReasonInvalidFrame, "status %s is not %q or %q", quote(c.Status), StatusSucceeded, StatusCommandFailed)
	}
	switch cr := v.Get("commandResult"); {
	case cr == nil && c.Status == StatusSucceeded:
		return nil, errorf(ReasonInvalidFrame, "a succeeded report needs a commandResult")
	case cr == nil:
	case cr.Kind != strictjson.Object:
		return nil, errorf(ReasonInvalidFrame, "commandResult is a %s; it must be an object", cr.Kind)
	default:
		c.CommandResult = bytes.Clone(line[cr.Start:cr.End])
	}
	if c.Effects, e = effects(v.Get("effects")); e != nil {
		return nil, e
	}
	return c, nil
}

func effects(v *strictjson.Value) ([]Effect, *Error) {
	if v == nil {
		return nil, nil
	}
	if v.Kind != strictjson.Array {
		return nil, errorf(ReasonInvalidFrame, "effects is a %s; it must be an array", v.Kind)
	}
	if len(v.Items) > MaxEffects {
		return nil, errorf(ReasonInvalidFrame, "%d effects; the limit is %d", len(v.Items), MaxEffects)
	}
	if len(v.Items) == 0 {
		return nil, nil
	}
	out := make([]Effect, len(v.Items))
	for i, it := range v.Items {
		what := "effect " + strconv.Itoa(i)
		if it.Kind != strictjson.Object {
			return nil, errorf(ReasonInvalidFrame, "%s is a %s; it must be an object {\"kind\":…,\"ref\":…}", what, it.Kind)
		}
		if e := onlyMembers(it, what, "kind", "ref"); e != nil {
			return nil, e
		}
		for _, f := range []struct {
			name string
			dst  *string
		}{{"kind", &out[i].Kind}, {"ref", &out[i].Ref}} {
			s, e := stringMember(it, f.name, true)
			if e != nil {
				return nil, errorf(ReasonInvalidFrame, "%s: %s", what, e.Message)
			}
			if len(s) > MaxEffectField {
				return nil, errorf(ReasonInvalidFrame, "the %s of %s is %d bytes; the limit is %d", f.name, what, len(s), MaxEffectField)
			}
			*f.dst = s
		}
	}
	return out, nil
}

// onlyMembers refuses a member of v not named in allowed.
func onlyMembers(v *strictjson.Value, what string, allowed ...string) *Error {
	for _, m := range v.Members {
		if !slices.Contains(allowed, m.Name) {
			return errorf(ReasonInvalidFrame, "%s has an unknown member %s", what, quote(m.Name))
		}
	}
	return nil
}

// stringMember returns the string member name of v, "" when it is absent
// and not required.
func stringMember(v *strictjson.Value, name string, required bool) (string, *Error) {
	m := v.Get(name)
	switch {
	case m == nil && required:
		return "", errorf(ReasonInvalidFrame, "%s is missing", name)
	case m == nil:
		return "", nil
	case m.Kind != strictjson.String:
		return "", errorf(ReasonInvalidFrame, "%s is a %s; it must be a string", name, m.Kind)
	}
	return m.Text, nil
}

// countMember returns the member name of v as a non-negative integer
// written without fraction or exponent, nil when it is absent.
func countMember(v *strictjson.Value, name string) (*int64, *Error) {
	m := v.Get(name)
	if m == nil {
		return nil, nil
	}
	if m.Kind != strictjson.Number {
		return nil, errorf(ReasonInvalidFrame, "%s is a %s; it must be a non-negative integer", name, m.Kind)
	}
	n, err := strconv.ParseInt(m.Text, 10, 64)
	if err != nil || n < 0 || m.Text[0] == '-' {
		return nil, errorf(ReasonInvalidFrame, "%s is %s; it must be an integer from 0 to %d", name, clip(m.Text, 32), int64(1<<63-1))
	}
	return &n, nil
}
