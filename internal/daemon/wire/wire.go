// Package wire is the protocol between a Rukh client (the CLI, `rukh mcp`)
// and the daemon: plain message types, their CBOR framing and the closed
// set of error codes. It imports no other package of the project, so both
// sides share it and neither imports the other.
//
// # Framing
//
// A frame is a 4-byte big-endian length followed by that many bytes of one
// CBOR-encoded Msg. Frames are at most MaxFrame bytes. Decoding is strict:
// duplicate map keys, unknown fields, indefinite lengths, tags and invalid
// UTF-8 are errors, and nesting, arrays and maps are bounded. Exactly one
// member of a Msg other than ID is set. A command line's members are
// coded by hand; the others by the CBOR library, which package wirecbor
// links (codec.go).
//
// # A connection
//
// One connection carries one operation. The client sends Hello; the
// daemon answers Hello or Error. The client then sends one request (Exec,
// ListTools, CallTool, BindTask, Status or Stop); the daemon answers with
// any number of events (Started, Progress, Diag) and then exactly one
// final message: the request's response or an Error. While it waits the
// client may send Cancel. During an Exec the daemon may send Spawn: the
// client starts that command as its own child and answers Spawned, then
// Exited. Either side closing the connection ends the operation; the
// daemon treats a client that goes away during an invocation like Ctrl-C
// (the invocation is stopped and recorded).
package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// ProtocolVersion is the version of this protocol. A daemon serves only
// clients of the same version (and, see Hello, the same build).
const ProtocolVersion = 1

// Bounds of a frame.
const (
	MaxFrame    = 4 << 20 // bytes, after the length prefix
	MaxDepth    = 16
	MaxElements = 8192 // array elements or map pairs in one container
)

// Msg is one frame. Exactly one member besides ID is set.
type Msg struct {
	ID uint64 `cbor:"id,omitempty"` // unused today; reserved for multiplexing

	Hello *Hello `cbor:"hello,omitempty"`
	Error *Error `cbor:"error,omitempty"`

	// Requests.
	Exec      *Exec      `cbor:"exec,omitempty"`
	BindTask  *BindTask  `cbor:"bindTask,omitempty"`
	ListTools *ListTools `cbor:"listTools,omitempty"`
	CallTool  *CallTool  `cbor:"callTool,omitempty"`
	Status    *Status    `cbor:"status,omitempty"`
	Stop      *Stop      `cbor:"stop,omitempty"`
	Cancel    *Cancel    `cbor:"cancel,omitempty"`

	WaitInvocations *WaitInvocations `cbor:"waitInvocations,omitempty"`
	// GetHTTP asks for the active profile's mcp.http section; the daemon
	// answers HTTP.
	GetHTTP *GetHTTP `cbor:"getHttp,omitempty"`
	// Settle asks the daemon to commit the outcomes other hosts saved
	// aside while it held the store; it answers Settled.
	Settle *Settle `cbor:"settle,omitempty"`

	// Events.
	Started  *Started  `cbor:"started,omitempty"`
	Progress *Progress `cbor:"progress,omitempty"`
	Diag     *Diag     `cbor:"diag,omitempty"`

	// The client starting an Exec's command for the daemon: Spawn is an
	// event of Exec; the client answers Spawned, then Exited.
	Spawn   *Spawn   `cbor:"spawn,omitempty"`
	Spawned *Spawned `cbor:"spawned,omitempty"`
	Exited  *Exited  `cbor:"exited,omitempty"`

	// Responses.
	Exit       *Exit         `cbor:"exit,omitempty"`
	Bound      *Bound        `cbor:"bound,omitempty"`
	ToolPage   *ToolPage     `cbor:"toolPage,omitempty"`
	CallResult *CallResult   `cbor:"callResult,omitempty"`
	Daemon     *DaemonStatus `cbor:"daemon,omitempty"`
	Stopping   *Stopping     `cbor:"stopping,omitempty"`

	WaitResult *WaitResult `cbor:"waitResult,omitempty"`
	Settled    *Settled    `cbor:"settled,omitempty"`
	HTTP       *HTTP       `cbor:"http,omitempty"`
}

// GetHTTP asks for the HTTP adapter's configuration.
type GetHTTP struct{}

// HTTP is the active profile's mcp.http section as JSON (empty: the
// profile has none, and HTTP is not to be served), and the revision it
// is of.
type HTTP struct {
	Section  []byte `cbor:"section,omitempty"`
	Revision uint64 `cbor:"revision"`
}

// Settle is a request to commit the saved-aside outcomes now.
type Settle struct{}

// Settled answers Settle: they are committed.
type Settled struct{}

// Hello opens a connection, both ways. Build identifies the binary's
// build (see docs/adr/0003-daemon.md): a daemon refuses a client of
// another build rather than serve it stale code.
type Hello struct {
	Protocol int    `cbor:"protocol"`
	Build    string `cbor:"build"`
	Name     string `cbor:"name"` // the CLI's name, e.g. "rukh"
	PID      int    `cbor:"pid,omitempty"`
}

// Error codes: a closed set. Clients map codes, never message text.
const (
	CodeBadRequest       = "bad_request"       // a malformed or unexpected frame
	CodeProtocolMismatch = "protocol_mismatch" // Hello.Protocol differs
	CodeBuildMismatch    = "build_mismatch"    // Hello.Build differs
	CodeDaemonStale      = "daemon_stale"      // the daemon's executable changed; it is draining
	CodeShuttingDown     = "shutting_down"     // the daemon is stopping and takes no new work
	CodeBusy             = "busy"              // the daemon serves as many connections as it may
	CodeUnknownTool      = "unknown_tool"      // unknown, obsolete or invisible tool name
	CodeBadCursor        = "bad_cursor"        // a list cursor that is invalid or stale
	CodeTaskUndefined    = "task_undefined"    // the bound task is not in the active profile
	CodeStoreUnavailable = "store_unavailable" // the store could not be read or written
	CodeStoreDamaged     = "store_damaged"     // the store file is corrupt
	CodeInternal         = "internal"          // anything else
	// A request the daemon understood but refuses as a whole: a wait on
	// no ids or more than MaxWaitIDs, a duplicate id, a timeout out of
	// bounds. The message says which; nothing was done.
	CodeInvalidArgument = "invalid_argument"
)

var codes = map[string]bool{
	CodeBadRequest: true, CodeProtocolMismatch: true, CodeBuildMismatch: true, CodeDaemonStale: true,
	CodeShuttingDown: true, CodeBusy: true, CodeUnknownTool: true, CodeBadCursor: true, CodeTaskUndefined: true,
	CodeStoreUnavailable: true, CodeStoreDamaged: true, CodeInternal: true, CodeInvalidArgument: true,
}

// Error is a failure that crosses the socket.
type Error struct {
	Code    string `cbor:"code"`
	Message string `cbor:"message"`
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Exec runs one CLI command line in the daemon, exactly as the CLI would
// run it in-process. Its frame carries the client's stdin, stdout and
// stderr (SCM_RIGHTS, in that order). Dir is absolute.
type Exec struct {
	Args []string `cbor:"args"`
	Dir  string   `cbor:"dir"`
	Env  []string `cbor:"env"`
}

// Spawn asks the client that sent an Exec to start the command the
// daemon admitted for it, as its own child, so that the command is part
// of the caller's job at the caller's terminal (docs/adr/0008-thin-client.md).
// Everything that decides what runs is here, decided by the daemon: the
// client starts exactly this. Files descriptors come with it: the
// command's stdin, stdout and stderr, then its descriptors from 3 on (the
// channel, the enforcement helper's report pipe), in order.
type Spawn struct {
	Path    string   `cbor:"path"`
	Args    []string `cbor:"args"`
	Env     []string `cbor:"env"`
	Dir     string   `cbor:"dir"`
	Session bool     `cbor:"session,omitempty"` // a session of its own; else a group of its own, or the caller's job in its terminal's foreground
	// Supervised: Path is the enforcement helper, which supervises the
	// command (spawn.Job).
	Supervised bool `cbor:"supervised,omitempty"`
	Files      int  `cbor:"files"`
	// Ticket is a random number the daemon draws for this Spawn; the
	// Spawned that answers it carries it back. A Spawned sent before the
	// Spawn came cannot, and is a protocol fault, however the two cross
	// on the socket.
	Ticket uint64 `cbor:"ticket"`
}

// Spawned answers Spawn: the command runs as PID, and its pidfd comes
// with the frame; or Error says why it could not be started (and nothing
// comes with it).
type Spawned struct {
	Ticket     uint64 `cbor:"ticket"` // the Spawn's
	PID        int    `cbor:"pid,omitempty"`
	Foreground bool   `cbor:"foreground,omitempty"` // it joined the caller's job
	Error      string `cbor:"error,omitempty"`
}

// Exited tells the daemon the exit status of the command the client
// started, as a shell reports it (128+N for signal N).
type Exited struct {
	Status int `cbor:"status"`
}

// Exit ends an Exec with the command line's exit status.
type Exit struct {
	Status int `cbor:"status"`
}

// BindTask checks the task a `rukh mcp` serves: Task, or the profile's
// mcp.task when empty.
type BindTask struct {
	Task string `cbor:"task"`
}

// Bound is the task a BindTask resolved.
type Bound struct {
	Task string `cbor:"task"`
}

// ListTools asks for one page of the tools Task may see.
type ListTools struct {
	Task   string `cbor:"task"`
	Cursor string `cbor:"cursor"`
	// Subject and Issuer are the verified caller of an HTTP request: its
	// cursors are its own (CallTool's, likewise).
	Subject string `cbor:"subject,omitempty"`
	Issuer  string `cbor:"issuer,omitempty"`
	// Denied asks for ToolPage.Denied too (what `mcp` says at start and
	// `tools` shows; an agent's listing never needs it).
	Denied bool `cbor:"denied,omitempty"`
}

// DeniedTool is a tool the task sees, every call of which it denies: its
// command asks for Action on Resource (a template), which no allow rule
// of the task grants for any inputs (invoke.Unallowed).
type DeniedTool struct {
	Name     string `cbor:"name"`
	Identity string `cbor:"identity"`
	Action   string `cbor:"action"`
	Resource string `cbor:"resource"`
}

// ToolPage is one page of tools in name order.
type ToolPage struct {
	Revision   uint64  `cbor:"revision"`
	Tools      []*Tool `cbor:"tools"`
	NextCursor string  `cbor:"nextCursor"`
	// Of the whole list: how many tools, how many commands the task
	// sees through them (more than one per tool under the dispatch
	// projection), and the projection's name.
	Total      int    `cbor:"total"`
	Commands   int    `cbor:"commands"`
	Projection string `cbor:"projection"`
	// Denied, when ListTools.Denied asked for it: of the whole list, in
	// name order.
	Denied []*DeniedTool `cbor:"denied,omitempty"`
	// Naming is how the tools are named: "full" or "compact".
	Naming string `cbor:"naming,omitempty"`
}

// Tool is one MCP tool as listed.
type Tool struct {
	Name         string       `cbor:"name"`
	Title        string       `cbor:"title"`
	Description  string       `cbor:"description"`
	InputSchema  []byte       `cbor:"inputSchema"`  // JSON
	OutputSchema []byte       `cbor:"outputSchema"` // JSON
	Annotations  *Annotations `cbor:"annotations,omitempty"`
}

// Annotations are a tool's hints; nil members are not declared.
type Annotations struct {
	ReadOnly    *bool `cbor:"readOnly,omitempty"`
	Destructive *bool `cbor:"destructive,omitempty"`
	Idempotent  *bool `cbor:"idempotent,omitempty"`
	OpenWorld   *bool `cbor:"openWorld,omitempty"`
}

// CallTool calls a tool by name under Task. The daemon resolves the name
// against its own current revision and pins the command itself.
type CallTool struct {
	Task      string `cbor:"task"`
	Name      string `cbor:"name"`
	Arguments []byte `cbor:"arguments"` // JSON, as the client sent it
	Progress  bool   `cbor:"progress"`  // send Progress events
	Diag      bool   `cbor:"diag"`      // send Diag events (the diagnostics log)
	// Detach answers as soon as the call is admitted and recorded (its
	// CallResult has Detached set and no outcome yet) while the command
	// runs on in the host, under the same deadline, slot and record as
	// any call; WaitInvocations observes it. A call refused at admission
	// answers with its outcome, as without Detach.
	// docs/adr/0005-detached-runs-and-waits.md.
	Detach bool `cbor:"detach,omitempty"`
	// Subject and Issuer are the caller an HTTP request was verified as
	// (its binding picked Task); recorded with the invocation. Empty for
	// a local caller.
	Subject string `cbor:"subject,omitempty"`
	Issuer  string `cbor:"issuer,omitempty"`
}

// Cancel stops the operation in progress; Reason is "interrupted" or
// "client_cancelled".
type Cancel struct {
	Reason string `cbor:"reason"`
}

// Started says an invocation began, with its id.
type Started struct {
	InvocationID string `cbor:"invocationId"`
}

// Progress is a call's progress report: Done of Total, in the command's
// own units, or for a batch of the dispatch tool in ops (a command's
// progress a fraction of its op's).
type Progress struct {
	Message string   `cbor:"message"`
	Done    *float64 `cbor:"done,omitempty"`
	Total   *float64 `cbor:"total,omitempty"`
}

// Diag is one line of the diagnostics log, newline included.
type Diag struct {
	Line string `cbor:"line"`
}

// CallResult is the committed outcome of a tool call.
type CallResult struct {
	InvocationID string `cbor:"invocationId"`
	Outcome      string `cbor:"outcome"`
	Reason       string `cbor:"reason"`
	Message      string `cbor:"message"`
	// Detached: the call was admitted and runs on in its host (CallTool
	// with Detach); Outcome is empty until WaitInvocations sees it end.
	Detached    bool           `cbor:"detached,omitempty"`
	Result      *CommandResult `cbor:"result,omitempty"`
	Effects     []Effect       `cbor:"effects,omitempty"`
	InputSchema []byte         `cbor:"inputSchema,omitempty"` // the tool's, for an invalid_input refusal
	RecordError string         `cbor:"recordError,omitempty"` // the outcome could not be recorded
	// ApprovalID is the approval an approval_required refusal asks for.
	ApprovalID string `cbor:"approvalId,omitempty"`
	// Dispatch is the answer of a call of the dispatch tool
	// (docs/adr/0006-dispatch-projection.md): then it is the only member
	// set.
	Dispatch *DispatchResult `cbor:"dispatch,omitempty"`
}

// DispatchResult answers one call of the dispatch tool: help, the ops'
// results in input order, or why the call itself was refused (then
// nothing ran).
type DispatchResult struct {
	Error *OpError    `cbor:"error,omitempty"`
	Help  []byte      `cbor:"help,omitempty"` // JSON: the catalog, or one command's schemas
	Ops   []*OpResult `cbor:"ops"`
}

// OpResult is what became of one op of a dispatch call.
type OpResult struct {
	Op       string      `cbor:"op"`
	Call     *CallResult `cbor:"call,omitempty"` // the op's invocation, once it reached admission
	Detached bool        `cbor:"detached,omitempty"`
	Error    *OpError    `cbor:"error,omitempty"`  // why the op did not run, or did not succeed
	Schema   []byte      `cbor:"schema,omitempty"` // JSON: the command's schemas, for an op that failed
	Wait     []byte      `cbor:"wait,omitempty"`   // JSON: what invocations.wait observed
}

// OpError is a dispatch call's or one op's failure: a code from the
// closed set of docs/mcp.md and what to do.
type OpError struct {
	Code    string `cbor:"code"`
	Message string `cbor:"message"`
}

// CommandResult is a command's validated result.
type CommandResult struct {
	Kind string `cbor:"kind"` // "text" or "structured"
	Text string `cbor:"text,omitempty"`
	Data []byte `cbor:"data,omitempty"` // JSON
}

// Effect is a safe effect reference a command reported.
type Effect struct {
	Kind string `cbor:"kind"`
	Ref  string `cbor:"ref"`
}

// Bounds of a wait: ids in one WaitInvocations, and its longest window.
// A presentation may use a shorter window (an MCP client's own request
// timeout); never a longer one.
const (
	MaxWaitIDs       = 64
	MaxWaitTimeoutMs = 10 * 60 * 1000
)

// WaitInvocations observes the invocations IDs (each a full id or a
// unique prefix of at least 8 hex characters) for at most TimeoutMs (0
// looks once) until every one is terminal or cannot change by waiting.
// Only the records of Task are seen; any other id is unknown, exactly like
// one that does not exist. Observing never changes a record or a run:
// cancelling the wait (or closing the connection) leaves them as they are.
type WaitInvocations struct {
	Task      string   `cbor:"task"`
	IDs       []string `cbor:"ids"`
	TimeoutMs int64    `cbor:"timeoutMs"`
}

// The statuses of an id in a WaitResult.
const (
	WaitTerminal = "terminal" // its outcome is recorded: it never changes again
	WaitPending  = "pending"  // running, its host alive: waiting may change it
	WaitStopped  = "stopped"  // open, but its host is gone: the next admission of any call records it
	WaitUnknown  = "unknown"  // no record the caller may see; Error says why
)

// WaitResult is what a wait saw: one entry per id, in the order given,
// and the ids partitioned by status: every id is in exactly one of
// Terminal, Pending, Stopped and Unknown (each in the order given). An
// expired window is not an error: TimedOut says it closed with ids still
// pending. Its JSON encoding is what `rukh invocations wait --json`
// prints and what the dispatch verb invocations.wait answers.
type WaitResult struct {
	Entries     []WaitEntry `cbor:"entries" json:"entries"`
	AllTerminal bool        `cbor:"allTerminal" json:"allTerminal"`
	TimedOut    bool        `cbor:"timedOut" json:"timedOut"`
	Terminal    []string    `cbor:"terminal" json:"terminal"`
	Pending     []string    `cbor:"pending" json:"pending"`
	Stopped     []string    `cbor:"stopped" json:"stopped"`
	Unknown     []string    `cbor:"unknown" json:"unknown"`
	TimeoutMs   int64       `cbor:"timeoutMs" json:"timeoutMs"` // the window that applied
}

// WaitEntry is one id of a wait. Every entry has every member, so a
// caller reads one shape whether or not it carries an error.
type WaitEntry struct {
	ID           string `cbor:"id" json:"id"`                     // as given, lowercased
	InvocationID string `cbor:"invocationId" json:"invocationId"` // the full id; "" when unknown
	Command      string `cbor:"command" json:"command"`           // the command's identity; "" when unknown
	Status       string `cbor:"status" json:"status"`             // WaitTerminal, WaitPending, WaitStopped or WaitUnknown
	Terminal     bool   `cbor:"terminal" json:"terminal"`
	Outcome      string `cbor:"outcome" json:"outcome"` // "" unless terminal
	Reason       string `cbor:"reason" json:"reason"`
	Error        string `cbor:"error" json:"error"` // "" unless unknown
}

// Status asks the daemon how it is.
type Status struct{}

// DaemonStatus is the daemon's answer to Status.
type DaemonStatus struct {
	PID         int    `cbor:"pid"`
	Build       string `cbor:"build"`
	StartedUnix int64  `cbor:"startedUnix"` // seconds
	Socket      string `cbor:"socket"`
	Activated   bool   `cbor:"activated"` // the socket came from systemd
	Revision    uint64 `cbor:"revision"`
	Connections int    `cbor:"connections"`
	InFlight    int    `cbor:"inFlight"` // running invocations
	// Draining: the daemon takes no new work (it was upgraded on disk, or
	// told to stop) and exits once what it runs has ended.
	Draining bool  `cbor:"draining,omitempty"`
	RSSBytes int64 `cbor:"rssBytes"`
	// StoreError is why the store could not be read (damaged, say); ""
	// when it reads.
	StoreError string `cbor:"storeError,omitempty"`
	// StoreWriteError is why the daemon's writes to the store fail (a
	// full disk, say) since StoreWriteFailingUnix; "" when its last
	// write went through.
	StoreWriteError       string `cbor:"storeWriteError,omitempty"`
	StoreWriteFailingUnix int64  `cbor:"storeWriteFailingUnix,omitempty"`
	// PendingOutcomes counts the outcomes saved aside that wait for the
	// store to take them.
	PendingOutcomes int `cbor:"pendingOutcomes,omitempty"`
}

// Stop asks the daemon to stop: take no new work, finalize what runs,
// exit.
type Stop struct{}

// Stopping acknowledges Stop.
type Stopping struct{}

// A Msg is encoded and decoded member by member (MarshalCBOR,
// UnmarshalCBOR): the codec then learns only the types a process sends
// and receives, not all of Msg's members and theirs at the first frame.
// That first frame is on the path of every thin client's call: its
// hello took 0.13-0.17 ms to encode, about half of it the codec walking
// every member type (docs/benchmarks.md, "Seventh pass"). The bytes are
// the same as the codec's own for the struct (TestMsgCodec), and so is
// what a body decodes to (FuzzMsgCodec).

// msgMember is one field of Msg: its index and its CBOR key, encoded.
type msgMember struct {
	index int
	key   []byte
}

var msgMembers = sync.OnceValues(func() (inOrder []msgMember, byKey map[string]int) {
	t := reflect.TypeFor[Msg]()
	if t.NumField() > 64 {
		panic("wire: Msg's members are read with a 64-bit set (readMap)")
	}
	byKey = map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("cbor"), ",")
		if len(name) >= 24 {
			panic("wire: a member's key takes one byte of length: " + name)
		}
		// A text string of fewer than 24 bytes: its head, then its bytes.
		inOrder = append(inOrder, msgMember{i, append([]byte{0x60 | byte(len(name))}, name...)})
		byKey[name] = i
	}
	// Core deterministic order, as cbor.SortCoreDeterministic sorts a
	// struct's keys: by their encoded bytes.
	slices.SortFunc(inOrder, func(a, b msgMember) int { return bytes.Compare(a.key, b.key) })
	return inOrder, byKey
})

// MarshalCBOR encodes m as the codec would encode the struct: a map of
// its set members (omitempty), in core deterministic order.
func (m *Msg) MarshalCBOR() ([]byte, error) { return appendMsg(nil, m) }

// appendMsg appends m's encoding (MarshalCBOR) to buf, each member's
// value written by the codec straight after its key.
func appendMsg(buf []byte, m *Msg) ([]byte, error) {
	inOrder, _ := msgMembers()
	v := reflect.ValueOf(m).Elem()
	n := 0
	for _, f := range inOrder {
		if !v.Field(f.index).IsZero() {
			n++
		}
	}
	if n < 24 { // a map's head: its number of pairs, Msg has fewer than 256 fields
		buf = append(buf, 0xa0|byte(n))
	} else {
		buf = append(buf, 0xb8, byte(n))
	}
	b := buf
	for _, f := range inOrder {
		fv := v.Field(f.index)
		if fv.IsZero() {
			continue
		}
		b = append(b, f.key...)
		if e, ok := fv.Interface().(memberEncoder); ok {
			b = e.appendCBOR(b)
			continue
		}
		c, err := memberCodec(fv.Interface())
		if err != nil {
			return buf, err
		}
		if b, err = c.AppendMember(b, fv.Interface()); err != nil {
			return buf, err
		}
	}
	return b, nil
}

// UnmarshalCBOR decodes a map of members into m, each member's key and
// value straight into its field with the frame's strict options (one
// level of nesting fewer: the map is the first), so that each byte of a
// frame is checked once: Decode calls it directly. A key that is not
// text, names no member or names one twice is an error, as for the
// struct; so is anything after the map.
func (m *Msg) UnmarshalCBOR(data []byte) error {
	*m = Msg{}
	if isNil(data) {
		return extraneous(data, data[1:]) // null or undefined: no member, as for the struct
	}
	_, byKey := msgMembers()
	v := reflect.ValueOf(m).Elem()
	index := func(key []byte) int {
		if i, ok := byKey[string(key)]; ok {
			return i
		}
		return -1
	}
	rest, err := readMap(data, "wire.Msg", index, func(i int, rest []byte) ([]byte, error) {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && f.Type().Implements(memberDecoderType) {
			if isNil(rest) {
				return rest[1:], nil // no member, as for the struct
			}
			p := reflect.New(f.Type().Elem())
			rest, err := p.Interface().(memberDecoder).decodeCBOR(rest)
			if err != nil {
				return nil, err
			}
			f.Set(p)
			return rest, nil
		}
		c, err := memberCodec(f.Interface())
		if err != nil {
			return nil, err
		}
		return c.DecodeMember(rest, f.Addr().Interface())
	})
	if err != nil {
		return err
	}
	return extraneous(data, rest)
}

var memberDecoderType = reflect.TypeFor[memberDecoder]()

// ErrFrame is wrapped by every error about a frame's bytes.
var ErrFrame = errors.New("bad frame")

// Encode appends m's frame to buf.
func Encode(buf []byte, m *Msg) ([]byte, error) {
	start := len(buf)
	out, err := appendMsg(append(buf, 0, 0, 0, 0), m) // the length, once known
	if err != nil {
		return buf[:start], err
	}
	n := len(out) - start - 4
	if n > MaxFrame {
		return buf[:start], fmt.Errorf("%w: %d bytes, more than %d", ErrFrame, n, MaxFrame)
	}
	binary.BigEndian.PutUint32(out[start:], uint32(n))
	return out, nil
}

// Decode decodes one frame body (without its length prefix) strictly.
func Decode(body []byte) (*Msg, error) {
	var m Msg
	if err := m.UnmarshalCBOR(body); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFrame, err)
	}
	if n := m.members(); n != 1 {
		return nil, fmt.Errorf("%w: %d members set, want exactly one", ErrFrame, n)
	}
	if m.Error != nil && !codes[m.Error.Code] {
		return nil, fmt.Errorf("%w: unknown error code %q", ErrFrame, m.Error.Code)
	}
	if m.Spawn != nil && (m.Spawn.Files < ExecFiles || m.Spawn.Files > MaxFiles) {
		return nil, fmt.Errorf("%w: a spawn with %d descriptors; it takes %d to %d", ErrFrame, m.Spawn.Files, ExecFiles, MaxFiles)
	}
	return &m, nil
}

// Reads reports whether m is a read: a request that changes nothing,
// runs nothing and is answered with one final message (bindTask,
// listTools, getHttp). A read may be followed by another read on the
// same connection, so that a long-lived client (`rukh mcp`, the HTTP
// adapter) keeps one connection for them instead of a dial, a peer check
// and a hello each; and since a read changes nothing, a client may send
// it again on a new connection when the kept one turns out closed.
func (m *Msg) Reads() bool {
	return m.BindTask != nil || m.ListTools != nil || m.GetHTTP != nil
}

// files is how many descriptors must come with m.
func (m *Msg) files() int {
	switch {
	case m.Exec != nil:
		return ExecFiles
	case m.Spawn != nil:
		return m.Spawn.Files
	case m.Spawned != nil && m.Spawned.Error == "":
		return 1
	}
	return 0
}

// members counts the set members of m besides ID.
func (m *Msg) members() int {
	v := reflect.ValueOf(m).Elem()
	n := 0
	for i := 1; i < v.NumField(); i++ {
		if !v.Field(i).IsNil() {
			n++
		}
	}
	return n
}

// ReadFrame reads one frame body from r; at most MaxFrame bytes are
// allocated, whatever the prefix says.
func ReadFrame(r io.Reader) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: %d bytes announced, more than %d", ErrFrame, n, MaxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%w: truncated: %v", ErrFrame, err)
	}
	return body, nil
}

// Read reads and decodes one frame.
func Read(r io.Reader) (*Msg, error) {
	body, err := ReadFrame(r)
	if err != nil {
		return nil, err
	}
	return Decode(body)
}

// Write encodes m and writes its frame in one Write.
func Write(w io.Writer, m *Msg) error {
	buf, err := Encode(nil, m)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}
