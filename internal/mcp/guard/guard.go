// Package guard is the outer guard of `rukh mcp`: a transport wrapper that
// checks every message's bytes before the MCP SDK decodes anything, and
// bounds what is written back.
//
// # Incoming
//
// Messages are newline-delimited JSON-RPC, one message a line, as with the
// SDK's stdio transport. A line is buffered up to [Limits.MaxMessage]+1
// bytes; the rest of an oversize line is counted and dropped. Every line is
// parsed by internal/strictjson (valid UTF-8, no unpaired surrogates, no
// duplicate keys, exact JSON grammar, no trailing data, depth and member
// limits) and must then be one JSON-RPC 2.0 object whose "id", when
// present, is a string or an integer within ±(2^53−1) — the SDK turns ids
// into float64, so a larger integer or a fraction would come back as a
// different id — and which jsonrpc.DecodeMessage accepts. Only such
// messages reach the SDK. Batches (a top-level array) are refused: MCP
// dropped them in 2025-06-18. Blank lines are skipped.
//
// A refused line never ends the session. It is logged and answered with a
// JSON-RPC error response, written through the same bounded queue as every
// other message:
//
//	-32700 parse error       json_syntax, json_invalid_utf8, json_invalid_unicode,
//	                         json_duplicate_key, json_trailing_data
//	-32600 invalid request   json_too_large, json_too_deep, json_too_many_members,
//	                         jsonrpc_not_object, jsonrpc_batch, jsonrpc_invalid_id,
//	                         jsonrpc_invalid
//
// The code name is in the error's data ({"code": "json_duplicate_key"}) and
// leads its message. The response carries the message's id when one can be
// read — for bytes that are not valid JSON, a lenient scan of the top-level
// object, which must find exactly one "id" member holding a valid id — and
// null otherwise. A refused message that is recognisably a response (a
// "result" or "error" member and no "method") is logged but not answered:
// answering a response could start an endless exchange of errors between
// two strict peers.
//
// A line whose first byte arrived more than [Limits.Stall] ago without its
// newline closes the transport; Read then returns [ErrReadStalled]. The
// clock starts at the first byte and is never extended. At end of input a
// final line without a newline is checked like any other, then Read returns
// io.EOF and the SDK ends the session.
//
// # Outgoing
//
// Write encodes with jsonrpc.EncodeMessage and appends the message to a
// queue of at most [Limits.QueueMessages] messages and [Limits.QueueBytes]
// bytes, counting the one being written; one goroutine writes the queue
// out. A full queue closes the transport ([ErrQueueFull]) instead of
// blocking or growing: a client that does not read its responses must not
// make the server buffer without bound, and blocking the SDK's handlers
// would hold their invocations open instead. A single write that has not
// finished [Limits.Stall] after it started closes the transport
// ([ErrWriteStalled]).
//
// A response whose encoding is over [Limits.MaxResponse] bytes is replaced
// by a JSON-RPC error response for the same id: code -32603, message
// "response too large: N bytes; the limit is M". For tools/call a complete
// tool result with isError would be friendlier, but the adapter already
// bounds command results (128 KiB) far below this limit, so reaching it is
// a fault and a protocol error is the honest answer. An oversize request or
// notification from the server is not sent; Write returns an error that the
// SDK treats as "rejected by transport" (code -32005), which fails that one
// call without breaking the connection.
//
// # Closing
//
// Close stops new writes, waits at most [Limits.Stall] for the queue to
// drain (so the last responses before end of input are delivered), then
// closes r when it is an io.Closer (as the SDK's stdio transport closes
// stdin) and never closes w. A read or write blocked in the operating
// system is not waited for: a stdin read that never returns ends with the
// process. When w has a SetWriteDeadline method (a net.Conn, a pollable
// file), closing sets the deadline to now so that a blocked write returns.
//
// Refusals and closes are logged to the given logger, never to w: the
// first 64 refusals of a connection one by one, later ones only as a count
// when it closes.
package guard

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits bounds one connection. A zero field takes its value from
// [DefaultLimits]; a negative field, or a QueueBytes that is not larger than
// MaxResponse, makes [Stdio] panic.
type Limits struct {
	MaxMessage    int           // bytes of one incoming line, without its newline
	MaxResponse   int           // bytes of one encoded outgoing message, without its newline
	MaxDepth      int           // nesting depth of an incoming message
	MaxMembers    int           // object members plus array elements of an incoming message
	QueueMessages int           // outgoing messages queued, the one being written included
	QueueBytes    int           // outgoing bytes queued, the one being written included
	Stall         time.Duration // a partial line or a blocked write, from its first byte
}

// DefaultLimits returns the limits of docs/limits.md: 1 MiB in,
// 2 MiB out, depth 32, 4,096 members, 32 messages or 4 MiB queued, 2 s
// stall.
func DefaultLimits() Limits {
	return Limits{
		MaxMessage:    1 << 20,
		MaxResponse:   2 << 20,
		MaxDepth:      32,
		MaxMembers:    4096,
		QueueMessages: 32,
		QueueBytes:    4 << 20,
		Stall:         2 * time.Second,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxMessage < 0 || l.MaxResponse < 0 || l.MaxDepth < 0 || l.MaxMembers < 0 ||
		l.QueueMessages < 0 || l.QueueBytes < 0 || l.Stall < 0 {
		panic("guard: a limit is negative")
	}
	pick := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	l.MaxMessage = pick(l.MaxMessage, d.MaxMessage)
	l.MaxResponse = pick(l.MaxResponse, d.MaxResponse)
	l.MaxDepth = pick(l.MaxDepth, d.MaxDepth)
	l.MaxMembers = pick(l.MaxMembers, d.MaxMembers)
	l.QueueMessages = pick(l.QueueMessages, d.QueueMessages)
	l.QueueBytes = pick(l.QueueBytes, d.QueueBytes)
	if l.Stall == 0 {
		l.Stall = d.Stall
	}
	if l.QueueBytes <= l.MaxResponse {
		panic("guard: QueueBytes must be larger than MaxResponse, or the largest response could never be queued")
	}
	return l
}

// Errors that end a connection. Read returns them once the transport has
// closed for that reason; Write returns ErrQueueFull for the message that
// did not fit.
var (
	// ErrReadStalled: a line's first byte arrived more than Limits.Stall
	// ago and its newline has not.
	ErrReadStalled = errors.New("mcp guard: a partial message stalled; closing the transport")
	// ErrWriteStalled: one write to the output has not finished within
	// Limits.Stall.
	ErrWriteStalled = errors.New("mcp guard: a write to the client stalled; closing the transport")
	// ErrQueueFull: the outgoing queue was full because the client is not
	// reading its responses.
	ErrQueueFull = errors.New("mcp guard: the outgoing queue is full because the client is not reading; closing the transport")
)

// Stdio returns an mcp.Transport over r (stdin) and w (stdout) that
// enforces lim. It replaces mcp.StdioTransport for `rukh mcp`. The
// transport makes one connection. A nil log discards.
func Stdio(r io.Reader, w io.Writer, lim Limits, log *slog.Logger) mcp.Transport {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &transport{r: r, w: w, lim: lim.withDefaults(), log: log}
}

type transport struct {
	r    io.Reader
	w    io.Writer
	lim  Limits
	log  *slog.Logger
	used atomic.Bool
}

// Connect implements mcp.Transport. It starts the reading and the writing
// goroutine of the connection.
func (t *transport) Connect(context.Context) (mcp.Connection, error) {
	if !t.used.CompareAndSwap(false, true) {
		return nil, errors.New("mcp guard: the transport is already connected; call Stdio for each connection")
	}
	c := newConn(t.r, t.w, t.lim, t.log)
	go c.readLoop()
	go c.writeLoop()
	return c, nil
}
