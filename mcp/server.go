// Package mcp is the MCP presentation of Rukh: `rukh mcp` serves
// tools/list and tools/call from the projection of the current revision,
// through the official go-sdk, on the same invocation core as the CLI.
// It adds a front door and nothing else: no argv, no shell, no second
// validator.
package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/rukh-cli/rukh/client"
	"github.com/rukh-cli/rukh/extproto"
	"github.com/rukh-cli/rukh/invoke"
	"github.com/rukh-cli/rukh/profile"
	"github.com/rukh-cli/rukh/projection"
)

// Listing limits (DESIGN I8, §9).
const (
	PageTools    = 32
	PageBytes    = 1 << 20
	ListDeadline = 30 * time.Second
)

// Binding is the launch binding of one `rukh mcp` process: fixed at start,
// never changed by anything a client sends (tool arguments and clientInfo
// claim nothing).
type Binding struct {
	Task string // the task preset every call runs under
	UID  int    // the subject: the local user who started the server
}

// Options configure a server.
type Options struct {
	Host    client.Host
	Binding Binding
	Name    string // the CLI's name, e.g. "rukh"
	Version string
	Logger  *slog.Logger
	// Diagnostics receives the diagnostics log (invoke.DiagnosticsLog):
	// the bounded stdout and stderr of commands, line by line, and each
	// invocation's start and outcome; never the protocol's stdout.
	Diagnostics io.Writer
}

// Server is an MCP server whose tools come from the Host's projection per
// request: a receiving middleware answers tools/list and tools/call, so no
// tool is registered statically.
type Server struct {
	*sdk.Server
	a *adapter
}

// NewServer returns a Server for opts.
func NewServer(opts Options) *Server {
	s := sdk.NewServer(&sdk.Implementation{Name: opts.Name, Version: opts.Version}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		Logger:       opts.Logger,
	})
	life, stop := context.WithCancel(context.Background())
	a := &adapter{opts: opts, life: life, stop: stop}
	if opts.Diagnostics != nil {
		a.diag = invoke.NewDiagnosticsLog(opts.Diagnostics)
	}
	s.AddReceivingMiddleware(a.middleware)
	return &Server{Server: s, a: a}
}

// Connect serves one session on t, like the SDK's Connect, through the
// adapter's connection wrapper (see sessionConn).
func (s *Server) Connect(ctx context.Context, t sdk.Transport, opts *sdk.ServerSessionOptions) (*sdk.ServerSession, error) {
	return s.Server.Connect(ctx, sessionTransport{t, s.a}, opts)
}

// Run serves one session on t until the client goes away (EOF on stdin, a
// broken stdout, a closed transport) or ctx ends; then it stops every
// invocation still running and waits until each is finalized. When ctx
// ends first (SIGTERM or Ctrl-C to `rukh mcp`), running invocations are
// stopped at once and recorded as cancelled/interrupted: the host is going
// away, so nothing may outlive it or be recorded as if it had finished.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	// The session outlives ctx just long enough to stop, finalize and
	// answer the calls that were running: the agent learns what became of
	// them (cancelled/interrupted, with their invocation ids).
	session, endSession := context.WithCancel(context.WithoutCancel(ctx))
	defer endSession()
	stopOnSignal := context.AfterFunc(ctx, func() {
		s.a.end(invoke.ReasonInterrupted)
		s.a.inflight.Wait()
		if c := s.a.conn.Load(); c != nil {
			c.waitAnswered(answerWait)
		}
		endSession()
	})
	defer stopOnSignal()
	err := s.Server.Run(session, sessionTransport{t, s.a})
	s.a.end(invoke.ReasonClientCancelled)
	s.a.inflight.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// answerWait bounds how long a stopping server waits for the responses of
// its finalized calls to be written.
const answerWait = 2 * time.Second

// sessionTransport wraps the session's connection (sessionConn).
type sessionTransport struct {
	sdk.Transport
	a *adapter
}

func (n sessionTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := n.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc := &sessionConn{Connection: c, end: func() { n.a.end(invoke.ReasonClientCancelled) }, cancelled: map[string]bool{}, unanswered: map[string]bool{}}
	n.a.conn.Store(sc)
	return sc, nil
}

// maxCancelled bounds the remembered cancelled request ids (a client may
// cancel ids that were never pending).
const maxCancelled = 1024

// sessionConn is the session's connection as the SDK sees it. It does
// three things the SDK does not:
//
//   - it calls end as soon as the connection cannot be read or written any
//     more, so running invocations are stopped at once rather than when
//     the SDK has drained its handlers;
//   - it drops the response to a request the client cancelled, which MCP
//     says must not be answered (the SDK would answer it);
//   - it refuses, before dispatch, a tools/call that carries continuation
//     input (inputResponses or requestState, even empty): this server never
//     asks for input, so such input is unsolicited and nothing may run on
//     it (docs/mcp.md, "No input continuation").
type sessionConn struct {
	sdk.Connection
	end        func()
	mu         sync.Mutex
	cancelled  map[string]bool
	unanswered map[string]bool // tools/call requests not yet answered
}

// waitAnswered waits until every tools/call read has been answered (or
// its answer dropped), or for at most d.
func (c *sessionConn) waitAnswered(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		n := len(c.unanswered)
		c.mu.Unlock()
		if n == 0 {
			return
		}
	}
}

func idKey(id any) string { return fmt.Sprintf("%v", id) }

func (c *sessionConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			c.end()
			return m, err
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() && req.Method == "tools/call" {
			if field := continuationField(req.Params); field != "" {
				err := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
					Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("tools/call carries %q, but this server never asked for input: "+
						"continuation input is not supported; call the tool again without inputResponses and requestState", field),
				}})
				if err != nil {
					c.end()
					return nil, err
				}
				continue
			}
			c.mu.Lock()
			c.unanswered[idKey(req.ID.Raw())] = true
			c.mu.Unlock()
		}
		c.noteCancel(m)
		return m, nil
	}
}

// continuationField returns the first continuation member of tools/call
// params ("inputResponses" or "requestState"), whatever its value.
func continuationField(params json.RawMessage) string {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return "" // the SDK answers malformed params itself
	}
	for _, f := range []string{"inputResponses", "requestState"} {
		if _, ok := p[f]; ok {
			return f
		}
	}
	return ""
}

// noteCancel remembers the request a notifications/cancelled names.
func (c *sessionConn) noteCancel(m jsonrpc.Message) {
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil && p.RequestID != nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.mu.Lock()
				if len(c.cancelled) >= maxCancelled {
					clear(c.cancelled)
				}
				c.cancelled[idKey(id.Raw())] = true
				c.mu.Unlock()
			}
		}
	}
}

func (c *sessionConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if resp, ok := m.(*jsonrpc.Response); ok {
		c.mu.Lock()
		drop := c.cancelled[idKey(resp.ID.Raw())]
		delete(c.cancelled, idKey(resp.ID.Raw()))
		delete(c.unanswered, idKey(resp.ID.Raw()))
		c.mu.Unlock()
		if drop {
			return nil
		}
	}
	err := c.Connection.Write(ctx, m)
	if err != nil {
		c.end()
	}
	return err
}

func (c *sessionConn) Close() error {
	c.end()
	return c.Connection.Close()
}

type adapter struct {
	opts     Options
	life     context.Context // ends when the session does
	stop     context.CancelFunc
	why      atomic.Pointer[string]      // why life ended: the first reason given
	conn     atomic.Pointer[sessionConn] // the session's connection, once connected
	diag     *invoke.DiagnosticsLog
	inflight sync.WaitGroup

	keyMu sync.Mutex
	key   []byte // the cursor key; the store secret never changes
}

// end ends the session's life for reason (invoke.ReasonInterrupted or
// invoke.ReasonClientCancelled), stopping every running invocation; the
// first reason given is the one kept.
func (a *adapter) end(reason string) {
	a.why.CompareAndSwap(nil, &reason)
	a.stop()
}

// cancelReason says why a call's context ended: the session's reason when
// the session ended, else the client cancelled that request.
func (a *adapter) cancelReason() string {
	if a.life.Err() != nil {
		if why := a.why.Load(); why != nil {
			return *why
		}
	}
	return invoke.ReasonClientCancelled
}

// cursorKey reads the cursor key once per process.
func (a *adapter) cursorKey(ctx context.Context) ([]byte, error) {
	a.keyMu.Lock()
	defer a.keyMu.Unlock()
	if a.key == nil {
		k, err := a.opts.Host.CursorKey(ctx)
		if err != nil {
			return nil, err
		}
		a.key = k
	}
	return a.key, nil
}

func (a *adapter) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "tools/list":
			return a.list(ctx, req.(*sdk.ListToolsRequest))
		case "tools/call":
			return a.call(ctx, req.(*sdk.CallToolRequest))
		}
		return next(ctx, method, req)
	}
}

// visible returns the projection of the current revision and the tools
// the bound task may see, in name order. A task that cannot be read is an
// error, never an empty list.
func (a *adapter) visible(ctx context.Context) (*projection.Projection, []*projection.Tool, error) {
	p, prof, err := a.opts.Host.Projection(ctx)
	if err != nil {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "cannot read the tool projection: " + err.Error()}
	}
	task, ok := prof.Tasks[a.opts.Binding.Task]
	if !ok {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("the task %q this server is bound to is not defined in the active profile; the owner must restore it", a.opts.Binding.Task)}
	}
	var tools []*projection.Tool
	for i := range p.Tools {
		t := &p.Tools[i]
		for _, pat := range task.Commands {
			if profile.Matches(pat, t.Identity) {
				tools = append(tools, t)
				break
			}
		}
	}
	return p, tools, nil
}

func (a *adapter) list(ctx context.Context, req *sdk.ListToolsRequest) (sdk.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, ListDeadline)
	defer cancel()
	p, tools, err := a.visible(ctx)
	if err != nil {
		return nil, err
	}
	start := 0
	if req.Params != nil && req.Params.Cursor != "" {
		key, err := a.cursorKey(ctx)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		pos, ok := readCursor(key, req.Params.Cursor, p.Revision, a.opts.Binding.Task)
		if !ok || pos > len(tools) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: "the cursor is invalid or from an older tool list (the profile changed); list the tools again from the start"}
		}
		start = pos
	}
	res := &sdk.ListToolsResult{Tools: []*sdk.Tool{}, Cacheable: sdk.Cacheable{TTLMs: 0, CacheScope: "private"}}
	size := 0
	end := start
	for ; end < len(tools) && end-start < PageTools; end++ {
		t := toSDK(tools[end])
		n := len(t.Name) + len(t.Title) + len(t.Description) + len(tools[end].InputSchema) + len(tools[end].OutputSchema) + 256
		if end > start && size+n > PageBytes {
			break
		}
		size += n
		res.Tools = append(res.Tools, t)
	}
	if end < len(tools) {
		key, err := a.cursorKey(ctx)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		res.NextCursor = makeCursor(key, p.Revision, a.opts.Binding.Task, end)
	}
	return res, nil
}

func toSDK(t *projection.Tool) *sdk.Tool {
	st := &sdk.Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
	}
	an := t.Annotations
	if an.ReadOnlyHint != nil || an.DestructiveHint != nil || an.IdempotentHint != nil || an.OpenWorldHint != nil {
		st.Annotations = &sdk.ToolAnnotations{DestructiveHint: an.DestructiveHint, OpenWorldHint: an.OpenWorldHint}
		if an.ReadOnlyHint != nil {
			st.Annotations.ReadOnlyHint = *an.ReadOnlyHint
		}
		if an.IdempotentHint != nil {
			st.Annotations.IdempotentHint = *an.IdempotentHint
		}
	}
	return st
}

// A cursor is base64url(revision | position | HMAC-SHA256(key, revision |
// position | task)[:16]): bound to the revision, the visibility binding and
// the position, and useless once any of them changes.
func makeCursor(key []byte, rev uint64, task string, pos int) string {
	buf := binary.BigEndian.AppendUint64(nil, rev)
	buf = binary.BigEndian.AppendUint32(buf, uint32(pos))
	buf = append(buf, cursorMAC(key, buf, task)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

func readCursor(key []byte, cursor string, rev uint64, task string) (int, bool) {
	if len(cursor) > 64 {
		return 0, false
	}
	buf, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(buf) != 12+16 {
		return 0, false
	}
	if !hmac.Equal(buf[12:], cursorMAC(key, buf[:12], task)) || binary.BigEndian.Uint64(buf) != rev {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(buf[8:12])), true
}

func cursorMAC(key, head []byte, task string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(head)
	m.Write([]byte(task))
	return m.Sum(nil)[:16]
}

// errUnknownTool is the one answer for unknown, obsolete and invisible
// names alike, so it reveals nothing about hidden tools.
func errUnknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

func (a *adapter) call(ctx context.Context, req *sdk.CallToolRequest) (sdk.Result, error) {
	// An invocation ends with its request (notifications/cancelled) or with
	// the session, whichever comes first.
	a.inflight.Add(1)
	defer a.inflight.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(a.life, cancel)()
	name := req.Params.Name
	p, tools, err := a.visible(ctx)
	if err != nil {
		return nil, err
	}
	tool := p.Tool(name)
	if tool == nil || !contains(tools, tool) {
		return nil, errUnknownTool(name)
	}
	target, err := a.opts.Host.ResolveTool(ctx, p.Revision, tool)
	if errors.Is(err, invoke.ErrStale) {
		return nil, errUnknownTool(name)
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	r := &invoke.Request{
		Transport:    invoke.TransportMCP,
		Task:         a.opts.Binding.Task,
		Arguments:    req.Params.Arguments,
		Diagnostics:  a.diag,
		CancelReason: a.cancelReason,
	}
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		r.OnProgress = func(pr extproto.Progress) {
			n := &sdk.ProgressNotificationParams{ProgressToken: token, Message: pr.Message}
			if pr.Done != nil {
				n.Progress = float64(*pr.Done)
			}
			if pr.Total != nil {
				n.Total = float64(*pr.Total)
			}
			req.Session.NotifyProgress(ctx, n)
		}
	}
	out, err := a.opts.Host.Invoke(ctx, target, r)
	if err != nil && a.opts.Logger != nil {
		a.opts.Logger.Error("recording the outcome failed", "invocation", out.InvocationID, "error", err)
	}
	return result(out, tool, newProtocol(req.Params.Meta)), nil
}

// newProtocol reports whether a request follows protocol 2026-07-28 or
// later, by the SDK's own rule: a protocol version in the request's _meta.
func newProtocol(meta sdk.Meta) bool {
	v, ok := meta[sdk.MetaKeyProtocolVersion].(string)
	return ok && v >= "2026-07-28"
}

func contains(tools []*projection.Tool, t *projection.Tool) bool {
	for _, x := range tools {
		if x == t {
			return true
		}
	}
	return false
}

// envelope is the closed core-owned result of a call (DESIGN §7).
type envelope struct {
	InvocationID  string            `json:"invocationId"`
	Outcome       string            `json:"outcome"`
	Reason        string            `json:"reason,omitempty"`
	CommandResult *commandResult    `json:"commandResult,omitempty"`
	Effects       []extproto.Effect `json:"effects,omitempty"`
}

type commandResult struct {
	Kind string          `json:"kind"`
	Text *string         `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// result turns an outcome into a complete tool result: the envelope as
// structuredContent and as the first text block; refusals add a second
// block saying what to fix. Under protocol 2026-07-28 (complete set) the
// result says "resultType": "complete": it is built only once the
// invocation has been finalized, so it is final.
func result(out *invoke.Outcome, tool *projection.Tool, complete bool) *sdk.CallToolResult {
	env := envelope{InvocationID: out.InvocationID, Outcome: out.Outcome, Reason: out.Reason, Effects: out.Effects}
	if r := out.Result; r != nil {
		cr := &commandResult{Kind: string(r.Kind)}
		if r.Kind == "text" {
			text := r.Text
			cr.Text = &text
		} else {
			cr.Data = r.Data
		}
		env.CommandResult = cr
	}
	data, err := json.Marshal(env)
	if err != nil {
		data = []byte(`{"invocationId":"","outcome":"execution_failed","reason":"protocol_error"}`)
	}
	res := &sdk.CallToolResult{}
	if complete {
		res = completeResult()
	}
	res.StructuredContent = json.RawMessage(data)
	res.Content = []sdk.Content{&sdk.TextContent{Text: string(data)}}
	res.IsError = out.Outcome != invoke.Succeeded
	if out.Outcome != invoke.Succeeded && out.Message != "" {
		msg := out.Message
		if out.Reason == invoke.ReasonInvalidInput {
			msg += "\nThe tool's input schema: " + string(tool.InputSchema)
		}
		res.Content = append(res.Content, &sdk.TextContent{Text: msg})
	}
	return res
}

// completeResult returns an empty CallToolResult whose resultType is
// "complete". The go-sdk (v1.8.0) sets that field only on results of tools
// registered with AddTool, and offers no setter: decoding is the one public
// way to set it.
func completeResult() *sdk.CallToolResult {
	var res sdk.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), &res); err != nil {
		panic("mcp: the go-sdk no longer decodes resultType: " + err.Error())
	}
	return &res
}
